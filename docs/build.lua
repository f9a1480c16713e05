--- docs/build.lua: the HTML of the documentation, from the same Markdown
-- the REPL's `?name` reads. Each page under docs/ goes through cmark-gfm, gets
-- ids on its headings (GitHub's slugs, so `reference/tensor.md#tensorsum`
-- works on GitHub and here), its `.md` links rewritten to `.html`, and a
-- template with navigation; then every relative link and #anchor of the
-- result is checked.
--
--     lua5.4 docs/build.lua docs build/docs     (what `make docs` runs)
--     lua5.4 docs/build.lua --check build/docs  (only the link check)
--
-- Exits 1 and lists each broken link (page, href) when there is one, and
-- when cmark-gfm is missing. Written in the Lua subset shared by Lua 5.4 and
-- LuaJIT 2.1; needs only `cmark-gfm` and a POSIX shell.

-- cmark-gfm: CommonMark with GitHub's tables (the reference index and the
-- comparison pages are tables).
local CMARK = os.getenv("CMARK") or "cmark-gfm -e table"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

--- A shell command's output, and whether it exited 0 (told by an echo, as
-- Lua 5.4's and LuaJIT's close report exit statuses differently).
local function run(cmd)
  local p = io.popen("{ " .. cmd .. "; } && echo '<ok>'")
  local out = p:read("*a")
  p:close()
  local body = out:match("^(.-)<ok>\n?$")
  return body or out, body ~= nil
end

--- Files under dir with the given extension, as paths relative to dir, sorted.
local function files_under(dir, ext)
  local out = run("cd " .. sh_quote(dir) .. " && find . -type f -name '*." .. ext .. "' | sort")
  local list = {}
  for line in out:gmatch("[^\n]+") do list[#list + 1] = line:gsub("^%./", "") end
  return list
end

--- GitHub's anchor for a heading's text: lower case, punctuation other
-- than '-' and '_' dropped, spaces as '-'.
local function slug(text)
  text = text:gsub("<[^>]*>", ""):gsub("&amp;", "&"):gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&quot;", '"')
  text = text:lower():gsub("[^%w%s%-_]", ""):gsub("%s", "-")
  return text
end

local function dirname(path) return path:match("^(.*)/[^/]*$") or "." end

--- The relative path from the folder of page `from` to page `to` (both
-- relative to the root).
local function relative(from, to)
  local depth = select(2, from:gsub("/", ""))
  return ("../"):rep(depth) .. to
end

--- Page title: its first level-1 heading's text.
local function title_of(md)
  local t = md:match("^#%s+([^\n]+)") or md:match("\n#%s+([^\n]+)")
  return t and t:gsub("`", "") or "cell"
end

local function escape(s) return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")) end

local STYLE = [[
body{font-family:sans-serif;max-width:60rem;margin:0 auto;padding:0 1rem;line-height:1.5;display:flex;gap:2rem}
nav{min-width:13rem;font-size:.9rem;border-right:1px solid #ddd;padding-right:1rem}
nav ul{list-style:none;padding-left:.8rem}main{flex:1;min-width:0}
pre{background:#f5f5f5;padding:.6rem;overflow-x:auto}code{background:#f5f5f5}
h3{border-top:1px solid #eee;padding-top:.8rem}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem}
]]

--- The navigation: every page, grouped by folder, linked relative to `page`.
local function nav(pages, titles, page)
  local out = { "<nav><p><a href=\"" .. relative(page, "index.html") .. "\">cell documentation</a></p><ul>" }
  local group
  for _, p in ipairs(pages) do
    local folder = p:match("^(.*)/") or ""
    if folder ~= group then
      if group and group ~= "" then out[#out + 1] = "</ul></li>" end
      if folder ~= "" then out[#out + 1] = "<li>" .. escape(folder) .. "<ul>" end
      group = folder
    end
    if p ~= "index.md" then
      local html = p:gsub("%.md$", ".html")
      out[#out + 1] = ("<li><a href=\"%s\">%s</a></li>"):format(relative(page, html), escape(titles[p]))
    end
  end
  if group and group ~= "" then out[#out + 1] = "</ul></li>" end
  out[#out + 1] = "</ul></nav>"
  return table.concat(out, "\n")
end

--- cmark-gfm's HTML with ids on the headings and .md links as .html.
local function post(html)
  local used = {}
  html = html:gsub("<h([1-6])>(.-)</h%1>", function(level, inner)
    local id = slug(inner)
    local n = used[id]
    used[id] = (n or 0) + 1
    if n then id = id .. "-" .. n end
    return ('<h%s id="%s">%s</h%s>'):format(level, id, inner, level)
  end)
  html = html:gsub('href="([^"]*)"', function(href)
    if href:match("^%a[%w+.-]*:") then return 'href="' .. href .. '"' end
    local path, anchor = href:match("^([^#]*)(.*)$")
    path = path:gsub("%.md$", ".html")
    return 'href="' .. path .. anchor .. '"'
  end)
  return html
end

local function build(src, out)
  local _, ok = run(CMARK .. " --version >/dev/null 2>&1")
  if not ok then
    io.stderr:write("docs: cmark-gfm not found (install Debian's cmark-gfm: make deps)\n")
    os.exit(1)
  end
  local pages = files_under(src, "md")
  -- the navigation follows the order the index pages link them in
  local rank, n = {}, 0
  for _, index in ipairs { "index.md", "reference/index.md" } do
    local text = read(src .. "/" .. index) or ""
    local base = index:match("^(.*/)") or ""
    for target in text:gmatch("%]%(([%w_%-/]+%.md)[#)]") do
      local page = base .. target
      if not rank[page] then
        n = n + 1
        rank[page] = n
      end
    end
  end
  table.sort(pages, function(a, b)
    local fa, fb = a:match("^(.*)/") or "", b:match("^(.*)/") or ""
    if fa ~= fb then return fa < fb end
    local ra, rb = rank[a] or math.huge, rank[b] or math.huge
    if ra ~= rb then return ra < rb end
    return a < b
  end)
  local titles = {}
  for _, p in ipairs(pages) do titles[p] = title_of(read(src .. "/" .. p)) end
  for _, p in ipairs(pages) do
    local html, done = run(CMARK .. " " .. sh_quote(src .. "/" .. p))
    if not done then
      io.stderr:write("docs: cmark-gfm failed on " .. p .. "\n")
      os.exit(1)
    end
    local target = out .. "/" .. p:gsub("%.md$", ".html")
    run("mkdir -p " .. sh_quote(dirname(target)))
    write(target, table.concat({
      "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
      "<title>" .. escape(titles[p]) .. " - cell</title><style>" .. STYLE .. "</style></head><body>",
      nav(pages, titles, p), "<main>", post(html), "</main></body></html>", "",
    }, "\n"))
  end
  return #pages
end

--- Every relative href in the HTML under dir must name a file there, and
-- its #anchor an id in that file. Returns a list of "page: href" problems.
local function check(dir)
  local pages = files_under(dir, "html")
  local ids, texts = {}, {}
  for _, p in ipairs(pages) do
    local text = read(dir .. "/" .. p)
    texts[p] = text
    ids[p] = {}
    for id in text:gmatch('id="([^"]*)"') do ids[p][id] = true end
  end
  local problems = {}
  for _, p in ipairs(pages) do
    for href in texts[p]:gmatch('href="([^"]*)"') do
      if not href:match("^%a[%w+.-]*:") then
        local path, anchor = href:match("^([^#]*)#?(.*)$")
        local target = p
        if path ~= "" then
          local parts = {}
          for part in (dirname(p) .. "/" .. path):gmatch("[^/]+") do
            if part == ".." then table.remove(parts)
            elseif part ~= "." then parts[#parts + 1] = part end
          end
          target = table.concat(parts, "/")
        end
        if not texts[target] then
          if path:match("%.md$") or not read(dir .. "/" .. target) then
            problems[#problems + 1] = p .. ": " .. href .. " (no such page)"
          end
        elseif anchor ~= "" and not ids[target][anchor] then
          problems[#problems + 1] = p .. ": " .. href .. " (no such anchor)"
        end
      end
    end
  end
  return problems, #pages
end

local args = { ... }
local out
if args[1] == "--check" then
  out = args[2]
else
  local src = args[1] or "docs"
  out = args[2] or "build/docs"
  local n = build(src, out)
  print(("docs: %d pages written to %s"):format(n, out))
end
local problems, n = check(out)
if #problems > 0 then
  for _, p in ipairs(problems) do io.stderr:write("docs: broken link in " .. p .. "\n") end
  os.exit(1)
end
print(("docs: %d pages, no broken links"):format(n))
