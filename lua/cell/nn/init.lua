--- cell.nn: cells (MindSpore's nn.Cell and the layers built on it).
-- `cell.nn.Cell` is the base class; layers load on first use.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local Cell = require "cell.nn.cell"

local nn = {
  Cell = Cell,
  register_cell_buffer_registration_hook = Cell.register_cell_buffer_registration_hook,
}

--- Layer name -> module that defines it.
local layers = {
  Dense = "cell.nn.dense",
  ReLU = "cell.nn.activation", Sigmoid = "cell.nn.activation", Tanh = "cell.nn.activation",
}

return setmetatable(nn, {
  __index = function(t, k)
    local mod = layers[k]
    if mod == nil then return nil end
    local m = require(mod)
    for name, v in pairs(m) do rawset(t, name, v) end
    return rawget(t, k)
  end,
})
