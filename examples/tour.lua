-- A short tour of cell's tensors: creation, arithmetic, matmul, printing.
-- Run with `bin/cell examples/tour.lua` (after `make`).
local cell = require "cell"

cell.set_seed(42)
local a = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
local b = cell.ones({ 2, 3 }) * 0.5
print("a =", a)
print("a + b =", a + b)
print("a * 2 - 1 =", a * 2 - 1)

local w = cell.arange(1, 7, 1, cell.float32):reshape({ 3, 2 })
print("w =", w)
print("a @ w =", a:matmul(w))

print("sum over dim 1:", a:sum(1))
print("mean:", a:mean():item())
print("a[2] =", a[2])
print("a[{ {1, 2}, 3 }] =", a[{ { 1, 2 }, 3 }])
print("random normal:", cell.randn({ 2, 2 }))
print("dtype:", a.dtype, "shape:", table.concat(a.shape, "x"))
