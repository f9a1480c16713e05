-- threads.lua - the thread specs' common check (spec/ops/threads*_spec.lua):
-- a function's float32 results and the gradients of sum(result * gy) at 1
-- and at 2 threads, compared with each other and with the same computation
-- in float64.
local cell = require "cell"
local H = require "helpers"

local f64 = cell.float64
local M = {}

--- fn() at n threads, the count set back afterwards even when fn raises.
function M.at(n, fn)
  local prev = cell.get_num_threads()
  cell.set_num_threads(n)
  local ok, res = pcall(fn)
  cell.set_num_threads(prev)
  assert(ok, res)
  return res
end

--- fn(x, ...) -> outputs, and the gradients of sum(outputs[1] * gy) with
-- respect to the arguments, all as float64 tables, at n threads.
function M.run_at(n, fn, args, gy)
  return M.at(n, function()
    local idx = {}
    for i = 1, #args do idx[i] = i end
    local out = { fn(H.unpack(args)) }
    local g = cell.grad(function(...) return (fn(...) * gy):sum() end, idx)(H.unpack(args))
    if cell.is_tensor(g) then g = { g } end
    local r = {}
    for _, t in ipairs(out) do r[#r + 1] = t:astype(f64):totable() end
    for _, t in ipairs(g) do r[#r + 1] = t:astype(f64):totable() end
    return r
  end)
end

--- A tolerance for result k: t itself, or t[k] when t is a list; nil is 0.
local function tol_of(t, k)
  if type(t) == "table" then t = t[k] end
  return t or 0
end

--- fn at 1 and 2 threads in float32 (within tol2, 0 or nil: identical), and
-- in float64 (within tol). Either tolerance is a number or one per result.
function M.check(name, fn, args32, gy32, tol, tol2)
  local one = M.run_at(1, fn, args32, gy32)
  local two = M.run_at(2, fn, args32, gy32)
  for k = 1, #one do H.assert_close(two[k], one[k], tol_of(tol2, k), name .. " result " .. k .. " (2 threads)") end
  local args64 = {}
  for i, a in ipairs(args32) do args64[i] = a:astype(f64) end
  local ref = M.run_at(1, fn, args64, gy32:astype(f64))
  for k = 1, #one do H.assert_close(one[k], ref[k], tol_of(tol, k), name .. " result " .. k .. " (float64)") end
end

return M
