--- cell.train.tfevents: TensorBoard's event file format, written by hand.
--
-- A file is a sequence of records:
--
--     uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes
--     data (length bytes)           | uint32 masked CRC32C of the data
--
-- where masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2^32)
-- and CRC32C is the Castagnoli CRC (reflected polynomial 0x82F63B78). Each
-- record holds one Event protocol buffer:
--
--     Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
--     Summary { repeated Value value = 1; }
--     Value   { string tag = 1; float simple_value = 2; HistogramProto histo = 5; }
--     HistogramProto { double min = 1, max = 2, num = 3, sum = 4, sum_squares = 5;
--                      repeated double bucket_limit = 6 [packed]; repeated double bucket = 7 [packed]; }
--
-- Everything here is arithmetic on Lua numbers (no bitwise operators, no
-- string.pack), so it runs the same on Lua 5.4 and LuaJIT 2.1.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local floor = math.floor
local char, byte = string.char, string.byte
local concat = table.concat

local M = {}

-- CRC32C --------------------------------------------------------------------------------

local XOR8 -- XOR8[a * 256 + b + 1] = a xor b, for bytes a, b
local CRC_T -- the byte-at-a-time table

local function build_tables()
  XOR8 = {}
  for a = 0, 255 do
    for b = 0, 255 do
      local r, bit, x, y = 0, 1, a, b
      for _ = 1, 8 do
        if x % 2 ~= y % 2 then r = r + bit end
        x, y, bit = floor(x / 2), floor(y / 2), bit * 2
      end
      XOR8[a * 256 + b + 1] = r
    end
  end
  CRC_T = {}
  for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
      if c % 2 == 1 then c = M.xor32(floor(c / 2), 0x82F63B78) else c = floor(c / 2) end
    end
    CRC_T[i + 1] = c
  end
end

--- a xor b for integers in [0, 2^32).
function M.xor32(a, b)
  if XOR8 == nil then build_tables() end
  local r, scale = 0, 1
  for _ = 1, 4 do
    local x, y = a % 256, b % 256
    r = r + XOR8[x * 256 + y + 1] * scale
    a, b, scale = (a - x) / 256, (b - y) / 256, scale * 256
  end
  return r
end

local xor32 = M.xor32

--- The CRC32C of string s (continuing crc, 0 for a new one), an integer in [0, 2^32).
function M.crc32c(s, crc)
  if XOR8 == nil then build_tables() end
  local c = 0xFFFFFFFF - (crc or 0) -- ~crc
  local x8, t = XOR8, CRC_T
  for i = 1, #s do
    local low = c % 256
    local idx = x8[low * 256 + byte(s, i) + 1]
    c = xor32((c - low) / 256, t[idx + 1])
  end
  return 0xFFFFFFFF - c
end

--- The masked CRC32C TensorBoard's records carry.
function M.masked_crc32c(s)
  local c = M.crc32c(s)
  local rot = floor(c / 32768) + (c % 32768) * 131072 -- rotate right by 15
  return (rot + 0xa282ead8) % 4294967296
end

-- Little-endian integers and IEEE floats ------------------------------------------------

--- n (an integer in [0, 2^53)) as `bytes` little-endian bytes.
function M.uint_le(n, bytes)
  local t = {}
  for i = 1, bytes do
    local b = n % 256
    t[i] = char(b)
    n = (n - b) / 256
  end
  return concat(t)
end

--- The exponent e with 2^e <= x < 2^(e+1), for a finite x > 0.
local function exponent(x)
  local e = floor(math.log(x) / math.log(2))
  while 2 ^ e > x do e = e - 1 end
  while 2 ^ (e + 1) <= x do e = e + 1 end
  return e
end

--- x as an IEEE 754 number of `bits` (32 or 64) bits, little-endian,
-- rounded to nearest even.
local function ieee(x, bits)
  local mbits, ebits = bits == 32 and 23 or 52, bits == 32 and 8 or 11
  local bias = 2 ^ (ebits - 1) - 1
  local emax = 2 ^ ebits - 1
  local sign = 0
  if x < 0 or (x == 0 and 1 / x < 0) then
    sign = 1
    x = -x
  end
  local e, m
  if x ~= x then
    e, m = emax, 2 ^ (mbits - 1)
  elseif x == math.huge then
    e, m = emax, 0
  elseif x == 0 then
    e, m = 0, 0
  else
    local ex = exponent(x)
    if ex < 1 - bias then -- subnormal
      e, m = 0, x / 2 ^ (1 - bias - mbits)
    else
      e, m = ex + bias, (x / 2 ^ ex - 1) * 2 ^ mbits
    end
    local fl = floor(m)
    local r = m - fl
    if r > 0.5 or (r == 0.5 and fl % 2 == 1) then fl = fl + 1 end
    m = fl
    if m >= 2 ^ mbits then -- rounded up into the next binade
      m = m - 2 ^ mbits
      e = e + 1
    end
    if e >= emax then e, m = emax, 0 end -- overflow: infinity
  end
  local v = (sign * 2 ^ ebits + e) * 2 ^ mbits + m -- may pass 2^53 for 64 bits: split
  if bits == 32 then return M.uint_le(v, 4) end
  local hi = sign * 2 ^ 31 + e * 2 ^ 20 + floor(m / 2 ^ 32)
  local lo = m % 2 ^ 32
  return M.uint_le(lo, 4) .. M.uint_le(hi, 4)
end

--- x as a little-endian float32 (4 bytes).
function M.float32(x) return ieee(x, 32) end
--- x as a little-endian float64 (8 bytes).
function M.float64(x) return ieee(x, 64) end

-- Protocol buffers ------------------------------------------------------------------------

--- n (an integer in [0, 2^53)) as a base-128 varint.
function M.varint(n)
  local t = {}
  while n >= 128 do
    local b = n % 128
    t[#t + 1] = char(b + 128)
    n = (n - b) / 128
  end
  t[#t + 1] = char(n)
  return concat(t)
end

local varint = M.varint

local function key(field, wire) return varint(field * 8 + wire) end
local function bytes_field(field, s) return key(field, 2) .. varint(#s) .. s end
local function double_field(field, x) return key(field, 1) .. M.float64(x) end

--- A HistogramProto from {min, max, num, sum, sum_squares, bucket_limit = {...}, bucket = {...}}.
function M.histogram_proto(h)
  local limits, counts = {}, {}
  for i = 1, #h.bucket_limit do limits[i] = M.float64(h.bucket_limit[i]) end
  for i = 1, #h.bucket do counts[i] = M.float64(h.bucket[i]) end
  return double_field(1, h.min) .. double_field(2, h.max) .. double_field(3, h.num) .. double_field(4, h.sum)
    .. double_field(5, h.sum_squares) .. bytes_field(6, concat(limits)) .. bytes_field(7, concat(counts))
end

--- A Summary.Value: {tag, simple_value = x} or {tag, histo = {...}}.
local function value_proto(v)
  local s = bytes_field(1, v.tag)
  if v.histo then return s .. bytes_field(5, M.histogram_proto(v.histo)) end
  return s .. key(2, 5) .. M.float32(v.simple_value)
end

--- An Event: wall_time (seconds), step (an integer >= 0), and either
-- file_version (a string) or values (a list for value_proto).
function M.event(wall_time, step, file_version, values)
  local s = double_field(1, wall_time)
  if step ~= 0 then s = s .. key(2, 0) .. varint(step) end
  if file_version then s = s .. bytes_field(3, file_version) end
  if values then
    local parts = {}
    for i, v in ipairs(values) do parts[i] = bytes_field(1, value_proto(v)) end
    s = s .. bytes_field(5, concat(parts))
  end
  return s
end

--- data framed as one record: length, its masked CRC, data, its masked CRC.
function M.record(data)
  local len = M.uint_le(#data, 8)
  return len .. M.uint_le(M.masked_crc32c(len), 4) .. data .. M.uint_le(M.masked_crc32c(data), 4)
end

return M
