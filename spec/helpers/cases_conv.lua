-- cases_conv.lua - gradient-check entries for the conv op family, merged into
-- autograd_spec.lua's table: name = { fn, {argument builders}, opts }.
return function(b)
  local cell, r = b.cell, b.r
  local ops = cell.ops

  --- Distinct multiples of 1/32 in [-1, 1) (exact in every float dtype, so
  -- no rounding makes two of them tie for a maximum).
  local function distinct(shape)
    return function()
      local n = 1
      for i = 1, #shape do n = n * shape[i] end
      assert(n <= 64, "distinct: at most 64 values")
      local flat = {}
      for k = 0, n - 1 do flat[k + 1] = ((k * 29) % n - n / 2) / 32 end
      return cell.tensor(flat, cell.float64):reshape(shape)
    end
  end

  return {
    -- grouped, strided, dilated, asymmetrically padded, with a bias
    Conv2dBackward = { function(x, w, bias)
      return ops.conv2d(x, w, bias, { stride = { 2, 1 }, padding = { 1, 0, 0, 1 }, dilation = { 1, 2 }, groups = 2 })
    end, { r { 2, 4, 5, 6 }, r({ 4, 2, 2, 3 }, -1, 1, 2), r({ 4 }, -1, 1, 3) } },
    -- 3-d: grouped, strided, dilated, asymmetrically padded, with a bias
    Conv3dBackward = { function(x, w, bias)
      return ops.conv3d(x, w, bias, { stride = { 2, 1, 1 }, padding = { 1, 0, 0, 1, 1, 1 }, dilation = { 1, 2, 1 },
        groups = 2 })
    end, { r { 2, 4, 3, 4, 3 }, r({ 4, 2, 2, 2, 2 }, -1, 1, 2), r({ 4 }, -1, 1, 3) } },
    -- the adjoint: strided with output padding, grouped, a transposed input
    ConvTranspose3dBackward = { function(x, w, bias)
      return ops.conv_transpose3d(x:transpose(4, 5), w, bias, { stride = { 2, 1, 2 }, padding = { 1, 0, 1 },
        output_padding = { 1, 0, 0 }, dilation = { 1, 2, 1 }, groups = 2 })
    end, { r { 2, 4, 2, 3, 2 }, r({ 4, 1, 2, 2, 2 }, -1, 1, 2), r({ 2 }, -1, 1, 3) } },
    -- overlapping windows with padding; a transposed input
    MaxPool2dBackward = { function(x)
      return ops.max_pool2d(x:transpose(3, 4), 3, { stride = 2, padding = 1 })
    end, { distinct { 2, 1, 5, 6 } } },
    AvgPool2dBackward = { function(x)
      return ops.avg_pool2d(x, { 3, 2 }, { stride = { 2, 1 }, padding = { 1, 0, 0, 1 }, count_include_pad = false })
    end, { r { 2, 2, 5, 4 } } },
  }
end
