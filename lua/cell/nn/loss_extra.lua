--- cell.nn losses beyond loss.lua, as MindSpore 2.7 defines them:
-- SmoothL1Loss, HuberLoss, KLDivLoss, BCELoss, CosineEmbeddingLoss,
-- MarginRankingLoss, TripletMarginLoss, MultiMarginLoss,
-- MultiLabelSoftMarginLoss, PoissonNLLLoss, GaussianNLLLoss, CTCLoss,
-- FocalLoss and DiceLoss. Each (but DiceLoss, which MindSpore gives none)
-- takes reduction "mean", "sum" or "none" (SmoothL1Loss's default is
-- "none", as MindSpore's). Written on the differentiable ops of cell.ops
-- (autograd through them); CTCLoss on the fused ctc_loss kernel.
-- Class ids count from 1, as in CrossEntropyLoss (CTC's blank defaults to
-- class 1, MindSpore's 0).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"
local LossBase = require("cell.nn.loss").LossBase

local M = {}
local shape_str = T.shape_str

local function reduce(loss, reduction)
  if reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  return loss
end

local function tensors(cls, names, ...)
  local vals = { ... }
  for i = 1, #names do A.tensor(cls, names[i], vals[i], 3) end
  local first = vals[1]
  if not first.dtype.is_floating_point then
    raise(("TypeError: For '%s', the '%s' must be a float Tensor, but got %s."):format(cls, names[1],
      tostring(first.dtype)))
  end
end

local function check_same(cls, a_name, a, b_name, b)
  if not T.same_shape(a.shape, b.shape) then
    raise(("ValueError: For '%s', the '%s' and '%s' must have the same shape, but got %s and %s.")
      :format(cls, a_name, b_name, shape_str(a.shape), shape_str(b.shape)))
  end
end

local function as_dtype(t, like)
  if t.dtype ~= like.dtype then return t:astype(like.dtype) end
  return t
end

--- A loss class whose init takes `names` (reduction among them) with
-- `defaults`, checked by `check(self)` when given.
local function loss_class(name, names, defaults, check)
  local C = LossBase:extend(name)
  function C:init(...)
    local vals = { A.args(name, names, select("#", ...), ...) }
    for i = 1, #names do
      local k, v = names[i], vals[i]
      if k == "reduction" then
        self.reduction = A.reduction(name, v, 3, defaults.reduction)
      elseif k == "weight" then
        self.weight = A.tensor(name, "weight", v, 3, true)
      elseif type(defaults[k]) == "boolean" then
        self[k] = A.bool(name, k, v, defaults[k], 3)
      else
        self[k] = A.number(name, k, v, defaults[k], 3)
      end
    end
    if check then check(self) end
  end
  M[name] = C
  return C
end

local function positive(name, what)
  return function(self)
    if not (self[what] > 0) then
      raise(("ValueError: For '%s', the '%s' must be greater than 0, but got %s."):format(name, what,
        T.num_str(self[what])))
    end
  end
end

-- SmoothL1Loss and HuberLoss -------------------------------------------------

--- SmoothL1Loss([beta = 1.0, reduction = "none"]): 0.5 d^2 / beta where
-- |d| < beta, else |d| - 0.5 beta.
local SmoothL1 = loss_class("SmoothL1Loss", { "beta", "reduction" }, { beta = 1.0, reduction = "none" },
  positive("SmoothL1Loss", "beta"))
function SmoothL1:construct(logits, labels)
  tensors("SmoothL1Loss", { "logits", "labels" }, logits, labels)
  check_same("SmoothL1Loss", "logits", logits, "labels", labels)
  local d = logits - as_dtype(labels, logits)
  local a = d:abs()
  local l = ops.where(a:lt(self.beta), d * d * (0.5 / self.beta), a - 0.5 * self.beta)
  return reduce(l, self.reduction)
end

--- HuberLoss([reduction = "mean", delta = 1.0]): 0.5 d^2 where |d| < delta,
-- else delta (|d| - 0.5 delta).
local Huber = loss_class("HuberLoss", { "reduction", "delta" }, { delta = 1.0 }, positive("HuberLoss", "delta"))
function Huber:construct(logits, labels)
  tensors("HuberLoss", { "logits", "labels" }, logits, labels)
  check_same("HuberLoss", "logits", logits, "labels", labels)
  local d = logits - as_dtype(labels, logits)
  local a = d:abs()
  local l = ops.where(a:lt(self.delta), d * d * 0.5, (a - 0.5 * self.delta) * self.delta)
  return reduce(l, self.reduction)
end

-- KLDivLoss --------------------------------------------------------------------

--- KLDivLoss([reduction = "mean", log_target = false]): logits are
-- log-probabilities; labels probabilities (log-probabilities with
-- log_target). reduction also "batchmean" (the sum over the batch size).
local KLDiv = LossBase:extend("KLDivLoss")
M.KLDivLoss = KLDiv
function KLDiv:init(...)
  local reduction, log_target = A.args("KLDivLoss", { "reduction", "log_target" }, select("#", ...), ...)
  if reduction == nil then reduction = "mean" end
  self.reduction = A.choice("KLDivLoss", "reduction", reduction, { "mean", "sum", "none", "batchmean" }, 3)
  self.log_target = A.bool("KLDivLoss", "log_target", log_target, false, 3)
end
function KLDiv:construct(logits, labels)
  tensors("KLDivLoss", { "logits", "labels" }, logits, labels)
  check_same("KLDivLoss", "logits", logits, "labels", labels)
  labels = as_dtype(labels, logits)
  local l
  if self.log_target then
    l = labels:exp() * (labels - logits)
  else
    -- target * (log target - x), 0 where target = 0
    local pos = labels:gt(0)
    local safe = ops.where(pos, labels, labels * 0 + 1)
    l = ops.where(pos, labels * (safe:log() - logits), labels * 0)
  end
  if self.reduction == "batchmean" then
    local n = logits.ndim > 0 and logits.shape[1] or 1
    return l:sum() / n
  end
  return reduce(l, self.reduction)
end

-- BCELoss ------------------------------------------------------------------------

--- BCELoss([weight, reduction = "mean"]): -w (y log p + (1 - y) log(1 - p))
-- with the logs clamped at -100; weight broadcasts to the logits.
local BCE = loss_class("BCELoss", { "weight", "reduction" }, {})
function BCE:construct(logits, labels)
  tensors("BCELoss", { "logits", "labels" }, logits, labels)
  check_same("BCELoss", "logits", logits, "labels", labels)
  labels = as_dtype(labels, logits)
  local lp, lq = logits:log():clamp(-100), (1 - logits):log():clamp(-100)
  local l = -(labels * lp + (1 - labels) * lq)
  if self.weight ~= nil then l = l * as_dtype(self.weight, logits) end
  return reduce(l, self.reduction)
end

-- CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss -------------------

--- CosineEmbeddingLoss([margin = 0.0, reduction = "mean"]):
-- (logits_x1, logits_x2, labels): 1 - cos where labels = 1, max(0, cos -
-- margin) where labels = -1; cos over the last dimension... of {N, D} inputs
-- (dimension 2).
local CosEmb = loss_class("CosineEmbeddingLoss", { "margin", "reduction" }, { margin = 0.0 }, function(self)
  if self.margin < -1 or self.margin > 1 then
    raise(("ValueError: For 'CosineEmbeddingLoss', the 'margin' must be in range [-1, 1], but got %s.")
      :format(T.num_str(self.margin)))
  end
end)
function CosEmb:construct(x1, x2, labels)
  tensors("CosineEmbeddingLoss", { "logits_x1", "logits_x2", "labels" }, x1, x2, labels)
  check_same("CosineEmbeddingLoss", "logits_x1", x1, "logits_x2", x2)
  if x1.ndim < 1 or labels.ndim ~= x1.ndim - 1 then
    raise(("ValueError: For 'CosineEmbeddingLoss', the labels must have the logits' shape without dimension 2, "
      .. "but got logits %s and labels %s."):format(shape_str(x1.shape), shape_str(labels.shape)))
  end
  local ax = x1.ndim >= 2 and 2 or 1
  local eps = 1e-12
  local prod = (x1 * x2):sum(ax)
  local m1 = (x1 * x1):sum(ax) + eps
  local m2 = (x2 * x2):sum(ax) + eps
  local cos = prod / (m1 * m2):sqrt()
  labels = as_dtype(labels, x1)
  local zeros = cos * 0
  local l = ops.where(labels:eq(1), 1 - cos, zeros) + ops.where(labels:eq(-1), (cos - self.margin):clamp(0), zeros)
  return reduce(l, self.reduction)
end

--- MarginRankingLoss([margin = 0.0, reduction = "mean"]): (input1, input2,
-- target): max(0, -target (input1 - input2) + margin).
local MarginRank = loss_class("MarginRankingLoss", { "margin", "reduction" }, { margin = 0.0 })
function MarginRank:construct(input1, input2, target)
  tensors("MarginRankingLoss", { "input1", "input2", "target" }, input1, input2, target)
  check_same("MarginRankingLoss", "input1", input1, "input2", input2)
  check_same("MarginRankingLoss", "input1", input1, "target", target)
  local l = (-as_dtype(target, input1) * (input1 - input2) + self.margin):clamp(0)
  return reduce(l, self.reduction)
end

--- The p-norm distance of rows (torch's pairwise_distance with eps added
-- to the difference).
local function pdist(a, b, p, eps)
  local d = (a - b + eps):abs()
  local ax = a.ndim
  if p == 1 then return d:sum(ax) end
  if p == 2 then return (d * d):sum(ax):sqrt() end
  return d:pow(p):sum(ax):pow(1 / p)
end

--- TripletMarginLoss([p = 2, swap = false, eps = 1e-6, reduction = "mean"]):
-- (x, positive, negative [, margin = 1.0]): max(0, d(x, pos) - d(x, neg) +
-- margin), d the p-norm distance over the last dimension; swap uses
-- min(d(x, neg), d(pos, neg)).
local Triplet = loss_class("TripletMarginLoss", { "p", "swap", "eps", "reduction" },
  { p = 2, swap = false, eps = 1e-6 }, positive("TripletMarginLoss", "p"))
function Triplet:construct(x, pos, neg, margin)
  tensors("TripletMarginLoss", { "x", "positive", "negative" }, x, pos, neg)
  check_same("TripletMarginLoss", "x", x, "positive", pos)
  check_same("TripletMarginLoss", "x", x, "negative", neg)
  if core.is_tensor(margin) then margin = margin:item() end
  margin = A.number("TripletMarginLoss", "margin", margin, 1.0, 2)
  local dp = pdist(x, pos, self.p, self.eps)
  local dn = pdist(x, neg, self.p, self.eps)
  if self.swap then dn = dn:minimum(pdist(pos, neg, self.p, self.eps)) end
  return reduce((dp - dn + margin):clamp(0), self.reduction)
end

-- MultiMarginLoss, MultiLabelSoftMarginLoss --------------------------------------

--- MultiMarginLoss([p = 1, margin = 1.0, reduction = "mean", weight]):
-- x {N, C}, target class ids {N} (1-based): per sample sum over i ~= y of
-- w[y] max(0, margin - x[y] + x[i])^p / C.
local MultiMargin = loss_class("MultiMarginLoss", { "p", "margin", "reduction", "weight" },
  { p = 1, margin = 1.0 }, function(self)
    if self.p ~= 1 and self.p ~= 2 then
      raise(("ValueError: For 'MultiMarginLoss', the 'p' must be 1 or 2, but got %s."):format(T.num_str(self.p)))
    end
  end)
function MultiMargin:construct(x, target)
  tensors("MultiMarginLoss", { "x", "target" }, x, target)
  if x.ndim ~= 2 or target.ndim ~= 1 or target.shape[1] ~= x.shape[1] or target.dtype.is_floating_point then
    raise(("ValueError: For 'MultiMarginLoss', x must be {N, C} and target integer class ids {N}, but got x %s "
      .. "and target %s of %s."):format(shape_str(x.shape), shape_str(target.shape), tostring(target.dtype)))
  end
  local n, c = x.shape[1], x.shape[2]
  local idx = target:astype(core.int64):reshape { n, 1 }
  local xy = x:gather(2, idx)
  local m = (x - xy + self.margin):clamp(0)
  if self.p == 2 then m = m * m end
  local mask = ops.one_hot(target:astype(core.int64), c):astype(x.dtype)
  m = m * (1 - mask)
  if self.weight ~= nil then m = m * as_dtype(self.weight, x):gather(1, target:astype(core.int64)):reshape { n, 1 } end
  return reduce(m:sum(2) / c, self.reduction)
end

--- MultiLabelSoftMarginLoss([weight, reduction = "mean"]): x and target
-- {N, C}: -mean over C of w (y logsigmoid(x) + (1 - y) logsigmoid(-x)).
local MLSM = loss_class("MultiLabelSoftMarginLoss", { "weight", "reduction" }, {})
function MLSM:construct(x, target)
  tensors("MultiLabelSoftMarginLoss", { "x", "target" }, x, target)
  check_same("MultiLabelSoftMarginLoss", "x", x, "target", target)
  if x.ndim ~= 2 then
    raise(("ValueError: For 'MultiLabelSoftMarginLoss', x must be {N, C}, but got %s."):format(shape_str(x.shape)))
  end
  target = as_dtype(target, x)
  local l = -(target * ops.logsigmoid(x) + (1 - target) * ops.logsigmoid(-x))
  if self.weight ~= nil then l = l * as_dtype(self.weight, x) end
  return reduce(l:mean(2), self.reduction)
end

-- PoissonNLLLoss, GaussianNLLLoss ------------------------------------------------

--- PoissonNLLLoss([log_input = true, full = false, eps = 1e-8, reduction =
-- "mean"]): exp(x) - y x (log_input) or x - y log(x + eps); full adds
-- Stirling's y log y - y + 0.5 log(2 pi y) where y > 1.
local Poisson = loss_class("PoissonNLLLoss", { "log_input", "full", "eps", "reduction" },
  { log_input = true, full = false, eps = 1e-8 }, positive("PoissonNLLLoss", "eps"))
function Poisson:construct(x, target)
  tensors("PoissonNLLLoss", { "input", "target" }, x, target)
  check_same("PoissonNLLLoss", "input", x, "target", target)
  target = as_dtype(target, x)
  local l
  if self.log_input then l = x:exp() - target * x else l = x - target * (x + self.eps):log() end
  if self.full then
    local big = target:gt(1)
    local safe = ops.where(big, target, target * 0 + 2)
    local st = safe * safe:log() - safe + (safe * (2 * math.pi)):log() * 0.5
    l = l + ops.where(big, st, target * 0)
  end
  return reduce(l, self.reduction)
end

--- GaussianNLLLoss([full = false, eps = 1e-6, reduction = "mean"]):
-- (logits, labels, var): 0.5 (log(max(var, eps)) + (x - y)^2 / max(var,
-- eps)) (+ 0.5 log(2 pi) with full); var of the logits' shape, or with its
-- last dimension 1, or one dimension less.
local Gaussian = loss_class("GaussianNLLLoss", { "full", "eps", "reduction" }, { full = false, eps = 1e-6 },
  positive("GaussianNLLLoss", "eps"))
function Gaussian:construct(x, target, var)
  tensors("GaussianNLLLoss", { "logits", "labels", "var" }, x, target, var)
  check_same("GaussianNLLLoss", "logits", x, "labels", target)
  var = as_dtype(var, x)
  if not T.same_shape(var.shape, x.shape) then
    local vs, xs = var.shape, x.shape
    if #vs == #xs - 1 then
      var = var:unsqueeze(#vs + 1)
    elseif not (#vs == #xs and vs[#vs] == 1) then
      raise(("ValueError: For 'GaussianNLLLoss', the 'var' of shape %s does not fit the logits' shape %s.")
        :format(shape_str(vs), shape_str(xs)))
    end
    local ok = true
    for i = 1, #xs - 1 do if var.shape[i] ~= xs[i] then ok = false end end
    if not ok then
      raise(("ValueError: For 'GaussianNLLLoss', the 'var' of shape %s does not fit the logits' shape %s.")
        :format(shape_str(vs), shape_str(xs)))
    end
  end
  local v = var:clamp(self.eps)
  local d = x - as_dtype(target, x)
  local l = (v:log() + d * d / v) * 0.5
  if self.full then l = l + 0.5 * math.log(2 * math.pi) end
  return reduce(l, self.reduction)
end

-- FocalLoss, DiceLoss --------------------------------------------------------------

--- FocalLoss([weight, gamma = 2.0, reduction = "mean"]): logits {N, C, *};
-- labels class ids {N, 1, *} (1-based) or per-class targets {N, C, *}.
-- MindSpore's definition: with p = softmax over C and lp = log p (times
-- weight[c]), ids give mean over * of -(1 - p_y)^gamma lp_y ({N}); per-class
-- targets give mean over * of -(1 - p)^gamma y lp ({N, C}); then reduction.
local Focal = loss_class("FocalLoss", { "weight", "gamma", "reduction" }, { gamma = 2.0 })
function Focal:construct(logits, labels)
  tensors("FocalLoss", { "logits", "labels" }, logits, labels)
  local ls, ts = logits.shape, labels.shape
  if #ls < 2 or #ts ~= #ls or ts[1] ~= ls[1] or (ts[2] ~= 1 and ts[2] ~= ls[2]) then
    raise(("ValueError: For 'FocalLoss', the logits must be {N, C, *} and the labels {N, 1, *} or {N, C, *}, "
      .. "but got %s and %s."):format(shape_str(ls), shape_str(ts)))
  end
  local n, c = ls[1], ls[2]
  local x = logits:reshape { n, c, -1 }
  local y = labels:reshape { n, ts[2], -1 }
  local lp = ops.log_softmax(x, 2)
  local ids = ts[2] == 1 and c > 1 or (ts[2] == 1 and not labels.dtype.is_floating_point)
  local w
  if self.weight ~= nil then w = as_dtype(self.weight, logits):reshape { 1, c, 1 }:expand { n, c, x.shape[3] } end
  local l
  if ids then
    local idx = y:astype(core.int64)
    lp = lp:gather(2, idx)
    local p = lp:exp()
    if w ~= nil then lp = lp * w:gather(2, idx) end
    l = (-(1 - p):pow(self.gamma) * lp):reshape { n, -1 }:mean(2)
  else
    local p = lp:exp()
    if w ~= nil then lp = lp * w end
    l = (-(1 - p):pow(self.gamma) * as_dtype(y, logits) * lp):mean(3)
  end
  return reduce(l, self.reduction)
end

--- DiceLoss([smooth = 1e-5]): 1 - 2 sum(x y) / (sum(x^2) + sum(y^2) +
-- smooth) over all elements (MindSpore's nn.DiceLoss; a scalar).
local Dice = LossBase:extend("DiceLoss")
M.DiceLoss = Dice
function Dice:init(...)
  local smooth = A.args("DiceLoss", { "smooth" }, select("#", ...), ...)
  self.smooth = A.number("DiceLoss", "smooth", smooth, 1e-5, 3)
  if not (self.smooth > 0) then
    raise(("ValueError: For 'DiceLoss', the 'smooth' must be greater than 0, but got %s."):format(T.num_str(self.smooth)))
  end
end
function Dice:construct(logits, labels)
  tensors("DiceLoss", { "logits", "labels" }, logits, labels)
  check_same("DiceLoss", "logits", logits, "labels", labels)
  labels = as_dtype(labels, logits)
  local inter = (logits * labels):sum()
  local union = (logits * logits):sum() + (labels * labels):sum()
  return 1 - inter * 2 / (union + self.smooth)
end

-- CTCLoss --------------------------------------------------------------------------

--- CTCLoss([blank = 1, reduction = "mean", zero_infinity = false]):
-- (log_probs {T, N, C}, targets {N, S} or 1-D, input_lengths {N},
-- target_lengths {N}); class ids and blank count from 1 (MindSpore's
-- blank 0 is 1 here). On the fused ctc_loss kernel (cell.ops.ctc_loss).
local CTC = LossBase:extend("CTCLoss")
M.CTCLoss = CTC
function CTC:init(...)
  local blank, reduction, zero_infinity = A.args("CTCLoss", { "blank", "reduction", "zero_infinity" },
    select("#", ...), ...)
  self.blank = A.positive_int("CTCLoss", "blank", blank == nil and 1 or blank, 3)
  self.reduction = A.reduction("CTCLoss", reduction, 3)
  self.zero_infinity = A.bool("CTCLoss", "zero_infinity", zero_infinity, false, 3)
end
function CTC:construct(log_probs, targets, input_lengths, target_lengths)
  return ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, { blank = self.blank,
    reduction = self.reduction, zero_infinity = self.zero_infinity })
end

return M
