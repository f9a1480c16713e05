-- cases_sample.lua - gradient-check entries for the resampling ops
-- (interpolate, unfold, fold), merged into autograd_spec.lua's table:
-- name = { fn, {argument builders}, opts }.
return function(b)
  local cell, r = b.cell, b.r
  local ops = cell.ops
  return {
    -- bicubic reaches past the border (clamped taps) and downsamples a
    -- transposed input along one axis while it upsamples the other
    InterpolateBackward = { function(x)
      return ops.interpolate(x:transpose(3, 4), { size = { 7, 3 }, mode = "bicubic" })
    end, { r { 2, 2, 4, 5 } } },
    UnfoldBackward = { function(x)
      return ops.unfold(x, { 2, 3 }, { dilation = { 1, 2 }, padding = { 1, 0 }, stride = { 2, 1 } })
    end, { r { 2, 2, 5, 6 } } },
    FoldBackward = { function(x)
      return ops.fold(x, { 4, 5 }, 2, { padding = 1, stride = { 1, 2 } })
    end, { r { 2, 8, 15 } } },
  }
end
