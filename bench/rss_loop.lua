--- rss_loop.lua - peak resident memory of a loop that makes a temporary
-- tensor per iteration and never calls collectgarbage(): it stays flat only
-- if the collector is told how many bytes each tensor holds.
-- Prints `lua_add_1000_loop_peak_rss X MiB`.
-- Usage: lua5.4 bench/rss_loop.lua [iterations]  (default 1e6)
local cell = require "cell"

local N = math.floor(tonumber(arg and arg[1]) or 1e6)

local proc = dofile((arg and arg[0] or "bench/rss_loop.lua"):gsub("[^/]*$", "") .. "proc.lua")

local a = cell.rand({ 1000 })
local b = cell.rand({ 1000 })
local c
for _ = 1, N do
  c = a + b
end
assert(c:numel() == 1000)

local rss = proc.status_mib("VmHWM")
if rss then
  print(("lua_add_1000_loop_peak_rss %.1f MiB"):format(rss))
else
  print("lua_add_1000_loop_peak_rss: /proc/self/status not available, skipped")
end
