--- The public surface of cell, walked from the loaded modules: every name a
-- user can call or instantiate, as the reference (docs/reference/*.md)
-- spells it in its `### \`name\`` headings.
--
--     local names = require("helpers.public_names").lua()  --> { {name =, value =}, ... }
--     local c = require("helpers.public_names").c("include")  --> { "cell_tensor_new", ... }
--
-- Spelling: `cell.zeros`, `cell.ops.conv2d`, `Tensor:sum`, `Parameter:set_data`,
-- `nn.Dense`, `nn.Cell:state_dict`, `cell.train.Model:train`,
-- `cell.dataset.Batches:each`, `cell.ffi.ptr` (under LuaJIT only), C
-- functions by their own name. A function reachable under several names
-- (`cell.ops.add` is `Tensor:add`) is one name: the first one walked. A
-- class method counts once, under the class that first declares it, so an
-- override (`Dense:construct`) needs no entry of its own.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local cell = require "cell"
local core = require "cell.core"
local class = require "cell.class"

local M = {}

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" and k:sub(1, 1) ~= "_" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

local function callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

--- The members class cls declares itself and no ancestor has.
local function own_methods(cls)
  local out = {}
  local declared = rawget(cls, "__declared")
  local dict = rawget(cls, "__instance")
  local super = rawget(cls, "super")
  local super_dict = super and rawget(super, "__instance")
  for _, k in ipairs(sorted_keys(declared)) do
    local v = rawget(dict, k)
    if k ~= "init" and type(v) == "function" and not (super_dict and rawget(super_dict, k) ~= nil) then
      out[#out + 1] = k
    end
  end
  return out
end

--- The Parameter methods table (the __index of a Parameter's attributes).
function M.parameter_methods()
  return require("cell.parameter").methods
end

--- The class of the objects cell.dataset.batches returns.
function M.batches_class()
  local b = cell.dataset.batches(cell.zeros({ 2, 1 }), cell.zeros({ 2 }), 1)
  return getmetatable(b).__class
end

--- Every public Lua name: a sequence of {name =, value =}.
function M.lua()
  local out, seen = {}, {}
  local function add(name, v)
    if seen[v] then return end
    seen[v] = name
    out[#out + 1] = { name = name, value = v }
  end
  local function add_class(name, cls)
    add(name, cls)
    for _, k in ipairs(own_methods(cls)) do
      add(name .. ":" .. k, rawget(rawget(cls, "__instance"), k))
    end
  end
  --- The functions, classes and modules of table t, named prefix .. key.
  local function walk(prefix, t)
    for _, k in ipairs(sorted_keys(t)) do
      local v = t[k]
      if class.is_class(v) then
        add_class(prefix .. k, v)
      elseif callable(v) then
        add(prefix .. k, v)
      end
    end
  end
  -- the modules themselves
  for _, m in ipairs { "cell", "cell.ops", "cell.nn", "cell.dataset", "cell.train", "cell.doc", "cell.repl",
    "cell.communication", "cell.amp" } do
    add(m, require(m))
  end
  for _, k in ipairs(sorted_keys(core.Tensor)) do
    if type(core.Tensor[k]) == "function" then add("Tensor:" .. k, core.Tensor[k]) end
  end
  local P = M.parameter_methods()
  for _, k in ipairs(sorted_keys(P)) do add("Parameter:" .. k, P[k]) end
  walk("cell.", cell)
  walk("cell.init.", cell.init)
  walk("cell.ops.", cell.ops)
  local nn = cell.nn
  local _ = nn.Dense -- loads every cell.nn module
  walk("nn.", nn)
  local _ = cell.dataset.ImageFolderDataset -- lazily loaded (cell.dataset.vision)
  walk("cell.dataset.", cell.dataset)
  add_class("cell.dataset.Batches", M.batches_class())
  walk("cell.train.", cell.train)
  for _, m in ipairs { "transforms", "config", "vision" } do
    add("cell.dataset." .. m, cell.dataset[m])
    walk("cell.dataset." .. m .. ".", cell.dataset[m])
  end
  walk("cell.communication.", cell.communication)
  walk("cell.amp.", cell.amp)
  walk("cell.doc.", require "cell.doc")
  walk("cell.repl.", require "cell.repl")
  local ok, F = pcall(require, "cell.ffi")
  if ok then
    add("cell.ffi", F)
    walk("cell.ffi.", F)
  end
  return out
end

--- Every function the public C headers (dir/*.h) declare, sorted: the
-- CELL_API ones and those of cell_ffi.h (comments and preprocessor lines
-- removed, then each top-level statement with a '(' that is not a typedef).
function M.c(dir)
  local names, seen = {}, {}
  local p = io.popen("cat " .. dir .. "/*.h")
  local text = p:read("*a")
  p:close()
  text = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
  local kept = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if not line:match("^%s*#") then kept[#kept + 1] = line end
  end
  text = table.concat(kept, "\n")
  local depth, start = 0, 1
  for i = 1, #text do
    local c = text:sub(i, i)
    if c == "{" then
      depth = depth + 1
    elseif c == "}" then
      depth = depth - 1
      if depth == 0 then start = i + 1 end
    elseif c == ";" and depth == 0 then
      local stmt = text:sub(start, i)
      start = i + 1
      if stmt:find("(", 1, true) and not stmt:match("^%s*typedef") then
        local name = stmt:match("([%a_][%w_]*)%s*%(")
        if name and not seen[name] then
          seen[name] = true
          names[#names + 1] = name
        end
      end
    end
  end
  table.sort(names)
  return names
end

return M
