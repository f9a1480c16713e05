-- repl_spec.lua - the interactive REPL: the Lua half (lua/cell/repl.lua:
-- printing, completion, `?name`) called directly, then `bin/cell` ($CELL_BIN)
-- on a pseudo-terminal (tmux, spec/helpers/pty.lua), checked for what a
-- person sees: prompts, printed values, a multi-line function, `_`, Tab
-- completion, `?help`, errors with tracebacks, Ctrl-C, and the history file.
local cell = require "cell"
local repl = require "cell.repl"
local pty = require "helpers.pty"

local function cwd()
  return (pty.sh("pwd"):gsub("%s+$", ""))
end

local BIN = os.getenv("CELL_BIN") or "bin/cell"
if BIN:sub(1, 1) ~= "/" then BIN = cwd() .. "/" .. BIN end
local LUAJIT = (os.getenv("CELL_LUA") or ""):find("luajit", 1, true) ~= nil or BIN:find("luajit", 1, true) ~= nil

local function contains(list, x)
  for i = 1, #list do
    if list[i] == x then return true end
  end
  return false
end

describe("cell.repl", function()
  describe("format_results", function()
    it("joins several results with tabs and prints strings as they are", function()
      assert.are.equal("1\ttwo\tnil\ttrue", repl.format_results(1, "two", nil, true))
      assert.are.equal("", repl.format_results())
    end)

    it("prints tensors, Parameters and cells with their tostring", function()
      local t = cell.ones({ 2 })
      assert.are.equal(tostring(t), repl.format_results(t))
      local p = cell.Parameter(cell.zeros({ 2 }), "w")
      assert.are.equal(tostring(p), repl.format_results(p))
      local net = cell.nn.Dense(2, 3)
      assert.are.equal(tostring(net), repl.format_results(net))
    end)

    it("lets an error in a result's own __tostring through, to be reported", function()
      local bad = setmetatable({}, { __tostring = function() error("bad tostring") end })
      local ok, err = pcall(repl.format_results, bad)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("bad tostring", 1, true))
    end)
  end)

  describe("format", function()
    it("prints a sequence, then the other keys sorted", function()
      assert.are.equal('{1, 2, 3, a = 1, b = "x", [true] = 0}',
        repl.format({ 1, 2, 3, b = "x", a = 1, [true] = 0 }))
      assert.are.equal("{[-1] = 1, [2.5] = 2, [10] = 3}", repl.format({ [10] = 3, [2.5] = 2, [-1] = 1 }))
      assert.are.equal('{["a b"] = 1, ["end"] = 2}', repl.format({ ["a b"] = 1, ["end"] = 2 }))
      assert.are.equal("{1, [3] = 3}", repl.format({ 1, nil, 3 }))
      assert.are.equal("{}", repl.format({}))
    end)

    it("quotes strings inside tables, escapes and cuts long ones", function()
      assert.are.equal('{"a\\"b\\n\\t"}', repl.format({ 'a"b\n\t' }))
      local s = repl.format({ ("x"):rep(300) })
      assert.is_truthy(s:find('"...(300 bytes)', 1, true), s)
    end)

    it("nests tables up to a depth cap", function()
      assert.are.equal("{a = {b = {c = {d = {...}}}}}", repl.format({ a = { b = { c = { d = { e = {} } } } } }))
    end)

    it("shows at most max_items entries, with the total", function()
      local t = {}
      for i = 1, 100 do t[i] = i end
      local s = repl.format(t)
      assert.is_truthy(s:find("1, 2, 3,", 1, true), s)
      assert.is_truthy(s:find("20,%s+%.%.%. %(100 items%)"), s)
      assert.is_falsy(s:find("21", 1, true), s)
    end)

    it("marks cycles and prints a shared table each time", function()
      local c = {}
      c.me = c
      assert.are.equal("{me = <cycle>}", repl.format(c))
      local shared = { 1 }
      assert.are.equal("{{1}, {1}}", repl.format({ shared, shared }))
    end)

    it("breaks a long table into lines, indenting nested ones and tensors", function()
      local t = {}
      for i = 1, 30 do t[i] = i * 1000 end
      local s = repl.format({ x = t, w = cell.ones({ 2, 2 }) })
      local lines = {}
      for l in (s .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
      assert.are.equal("{", lines[1])
      assert.are.equal("  w = Tensor(shape=[2, 2], dtype=Float32, value=", lines[2])
      assert.are.equal("  [[1.0000, 1.0000],", lines[3])
      assert.are.equal("  x = {", lines[5])
      assert.is_truthy(lines[6]:find("^    1000, 2000, "), lines[6])
      assert.are.equal("}", lines[#lines])
      for i = 1, #lines do assert.is_true(#lines[i] <= repl.width, lines[i]) end
    end)

    it("shows an error raised by a __tostring inside a table in place", function()
      local bad = setmetatable({}, { __tostring = function() error("bad tostring") end })
      local s = repl.format({ bad, 1 })
      assert.is_truthy(s:find("^{<error in __tostring: .*bad tostring>, 1}$"), s)
    end)
  end)

  describe("complete", function()
    local net = cell.nn.Dense(3, 4)
    net:register_buffer("steps", cell.zeros({ 1 }))
    net.note = "plain"
    local env = {
      cell = cell, net = net, t = cell.ones({ 2 }), d = net:state_dict(), s = "text",
      p = cell.Parameter(cell.zeros({ 2 }), "p"), _hidden = 1, value = 2, values = 3,
    }

    it("completes globals and keywords", function()
      assert.are.same({ "value", "values" }, repl.complete("val", env))
      assert.are.same({ "function" }, repl.complete("func", env))
      assert.is_false(contains(repl.complete("", env), "_hidden"))
      assert.are.same({ "_hidden" }, repl.complete("_h", env))
    end)

    it("completes fields of modules, loading lazy submodules", function()
      assert.are.same({ "cell.zeros", "cell.zeros_like" }, repl.complete("cell.zeros", env))
      assert.is_true(contains(repl.complete("cell.n", env), "cell.nn"))
      assert.is_true(contains(repl.complete("cell.nn.De", env), "cell.nn.Dense"))
    end)

    it("completes a tensor's methods and properties", function()
      local c = repl.complete("t:su", env)
      assert.is_true(contains(c, "t:sum") and contains(c, "t:sub_"), table.concat(c, " "))
      assert.is_true(contains(repl.complete("t.sh", env), "t.shape"))
      assert.is_false(contains(repl.complete("t:sh", env), "t:shape"))
    end)

    it("completes a Parameter's fields and methods beside the tensor's", function()
      assert.is_true(contains(repl.complete("p:set_", env), "p:set_data"))
      assert.is_true(contains(repl.complete("p.na", env), "p.name"))
      assert.is_true(contains(repl.complete("p:nu", env), "p:numel"))
    end)

    it("completes a cell's parameters, buffers, sub-cells, attributes and methods", function()
      local c = repl.complete("net.", env)
      for _, k in ipairs { "net.weight", "net.bias", "net.steps", "net.note", "net.training", "net.state_dict" } do
        assert.is_true(contains(c, k), k .. " in " .. table.concat(c, " "))
      end
      assert.are.same({ "net:state_dict" }, repl.complete("net:state_d", env))
      local m = repl.complete("net:", env)
      assert.is_false(contains(m, "net:weight"))
      assert.is_true(contains(m, "net:construct"))
      local outer = cell.nn.Cell()
      outer.inner = cell.nn.Dense(2, 2)
      env.outer = outer
      assert.are.same({ "outer.inner" }, repl.complete("outer.inn", env))
      assert.is_true(contains(repl.complete("outer.inner.", env), "outer.inner.weight"))
    end)

    it("completes an OrderedDict's methods and keys", function()
      assert.are.same({ "d:keys" }, repl.complete("d:ke", env))
      local c = repl.complete("d.", env)
      assert.is_true(contains(c, "d.weight") and contains(c, "d.items"), table.concat(c, " "))
    end)

    it("completes string methods and classes' members", function()
      assert.are.same({ "s:upper" }, repl.complete("s:up", env))
      assert.is_true(contains(repl.complete("cell.nn.Cell.ext", env), "cell.nn.Cell.extend"))
    end)

    it("gives nothing for unknown names and expressions it cannot look up", function()
      assert.are.same({}, repl.complete("nosuch.x", env))
      assert.are.same({}, repl.complete("t:sum():", env))
      assert.are.same({}, repl.complete("a:b.c", env))
      local raising = setmetatable({}, { __index = function() error("no") end })
      env.raising = raising
      assert.are.same({}, repl.complete("raising.x.y", env))
    end)
  end)

  describe("help", function()
    local env = { cell = cell, net = cell.nn.Dense(2, 3) }

    it("documents a C function from its reference entry", function()
      local s = repl.help("cell.zeros", env)
      assert.is_truthy(s:find("^cell%.zeros%(shape %[, dtype%]%)\n  A tensor of zeros"), s)
    end)

    it("documents a method of an instance from its class's entry", function()
      local s = repl.help(" net:state_dict ", env)
      assert.is_truthy(s:find("^nn%.Cell:state_dict%(%[destination, prefix = \"\", keep_vars = false%]%)\n"), s)
      assert.is_truthy(s:find("OrderedDict", 1, true), s)
    end)

    it("documents a class with its real signature", function()
      local s = repl.help("cell.nn.Dense", env)
      assert.is_truthy(s:find("^nn%.Dense%(in_channels, out_channels %[, weight_init"), s)
      assert.is_truthy(s:find("fully connected layer", 1, true), s)
    end)

    it("prints the whole entry for ?name (the prompt's ??name)", function()
      local s = repl.help("?cell.nn.Dropout", env)
      assert.is_truthy(s:find("^nn%.Dropout%(keep_prob%)\n"), s)
      assert.is_truthy(s:find("nn.Dropout{p = 0.1}", 1, true), s)
      assert.is_truthy(#s > #repl.help("cell.nn.Dropout", env) + 200, s)
    end)

    it("documents a method a user defines, by name", function()
      for _, name in ipairs { "cell.nn.Cell.bprop", "cell.nn.Cell:bprop" } do
        local s = repl.help(name, env)
        assert.is_truthy(s:find("^function MyCell:bprop%("), s)
        assert.is_truthy(s:find("gradients of the inputs", 1, true), s)
      end
    end)

    it("says so for unknown names and for what is not a name", function()
      assert.are.equal("nosuch.x: no such name (it is nil)", repl.help("nosuch.x", env))
      assert.is_truthy(repl.help("1 + 1", env):find("not a name", 1, true))
      assert.is_truthy(repl.help("", env):find("?cell.tensor", 1, true))
    end)
  end)
end)

describe("cell.repl for a new user", function()
  it("completes a cell's parameters, sub-cells and attributes before its methods", function()
    local net = cell.nn.SequentialCell({ cell.nn.Dense(2, 2) })
    net.head = cell.nn.ReLU()
    net.scale = cell.Parameter(cell.ones({ 1 }), "scale")
    local got = repl.complete("net.", { net = net })
    local first_method
    for i, k in ipairs(got) do
      if k == "net.apply" then first_method = i end
    end
    assert.is_truthy(first_method, table.concat(got, " "))
    for _, k in ipairs { "net.head", "net.scale", "net.training" } do
      local at
      for i, x in ipairs(got) do
        if x == k then at = i end
      end
      assert.is_truthy(at and at < first_method, k .. " in " .. table.concat(got, " "))
    end
    -- other values stay in one sorted list
    assert.are.same({ "cell.zeros", "cell.zeros_like" }, repl.complete("cell.zeros", { cell = cell }))
  end)

  it("installs help and traceback without replacing the user's own", function()
    local env = { help = 1 }
    repl.install_globals(env)
    assert.are.equal(1, env.help)
    assert.are.equal(repl.traceback_command, env.traceback)
  end)

  it("keeps the full traceback and returns the user's frames only", function()
    local lib = cell.nn.Dense(3, 4)
    local short
    local ok = xpcall(function() return lib(cell.ones({ 2 })) end, function(m) short = repl.traceback(m, 2) end)
    assert.is_false(ok)
    assert.is_truthy(short:find("\nstack traceback:\n", 1, true), short)
    assert.is_falsy(short:find("dense.lua", 1, true), short)
    assert.is_truthy(short:find("repl_spec.lua:%d+: in "), short)
    assert.is_truthy(short:find("frames? in cell's files hidden: traceback%(%) shows all, or set CELL_TRACEBACK=full%)$"), short)
    assert.is_truthy(repl.last_traceback:find("lua/cell/nn/dense.lua:%d+: in "), repl.last_traceback)
  end)
end)

describe("the cell REPL on a terminal", function()
  local dir, hist, term

  --- Wait for the primary prompt (or, with cont, the continuation one) on
  -- the last line: text typed before it shows would be echoed by the
  -- terminal on the line of the output, not after the prompt.
  local function prompt(cont)
    term:wait_last(cont and "^>>$" or "^>$")
  end

  --- A new terminal running the REPL with a private HOME and history file.
  local function start(opts)
    opts = opts or {}
    local env = { HOME = dir, INPUTRC = "/dev/null" }
    if not opts.default_history then env.CELL_HISTORY = hist end
    for k, v in pairs(opts.env or {}) do env[k] = v end
    term = pty.start(pty.quote(BIN), { env = env, unset = { "CELL_HISTORY", "CELL_TRACEBACK", "LUA_INIT", "LUA_INIT_5_4" } })
    term:expect("^cell %d")
    term:expect("^Tab completes names, %?name shows documentation")
    prompt()
    return term
  end

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(pty.sh("mkdir -p " .. pty.quote(dir)))
    hist = dir .. "/history"
  end)

  after_each(function()
    if term then term:close() end
    term = nil
    pty.sh("rm -rf " .. pty.quote(dir))
  end)

  local function escape(s) return (s:gsub("%p", "%%%0")) end

  --- At the prompt, type a line and wait for its echo; then, with a
  -- pattern, for a line of output matching it (returned).
  local function run(line, pattern, cont)
    prompt(cont)
    term:line(line)
    term:expect("^>" .. (cont and ">" or "") .. " " .. escape(line) .. "$")
    if pattern then return term:expect(pattern) end
  end

  --- At the prompt, type text and press Tab; wait for the line to read `want`.
  local function complete(text, want)
    prompt()
    term:type(text)
    term:key("Tab")
    term:wait_last("^> " .. escape(want) .. "$")
  end

  it("prints expressions without '=', several results, nil only when explicit", function()
    start()
    run("6 * 7", "^42$")
    run("1, 'two', nil", "^1%s+two%s+nil$")
    run("x = nil")
    run("'after' .. 1", "^after1$")
    -- nothing printed between the assignment and the next prompt
    local lines = term:screen()
    assert.are.equal("> x = nil", lines[term.cursor - 2])
    run("nil", "^nil$")
  end)

  it("prints tables readably and tensors with their text", function()
    start()
    run("{1, 2, {a = 3}}", "^{1, 2, {a = 3}}$")
    run("big = {}; for i = 1, 100 do big[i] = i end")
    run("big", "^{$")
    term:expect("%.%.%. %(100 items%)$")
    run("c = {}; c.me = c; return c", "^{me = <cycle>}$")
    run("cell.ones({2})", "^Tensor%(shape=%[2%], dtype=Float32, value=")
  end)

  it("keeps the last result in _", function()
    start()
    run("20 + 1", "^21$")
    run("_ * 2", "^42$")
  end)

  it("continues an incomplete chunk on the next lines", function()
    start()
    run("function sq(x)")
    run("  return x * x", nil, true)
    run("end", nil, true)
    run("sq(12)", "^144$")
  end)

  it("completes names, fields and methods with Tab", function()
    start()
    complete("cell.zeros_l", "cell.zeros_like")
    term:line("(cell.ones({3})).shape[1]")
    term:expect("^3$")
    run("net = cell.nn.Dense(3, 4)")
    complete("net:state_d", "net:state_dict")
    term:line("():len()")
    term:expect("^2$")
    complete("net.wei", "net.weight")
    term:line(".shape[1]")
    term:expect("^4$")
    run("t = cell.ones({2, 3})")
    complete("t:su", "t:su")
    -- a second Tab lists the candidates without the shared "t:"
    term:key("Tab")
    term:expect("^sub%s+sub_%s+sum$")
    term:wait_last("^> t:su$")
    term:line("m()")
    term:expect("^Tensor%(shape=%[%], dtype=Float32, value= 6")
  end)

  it("prints one-line documentation for ?name", function()
    start()
    run("?cell.zeros", "^cell%.zeros%(shape %[, dtype%]%)$")
    term:expect("^  A tensor of zeros")
    run("net = cell.nn.Dense(3, 4)")
    run("?net:state_dict", "^nn%.Cell:state_dict%(")
    term:expect("OrderedDict")
    run("?cell.nn.Dense", "^nn%.Dense%(in_channels, out_channels")
    run("?cell.nn.Dropout", "^nn%.Dropout%(keep_prob%)$")
    term:expect("^nn%.Dropout{p = 0%.5}$")
    term:expect("^  Randomly zeroes elements in training mode, with probability p, and scales the kept ones by "
      .. "1 / %(1 %- p%); in inference mode it returns its input%.$")
    run("?cell.nn.Cell.bprop", "^function MyCell:bprop%(x1, %.%.%., xn, out, dout%)")
    run("?nosuch", "^nosuch: no such name")
  end)

  it("prints the whole reference entry for ??name", function()
    start()
    run("??cell.nn.Adam", "^nn%.Adam%(params %[, learning_rate = 1e%-3")
    term:expect("^  Adam also takes MindSpore's full positional order")
    term:expect("^  %(optim%.md%)$")
    run("'after'", "^after$")
  end)

  it("reports errors with a traceback and goes on", function()
    start()
    run("local x = error('kaput')", "^stdin:1: kaput$")
    term:expect("^stack traceback:$")
    run("'still' .. 'alive'", "^stillalive$")
    run("x = = 1", "unexpected symbol")
    run("cell.ones({2}) + cell.ones({3})", "ValueError:")
    run("bad = setmetatable({}, {__tostring = function() error('in tostring') end}); return bad",
      "^error printing the result: .*in tostring$")
    term:expect("^stack traceback:$")
    run("'alive' .. 2", "^alive2$")
  end)

  it("interrupts a long computation with Ctrl-C and goes on", function()
    start()
    run("x = cell.ones({1000})")
    run("print('loop' .. 'ing'); for i = 1, 1e9 do x:add_(1) end", "^looping$")
    pty.sleep(0.2)
    term:key("C-c")
    term:expect("KeyboardInterrupt")
    run("'back' .. 1", "^back1$")
    if not LUAJIT then
      -- LuaJIT runs no hooks in compiled code: there only kernels stop
      run("print('spin' .. 'ning'); while true do end", "^spinning$")
      pty.sleep(0.2)
      term:key("C-c")
      term:expect("KeyboardInterrupt")
      run("'back' .. 2", "^back2$")
    end
  end)

  it("clears the line on Ctrl-C at the prompt, also inside a chunk", function()
    start()
    term:type("this is not run")
    -- Ctrl-C flushes the terminal's unread input: let readline take it all first
    term:wait_last("^> this is not run$")
    term:key("C-c")
    term:expect("^> this is not run%^C$")
    run("'ok' .. 1", "^ok1$")
    run("for i = 1, 2 do")
    prompt(true)
    term:key("C-c")
    run("'ok' .. 2", "^ok2$")
  end)

  it("keeps a history file, appended as lines are entered and loaded at start", function()
    start()
    run("'first' .. 1", "^first1$")
    run("'second' .. 2", "^second2$")
    local f = assert(io.open(hist, "r"))
    local text = f:read("*a")
    f:close()
    assert.are.equal("'first' .. 1\n'second' .. 2\n", text)
    prompt()
    term:key("C-d")
    term:expect("^%[exited 0%]$")
    term:close()
    start()
    term:key("Up")
    term:wait_last("^> 'second' %.%. 2$")
    term:key("Up")
    term:wait_last("^> 'first' %.%. 1$")
    term:key("Enter")
    term:expect("^first1$")
  end)

  it("keeps the history in ~/.cell_history without $CELL_HISTORY", function()
    start({ default_history = true })
    run("'home' .. 1", "^home1$")
    local f = assert(io.open(dir .. "/.cell_history", "r"))
    assert.are.equal("'home' .. 1\n", f:read("*a"))
    f:close()
  end)
  it("runs statements and a last expression typed on one line", function()
    start()
    run("a = cell.ones({2, 3}); a.shape", "^{2, 3}$")
    run("s = 'x;y'; s .. '!'", "^x;y!$")
    run("t = {1; 2}; #t -- a comment", "^2$")
    run("'still' .. 'here'", "^stillhere$")
  end)

  it("keeps the last result in _, a tensor too", function()
    start()
    run("cell.ones({2, 2})", "^Tensor%(shape=%[2, 2%]")
    run("_:sum():item()", "^4%.?0?$")
  end)

  it("has help()", function()
    start()
    run("help()", "^cell's interactive prompt: Lua 5%.4 / LuaJIT with `cell` loaded%.$")
    term:expect("^  %?name +the documentation of a function")
    term:expect("^  traceback%(%) +the full traceback of the last error")
    run("help('cell.zeros')", "^cell%.zeros%(shape %[, dtype%]%)$")
  end)

  it("hides cell's own frames in tracebacks unless asked", function()
    start()
    run("net = cell.nn.Dense(3, 4)")
    run("net(cell.ones({2}))",
      "^stdin:1: ValueError: For 'Dense', the last dimension of the input must be in_channels %(3%)")
    term:expect("^stack traceback:$")
    term:expect("^%s+stdin:1: in main chunk$")
    term:expect("^%s+%(%d+ frames? in cell's files hidden: traceback%(%) shows all, or set CELL_TRACEBACK=full%)$")
    local lines = term:screen()
    assert.is_falsy(table.concat(lines, "\n"):find("dense.lua", 1, true))
    run("traceback()", "^stdin:1: ValueError: For 'Dense'")
    term:expect("lua/cell/nn/dense%.lua:%d+: in ")
    term:expect("^%s+stdin:1: in main chunk$")
    term:close()
    start({ env = { CELL_TRACEBACK = "full" } })
    run("cell.nn.Dense(3, 4)(cell.ones({2}))", "^stdin:1: ValueError: For 'Dense'")
    term:expect("lua/cell/nn/dense%.lua:%d+: in ")
  end)

  it("says which methods compare tensors, and what to use for PyTorch's habits", function()
    start()
    run("cell.ones({3}) <= cell.ones({3})", "^stdin:1: TypeError: '<=' and '>=' cannot compare Tensors in Lua "
      .. "%(a comparison must give a boolean%): for t <= x use t:le%(x%), for t >= x use t:ge%(x%) %(x a number or a Tensor%)$")
    if LUAJIT then
      run("cell.rand({3}) > 0.5", "^stdin:1: attempt to compare number with userdata %(a Tensor%? comparisons cannot "
        .. "give a Tensor in Lua: use t:lt%(x%), t:gt%(x%), t:le%(x%), t:ge%(x%)%)$")
    else
      run("cell.rand({3}) > 0.5", "^stdin:1: TypeError: '<' and '>' cannot compare Tensors in Lua %(a comparison must "
        .. "give a boolean%): for t < x use t:lt%(x%), for t > x use t:gt%(x%) %(x a number or a Tensor%)$")
    end
    run("cell.ones({2}):backward()", "^stdin:1: AttributeError: 'Tensor' object has no attribute 'backward': "
      .. "cell computes gradients functionally, use cell%.grad / cell%.value_and_grad$")
    run("cell.nn.Dense(2, 2):eval()", "^stdin:1: AttributeError: 'Dense' object has no attribute 'eval': "
      .. "use net:set_train%(false%)$")
  end)

  it("lists a cell's parameters and sub-cells before its methods on Tab", function()
    start()
    run("net = cell.nn.Dense(3, 4)")
    complete("net.t", "net.t")
    term:key("Tab")
    -- training (a property) first, then the methods, each group sorted
    term:expect("^training%s+to_float%s+trainable_params$")
    term:wait_last("^> net%.t$")
    term:line("raining")
    term:expect("^false$")
    run("seq = cell.nn.SequentialCell({cell.nn.Dense(2, 2)}); seq.body = cell.nn.ReLU(); seq.w = cell.Parameter(cell.ones({1}), 'w')")
    complete("seq.", "seq.")
    term:key("Tab")
    term:expect("^body%s")
    term:wait_last("^> seq%.$")
    term:key("C-c")
  end)
end)
