--- A program on a pseudo-terminal, driven through tmux, for specs that must
-- see what a person at a terminal sees (the REPL's prompts, completion
-- lists, Ctrl-C).
--
--     local pty = require "helpers.pty"
--     local term = pty.start("bin/cell", { env = { HOME = dir } })
--     term:wait_last("^>$")            -- poll until the last line is the prompt
--     term:type("1 + 1"); term:key("Enter")
--     term:expect("^2$")               -- a new line of output matching
--     term:close()
--
-- Each terminal has its own tmux server (`tmux -L cell-spec-<pid>-<n>`, no
-- config file), so specs neither see nor disturb a user's sessions, and the
-- program's environment is the spec's own plus what `start` is given. When
-- the program exits, a line `[exited <status>]` follows its output and the
-- pane stays until `close`. Waits poll `capture-pane` (the whole scrollback)
-- every 50 ms until the expected text appears, and fail after a timeout
-- with the screen's text and whether the program still runs.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local P = {}

--- Seconds a wait polls before it fails (generous: an ASan build is slow).
P.timeout = 15

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
P.quote = quote

--- Run a shell command; returns its stdout and exit status (the same way
-- under Lua 5.4 and LuaJIT, whose os.execute differ).
local function sh(cmd)
  local p = io.popen("{ " .. cmd .. "; } 2>/dev/null; echo \"<rc=$?>\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.*)<rc=(%d+)>%s*$")
  return body or out, tonumber(rc)
end
P.sh = sh

local function sleep(s) sh("sleep " .. s) end
P.sleep = sleep

--- Whether tmux can be run here.
function P.available()
  local _, rc = sh("command -v tmux >/dev/null")
  return rc == 0
end

--- The id of this process (the parent of the shell io.popen starts).
local my_pid
local function pid()
  my_pid = my_pid or sh("echo $PPID"):match("%d+")
  return my_pid
end

local Term = {}
Term.__index = Term

local count = 0

--- Start `command` (a shell word list, already quoted as needed) on a new
-- terminal of opts.width x opts.height (120 x 40) with opts.env added to
-- the environment and opts.unset names removed from it.
function P.start(command, opts)
  opts = opts or {}
  assert(P.available(), "tmux is needed for the terminal specs (it is in `make deps`)")
  count = count + 1
  local name = ("cell-spec-%s-%d"):format(pid(), count)
  local env = { "env" }
  for _, k in ipairs(opts.unset or {}) do env[#env + 1] = "-u " .. k end
  local keys = {}
  for k in pairs(opts.env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do env[#env + 1] = quote(k .. "=" .. opts.env[k]) end
  local self = setmetatable({ name = name, tmux = "tmux -L " .. quote(name) .. " -f /dev/null" }, Term)
  -- After the program, a line with its exit status, and the pane stays
  -- (with its text) until close.
  local line = table.concat(env, " ") .. " " .. command .. '; echo "[exited $?]"; exec sleep 86400'
  local _, rc = sh(("%s new-session -d -x %d -y %d %s"):format(self.tmux, opts.width or 120, opts.height or 40,
    quote(line)))
  assert(rc == 0, "could not start tmux for: " .. line)
  return self
end

--- Type text literally (no key names).
function Term:type(text)
  sh(self.tmux .. " send-keys -l " .. quote(text))
end

--- Press keys by tmux name: "Enter", "Tab", "C-c", "C-d", "Up", ...
function Term:key(...)
  local names = {}
  for i = 1, select("#", ...) do names[i] = quote((select(i, ...))) end
  sh(self.tmux .. " send-keys " .. table.concat(names, " "))
end

--- Type a line and press Enter.
function Term:line(text)
  self:type(text)
  self:key("Enter")
end

--- The terminal's text, scrollback included, trailing blanks removed.
function Term:screen()
  local out = sh(self.tmux .. " capture-pane -p -J -S -")
  local lines = {}
  for l in (out .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = (l:gsub("%s+$", "")) end
  while #lines > 0 and lines[#lines] == "" do lines[#lines] = nil end
  return lines
end

--- The program's exit status once it has exited, else nil.
function Term:exited()
  local lines = self:screen()
  for i = #lines, 1, -1 do
    local rc = lines[i]:match("^%[exited (%d+)%]$")
    if rc then return tonumber(rc) end
  end
  return nil
end

--- Poll until pred(lines) returns a true value, and return it; fail with
-- what the screen shows after P.timeout seconds.
function Term:wait(pred, what)
  local deadline = os.time() + P.timeout
  local lines
  repeat
    lines = self:screen()
    local r = pred(lines)
    if r then return r end
    sleep(0.05)
  until os.time() > deadline
  local _, alive = sh(self.tmux .. " has-session")
  local rc = alive == 0 and self:exited()
  local state = alive ~= 0 and "its tmux server is gone" or rc and ("the program exited with " .. rc) or "it runs"
  error(("timed out waiting for %s (%s); the terminal shows:\n%s"):format(what, state, table.concat(lines, "\n")), 2)
end

--- The index of the first line from `from` (default 1) matching the Lua
-- pattern, waiting for one to appear.
function Term:wait_line(pattern, from)
  return self:wait(function(lines)
    for i = from or 1, #lines do
      if lines[i]:find(pattern) then return i end
    end
    return nil
  end, "a line matching " .. ("%q"):format(pattern))
end

--- Wait for a line matching pattern below the last line an expect found
-- (the first one at the start), and return its text; later expects look
-- below it. So a spec reads as a transcript, each step seeing only new
-- output.
function Term:expect(pattern)
  local i = self:wait_line(pattern, (self.cursor or 0) + 1)
  self.cursor = i
  return self:screen()[i]
end

--- Wait until the last line of the screen matches pattern (a prompt, say).
function Term:wait_last(pattern)
  return self:wait(function(lines)
    return #lines > 0 and lines[#lines]:find(pattern) ~= nil and #lines
  end, "the last line to match " .. ("%q"):format(pattern))
end

--- Stop the program and its tmux server, and remove the server's socket
-- (kill-server leaves it behind).
function Term:close()
  local socket = sh(self.tmux .. " display-message -p '#{socket_path}'"):match("^(/[^\n]+)")
  sh(self.tmux .. " kill-server")
  if socket then os.remove(socket) end
end

return P
