--- cell.nn: cells (MindSpore's nn.Cell and the layers built on it), losses,
-- optimizers and learning-rate schedules. `cell.nn.Cell` is the base class;
-- the other names load on first use from the modules listed below, each of
-- which returns a table of exported names.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local Cell = require "cell.nn.cell"

local nn = {
  Cell = Cell,
  register_cell_buffer_registration_hook = Cell.register_cell_buffer_registration_hook,
}

--- The modules that export names into cell.nn (one line each).
local modules = {
  "cell.nn.dense",
  "cell.nn.activation",
  "cell.nn.optim",
  "cell.nn.learning_rate",
  "cell.nn.wrap",
  "cell.nn.conv",
  "cell.nn.pooling",
  "cell.nn.normalization",
  "cell.nn.dropout",
  "cell.nn.basic",
  "cell.nn.container",
  "cell.nn.loss",
}

local loaded = false

--- Load every module once and copy its exports into nn.
local function load_all(t)
  loaded = true
  for _, name in ipairs(modules) do
    for k, v in pairs(require(name)) do
      if rawget(t, k) == nil then rawset(t, k, v) end
    end
  end
end

return setmetatable(nn, {
  __index = function(t, k)
    if loaded then return nil end
    load_all(t)
    return rawget(t, k)
  end,
})
