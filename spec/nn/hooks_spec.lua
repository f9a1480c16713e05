-- hooks_spec.lua - calling a cell: forward pre-hooks and forward hooks
-- (MindSpore 2.7 signatures, with and without kwargs), cell.kwargs,
-- handles and removal, backward pre-hooks and backward hooks checked
-- numerically, custom bprop, recompute.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("hooks_spec%.lua", fn, ...) end

--- y = x * w (elementwise) + b, with Parameters w and b.
local Scale = nn.Cell:extend("Scale")
function Scale:init(n)
  self.w = cell.Parameter(cell.arange(1, n + 1):float(), "w")
  self.b = cell.Parameter(cell.zeros({ n }), "b")
end
function Scale:construct(x, kw)
  local y = x * self.w + self.b
  if kw and kw.scale then y = y * kw.scale end
  return y
end

local function x2() return cell.tensor({ 1.0, 2.0 }) end

describe("calling a cell", function()
  describe("cell.kwargs", function()
    it("reaches construct as its last argument", function()
      local net = Scale(2)
      assert.are.same({ 2, 8 }, net(x2(), cell.kwargs { scale = 2 }):totable())
      assert.are.same({ 1, 4 }, net(x2()):totable())
    end)

    it("rejects a non-table", function()
      assert.are.equal("TypeError: kwargs: expected a plain table of name = value, but got number",
        err(function() cell.kwargs(3) end))
    end)
  end)

  describe("forward pre-hooks", function()
    it("see the cell and the args; nil keeps them, a value or a sequence replaces them", function()
      local net = Scale(2)
      local seen
      net:register_forward_pre_hook(function(c, args)
        seen = { c, args.n, args[1] }
      end)
      local x = x2()
      net(x)
      assert.are.equal(net, seen[1])
      assert.are.equal(1, seen[2])
      assert.are.equal(x, seen[3])
      local h = net:register_forward_pre_hook(function(_, args) return args[1] * 10 end)
      assert.are.same({ 10, 40 }, net(x):totable())
      h:remove()
      net:register_forward_pre_hook(function(_, args) return { args[1] + 1 } end)
      assert.are.same({ 2, 6 }, net(x):totable())
    end)

    it("with kwargs receive and may replace both args and kwargs", function()
      local net = Scale(2)
      local got
      net:register_forward_pre_hook(function(_, args, kwargs)
        got = kwargs
        return { args[1] }, { scale = 3 }
      end, true)
      assert.are.same({ 3, 12 }, net(x2()):totable())
      assert.are.same({}, got)
      net(x2(), cell.kwargs { scale = 5 })
      assert.are.equal(5, got.scale)
    end)

    it("with kwargs hand construct the kwargs they leave: filled in place, replaced, or emptied", function()
      -- MindSpore 2.7: args, kwargs = ret; then construct(*args, **kwargs)
      local Probe = nn.Cell:extend("KwProbe")
      function Probe:construct(_, kw) return kw and kw.scale or "none" end
      local net = Probe()
      local h = net:register_forward_pre_hook(function(_, args) return args, cell.kwargs {} end, true)
      assert.are.equal("none", net(1, cell.kwargs { scale = 2 })) -- emptied: no kwargs at all
      h:remove()
      h = net:register_forward_pre_hook(function(_, _, kwargs) kwargs.scale = 3 end, true)
      assert.are.equal(3, net(1)) -- filled in place, though the call had none
      assert.are.equal(3, net(1, cell.kwargs { scale = 5 }))
      h:remove()
      assert.are.equal(7, net(1, cell.kwargs { scale = 7 }))
      assert.are.equal("none", net(1))
    end)

    it("with kwargs must return nil or two tables", function()
      local net = Scale(2)
      net:register_forward_pre_hook(function() return 1 end, true)
      H.expect_error(function() net(x2()) end, "RuntimeError",
        "forward pre hook with kwargs must return nil or new_args, new_kwargs")
    end)
  end)

  describe("forward hooks", function()
    it("see args and output and may replace the output; with kwargs see kwargs", function()
      local net = Scale(2)
      local seen
      net:register_forward_hook(function(_, args, out) seen = { args[1], out } end)
      net:register_forward_hook(function(_, _, kwargs, out)
        return out + (kwargs.add or 0)
      end, true)
      local x = x2()
      local y = net(x, cell.kwargs { add = 100 })
      assert.are.same({ 101, 104 }, y:totable())
      assert.are.equal(x, seen[1])
      assert.are.same({ 1, 4 }, seen[2]:totable())
    end)

    it("run in registration order, each seeing the previous one's result", function()
      local net = Scale(2)
      local order = {}
      net:register_forward_hook(function(_, _, out) order[#order + 1] = 1; return out * 2 end)
      net:register_forward_hook(function(_, _, out) order[#order + 1] = 2; return out + 1 end)
      assert.are.same({ 3, 9 }, net(x2()):totable())
      assert.are.same({ 1, 2 }, order)
    end)

    it("see several outputs as a sequence and may replace them", function()
      local Two = nn.Cell:extend("Two")
      function Two:construct(x) return x, x * 2 end
      local net = Two()
      net:register_forward_hook(function(_, _, out)
        assert.are.equal(2, out.n)
        return { out[2], out[1] }
      end)
      local a, b = net(x2())
      assert.are.same({ 2, 4 }, a:totable())
      assert.are.same({ 1, 2 }, b:totable())
    end)

    it("removal from inside a hook takes effect from the next call", function()
      local net = Scale(2)
      local calls, h2 = {}, nil
      net:register_forward_hook(function()
        calls[#calls + 1] = "first"
        h2:remove()
      end)
      h2 = net:register_forward_hook(function() calls[#calls + 1] = "second" end)
      net(x2())
      net(x2())
      assert.are.same({ "first", "second", "first" }, calls)
      h2:remove() -- twice is harmless
    end)

    it("hooks must be functions and with_kwargs a boolean", function()
      local net = Scale(2)
      assert.are.equal("TypeError: register_forward_hook: the hook must be a function, but got number",
        err(function() net:register_forward_hook(1) end))
      assert.are.equal("TypeError: register_forward_pre_hook: with_kwargs must be a boolean, but got string",
        err(function() net:register_forward_pre_hook(function() end, "yes") end))
      H.expect_error(function() net:register_backward_hook("f") end, "TypeError", "must be a function")
    end)
  end)

  describe("backward hooks", function()
    local function grads(net, x)
      return cell.grad(function(a) return net(a):sum() end, 1, net:trainable_params())(x)
    end

    it("a backward pre-hook tripling the gradient, then a backward hook quadrupling the input's, "
      .. "give exactly 3x and 12x", function()
      local net = Scale(2)
      local plain = grads(net, x2())
      local pre_seen, bwd_seen
      local hp = net:register_backward_pre_hook(function(c, grad_output)
        assert.are.equal(net, c)
        pre_seen = grad_output
        return { grad_output[1] * 3 }
      end)
      local g3 = grads(net, x2())
      local hb = net:register_backward_hook(function(_, grad_input, grad_output)
        bwd_seen = { grad_input, grad_output }
        return { grad_input[1] * 4 }
      end)
      local g12 = grads(net, x2())
      assert.are.same({ 1, 1 }, pre_seen[1]:totable())
      assert.are.same({ 3, 6 }, bwd_seen[1][1]:totable())
      assert.are.same({ 3, 3 }, bwd_seen[2][1]:totable())
      for i = 1, 2 do
        assert.are.equal(plain[1]:totable()[i] * 3, g3[1]:totable()[i])
        assert.are.equal(plain[1]:totable()[i] * 12, g12[1]:totable()[i])
      end
      -- the parameters' gradients see the tripled output gradient only
      assert.are.same({ 3, 6 }, g12[2][1]:totable())
      assert.are.same({ 3, 3 }, g12[2][2]:totable())
      hp:remove()
      hb:remove()
      assert.are.same(plain[1]:totable(), grads(net, x2())[1]:totable())
    end)

    it("several hooks of a kind compose in registration order", function()
      local net = Scale(2)
      local order = {}
      net:register_backward_pre_hook(function(_, g) order[#order + 1] = "p1"; return { g[1] * 2 } end)
      net:register_backward_pre_hook(function(_, g) order[#order + 1] = "p2"; return g[1] + 1 end)
      net:register_backward_hook(function(_, gi) order[#order + 1] = "b1"; return { gi[1] * 10 } end)
      local h = net:register_backward_hook(function(_, gi) order[#order + 1] = "b2"; return { -gi[1] } end)
      local g = cell.grad(function(a) return net(a):sum() end)(x2())
      -- d/dy = (1*2)+1 = 3; dx = 3 * w = {3, 6}; then *10, then negated
      assert.are.same({ -30, -60 }, g:totable())
      assert.are.same({ "p1", "p2", "b1", "b2" }, order)
      h:remove()
      assert.are.same({ 30, 60 }, cell.grad(function(a) return net(a):sum() end)(x2()):totable())
    end)

    it("gives one gradient per input, nil where an input needs none, and fires without any", function()
      local Add = nn.Cell:extend("Add")
      function Add:init() self.w = cell.Parameter(cell.ones({ 2 }), "w") end
      function Add:construct(a, b, k) return a * self.w * k + b end
      local net = Add()
      local seen
      net:register_backward_hook(function(_, gi, go) seen = { gi, go } end)
      local b = cell.ones({ 2 })
      local g = cell.grad(function(a) return net(a, b, 5):sum() end)(x2())
      assert.are.same({ 5, 5 }, g:totable())
      assert.are.equal(3, seen[1].n)
      assert.are.same({ 5, 5 }, seen[1][1]:totable())
      assert.is_nil(seen[1][2])
      assert.is_nil(seen[1][3])
      -- no input requires grad: the hook still runs, with no input gradients
      seen = nil
      cell.grad(function() return net(x2(), b, 1):sum() end, nil, { net.w })()
      assert.are.same({ 1, 1 }, seen[2][1]:totable())
      assert.is_nil(seen[1][1])
    end)

    it("sees several outputs' gradients at once", function()
      local Two = nn.Cell:extend("Two")
      function Two:construct(x) return { x * 2, x * 3 } end
      local net = Two()
      local seen
      net:register_backward_pre_hook(function(_, go) seen = go; return { go[1], go[2] * 0 } end)
      local g = cell.grad(function(a)
        local o = net(a)
        return (o[1] + o[2] * 10):sum()
      end)(x2())
      assert.are.equal(2, seen.n)
      assert.are.same({ 1, 1 }, seen[1]:totable())
      assert.are.same({ 10, 10 }, seen[2]:totable())
      assert.are.same({ 2, 2 }, g:totable())
    end)

    it("a replacement gradient of the wrong shape is a clear error", function()
      local net = Scale(2)
      net:register_backward_hook(function() return { cell.ones({ 3 }) } end)
      H.expect_error(function() cell.grad(function(a) return net(a):sum() end)(x2()) end,
        "ValueError", "Scale backward hook: gradient 1 has shape (3,) but its tensor has shape (2,)")
    end)

    it("do nothing outside gradient recording", function()
      local net = Scale(2)
      local ran = false
      net:register_backward_pre_hook(function() ran = true end)
      local y = cell.no_grad(function() return net(x2()) end)
      assert.is_false(y.requires_grad)
      assert.is_false(ran)
    end)
  end)

  describe("custom bprop", function()
    it("replaces the cell's backward: bprop(self, inputs..., out, dout)", function()
      local Mul = nn.Cell:extend("Mul")
      function Mul:construct(x, y) return x * y end
      local seen
      function Mul:bprop(x, y, out, dout)
        seen = { x, y, out, dout }
        return dout * 100, dout * 0
      end
      local net = Mul()
      local x, y = x2(), cell.tensor({ 3.0, 4.0 })
      local gx, gy = H.unpack(cell.grad(function(a, b) return net(a, b):sum() end, { 1, 2 })(x, y))
      assert.are.same({ 100, 100 }, gx:totable())
      assert.are.same({ 0, 0 }, gy:totable())
      assert.are.same({ 3, 8 }, seen[3]:totable())
      assert.are.same({ 1, 1 }, seen[4]:totable())
      -- a sequence return works too, and forward hooks are ignored as in MindSpore 2.7
      function Mul:bprop(_, _, _, dout) return { dout, dout * 2 } end
      local ran = false
      net:register_forward_hook(function() ran = true end)
      local g = cell.grad(function(a, b) return net(a, b):sum() end, { 1, 2 })(x, y)
      assert.are.same({ 2, 2 }, g[2]:totable())
      assert.is_false(ran)
    end)

    it("works with more than four tensor inputs", function()
      local Sum = nn.Cell:extend("Sum")
      function Sum:construct(...)
        local s = select(1, ...)
        for i = 2, select("#", ...) do s = s + select(i, ...) end
        return s
      end
      function Sum:bprop(...)
        local n = select("#", ...) - 2
        local dout = select(n + 2, ...)
        local out = {}
        for i = 1, n do out[i] = dout * i end
        return out
      end
      local net = Sum()
      local xs = {}
      for i = 1, 7 do xs[i] = cell.ones({ 2 }) end
      local g = cell.grad(function(...) return net(...):sum() end, { 1, 2, 3, 4, 5, 6, 7 })(H.unpack(xs))
      for i = 1, 7 do assert.are.same({ i, i }, g[i]:totable()) end
    end)
  end)

  describe("recompute", function()
    it("gives the same gradients, parameters included", function()
      local Deep = nn.Cell:extend("Deep")
      function Deep:init() self.w = cell.Parameter(cell.tensor({ 0.5, -1.5 }), "w") end
      function Deep:construct(x)
        for _ = 1, 3 do x = (x * self.w):tanh() end
        return x
      end
      local function run(net)
        return cell.grad(function(a) return net(a):sum() end, 1, net:trainable_params())(x2())
      end
      local plain = run(Deep())
      local net = Deep()
      net:recompute()
      local again = run(net)
      H.assert_close(again[1], plain[1]:totable(), 1e-6)
      H.assert_close(again[2][1], plain[2][1]:totable(), 1e-6)
    end)

    it("keeps less memory alive between forward and backward", function()
      local Block = nn.Cell:extend("Block")
      function Block:init() self.w = cell.Parameter(cell.randn({ 128, 128 }) * 0.05, "w") end
      function Block:construct(x)
        for _ = 1, 10 do x = x:matmul(self.w):tanh() end
        return x
      end
      local function live_after_forward(recompute)
        local blocks = {}
        for i = 1, 4 do
          blocks[i] = Block()
          if recompute then blocks[i]:recompute() end
        end
        local x = cell.randn({ 128, 128 }):requires_grad_(true)
        collectgarbage()
        local base = cell.memory_stats().in_use
        local out = x
        for i = 1, 4 do out = blocks[i](out) end
        out = out:sum()
        collectgarbage()
        local live = cell.memory_stats().in_use - base
        cell.core._backward(out, nil, { x })
        return live
      end
      local with_rc, without = live_after_forward(true), live_after_forward(false)
      assert.is_true(with_rc * 4 < without, ("%d vs %d bytes"):format(with_rc, without))
    end)
  end)
end)
