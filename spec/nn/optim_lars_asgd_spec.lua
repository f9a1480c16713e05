-- optim_lars_asgd_spec.lua - nn.LARS's use_clip (MindSpore's LARSUpdate
-- clip: the trust ratio becomes min(ratio / learning_rate, 1)) checked by
-- hand, and nn.ASGD's full state (mu_<name>, eta_<name>, ax_.<name>, as
-- MindSpore names them) against torch.optim.ASGD's eta, mu and ax after
-- every step (spec/fixtures/asgd_fixtures.lua, made by
-- spec/fixtures/gen_asgd.py), with a fixed rate, a schedule, and a run
-- resumed from a state_dict.
local cell = require "cell"
local nn = cell.nn
local FX = require "fixtures.asgd_fixtures"

local f64 = cell.float64

local function close(actual, expected, tol, what)
  local a = type(actual) == "number" and actual or actual:astype(f64):totable()
  local function walk(x, y, path)
    if type(y) == "table" then
      for i = 1, #y do walk(x[i], y[i], path .. "[" .. i .. "]") end
    else
      if math.abs(x - y) > tol * (1 + math.abs(y)) then
        error(("%s%s: got %.17g, expected %.17g"):format(what, path, x, y), 0)
      end
    end
  end
  walk(a, expected, "")
end

describe("nn.LARS with use_clip", function()
  local function run(lr, wd, coef, clip, steps)
    local w = cell.Parameter(cell.tensor({ 3, 4 }, f64), "w")
    local opt = nn.LARS(nn.SGD({ w }, { learning_rate = lr, weight_decay = wd }),
      { epsilon = 0, coefficient = coef, use_clip = clip })
    for _ = 1, steps or 1 do opt({ cell.tensor({ 0.6, 0.8 }, f64) }) end
    return w, opt
  end

  -- w = (3, 4): |w| = 5; g = (0.6, 0.8): |g| = 1; trust = coef * 5 / (1 + wd * 5)
  it("divides the trust ratio by the rate when that is below 1", function()
    local w = run(0.5, 0, 0.001, true) -- trust 0.005, clipped 0.005 / 0.5 = 0.01
    close(w, { 3 - 0.5 * 0.006, 4 - 0.5 * 0.008 }, 1e-15, "w")
    local plain = run(0.5, 0, 0.001, false) -- trust 0.005 as is
    close(plain, { 3 - 0.5 * 0.003, 4 - 0.5 * 0.004 }, 1e-15, "w without clip")
  end)

  it("caps the ratio at 1", function()
    local w = run(0.5, 0, 1, true) -- trust 5, 5 / 0.5 = 10 -> 1: the gradient as is
    close(w, { 2.7, 3.6 }, 1e-15, "w")
  end)

  it("applies the wrapped optimizer's weight decay inside the clipped ratio", function()
    -- trust = 0.003 * 5 / 1.5 = 0.01 -> 0.02; g' = 0.02 * (g + 0.1 w) = (0.018, 0.024)
    local w = run(0.5, 0.1, 0.003, true)
    close(w, { 3 - 0.5 * 0.018, 4 - 0.5 * 0.024 }, 1e-14, "w")
  end)

  it("uses the rate of the step being taken under a schedule", function()
    local w = cell.Parameter(cell.tensor({ 3, 4 }, f64), "w")
    local opt = nn.LARS(nn.SGD({ w }, { learning_rate = { 0.5, 0.25 } }),
      { epsilon = 0, coefficient = 0.001, use_clip = true })
    local g = cell.tensor({ 0.6, 0.8 }, f64)
    opt({ g })
    close(w, { 2.997, 3.996 }, 1e-15, "step 1")
    -- step 2: |w| = 4.995, trust = 0.001 * 4.995 = 0.004995, / 0.25 = 0.01998
    opt({ g })
    close(w, { 2.997 - 0.25 * 0.01998 * 0.6, 3.996 - 0.25 * 0.01998 * 0.8 }, 1e-14, "step 2")
  end)

  it("shows use_clip and refuses a use_clip that is not a boolean", function()
    local _, opt = run(0.5, 0, 0.001, true)
    assert.is_truthy(tostring(opt):find("use_clip=true", 1, true))
    local w = cell.Parameter(cell.tensor({ 1 }, f64), "w")
    local ok, e = pcall(nn.LARS, nn.SGD({ w }), { use_clip = "yes" })
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("TypeError: For 'LARS'", 1, true), tostring(e))
    assert.is_truthy(tostring(e):find("use_clip", 1, true), tostring(e))
  end)
end)

describe("nn.ASGD's state", function()
  local function params()
    return cell.Parameter(cell.tensor(FX.init.w, f64), "w"), cell.Parameter(cell.tensor(FX.init.b, f64), "b")
  end
  local function grads(t) return { cell.tensor(FX.grads[t].w, f64), cell.tensor(FX.grads[t].b, f64) } end
  local function options(schedule)
    local o = {}
    for k, v in pairs(FX.opts) do o[k] = v end
    if schedule then
      local lr = FX.opts.learning_rate
      o.learning_rate = function(t) return t >= 4 and lr * 0.5 or lr end
    end
    return o
  end
  local function check(opt, w, b, want, what)
    local sd = opt:state_dict()
    close(w, want.w, 1e-13, what .. " w")
    close(b, want.b, 1e-13, what .. " b")
    close(sd["ax_.w"], want.ax_w, 1e-13, what .. " ax_.w")
    close(sd["ax_.b"], want.ax_b, 1e-13, what .. " ax_.b")
    for _, n in ipairs { "w", "b" } do
      close(sd["eta_" .. n]:item(), want["eta_" .. n], 0, what .. " eta_" .. n)
      close(sd["mu_" .. n]:item(), want["mu_" .. n], 0, what .. " mu_" .. n)
    end
  end

  it("names mu_, eta_ and ax_ per parameter as MindSpore, mu 1 and eta 0 at first", function()
    local w, b = params()
    local opt = nn.ASGD({ w, b }, options(false))
    local sd = opt:state_dict()
    assert.are.equal(cell.float32, sd["eta_w"].dtype)
    assert.are.same({}, sd["mu_b"].shape)
    assert.are.equal(1, sd["mu_w"]:item())
    assert.are.equal(0, sd["eta_b"]:item())
    assert.are.same({ 3, 4 }, sd["ax_.w"].shape)
  end)

  for _, run in ipairs { { "fixed", false }, { "halved", true } } do
    it("follows torch.optim.ASGD's eta, mu, ax and parameters step by step (" .. run[1] .. " rate)", function()
      local w, b = params()
      local opt = nn.ASGD({ w, b }, options(run[2]))
      for t = 1, #FX.grads do
        opt(grads(t))
        check(opt, w, b, FX[run[1]][t], run[1] .. " step " .. t)
      end
    end)
  end

  it("resumes from a state_dict with its eta and mu", function()
    local w, b = params()
    local opt = nn.ASGD({ w, b }, options(true))
    for t = 1, 5 do opt(grads(t)) end
    local sd = opt:state_dict()
    local w2, b2 = params()
    local opt2 = nn.ASGD({ w2, b2 }, options(true))
    opt2:load_state_dict(sd)
    for t = 6, #FX.grads do opt2(grads(t)) end
    check(opt2, w2, b2, FX.halved[#FX.grads], "resumed")
  end)
end)
