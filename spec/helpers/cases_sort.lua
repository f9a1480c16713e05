-- cases_sort.lua - gradient-check entries for the ordering and rearranging
-- ops (sort, topk, median, cumprod, logsumexp, tril / triu, flip, roll,
-- diag), merged into autograd_spec.lua's table: name = { fn, {argument
-- builders}, opts }.
return function(b)
  local cell, r, T = b.cell, b.r, b.T

  --- Distinct multiples of 1/32 in [-1, 1) (exact in every float dtype, so
  -- no rounding makes two of them tie and change an order).
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
    SortBackward = { function(a) return (T(a):sort(1, true)) end, { distinct { 3, 4 } } },
    TopkBackward = { function(a) return (a:topk(2, 2)) end, { distinct { 3, 5 } } },
    MedianBackward = { function(a) return (T(a):median(2, true)) end, { distinct { 5, 3 } } },
    MedianAllBackward = { function(a) return a:median() end, { distinct { 3, 3 } } },
    CumprodBackward = { function(a) return T(a):cumprod(2) end, { r({ 3, 4 }, 0.5, 1.5) } },
    LogsumexpBackward = { function(a) return a:logsumexp({ 1, 3 }, true) end, { r { 2, 3, 2 } } },
    TrilBackward = { function(a) return T(a):tril(-1) end, { r { 4, 3 } } },
    TriuBackward = { function(a) return a:triu(1) end, { r { 2, 3, 4 } } },
    FlipBackward = { function(a) return T(a):flip({ 1, 2 }) end, { r { 3, 4 } } },
    RollBackward = { function(a) return a:roll({ 1, -1 }, { 1, 2 }) end, { r { 3, 4 } } },
    DiagBackward = { function(a) return T(a):diag(-1) end, { r { 4, 3 } } },
  }
end
