--- cell.ops.einsum: Einstein summation over tensors, lowered to the
-- engine's views, sums and batched matrix products.
--
-- The equation names each operand's dimensions with letters (a-z, A-Z),
-- operands separated by commas, optionally `->` and the output's letters.
-- `...` stands for the dimensions no letter names (broadcast across
-- operands). Without `->` the output is `...` then the letters that appear
-- exactly once, in alphabetical order (upper case first), as in PyTorch and
-- NumPy. A letter repeated within one operand takes its diagonal; a letter
-- absent from the output is summed over.
--
-- Lowering: each operand first takes its diagonals and sums the letters no
-- other operand and not the output uses; then the operands are contracted
-- left to right, two at a time, each pair permuted and reshaped to
-- (batch, rows, k) and (batch, k, cols) for one bmm, so a batched
-- contraction runs at gemm speed. Every step is a differentiable op, so
-- gradients come from their rules.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local errors = require "cell.errors"
local raise = errors.raise
local core = require "cell.core"

local M = {}

local function fail(fmt, ...)
  raise("ValueError: einsum: " .. fmt:format(...))
end

local function is_letter(c)
  return (c >= "a" and c <= "z") or (c >= "A" and c <= "Z")
end

--- One term ("ab...c") as a list of labels; "..." becomes the label "...".
local function parse_term(term, where)
  local labels, i, seen_ellipsis = {}, 1, false
  while i <= #term do
    local c = term:sub(i, i)
    if c == "." then
      if term:sub(i, i + 2) ~= "..." then
        fail("%s: a '.' that is not part of '...' in '%s'", where, term)
      end
      if seen_ellipsis then fail("%s: more than one '...' in '%s'", where, term) end
      seen_ellipsis = true
      labels[#labels + 1] = "..."
      i = i + 3
    elseif is_letter(c) then
      labels[#labels + 1] = c
      i = i + 1
    else
      fail("%s: invalid subscript '%s' in '%s' (subscripts are letters a-z, A-Z and '...')", where, c, term)
    end
  end
  return labels, seen_ellipsis
end

--- The equation's input terms and output term (nil when implicit).
local function parse(equation)
  if type(equation) ~= "string" then
    raise(("TypeError: einsum: the equation must be a string, got %s"):format(type(equation)))
  end
  local eq = equation:gsub("%s", "")
  local lhs, rhs = eq, nil
  local arrow = eq:find("->", 1, true)
  if arrow then
    lhs, rhs = eq:sub(1, arrow - 1), eq:sub(arrow + 2)
    if rhs:find("->", 1, true) then fail("more than one '->' in '%s'", equation) end
  elseif eq:find("-", 1, true) or eq:find(">", 1, true) then
    fail("a '-' or '>' that is not part of '->' in '%s'", equation)
  end
  local terms = {}
  local start = 1
  while true do
    local comma = lhs:find(",", start, true)
    terms[#terms + 1] = lhs:sub(start, (comma or (#lhs + 1)) - 1)
    if not comma then break end
    start = comma + 1
  end
  local inputs = {}
  for k, term in ipairs(terms) do
    local labels, ell = parse_term(term, ("operand %d"):format(k))
    inputs[k] = { labels = labels, ellipsis = ell }
  end
  local output
  if rhs then
    if rhs:find(",", 1, true) then fail("the output '%s' has a ','", rhs) end
    local labels = parse_term(rhs, "output")
    local seen = {}
    for _, l in ipairs(labels) do
      if seen[l] then fail("the output subscript '%s' appears more than once in '%s'", l, rhs) end
      seen[l] = true
    end
    output = labels
  end
  return inputs, output
end

--- The einsum of the operands (a list of tensors) under equation.
local function einsum(equation, operands)
  local inputs, output = parse(equation)
  if #inputs ~= #operands then
    fail("the equation '%s' names %d operand(s) but %d tensor(s) were given", equation, #inputs, #operands)
  end
  -- the number of dims "..." covers: the most any operand needs
  local n_ell = 0
  for k, inp in ipairs(inputs) do
    local t = operands[k]
    local nd = t.ndim
    local named = #inp.labels - (inp.ellipsis and 1 or 0)
    if inp.ellipsis then
      if named > nd then
        fail("operand %d has %d dimension(s) but its subscripts name %d", k, nd, named)
      end
      n_ell = math.max(n_ell, nd - named)
    elseif named ~= nd then
      fail("operand %d has %d dimension(s) but its subscripts '%s' name %d", k, nd,
        table.concat(inp.labels), named)
    end
  end
  -- expand "..." into labels "\1", "\2", ... (right-aligned across operands)
  local ell_labels = {}
  for i = 1, n_ell do ell_labels[i] = "\1" .. i end
  local ops_labels, ts = {}, {}
  for k, inp in ipairs(inputs) do
    local t = operands[k]
    local labels = {}
    if inp.ellipsis then
      local named = #inp.labels - 1
      local have = t.ndim - named
      for _, l in ipairs(inp.labels) do
        if l == "..." then
          -- missing leading ellipsis dims become size-1 dims
          for _ = 1, n_ell - have do t = t:unsqueeze(#labels + 1); labels[#labels + 1] = "" end
          for i = n_ell - have + 1, n_ell do labels[#labels + 1] = ell_labels[i] end
        else
          labels[#labels + 1] = l
        end
      end
      -- name the inserted dims
      local j = 0
      for i = 1, #labels do
        if labels[i] == "" then j = j + 1; labels[i] = ell_labels[j] end
      end
    else
      for _, l in ipairs(inp.labels) do labels[#labels + 1] = l end
    end
    ops_labels[k], ts[k] = labels, t
  end
  -- sizes: equal, or 1 (broadcast)
  local size, count, first_op = {}, {}, {}
  for k, labels in ipairs(ops_labels) do
    local shape = ts[k].shape
    local here = {}
    for d, l in ipairs(labels) do
      if here[l] and shape[here[l]] ~= shape[d] then
        fail("subscript '%s' is repeated in operand %d with sizes %d and %d", l, k, shape[here[l]], shape[d])
      end
      here[l] = here[l] or d
    end
    for d, l in ipairs(labels) do
      count[l] = (count[l] or 0) + 1
      local n = shape[d]
      if size[l] == nil or (size[l] == 1 and n ~= 1) then
        size[l], first_op[l] = n, k
      elseif n ~= size[l] and n ~= 1 then
        local shown = l:sub(1, 1) == "\1" and "..." or l
        fail("subscript '%s' has size %d in operand %d but %d in operand %d", shown, n, k, size[l], first_op[l])
      end
    end
  end
  -- the output labels
  local out = {}
  if output then
    for _, l in ipairs(output) do
      if l == "..." then
        for i = 1, n_ell do out[#out + 1] = ell_labels[i] end
      else
        if not count[l] then fail("the output subscript '%s' does not appear in the inputs", l) end
        out[#out + 1] = l
      end
    end
  else
    for i = 1, n_ell do out[#out + 1] = ell_labels[i] end
    local once = {}
    for l, c in pairs(count) do
      if c == 1 and l:sub(1, 1) ~= "\1" then once[#once + 1] = l end
    end
    -- count[l] counts occurrences; a letter repeated in one operand counts twice
    table.sort(once)
    for _, l in ipairs(once) do out[#out + 1] = l end
  end
  local in_out = {}
  for _, l in ipairs(out) do in_out[l] = true end

  -- 1. each operand: diagonals, then sum the letters used nowhere else
  for k = 1, #ts do
    local t, labels = ts[k], ops_labels[k]
    local d = 1
    while d <= #labels do
      local l = labels[d]
      local e = nil
      for j = d + 1, #labels do
        if labels[j] == l then e = j; break end
      end
      if e then
        -- the diagonal of dims d and e: keep where index_d == index_e, sum over e
        local n = t.shape[d]
        if t.shape[e] ~= n then
          fail("subscript '%s' is repeated in operand %d with sizes %d and %d", l, k, n, t.shape[e])
        end
        local shape = {}
        for j = 1, t.ndim do shape[j] = 1 end
        shape[d], shape[e] = n, n
        local eye = core.eye(n, t.dtype == core.bool and core.int64 or t.dtype):reshape(shape)
        t = (t * eye):sum(e)
        table.remove(labels, e)
      else
        d = d + 1
      end
    end
    local local_count = {}
    for _, l in ipairs(labels) do local_count[l] = (local_count[l] or 0) + 1 end
    local others = {}
    for j = 1, #ts do
      if j ~= k then for _, l in ipairs(ops_labels[j]) do others[l] = true end end
    end
    local dims, keep = {}, {}
    for j, l in ipairs(labels) do
      if not in_out[l] and not others[l] then dims[#dims + 1] = j else keep[#keep + 1] = l end
    end
    if #dims > 0 then t = t:sum(dims) end
    ts[k], ops_labels[k] = t, keep
  end

  -- 2. contract left to right
  local t, labels = ts[1], ops_labels[1]
  for k = 2, #ts do
    local b, bl = ts[k], ops_labels[k]
    local later = {}
    for j = k + 1, #ts do for _, l in ipairs(ops_labels[j]) do later[l] = true end end
    local in_a, in_b = {}, {}
    for j, l in ipairs(labels) do in_a[l] = j end
    for j, l in ipairs(bl) do in_b[l] = j end
    local batch, contract, aonly, bonly = {}, {}, {}, {}
    for _, l in ipairs(labels) do
      if in_b[l] then
        if in_out[l] or later[l] then batch[#batch + 1] = l else contract[#contract + 1] = l end
      else
        aonly[#aonly + 1] = l
      end
    end
    for _, l in ipairs(bl) do
      if not in_a[l] then bonly[#bonly + 1] = l end
    end
    -- broadcast size-1 shared dims to the other operand's size
    local function full(x, xl)
      local shape, need = x.shape, false
      for j, l in ipairs(xl) do
        if shape[j] ~= size[l] then shape[j] = size[l]; need = true end
      end
      if need then x = x:expand(shape) end
      return x
    end
    local function group(x, xl, order)
      local pos = {}
      for j, l in ipairs(xl) do pos[l] = j end
      local perm = {}
      for _, grp in ipairs(order) do
        for _, l in ipairs(grp) do perm[#perm + 1] = pos[l] end
      end
      local ident = true
      for j = 1, #perm do ident = ident and perm[j] == j end
      if #perm > 1 and not ident then x = x:permute(perm) end
      local shape = {}
      for _, grp in ipairs(order) do
        local n = 1
        for _, l in ipairs(grp) do n = n * size[l] end
        shape[#shape + 1] = n
      end
      return x:reshape(shape)
    end
    local a3 = group(full(t, labels), labels, { batch, aonly, contract })
    local b3 = group(full(b, bl), bl, { batch, contract, bonly })
    local r = a3:bmm(b3)
    local rshape, rl = {}, {}
    for _, grp in ipairs { batch, aonly, bonly } do
      for _, l in ipairs(grp) do rshape[#rshape + 1] = size[l]; rl[#rl + 1] = l end
    end
    t, labels = r:reshape(rshape), rl
  end

  -- 3. sum what the output drops (ellipsis dims an explicit output left out), then order
  local dims, keep = {}, {}
  for j, l in ipairs(labels) do
    if in_out[l] then keep[#keep + 1] = l else dims[#dims + 1] = j end
  end
  if #dims > 0 then t = t:sum(dims) end
  labels = keep
  local pos = {}
  for j, l in ipairs(labels) do pos[l] = j end
  local perm, ident = {}, true
  for j, l in ipairs(out) do
    perm[j] = pos[l]
    ident = ident and perm[j] == j
  end
  if #perm > 1 and not ident then t = t:permute(perm) end
  -- labels broadcast from size 1 in a single operand: give them their size
  local shape, need = t.shape, false
  for j, l in ipairs(out) do
    if shape[j] ~= size[l] then shape[j] = size[l]; need = true end
  end
  if need then t = t:expand(shape) end
  return t
end

--- einsum(equation, a, b, ...) or einsum(equation, {a, b, ...}): the
-- Einstein summation of the tensors under equation (see the module comment).
function M.einsum(equation, ...)
  local operands = { ... }
  local n = select("#", ...)
  if n == 1 and type(operands[1]) == "table" and not core.is_tensor(operands[1]) then
    operands = operands[1]
    n = #operands
  end
  if n == 0 then fail("no operands") end
  for k = 1, n do
    errors.check_tensor("einsum", ("operand %d"):format(k), operands[k])
  end
  return einsum(equation, operands)
end

return M
