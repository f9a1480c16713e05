--- The rest of MindSpore's Cell methods that mean something when a cell
-- runs op by op (PyNative): parameter-name checks, scopes, the broadcast
-- and boost flags, the cell type, declared inputs and the mixed-precision
-- casts. Graph compilation, sharding and pipeline stages have no meaning
-- here and are not defined.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local OrderedDict = require "cell.ordered_dict"
local R = require "cell.nn.registry"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local checks = require "cell.util.checks"

local S, type_name = I.S, T.type_name

local M = {}

function M.install(Cell)
  --- check_names(): a ValueError when two Parameters of the tree (as
  -- parameters_and_names walks it) carry one name.
  function Cell:check_names()
    local seen = {}
    for path, p in self:parameters_and_names() do
      local name = p.name
      if seen[name] then
        raise(("ValueError: The value of %s is %s, its name '%s' already exists. Please set a unique name for "
          .. "the parameter."):format(path, tostring(p), tostring(name)))
      end
      seen[name] = true
    end
  end

  --- get_scope(): the cell's scope as generate_scope set it ("Default/
  -- name-Class/..."), nil before (and for the cell generate_scope ran on).
  function Cell:get_scope() return rawget(self, S).scope end

  --- generate_scope(): each sub-cell's scope, its path from "Default" with
  -- each step "name-ClassName" (MindSpore's reserve_class_name_in_scope).
  -- A scope once set is kept.
  function Cell:generate_scope()
    local function walk(c, prefix, seen)
      for name, child in R.each(rawget(c, S).cells) do
        if child ~= nil and not seen[child] then
          seen[child] = true
          local scope = prefix .. "/" .. name .. "-" .. child.cls_name
          local st = rawget(child, S)
          if st.scope == nil then st.scope = scope end
          walk(child, scope, seen)
        end
      end
    end
    walk(self, "Default", { [self] = true })
  end

  --- set_broadcast_flag([mode = true]): records the broadcast_flag flag;
  -- returns self.
  function Cell:set_broadcast_flag(mode)
    mode = checks.bool("set_broadcast_flag", "mode", mode, true)
    return self:add_flags { broadcast_flag = mode }
  end

  --- set_boost(boost_type): "less_bn", the only algorithm MindSpore
  -- lists, recorded as the less_bn flag on every cell; returns self.
  function Cell:set_boost(boost_type)
    if boost_type ~= "less_bn" then
      raise(("ValueError: For 'set_boost', the argument 'boost_type' should be 'less_bn', but got %s.")
        :format(type(boost_type) == "string" and boost_type or type_name(boost_type)))
    end
    return self:add_flags_recursive { less_bn = true }
  end

  --- update_cell_type(cell_type): sets the cell_type attribute ("quant" or
  -- "second-order" in MindSpore's words).
  function Cell:update_cell_type(cell_type)
    if type(cell_type) ~= "string" then
      raise(("TypeError: update_cell_type: cell_type must be a string, but got %s"):format(type_name(cell_type)))
    end
    self.cell_type = cell_type
  end

  --- parameters_broadcast_dict([recurse = true]): name -> Parameter for
  -- the Parameters not marked layerwise_parallel (an OrderedDict), or nil
  -- when there are none.
  function Cell:parameters_broadcast_dict(recurse)
    recurse = checks.bool("parameters_broadcast_dict", "recurse", recurse, true)
    local d, any = OrderedDict(), false
    for p in self:get_parameters(recurse) do
      if not p.layerwise_parallel then
        d[p.name] = p
        any = true
      end
    end
    return any and d or nil
  end

  --- set_inputs(...): records the inputs the cell is declared to take
  -- (MindSpore uses them to compile for dynamic shapes; here get_inputs
  -- returns them). Each must be a Tensor.
  function Cell:set_inputs(...)
    local n, inputs = select("#", ...), { ... }
    for i = 1, n do
      if not core.is_tensor(inputs[i]) then
        raise(("TypeError: set_inputs: input %d must be a Tensor, but got %s"):format(i, type_name(inputs[i])))
      end
    end
    rawget(self, S).inputs = inputs
  end

  --- get_inputs(): the list set_inputs recorded, or nil.
  function Cell:get_inputs() return rawget(self, S).inputs end

  --- cast_param(param): param as the cell computes with it: cast to the
  -- to_float dtype when one is set and param is floating-point of another
  -- dtype (a differentiable cast), else param itself.
  function Cell:cast_param(param)
    if not core.is_tensor(param) then
      raise(("TypeError: cast_param: param must be a Parameter or Tensor, but got %s"):format(type_name(param)))
    end
    local dt = rawget(self, S).mixed
    if dt and param.dtype.is_floating_point and param.dtype ~= dt then return param:astype(dt) end
    return param
  end

  --- auto_cast_inputs(inputs): a new sequence with inputs' floating-point
  -- Tensors (in nested sequences too) cast to the to_float dtype; other
  -- values as they are. inputs itself when no dtype is set.
  function Cell:auto_cast_inputs(inputs)
    if type(inputs) ~= "table" or core.is_tensor(inputs) then
      raise(("TypeError: auto_cast_inputs: inputs must be a sequence, but got %s"):format(type_name(inputs)))
    end
    local dt = rawget(self, S).mixed
    if not dt then return inputs end
    local function cast(list)
      local out = {}
      for i = 1, #list do
        local v = list[i]
        if core.is_tensor(v) then
          if v.dtype.is_floating_point and v.dtype ~= dt then v = v:astype(dt) end
        elseif type(v) == "table" and getmetatable(v) == nil then
          v = cast(v)
        end
        out[i] = v
      end
      return out
    end
    return cast(inputs)
  end
end

return M
