-- strided_rows_spec.lua - the elementwise iterator on views that keep
-- several strided dimensions (src/core/iter.c: rows stepped one from the
-- last on one thread, computed from the row's index on several): random
-- shapes and permutations, copied and added, element by element against
-- the source read by index.
local H = require "helpers"
local cell = H.cell

local function at(t, idx)
  for i = 1, #idx do t = t[idx[i]] end
  return t
end

describe("strided elementwise rows", function()
  it("visit every element of random permuted views once, in place", function()
    math.randomseed(99)
    for _ = 1, 30 do
      local nd = math.random(2, 5)
      local shape, n = {}, 1
      for d = 1, nd do
        shape[d] = math.random(1, 5)
        n = n * shape[d]
      end
      local x = cell.arange(1, n + 1, 1, cell.float32):reshape(shape)
      local perm = {}
      for d = 1, nd do perm[d] = d end
      for d = nd, 2, -1 do
        local j = math.random(1, d)
        perm[d], perm[j] = perm[j], perm[d]
      end
      local v = x:permute(perm)
      local src = x:totable()
      local c = v:contiguous():totable()
      local s = (v + v):totable()
      -- every index of the view, odometer order
      local idx = {}
      for d = 1, nd do idx[d] = 1 end
      for _ = 1, n do
        local sidx = {}
        for d = 1, nd do sidx[perm[d]] = idx[d] end
        local want = at(src, sidx)
        assert.are.equal(want, at(c, idx))
        assert.are.equal(2 * want, at(s, idx))
        for d = nd, 1, -1 do
          idx[d] = idx[d] + 1
          if idx[d] <= v.shape[d] then break end
          idx[d] = 1
        end
      end
    end
  end)
end)
