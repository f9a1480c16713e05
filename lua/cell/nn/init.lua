--- cell.nn: cells (MindSpore's nn.Cell and the layers built on it), losses,
-- optimizers and learning-rate schedules. `cell.nn.Cell` is the base class;
-- the other names load on first use from the modules listed below, each of
-- which returns a table of exported names.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local Cell = require "cell.nn.cell"
local lazy = require "cell.lazy"

local nn = {
  Cell = Cell,
  register_cell_buffer_registration_hook = Cell.register_cell_buffer_registration_hook,
}

--- The modules that export names into cell.nn (one line each).
local modules = {
  "cell.nn.dense",
  "cell.nn.activation",
  "cell.nn.activation_extra",
  "cell.nn.optim",
  "cell.nn.learning_rate",
  "cell.nn.lr_schedule",
  "cell.nn.wrap",
  "cell.nn.loss_scale",
  "cell.nn.conv",
  "cell.nn.pooling",
  "cell.nn.conv_nd",
  "cell.nn.pooling_nd",
  "cell.nn.resize",
  "cell.nn.normalization",
  "cell.nn.normalization_extra",
  "cell.nn.dropout",
  "cell.nn.basic",
  "cell.nn.container",
  "cell.nn.loss",
  "cell.nn.distributed",
  "cell.nn.attention",
  "cell.nn.transformer",
  "cell.nn.loss_extra",
  "cell.nn.rnn",
  "cell.nn.summary",
}

-- "idle" until the first lookup of a missing name, "loading" while the
-- modules load (a lookup from inside one of them finds nil rather than
-- recursing), "done" once all of them loaded. A failure (out of memory,
-- any error) goes back to "idle", so the next lookup tries again: a module
-- that failed is not in package.loaded, and those loaded before it keep
-- what they copied.
local state = "idle"

--- Load every module once and copy its exports into nn.
local function load_all(t)
  state = "loading"
  local current
  local ok, err = pcall(function()
    for _, name in ipairs(modules) do
      current = name
      local loaded, mod = lazy.require(name)
      if not loaded then error(mod, 0) end
      for k, v in pairs(mod) do
        if rawget(t, k) == nil then rawset(t, k, v) end
      end
    end
  end)
  state = ok and "done" or "idle"
  if not ok then error(lazy.message("cell.nn: loading " .. current .. " failed", err), 3) end
end

return setmetatable(nn, {
  __index = function(t, k)
    if state ~= "idle" then return nil end
    load_all(t)
    return rawget(t, k)
  end,
})
