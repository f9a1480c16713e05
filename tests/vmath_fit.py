"""vmath_fit.py - the polynomial coefficients of src/ops/vmath_impl.h's erf
(weighted least squares on Chebyshev nodes against Python's math.erf and
math.erfc, in float64; run with Debian's /usr/bin/python3, which has numpy).
Prints the C initialisers and the largest relative error of each fit
evaluated by Horner's rule on a dense grid:
  erf(x) = x P(x^2) on |x| <= 1                      (P of degree 7)
  erfc(x) = exp(-x^2) t G(t), t = 1/x, on x >= 1      (G of degree 16)
and of src/ops/vmath_gelu_impl.h's float32 GELU tail:
  erfc(a) = t exp(-a^2 + P(t)), t = 1/(1 + a/2), on a in [0.5, 10.6]
                                                      (P of degree 8)
and of vmath_impl.h's float32 tanh near 0:
  tanh(a) = a + a z Q(z), z = a^2, on a in [0, 0.56]   (Q of degree 4)
whose coefficients are float32: each is rounded in turn from the highest
power and the lower ones refitted (max absolute error of P, in float64).
exp, log and tanh use Taylor coefficients and need no fit."""
import math

import warnings

import numpy as np

warnings.simplefilter("ignore", np.RankWarning)


def fit(f, a, b, deg, var, n=4000):
    k = np.arange(n)
    xs = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)
    ys = np.array([f(x) for x in xs])
    c = np.polyfit(var(xs), ys, deg, w=1 / np.abs(ys))
    xt = np.linspace(a, b, 20001)
    yt = np.array([f(x) for x in xt])
    h = np.zeros_like(xt)
    for ci in c:
        h = h * var(xt) + ci
    return c, np.max(np.abs(h - yt) / np.abs(yt))


def g(t):
    """x erfc(x) exp(x^2) at x = 1/t (its limit 1/sqrt(pi) at t = 0)."""
    if t == 0:
        return 1 / math.sqrt(math.pi)
    x = 1 / t
    if x < 25:
        return x * math.erfc(x) * math.exp(x * x)
    s, term = 1.0, 1.0
    for n in range(1, 8):
        term *= -(2 * n - 1) / (2 * x * x)
        s += term
    return s / math.sqrt(math.pi)


def show(name, c, err):
    print(f"/* {name}: highest power first; max relative error {err:.2e} */")
    print("{" + ", ".join(f"{v:.17e}" for v in c) + "}")


show("erf_small", *fit(lambda x: math.erf(x) / x if x else 2 / math.sqrt(math.pi), 1e-9, 1.0, 7, lambda x: x * x))
show("erfc_large", *fit(g, 0.0, 1.0, 16, lambda x: x))


def erfc_exponent(t):
    """P(t) = log(erfc(a) / t) + a^2 at a = 2 (1/t - 1)."""
    a = 2 * (1 / t - 1)
    return math.log(math.erfc(a) / t) + a * a


def fit_float32(f, a, b, deg, n=4000):
    k = np.arange(n)
    ts = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)
    ys = np.array([f(t) for t in ts])
    fixed = []
    for d in range(deg, -1, -1):
        res = ys - sum(c * ts ** (deg - i) for i, c in enumerate(fixed))
        fixed.append(float(np.float32(np.polyfit(ts, res, d)[0])))
    tt = np.linspace(a, b, 20001)
    h = np.zeros_like(tt)
    for c in fixed:
        h = h * tt + c
    return fixed, np.max(np.abs(h - np.array([f(t) for t in tt])))


c, err = fit_float32(erfc_exponent, 1 / (1 + 0.5 * 10.6), 1 / (1 + 0.5 * 0.5), 8)
print(f"/* erfc_exponent (float32): highest power first; max absolute error {err:.2e} */")
print("{" + ", ".join(f"{v:.9e}f" for v in c) + "}")


def tanh_q(z):
    """Q(z) = (tanh(a) / a - 1) / z at a = sqrt(z) (its series near 0)."""
    if z < 1e-6:
        return -1 / 3 + 2 * z / 15 - 17 * z * z / 315
    a = math.sqrt(z)
    return (math.tanh(a) / a - 1) / z


def fit_float32_rel(f, a, b, deg, n=4000):
    """As fit_float32, weighted by 1/|f|; the error as tanh's relative one."""
    k = np.arange(n)
    zs = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)
    ys = np.array([f(z) for z in zs])
    fixed = []
    for d in range(deg, -1, -1):
        res = ys - sum(c * zs ** (deg - i) for i, c in enumerate(fixed))
        fixed.append(float(np.float32(np.polyfit(zs, res, d, w=1 / np.abs(ys))[0])))
    zt = np.linspace(a, b, 20001)
    yt = np.array([f(z) for z in zt])
    h = np.zeros_like(zt)
    for c in fixed:
        h = h * zt + c
    return fixed, np.max(np.abs(zt * (h - yt) / (1 + zt * yt)))


c, err = fit_float32_rel(tanh_q, 0.0, 0.56 ** 2, 4)
print(f"/* tanh_q (float32): highest power first; max relative error of tanh {err:.2e} */")
print("{" + ", ".join(f"{v:.9e}f" for v in c) + "}")
