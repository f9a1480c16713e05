-- report_spec.lua - cell.train.ReportCallback and Model:train's `report`
-- option: the HTML file is self-contained (no script, no link, no address),
-- holds one SVG curve per series with one point per step or epoch, and one
-- histogram per parameter; and, where Debian's chromium is installed, a
-- real browser renders it: the screenshot is far from blank (much larger
-- than a blank page's at the same size) and the DOM holds the curves.
-- Without chromium the browser checks are skipped, and say so
-- ("skipped: no chromium (2 browser checks)" on stderr).
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

local function err(fn, ...) return H.caller_error("report_spec%.lua", fn, ...) end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

local function sh(cmd)
  local p = io.popen("{ " .. cmd .. "; } 2>/dev/null; echo \"<rc=$?>\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.*)<rc=(%d+)>%s*$")
  return body, tonumber(rc)
end

-- CELL_CHROMIUM names the browser (a path that is not there: none), else
-- chromium or chromium-browser on PATH.
local CHROMIUM
local given = os.getenv("CELL_CHROMIUM")
for _, c in ipairs(given and { given } or { "chromium", "chromium-browser" }) do
  local out = sh("command -v '" .. c:gsub("'", "") .. "'")
  if out and out:match("%S") then
    CHROMIUM = out:match("^%s*(.-)%s*$")
    break
  end
end
if not CHROMIUM then io.stderr:write("\nreport_spec: skipped: no chromium (2 browser checks)\n") end

--- A run of `epochs` epochs of 4 steps each, with Model:fit's evaluation; the report's path and the losses.
local function run(path, epochs)
  cell.set_seed(4)
  local net = nn.SequentialCell { nn.Dense(2, 8), nn.Tanh(), nn.Dense(8, 2) }
  local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.2), { "accuracy", "loss" })
  local x = cell.randn({ 32, 2 })
  local y = x[{ {}, 1 }]:gt(0):astype(cell.int64) + 1
  local ds = { { x, y }, { x, y }, { x, y }, { x, y } }
  local losses = {}
  local spy = train.LambdaCallback { on_train_step_end = function(rc) losses[#losses + 1] = rc.net_outputs:item() end }
  model:fit(epochs, ds, { valid_dataset = { { x, y } }, callbacks = { spy }, report = path, progress = false })
  return losses, model
end

describe("train.ReportCallback", function()
  local path = os.tmpname() .. ".html"
  teardown(function() os.remove(path) end)

  it("writes a self-contained page with the loss, learning rate, metric curves and histograms", function()
    local losses = run(path, 3)
    local html = read(path)
    assert.is_truthy(html:find("^<!DOCTYPE html>"))
    assert.is_falsy(html:find("<script", 1, true))
    assert.is_falsy(html:find("<link", 1, true))
    assert.is_falsy(html:find("https?:"))
    assert.is_falsy(html:find("src=", 1, true))
    assert.is_falsy(html:find("url%("))
    -- loss per step and epoch mean, learning rate, eval accuracy and eval loss
    assert.are.equal(5, count(html, "<polyline"))
    assert.are.equal(4, count(html, '<path class="bars"')) -- 0.weight 0.bias 2.weight 2.bias
    assert.are.equal(4 + 4, count(html, "<svg"))
    local first = html:match('<polyline class="series" points="([^"]*)"')
    assert.are.equal(12, count(first, "[^ ]+"))  -- one point per step
    assert.is_truthy(html:find(("<td>Final loss</td><td>%s</td>"):format(("%.4g"):format(losses[12])), 1, true))
    assert.is_truthy(html:find("<td>Epochs</td><td>3 of 3</td>", 1, true))
    assert.is_truthy(html:find("eval accuracy", 1, true))
  end)

  it("names bad arguments", function()
    assert.are.equal("TypeError: For 'ReportCallback', the 'path' must be a path (a non-empty string), but got nil.",
      err(function() train.ReportCallback() end))
    assert.are.equal("ValueError: For 'ReportCallback', the 'max_histograms' must be an integer >= 0, but got -1.",
      err(function() train.ReportCallback("r.html", { max_histograms = -1 }) end))
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.MSELoss(), nn.SGD(net:trainable_params(), 0.1))
    assert.are.equal("TypeError: For 'Model.train', the option 'report' must be a path (a string), but got number.",
      err(function() model:train(1, { { cell.ones({ 1, 2 }), cell.ones({ 1, 2 }) } }, { report = 3 }) end))
    local rc = train.RunContext { epoch_num = 1, cur_step_num = 0 }
    assert.are.equal("RuntimeError: For 'ReportCallback', html: nothing is recorded before training begins",
      err(function() train.ReportCallback("r.html"):html(rc) end))
    H.expect_error(function() train.ReportCallback("r.html"):html(cell.ones({ 2 })) end, "TypeError", "run_context")
  end)

  if CHROMIUM then
    local function render(url, flag, out)
      local profile = os.tmpname()
      os.remove(profile)
      -- not under the sanitizers' preloaded runtimes (make asan, make tsan)
      local body, rc = sh(("env -u LD_PRELOAD -u ASAN_OPTIONS -u TSAN_OPTIONS -u LSAN_OPTIONS timeout 120 '%s' --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run "
        .. "--user-data-dir='%s' --window-size=1000,1200 %s '%s' %s"):format(CHROMIUM, profile, flag, url,
          out and ("> '" .. out .. "'") or ""))
      os.execute("rm -rf '" .. profile .. "'")
      return body, rc
    end

    local function png_info(file)
      local s = read(file)
      assert.are.equal("\137PNG\r\n\26\n", s:sub(1, 8))
      local function u32(i) return ((s:byte(i) * 256 + s:byte(i + 1)) * 256 + s:byte(i + 2)) * 256 + s:byte(i + 3) end
      return { size = #s, width = u32(17), height = u32(21) }
    end

    it("renders in headless chromium to a screenshot far from blank", function()
      run(path, 3)
      local shot, blank_html, blank = os.tmpname() .. ".png", os.tmpname() .. ".html", os.tmpname() .. ".png"
      local f = assert(io.open(blank_html, "w"))
      f:write("<!DOCTYPE html><html><body></body></html>")
      f:close()
      local _, rc = render("file://" .. path, "--screenshot=" .. shot)
      assert.are.equal(0, rc)
      render("file://" .. blank_html, "--screenshot=" .. blank)
      local a, b = png_info(shot), png_info(blank)
      assert.are.equal(1000, a.width)
      assert.are.equal(1200, a.height)
      assert.is_true(a.size > 5 * b.size, ("report %d bytes, blank page %d bytes"):format(a.size, b.size))
      for _, p in ipairs { shot, blank_html, blank } do os.remove(p) end
    end)

    it("parses the SVG curves into the DOM", function()
      local dom, rc = render("file://" .. path, "--dump-dom")
      assert.are.equal(0, rc)
      assert.are.equal(5, count(dom, "<polyline"))
      assert.are.equal(8, count(dom, "<svg"))
      assert.are.equal(4, count(dom, '<path class="bars"'))
    end)
  end
end)
