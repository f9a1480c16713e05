-- summary_spec.lua - cell.train.SummaryRecord and SummaryCollector: the
-- event files are read back by a reader written here from the published
-- format (records of uint64 length, masked CRC32C, data, masked CRC32C;
-- an Event protocol buffer in each), with its own bit-at-a-time CRC32C,
-- checked on the standard test vector.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

local function err(fn, ...) return H.caller_error("summary_spec%.lua", fn, ...) end

-- The reader -------------------------------------------------------------------------------

local floor = math.floor

local function xor(a, b) -- integers in [0, 2^32)
  local r, bit = 0, 1
  while a > 0 or b > 0 do
    if a % 2 ~= b % 2 then r = r + bit end
    a, b, bit = floor(a / 2), floor(b / 2), bit * 2
  end
  return r
end

--- CRC32C, one bit at a time (reflected polynomial 0x82F63B78).
local function crc32c(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do
    c = xor(c, s:byte(i))
    for _ = 1, 8 do
      if c % 2 == 1 then c = xor(floor(c / 2), 0x82F63B78) else c = floor(c / 2) end
    end
  end
  return xor(c, 0xFFFFFFFF)
end

local function masked(s)
  local c = crc32c(s)
  local rot = floor(c / 2 ^ 15) + (c % 2 ^ 15) * 2 ^ 17
  return (rot + 0xa282ead8) % 2 ^ 32
end

local function uint(s, i, n)
  local v = 0
  for k = n, 1, -1 do v = v * 256 + s:byte(i + k - 1) end
  return v
end

--- An IEEE float of n bytes (4 or 8) at s[i].
local function float(s, i, n)
  local bits = uint(s, i, n) -- exact for 4 bytes; for 8, split
  local sign, e, m, mbits, bias
  if n == 4 then
    sign, e, m, mbits, bias = floor(bits / 2 ^ 31), floor(bits / 2 ^ 23) % 256, bits % 2 ^ 23, 23, 127
  else
    local lo, hi = uint(s, i, 4), uint(s, i + 4, 4)
    sign, e, m, mbits, bias = floor(hi / 2 ^ 31), floor(hi / 2 ^ 20) % 2048, (hi % 2 ^ 20) * 2 ^ 32 + lo, 52, 1023
  end
  local v
  if e == 2 * bias + 1 then v = m == 0 and math.huge or 0 / 0
  elseif e == 0 then v = m * 2 ^ (1 - bias - mbits)
  else v = (1 + m / 2 ^ mbits) * 2 ^ (e - bias) end
  return sign == 1 and -v or v
end

--- The fields of a protocol buffer message: a list of {field, wire, value}
-- (varint: number; 64-bit: the 8 bytes; length-delimited: the bytes; 32-bit: the 4 bytes).
local function fields(s)
  local out, i = {}, 1
  local function varint()
    local v, scale = 0, 1
    repeat
      local b = s:byte(i)
      assert(b, "truncated varint")
      i = i + 1
      v = v + (b % 128) * scale
      scale = scale * 128
    until b < 128
    return v
  end
  while i <= #s do
    local k = varint()
    local field, wire = floor(k / 8), k % 8
    local v
    if wire == 0 then v = varint()
    elseif wire == 1 then v = s:sub(i, i + 7); i = i + 8
    elseif wire == 5 then v = s:sub(i, i + 3); i = i + 4
    elseif wire == 2 then local n = varint(); v = s:sub(i, i + n - 1); i = i + n
    else error("wire type " .. wire) end
    out[#out + 1] = { field, wire, v }
  end
  assert(i == #s + 1, "message overruns")
  return out
end

local function doubles(b)
  local t = {}
  for k = 1, #b, 8 do t[#t + 1] = float(b, k, 8) end
  return t
end

local function parse_histo(b)
  local h = {}
  local names = { "min", "max", "num", "sum", "sum_squares" }
  for _, f in ipairs(fields(b)) do
    if f[1] <= 5 then h[names[f[1]]] = float(f[3], 1, 8)
    elseif f[1] == 6 then h.bucket_limit = doubles(f[3])
    elseif f[1] == 7 then h.bucket = doubles(f[3]) end
  end
  return h
end

--- The events of a file: {wall_time, step, file_version, values = {[tag] = number or histogram}}.
local function read_events(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  local events, i = {}, 1
  while i <= #s do
    local len = uint(s, i, 8)
    assert.are.equal(masked(s:sub(i, i + 7)), uint(s, i + 8, 4), "length CRC")
    local data = s:sub(i + 12, i + 11 + len)
    assert.are.equal(len, #data, "truncated record")
    assert.are.equal(masked(data), uint(s, i + 12 + len, 4), "data CRC")
    i = i + 16 + len
    local ev = { step = 0, values = {}, tags = {} }
    for _, fe in ipairs(fields(data)) do
      if fe[1] == 1 then ev.wall_time = float(fe[3], 1, 8)
      elseif fe[1] == 2 then ev.step = fe[3]
      elseif fe[1] == 3 then ev.file_version = fe[3]
      elseif fe[1] == 5 then
        for _, v in ipairs(fields(fe[3])) do
          assert.are.equal(1, v[1])
          local tag, value
          for _, vf in ipairs(fields(v[3])) do
            if vf[1] == 1 then tag = vf[3]
            elseif vf[1] == 2 then value = float(vf[3], 1, 4)
            elseif vf[1] == 5 then value = parse_histo(vf[3]) end
          end
          ev.values[tag] = value
          ev.tags[#ev.tags + 1] = tag
        end
      end
    end
    events[#events + 1] = ev
  end
  return events
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

local function files_in(dir)
  local p = io.popen("ls '" .. dir .. "'")
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- The specs --------------------------------------------------------------------------------

describe("the spec's event reader", function()
  it("has the standard CRC32C", function()
    assert.are.equal(0xE3069283, crc32c("123456789"))
    assert.are.equal(0, crc32c(""))
  end)
end)

describe("cell.train.tfevents", function()
  local tf = require "cell.train.tfevents"
  it("computes CRC32C as the bit-at-a-time reference does", function()
    for _, s in ipairs { "", "a", "123456789", string.rep("\255\0\127", 50), "brain.Event:2" } do
      assert.are.equal(crc32c(s), tf.crc32c(s))
      assert.are.equal(masked(s), tf.masked_crc32c(s))
    end
  end)

  it("writes IEEE floats that read back", function()
    for _, x in ipairs { 0, 1, -2.5, 0.1, 1e-300, 5e-324, 123456789.123, -1 / 0 } do
      assert.are.equal(x, float(tf.float64(x), 1, 8))
    end
    assert.are.equal("\0\0\128\63", tf.float32(1))
    assert.are.equal(0.1, tonumber(("%.7g"):format(float(tf.float32(0.1), 1, 4))))
    assert.are.equal(1 / 0, float(tf.float32(1e39), 1, 4))
    assert.are.equal(2 ^ -149, float(tf.float32(1e-45), 1, 4))
    assert.is_true(float(tf.float64(0 / 0), 1, 8) ~= float(tf.float64(0 / 0), 1, 8))
    assert.are.equal("\172\2", tf.varint(300))
  end)
end)

describe("train.SummaryRecord", function()
  it("writes the file_version event, then one event per record, scalars and histograms", function()
    local dir = tmpdir()
    local rec = train.SummaryRecord { log_dir = dir, clock = function() return 1700000000.5 end }
    local name = rec.file_path:match("[^/]+$")
    assert.is_truthy(name:find("^events%.out%.tfevents%.1700000000%.[%w%.%-_]+$"), name)
    rec:add_value("scalar", "loss", cell.tensor(0.25))
    rec:add_value("scalar", "lr", 0.1)
    local w = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    rec:add_value("histogram", "w", w)
    assert.is_true(rec:record(7))
    assert.is_false(rec:record(8)) -- nothing added
    rec:add_value("scalar", "loss", 0.125)
    rec:record(9)
    rec:flush()
    rec:close()
    local ev = read_events(rec.file_path)
    assert.are.equal(3, #ev)
    assert.are.equal("brain.Event:2", ev[1].file_version)
    assert.are.equal(1700000000.5, ev[1].wall_time)
    assert.are.equal(7, ev[2].step)
    assert.are.same({ "loss", "lr", "w" }, ev[2].tags)
    assert.are.equal(0.25, ev[2].values.loss)
    assert.is_true(math.abs(ev[2].values.lr - 0.1) < 1e-8)
    local h = ev[2].values.w
    assert.are.same({ 1, 6, 6, 21, 91 }, { h.min, h.max, h.num, h.sum, h.sum_squares })
    assert.are.equal(30, #h.bucket)
    assert.are.equal(6, h.bucket_limit[30])
    local total = 0
    for i = 1, 30 do total = total + h.bucket[i] end
    assert.are.equal(6, total)
    assert.are.equal(1, h.bucket[1])  -- [1, 1 + 5/30)
    assert.are.equal(1, h.bucket[30]) -- 6
    assert.are.equal(9, ev[3].step)
    assert.are.equal(0.125, ev[3].values.loss)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("names bad use", function()
    local dir = tmpdir()
    local rec = train.SummaryRecord(dir)
    assert.are.equal("ValueError: For 'add_value', the 'plugin' must be 'scalar' or 'histogram', but got 'image'.",
      err(function() rec:add_value("image", "x", cell.ones({ 1 })) end))
    assert.are.equal("ValueError: For 'add_value', a scalar must have one element, but 'x' has shape (2,).",
      err(function() rec:add_value("scalar", "x", cell.ones({ 2 })) end))
    assert.are.equal("TypeError: For 'add_value', the histogram 'x' must be a Tensor, but got number.",
      err(function() rec:add_value("histogram", "x", 1) end))
    assert.are.equal("ValueError: For 'record', the 'step' must be an integer >= 0, but got -1.",
      err(function() rec:record(-1) end))
    rec:close()
    assert.are.equal("RuntimeError: For 'SummaryRecord.record', the SummaryRecord is closed.",
      err(function() rec:record(1) end))
    assert.are.equal("TypeError: For 'SummaryRecord', the 'log_dir' must be a path (a non-empty string), but got number.",
      err(function() train.SummaryRecord(3) end))
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)

describe("train.SummaryCollector", function()
  it("writes the loss, the learning rate, parameter histograms and eval results during Model:fit", function()
    local dir = tmpdir()
    cell.set_seed(2)
    local net = nn.SequentialCell { nn.Dense(2, 4), nn.ReLU(), nn.Dense(4, 2) }
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.05), { "accuracy" })
    local x = cell.randn({ 6, 2 })
    local y = cell.tensor({ 1, 2, 1, 2, 1, 2 }, cell.int64)
    local ds = { { x, y }, { x, y } }
    local losses = {}
    local spy = train.LambdaCallback { on_train_step_end = function(rc) losses[rc.cur_step_num] = rc.net_outputs:item() end }
    model:fit(2, ds, ds, 1, { spy, train.SummaryCollector { summary_dir = dir, collect_freq = 2 } }, { progress = false })
    local files = files_in(dir)
    assert.are.equal(1, #files)
    local ev = read_events(dir .. "/" .. files[1])
    -- version; steps 1, 2; eval at epoch 1 (step 2); step 4; eval at epoch 2 (step 4)
    local steps = {}
    for i = 2, #ev do steps[#steps + 1] = ev[i].step end
    assert.are.same({ 1, 2, 2, 4, 4 }, steps)
    for _, i in ipairs { 2, 3, 5 } do
      local e = ev[i]
      assert.is_true(math.abs(e.values.loss - losses[e.step]) <= 1e-6 * math.abs(losses[e.step]))
      assert.is_true(math.abs(e.values.learning_rate - 0.05) < 1e-8)
      assert.are.equal(8, e.values["0.weight"].num)
      assert.are.equal(2, e.values["2.bias"].num)
    end
    assert.are.same({ "eval_accuracy" }, ev[4].tags)
    assert.are.equal(model:eval(ds).accuracy, ev[6].values.eval_accuracy)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("names bad arguments", function()
    assert.are.equal("ValueError: For 'SummaryCollector', the 'collect_freq' must be a positive integer, but got 0.",
      err(function() train.SummaryCollector("d", 0) end))
    assert.are.equal("ValueError: For 'SummaryCollector', the key 'collect_graph' of 'collect_specified_data' is not "
      .. "one of collect_metric, collect_learning_rate, histogram_regular.",
      err(function() train.SummaryCollector { summary_dir = "d", collect_specified_data = { collect_graph = true } } end))
  end)
end)
