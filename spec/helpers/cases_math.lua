-- cases_math.lua - gradient-check entries for the elementwise math of
-- issue 13 (erf ... reciprocal, atan2, remainder, fmod, floor_divide,
-- nan_to_num, softplus), merged into autograd_spec.lua's table:
-- name = { fn, {argument builders}, opts }. Inputs stay inside each
-- function's domain and away from the steps of remainder and fmod (a / b
-- in (2.09, 2.8), so floor and trunc are 2 for every dtype).
return function(b)
  local cell, r, T = b.cell, b.r, b.T
  local ops = cell.ops
  return {
    ErfBackward = { function(a) return T(a):erf() end, { r({ 3, 2 }, -1.5, 1.5) } },
    ErfcBackward = { function(a) return a:erfc() end, { r({ 2, 3 }, -1.5, 1.5) } },
    TanBackward = { function(a) return T(a):tan() end, { r({ 3, 2 }, -1, 1) } },
    AtanBackward = { function(a) return a:atan() end, { r({ 2, 3 }, -2, 2) } },
    AsinBackward = { function(a) return a:asin() end, { r({ 2, 3 }, -0.8, 0.8) } },
    AcosBackward = { function(a) return T(a):acos() end, { r({ 3, 2 }, -0.8, 0.8) } },
    SinhBackward = { function(a) return a:sinh() end, { r({ 2, 3 }, -2, 2) } },
    CoshBackward = { function(a) return a:cosh() end, { r({ 2, 3 }, -2, 2) } },
    Log2Backward = { function(a) return a:log2() end, { r({ 2, 3 }, 0.5, 2) } },
    Log10Backward = { function(a) return T(a):log10() end, { r({ 3, 2 }, 0.5, 2) } },
    Exp2Backward = { function(a) return a:exp2() end, { r({ 2, 3 }, -1, 1) } },
    Expm1Backward = { function(a) return a:expm1() end, { r({ 2, 3 }, -1, 1) } },
    SquareBackward = { function(a) return T(a):square() end, { r({ 3, 2 }, -1, 1) } },
    ReciprocalBackward = { function(a) return a:reciprocal() end, { r({ 2, 3 }, 0.5, 2) } },
    Atan2Backward = { function(a, c) return a:atan2(c) end, { r({ 2, 3 }, -1, 1), r({ 3 }, 0.5, 1.5) } },
    RemainderBackward = { function(a, c) return T(a):remainder(c) end, { r({ 3, 2 }, 2.2, 2.8), r({ 3 }, 1, 1.05) } },
    FmodBackward = { function(a, c) return a:fmod(c) end, { r({ 2, 3 }, -2.8, -2.2), r({ 2, 1 }, 1, 1.05) } },
    FloorDivideBackward = { function(a, c) return a:floor_divide(c) end, { r({ 2, 3 }, 2.2, 2.8), r({ 3 }, 1, 1.05) } },
    NanToNumBackward = { function(a) return T(a):nan_to_num() end, { r({ 3, 2 }, -1, 1) } },
    SoftplusBackward = { function(a) return ops.softplus(a, { beta = 2 }) end, { r({ 2, 3 }, -2, 2) } },
  }
end
