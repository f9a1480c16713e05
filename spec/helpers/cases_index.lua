-- cases_index.lua - gradient-check entries for the data-dependent index ops
-- (masked_select, masked_scatter), merged into autograd_spec.lua's table:
-- name = { fn, {argument builders}, opts }.
return function(b)
  local r, mask = b.r, b.mask
  return {
    -- a mask broadcast over the rows; a transposed input
    MaskedSelectBackward = { function(a, m) return b.T(a):masked_select(m) end,
      { r { 4, 3 }, mask { true, false, true, true } }, b.I },
    -- the mask selects 4 of 6; the source has 5 (one unused)
    MaskedScatterBackward = { function(a, m, s) return a:masked_scatter(m, s) end,
      { r { 2, 3 }, mask { { true, false, true }, { true, true, false } }, r { 5 } }, { skip = { [2] = true } } },
  }
end
