-- cases_inplace.lua - gradient-check entries for the nodes in-place ops
-- record (src/autograd/inplace.c), merged into autograd_spec.lua's table:
-- name = { fn, {argument builders}, opts }. Each program changes the result
-- of an op in place, so the node under test produced the output.
return function(b)
  local r = b.r
  return {
    -- an in-place op on a view: the base's history goes through CopySlices
    CopySlices = { function(a, w)
      local y = a * 1
      y:narrow(2, 2, 2):mul_(w)
      return y
    end, { r { 3, 4 }, r { 2 } } },
    -- a view taken before its base changed gets its history from the base
    AsStridedBackward = { function(a)
      local y = a * 1
      local v = y:transpose(1, 2):narrow(1, 2, 2)
      y:mul_(3)
      return v
    end, { r { 3, 4 } } },
    CopyBackward = { function(a, s)
      local y = a * 1
      y:copy_(s)
      return y
    end, { r { 2, 3 }, r { 3 } } },
    FillBackward = { function(a)
      local y = a * 2
      y:fill_(3)
      return y
    end, { r { 2, 3 } } },
  }
end
