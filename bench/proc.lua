--- proc.lua - memory figures of this process for the benchmarks, read from
-- /proc/self/status (Linux); nil elsewhere.
local M = {}

--- The field (for example "VmRSS" or "VmHWM, the peak") in MiB, or nil.
function M.status_mib(field)
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  local kb = text:match(field .. ":%s*(%d+)%s*kB")
  return kb and tonumber(kb) / 1024
end

return M
