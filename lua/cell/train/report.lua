--- cell.train.ReportCallback: a self-contained HTML report of a training
-- run, written at its end: the loss per step (and its mean per epoch), the
-- learning rate, every evaluation metric of Model:fit per epoch, and
-- histograms of the parameters before and after training, all as inline
-- SVG (no script, no network, no external file).
--
--     model:train(10, ds, {callbacks = {cell.train.ReportCallback("run.html")}})
--     model:train(10, ds, {report = "run.html"})        -- the same
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local callbacks = require "cell.train.callbacks"

local type_name = T.type_name
local floor = math.floor
local concat = table.concat

local M = {}

local COLORS = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b" }

local function esc(s)
  return (tostring(s):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;",
    ["'"] = "&#39;" }))
end

local function fmt(v)
  if v ~= v then return "nan" end
  if v == 0 then return "0" end
  return ("%.4g"):format(v)
end

--- At most n points: consecutive points averaged in groups.
local function thin(points, n)
  if #points <= n then return points end
  local out, per = {}, #points / n
  for i = 1, n do
    local a, b = floor((i - 1) * per) + 1, floor(i * per)
    local sx, sy, c = 0, 0, 0
    for k = a, b do
      sx, sy, c = sx + points[k][1], sy + points[k][2], c + 1
    end
    out[i] = { sx / c, sy / c }
  end
  return out
end

--- Tick values spanning [lo, hi]: about five round numbers.
local function ticks(lo, hi)
  local span = hi - lo
  local raw = span / 5
  local mag = 10 ^ floor(math.log(raw) / math.log(10))
  local step = mag
  for _, m in ipairs { 1, 2, 5, 10 } do
    if raw <= m * mag then
      step = m * mag
      break
    end
  end
  local out = {}
  local v = math.ceil(lo / step - 1e-9) * step
  while v <= hi + 1e-9 * span do
    out[#out + 1] = math.abs(v) < step * 1e-9 and 0 or v
    v = v + step
  end
  return out
end

--- The range of the series' y (or x) values, widened when flat.
local function range(series, k)
  local lo, hi = math.huge, -math.huge
  for _, s in ipairs(series) do
    for _, p in ipairs(s.points) do
      local v = p[k]
      if v == v and v ~= math.huge and v ~= -math.huge then
        if v < lo then lo = v end
        if v > hi then hi = v end
      end
    end
  end
  if lo > hi then return 0, 1 end
  if lo == hi then
    local d = lo == 0 and 1 or math.abs(lo) * 0.1
    return lo - d, hi + d
  end
  return lo, hi
end

local W, H, ML, MR, MT, MB = 560, 240, 64, 16, 28, 40

--- An SVG line chart: title, x label, and series {name, points = {{x, y}, ...}}.
function M.line_chart(title, xlabel, series)
  local x0, x1 = range(series, 1)
  local y0, y1 = range(series, 2)
  local pw, ph = W - ML - MR, H - MT - MB
  local function sx(x) return ML + (x - x0) / (x1 - x0) * pw end
  local function sy(y) return MT + ph - (y - y0) / (y1 - y0) * ph end
  local out = { ('<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">')
    :format(W, H, W, H, esc(title)) }
  out[#out + 1] = ('<text x="%d" y="18" class="title">%s</text>'):format(ML, esc(title))
  out[#out + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" class="plot"/>'):format(ML, MT, pw, ph)
  for _, v in ipairs(ticks(y0, y1)) do
    local y = sy(v)
    out[#out + 1] = ('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>'):format(ML, ML + pw, y, y)
    out[#out + 1] = ('<text x="%d" y="%.1f" class="ytick">%s</text>'):format(ML - 6, y + 4, fmt(v))
  end
  for _, v in ipairs(ticks(x0, x1)) do
    local x = sx(v)
    out[#out + 1] = ('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="grid"/>'):format(x, x, MT, MT + ph)
    out[#out + 1] = ('<text x="%.1f" y="%d" class="xtick">%s</text>'):format(x, MT + ph + 16, fmt(v))
  end
  out[#out + 1] = ('<text x="%d" y="%d" class="xlabel">%s</text>'):format(ML + floor(pw / 2), H - 6, esc(xlabel))
  for i, s in ipairs(series) do
    local color = COLORS[(i - 1) % #COLORS + 1]
    local pts = {}
    for _, p in ipairs(thin(s.points, 1500)) do
      if p[2] == p[2] and p[2] ~= math.huge and p[2] ~= -math.huge then
        pts[#pts + 1] = ("%.1f,%.1f"):format(sx(p[1]), sy(p[2]))
      end
    end
    if #pts == 1 then
      local x, y = pts[1]:match("([^,]+),(.+)")
      out[#out + 1] = ('<circle cx="%s" cy="%s" r="3" fill="%s"/>'):format(x, y, color)
    end
    out[#out + 1] = ('<polyline class="series" points="%s" stroke="%s"/>'):format(concat(pts, " "), color)
    out[#out + 1] = ('<text x="%d" y="%d" class="legend" fill="%s">%s</text>')
      :format(ML + pw - 4, MT + 14 + 14 * (i - 1), color, esc(s.name))
  end
  out[#out + 1] = "</svg>"
  return concat(out, "\n")
end

--- An SVG histogram of the parameter's values before (outline) and after
-- (bars) training, over shared buckets.
function M.histogram_chart(title, before, after, bins)
  bins = bins or 30
  local lo, hi = math.min(before.min, after.min), math.max(before.max, after.max)
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  local function counts(values)
    local c = {}
    for i = 1, bins do c[i] = 0 end
    for _, v in ipairs(values) do
      local b = floor((v - lo) / (hi - lo) * bins) + 1
      if b > bins then b = bins end
      if b >= 1 then c[b] = c[b] + 1 end
    end
    return c
  end
  local cb, ca = counts(before.values), counts(after.values)
  local top = 1
  for i = 1, bins do top = math.max(top, cb[i], ca[i]) end
  local pw, ph = W - ML - MR, H - MT - MB
  local bw = pw / bins
  local out = { ('<svg class="hist" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">')
    :format(W, H, W, H, esc(title)) }
  out[#out + 1] = ('<text x="%d" y="18" class="title">%s</text>'):format(ML, esc(title))
  out[#out + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" class="plot"/>'):format(ML, MT, pw, ph)
  local bars = {}
  for i = 1, bins do
    local h = ca[i] / top * ph
    if h > 0 then
      bars[#bars + 1] = ("M%.1f %.1fh%.1fv%.1fh%.1fZ"):format(ML + (i - 1) * bw, MT + ph, bw - 1, -h, -(bw - 1))
    end
  end
  out[#out + 1] = ('<path class="bars" d="%s" fill="%s"/>'):format(concat(bars, " "), COLORS[1])
  local line = { ("M%d %d"):format(ML, MT + ph) }
  for i = 1, bins do
    local y = MT + ph - cb[i] / top * ph
    line[#line + 1] = ("L%.1f %.1fL%.1f %.1f"):format(ML + (i - 1) * bw, y, ML + i * bw, y)
  end
  line[#line + 1] = ("L%d %d"):format(ML + pw, MT + ph)
  out[#out + 1] = ('<path class="before" d="%s" stroke="%s"/>'):format(concat(line, ""), COLORS[2])
  out[#out + 1] = ('<text x="%d" y="%d" class="xtick">%s</text>'):format(ML, MT + ph + 16, fmt(lo))
  out[#out + 1] = ('<text x="%d" y="%d" class="xtick end">%s</text>'):format(ML + pw, MT + ph + 16, fmt(hi))
  out[#out + 1] = ('<text x="%d" y="%d" class="legend" fill="%s">after</text>'):format(ML + pw - 4, MT + 14, COLORS[1])
  out[#out + 1] = ('<text x="%d" y="%d" class="legend" fill="%s">before</text>'):format(ML + pw - 4, MT + 28, COLORS[2])
  out[#out + 1] = "</svg>"
  return concat(out, "\n")
end

local STYLE = [[
body { font: 14px/1.4 sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table.info td { padding: 2px 14px 2px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg { background: #fff; border: 1px solid #ddd; }
svg .title { font-weight: bold; font-size: 13px; }
svg .plot { fill: #fafafa; stroke: #999; }
svg .grid { stroke: #e4e4e4; }
svg .ytick { font-size: 11px; text-anchor: end; fill: #555; }
svg .xtick { font-size: 11px; text-anchor: middle; fill: #555; }
svg .xtick.end { text-anchor: end; }
svg .xlabel { font-size: 12px; text-anchor: middle; fill: #333; }
svg .legend { font-size: 12px; text-anchor: end; }
svg .series { fill: none; stroke-width: 1.6; }
svg .before { fill: none; stroke-width: 1.5; }
svg .bars { opacity: 0.75; }
]]

--- The values of a parameter as a list (finite ones), with their min and max.
local function values_of(p)
  local list = p:astype(core.float64):reshape({ -1 }):tolist()
  local out, lo, hi = {}, math.huge, -math.huge
  for _, v in ipairs(list) do
    if v == v and v ~= math.huge and v ~= -math.huge then
      out[#out + 1] = v
      if v < lo then lo = v end
      if v > hi then hi = v end
    end
  end
  if #out == 0 then lo, hi = 0, 0 end
  return { values = out, min = lo, max = hi }
end

--- An evaluation result's name as shown: "eval_" replaced by "eval ", or "eval " put before.
function M.eval_name(k)
  if k:sub(1, 5) == "eval_" then k = k:sub(6) end
  return "eval " .. k
end

-- ReportCallback ---------------------------------------------------------------------------

local ReportCallback = callbacks.Callback:extend("ReportCallback")
M.ReportCallback = ReportCallback

local OPTIONS = { "path", "title", "histogram_regular", "max_histograms", "clock" }

--- ReportCallback(path [, title = "Training report", histogram_regular,
-- max_histograms = 12]) (or options): at the end of training, writes the
-- report to path; histograms of the parameters whose name matches the Lua
-- pattern histogram_regular (all when nil), at most max_histograms.
function ReportCallback:init(...)
  local o = args_util.named("ReportCallback", OPTIONS, 3, select("#", ...), ...)
  if type(o.path) ~= "string" or o.path == "" then
    raise(("TypeError: For 'ReportCallback', the 'path' must be a path (a non-empty string), but got %s.")
      :format(type_name(o.path)))
  end
  for _, k in ipairs { "title", "histogram_regular" } do
    if o[k] ~= nil and type(o[k]) ~= "string" then
      raise(("TypeError: For 'ReportCallback', the '%s' must be a string, but got %s."):format(k, type_name(o[k])))
    end
  end
  local maxh = o.max_histograms == nil and 12 or o.max_histograms
  if type(maxh) ~= "number" or maxh ~= floor(maxh) or maxh < 0 or maxh == math.huge then
    raise(("ValueError: For 'ReportCallback', the 'max_histograms' must be an integer >= 0, but got %s.")
      :format(type(maxh) == "number" and tostring(maxh) or type_name(maxh)))
  end
  if o.clock ~= nil and type(o.clock) ~= "function" then
    raise(("TypeError: For 'ReportCallback', the 'clock' must be a function, but got %s."):format(type_name(o.clock)))
  end
  self.path, self.title, self.pattern, self.max_histograms = o.path, o.title or "Training report", o.histogram_regular,
    maxh
  self._clock = o.clock or core.perf_counter
end

function ReportCallback:_params(net)
  local out = {}
  if net == nil or self.max_histograms == 0 then return out end
  for name, p in net:parameters_and_names() do
    if (self.pattern == nil or name:find(self.pattern)) and #out < self.max_histograms then out[#out + 1] = { name, p } end
  end
  return out
end

function ReportCallback:on_train_begin(run_context)
  local cb = callbacks.args_of("on_train_begin", run_context)
  self._t0 = self._clock()
  self._loss, self._lr, self._epoch_loss, self._metrics, self._metric_names = {}, {}, {}, {}, {}
  self._sum, self._n = 0, 0
  self._net = cb.network or cb.train_network
  self._before = {}
  for _, e in ipairs(self:_params(self._net)) do self._before[#self._before + 1] = { e[1], values_of(e[2]) } end
  self._epochs_done = 0
end

function ReportCallback:on_train_epoch_begin() self._sum, self._n = 0, 0 end

function ReportCallback:on_train_step_end(run_context)
  local cb = callbacks.args_of("on_train_step_end", run_context)
  if self._loss == nil then self:on_train_begin(run_context) end
  local loss = callbacks.loss_value(cb.net_outputs)
  if loss ~= nil then
    self._loss[#self._loss + 1] = { cb.cur_step_num, loss }
    self._sum, self._n = self._sum + loss, self._n + 1
  end
  local lr = cb.optimizer and cb.optimizer.learning_rate
  if core.is_tensor(lr) and lr:numel() == 1 then self._lr[#self._lr + 1] = { cb.cur_step_num, lr:item() } end
end

function ReportCallback:on_train_epoch_end(run_context)
  local cb = callbacks.args_of("on_train_epoch_end", run_context)
  if self._loss == nil then return end
  self._epochs_done = self._epochs_done + 1
  if self._n > 0 then self._epoch_loss[#self._epoch_loss + 1] = { cb.cur_step_num, self._sum / self._n } end
  local r = cb.eval_results
  if type(r) == "table" then
    for k, v in pairs(r) do
      if core.is_tensor(v) and v:numel() == 1 then v = v:item() end
      if type(k) == "string" and type(v) == "number" then
        if not self._metrics[k] then
          self._metrics[k] = {}
          self._metric_names[#self._metric_names + 1] = k
        end
        local l = self._metrics[k]
        l[#l + 1] = { cb.cur_epoch_num, v }
      end
    end
  end
end

--- The report's HTML, from what the callback has recorded since training
-- began (cb: the run context's parameters).
function ReportCallback:html(cb)
  cb = callbacks.args_of("html", cb)
  if rawget(self, "_loss") == nil then
    raise("RuntimeError: For 'ReportCallback', html: nothing is recorded before training begins")
  end
  local out = { "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
    "<title>" .. esc(self.title) .. "</title>", "<style>" .. STYLE .. "</style></head><body>",
    "<h1>" .. esc(self.title) .. "</h1>" }
  local elapsed = self._clock() - (self._t0 or self._clock())
  local last = self._loss[#self._loss]
  local rows = {
    { "Network", self._net and T.class_name(self._net) or "?" },
    { "Epochs", ("%d of %d"):format(self._epochs_done, cb.epoch_num or self._epochs_done) },
    { "Steps", tostring(cb.cur_step_num or #self._loss) },
    { "Final loss", last and fmt(last[2]) or "-" },
    { "Time", ("%.1f s"):format(elapsed) },
  }
  table.sort(self._metric_names)
  for _, k in ipairs(self._metric_names) do
    local l = self._metrics[k]
    rows[#rows + 1] = { "Final " .. M.eval_name(k), fmt(l[#l][2]) }
  end
  out[#out + 1] = '<table class="info">'
  for _, r in ipairs(rows) do out[#out + 1] = ("<tr><td>%s</td><td>%s</td></tr>"):format(esc(r[1]), esc(r[2])) end
  out[#out + 1] = "</table>"
  out[#out + 1] = '<h2>Training</h2><div class="charts">'
  if #self._loss > 0 then
    local series = { { name = "loss per step", points = self._loss } }
    if #self._epoch_loss > 0 then series[2] = { name = "epoch mean", points = self._epoch_loss } end
    out[#out + 1] = M.line_chart("Loss", "step", series)
  end
  if #self._lr > 0 then out[#out + 1] = M.line_chart("Learning rate", "step", { { name = "lr", points = self._lr } }) end
  out[#out + 1] = "</div>"
  if #self._metric_names > 0 then
    out[#out + 1] = '<h2>Evaluation</h2><div class="charts">'
    for _, k in ipairs(self._metric_names) do
      out[#out + 1] = M.line_chart(M.eval_name(k), "epoch", { { name = k, points = self._metrics[k] } })
    end
    out[#out + 1] = "</div>"
  end
  if #self._before > 0 then
    out[#out + 1] = '<h2>Parameters</h2><div class="charts">'
    local now = {}
    for _, e in ipairs(self:_params(self._net)) do now[e[1]] = e[2] end
    for _, e in ipairs(self._before) do
      local p = now[e[1]]
      if p then
        out[#out + 1] = M.histogram_chart(("%s %s"):format(e[1], T.shape_str(p.shape)), e[2], values_of(p))
      end
    end
    out[#out + 1] = "</div>"
  end
  out[#out + 1] = "</body></html>\n"
  return concat(out, "\n")
end

function ReportCallback:on_train_end(run_context)
  local cb = callbacks.args_of("on_train_end", run_context)
  if self._loss == nil then return end
  local text = self:html(cb)
  local f, why = io.open(self.path, "wb")
  if not f then raise(("RuntimeError: For 'ReportCallback', cannot write '%s': %s"):format(self.path, tostring(why))) end
  f:write(text)
  f:close()
end

return M
