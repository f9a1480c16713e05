-- docs_spec.lua - the documentation under docs/: every public name (walked
-- from the loaded modules and the C headers, spec/helpers/public_names.lua)
-- has a reference entry, every entry has a signature and a summary, every
-- reference page is reachable from docs/reference/index.md (which is how the
-- REPL finds them), and `docs/build.lua` builds HTML with no broken link
-- (when cmark-gfm is installed, as CI's `make deps` does).
-- (That the pages' examples show what the code gives: docs_examples_spec.lua.)
local doc = require "cell.doc"
local public = require "helpers.public_names"

local function sh(cmd)
  local p = io.popen("{ " .. cmd .. "; } 2>&1; echo \"<rc=$?>\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.*)<rc=(%d+)>%s*$")
  return body, tonumber(rc)
end

local function read(path)
  local f = assert(io.open(path, "r"))
  local s = f:read("*a")
  f:close()
  return s
end

local LUA = os.getenv("CELL_LUA") or "lua5.4"

describe("docs/reference", function()
  local ref
  setup(function()
    doc.reference_dir = "docs/reference"
    doc.reload()
    ref = doc.reference()
  end)
  teardown(function()
    doc.reference_dir = nil
    doc.reload()
  end)

  it("is found by cell.doc from the source tree", function()
    doc.reference_dir = nil
    assert.is_truthy(doc.find_reference(), "lua/cell/doc.lua did not find docs/reference")
    doc.reference_dir = "docs/reference"
  end)

  it("has an entry for every public Lua name", function()
    local missing = {}
    for _, e in ipairs(public.lua()) do
      if not doc.entry(e.name) and not doc.entry_for_value(e.value) then missing[#missing + 1] = e.name end
    end
    assert.are.same({}, missing, "no reference entry (add a `### `name`` entry to a page of docs/reference/) for: "
      .. table.concat(missing, ", "))
  end)

  it("has an entry for every function of the public C headers", function()
    local missing = {}
    for _, name in ipairs(public.c("include")) do
      if not doc.entry(name) then missing[#missing + 1] = name end
    end
    assert.are.same({}, missing, "no entry in docs/reference/embedding-c.md for: " .. table.concat(missing, ", "))
  end)

  it("gives every entry a signature and a summary sentence, once", function()
    local bad, seen, dup = {}, {}, {}
    for _, e in ipairs(ref.list) do
      local summary = doc.first_sentence(e.body)
      if #e.signature == 0 or summary == "" or summary:find("TODO", 1, true) then bad[#bad + 1] = e.name end
      if seen[e.name] then dup[#dup + 1] = e.name end
      seen[e.name] = true
    end
    assert.is_true(#ref.list > 500, "only " .. #ref.list .. " entries read")
    assert.are.same({}, bad, "entries without a signature block or a first sentence")
    assert.are.same({}, dup, "entries written twice")
  end)

  it("gives every entry an example", function()
    local without = {}
    for _, e in ipairs(ref.list) do
      if not e.body:find("```", 1, true) then without[#without + 1] = e.name end
    end
    assert.are.same({}, without, "entries without an example (a fenced code block after the text)")
  end)

  it("links every reference page from its index.md", function()
    local index = read("docs/reference/index.md")
    local out = sh("ls docs/reference")
    local unlinked = {}
    for page in out:gmatch("([%w_%-]+%.md)") do
      if page ~= "index.md" and not index:find("(" .. page .. ")", 1, true) then unlinked[#unlinked + 1] = page end
    end
    assert.are.same({}, unlinked, "pages the REPL cannot find (link them from docs/reference/index.md)")
  end)
end)

describe("cell.doc's reading of Markdown", function()
  it("parses an entry's heading, signature and body", function()
    local entries = doc.parse_page(table.concat({
      "# Page", "", "Intro.", "", "### `m.f`", "", "```lua", "m.f(a [, b = 1])", "m.f{a =}", "```", "",
      "Does a thing. More.", "", "```lua", "### `not.a.heading`", "```", "", "## Section", "", "text",
      "### `m.g`", "", "```lua", "m.g()", "```", "", "G.",
    }, "\n"), "p.md")
    assert.are.equal(2, #entries)
    assert.are.equal("m.f", entries[1].name)
    assert.are.same({ "m.f(a [, b = 1])", "m.f{a =}" }, entries[1].signature)
    assert.are.equal("Does a thing. More.\n\n```lua\n### `not.a.heading`\n```", entries[1].body)
    assert.are.equal("m.g", entries[2].name)
    assert.are.equal("G.", entries[2].body)
  end)

  it("ends the first sentence at a full stop, not at an abbreviation or a decimal", function()
    assert.are.equal("Keeps 0.5 of them, e.g. half.", doc.first_sentence("Keeps 0.5 of them, e.g. half. Then more."))
    assert.are.equal("Uses `a. b` here.", doc.first_sentence("Uses `a. b` here. More."))
    assert.are.equal("One line over two.", doc.first_sentence("One line\nover two.\n\nNext paragraph."))
    assert.are.equal("No full stop", doc.first_sentence("No full stop"))
  end)

  it("shows Markdown as plain text", function()
    assert.are.equal("see nn.Dense and x", doc.plain("see [`nn.Dense`](nn-layers.md#nndense) and **x**"))
  end)
end)

describe("the HTML (docs/build.lua)", function()
  local has_cmark = select(2, sh("command -v cmark-gfm >/dev/null")) == 0
  local tmp
  before_each(function()
    tmp = os.tmpname()
    os.remove(tmp)
  end)
  after_each(function() sh("rm -rf '" .. tmp .. "'") end)

  if not has_cmark then
    -- CI installs cmark-gfm (make deps); a machine without it skips only this part.
    it("needs cmark-gfm, which is not installed here", function() assert.is_false(has_cmark) end)
    return
  end

  it("builds every page with no broken link", function()
    local out, rc = sh(LUA .. " docs/build.lua docs '" .. tmp .. "'")
    assert.are.equal(0, rc, out)
    assert.is_truthy(out:find("no broken links", 1, true), out)
    local html = read(tmp .. "/reference/nn-layers.html")
    assert.is_truthy(html:find('<h3 id="nndropout"><code>nn.Dropout</code></h3>', 1, true))
    assert.is_truthy(read(tmp .. "/index.html"):find('href="reference/index.html"', 1, true))
  end)

  it("fails on a missing page or anchor", function()
    sh("mkdir -p '" .. tmp .. "/src'")
    local f = assert(io.open(tmp .. "/src/index.md", "w"))
    f:write("# T\n\n## Here\n\n[ok](#here) [a](other.md) [b](#nowhere) [c](index.md#here) [d](https://x.org/y.md)\n")
    f:close()
    local out, rc = sh(LUA .. " docs/build.lua '" .. tmp .. "/src' '" .. tmp .. "/out'")
    assert.are.equal(1, rc, out)
    assert.is_truthy(out:find("index.html: other.html (no such page)", 1, true), out)
    assert.is_truthy(out:find("index.html: #nowhere (no such anchor)", 1, true), out)
    assert.is_falsy(out:find("#here (", 1, true), out)
    assert.is_falsy(out:find("x.org", 1, true), out)
  end)
end)
