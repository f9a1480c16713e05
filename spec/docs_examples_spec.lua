-- docs_examples_spec.lua - the examples of docs/reference/*.md agree with the
-- code: every ```lua block with `expr --> shown result` lines is run (in a
-- fresh environment, spec/helpers/doc_examples.lua) and each shown result
-- compared with what the expression gives. One test per page; a failure
-- names page:line, the expression, what the page shows and what the code
-- gives. An example described in words (MANUAL) is not compared, but one
-- that raises is a failure. The examples that cannot run here are listed in
-- SKIP with the reason.
local D = require "helpers.doc_examples"

local DIR = "docs/reference"
local LUAJIT = type(jit) == "table"

-- page:line of a `-->` line -> why it is not checked.
local SKIP = {
  ["communication.md:168"] = "needs MPI (mpirun -np 2)",
  ["communication.md:196"] = "needs MPI (a group made with create_group)",
  ["communication.md:259"] = "needs MPI (2 ranks)",
  ["communication.md:274"] = "needs MPI (2 ranks)",
  ["communication.md:289"] = "needs MPI (2 ranks)",
  ["communication.md:318"] = "needs MPI (2 ranks)",
  ["communication.md:381"] = "needs MPI (2 ranks)",
  ["cuda.md:351"] = "needs a GPU",
  ["dataset-vision.md:198"] = "needs an image file (img, decoded from a.jpg)",
  ["dataset-vision.md:391"] = "needs an image folder (ds, an ImageFolderDataset)",
  ["io.md:135"] = "needs a file (/tmp/t.safetensors) no example writes",
  ["dataset.md:957"] = "shows the value a set_seed(42) would have set",
  ["dataset.md:983"] = "shows the value a set_num_parallel_workers(4) would have set",
  ["dataset.md:1008"] = "shows the value a set_prefetch_size(8) would have set",
  ["nn-cell.md:746"] = "E is a Cell subclass the page describes, not defined",
  ["nn-cell.md:967"] = "needs an earlier net:set_inputs(...)",
  ["nn-cell.md:981"] = "the shown keys end in `...` (elided)",
  ["optim.md:83"] = "net2 is not defined; the result is described in words",
  ["train.md:123"] = "needs a trained model and test_set",
  ["train.md:124"] = "needs a trained model and test_set",
  ["repl.md:251"] = "the path depends on where the source tree is",
}
-- Those that hold under some builds and settings only.
if not LUAJIT then -- cell.ffi is LuaJIT's: on Lua 5.4 its examples raise by design
  for _, line in ipairs { 44, 75, 93, 150 } do SKIP["ffi.md:" .. line] = "needs LuaJIT's ffi" end
else
  SKIP["tensor.md:88"] = "LuaJIT compares a number with a Tensor without calling __lt"
end
if not pcall(require, "cell.cuda") then
  SKIP["cuda.md:307"] = "cell.cuda is not built (make cuda)"
end
local device = os.getenv("CELL_DEVICE")
if device and device ~= "" and device ~= "CPU" then -- make test-device: new tensors go there
  SKIP["runtime.md:72"] = "the default device is CELL_DEVICE's"
  SKIP["tensor.md:1327"] = "the default device is CELL_DEVICE's (move_to(\"CPU\") copies)"
end

local BAD = { FAIL = true, ERROR = true, NOTREACHED = true, NOCOMPILE = true }

local function one_line(s)
  s = tostring(s):gsub("\n", "\\n")
  if #s > 300 then s = s:sub(1, 300) .. "..." end
  return s
end

describe("docs/reference examples", function()
  for _, page in ipairs(D.pages(DIR)) do
    local blocks = D.blocks(DIR, page)
    if #blocks > 0 then
      it(page .. " shows what the code gives", function()
        local tmp, remove = D.tmpdir()
        local problems = {}
        local ok, err = pcall(function()
          for _, blk in ipairs(blocks) do
            for _, r in ipairs(D.run_block(DIR, page, blk, tmp)) do
              local where = page .. ":" .. r.line
              if BAD[r.status] and not SKIP[where] then
                problems[#problems + 1] = ("%s: %s\n    %s --> %s\n    the code gives: %s%s"):format(
                  where, r.status, one_line(r.lhs), one_line(r.exp),
                  r.actual ~= "" and one_line(r.actual) or "(nothing)",
                  r.note ~= "" and ("\n    (" .. one_line(r.note) .. ")") or "")
              end
            end
          end
        end)
        remove()
        if not ok then error(err, 0) end
        assert.is_true(#problems == 0, #problems .. " example(s) of " .. page
          .. " do not match the code:\n" .. table.concat(problems, "\n"))
      end)
    end
  end

  it("skips only examples that exist", function()
    local seen, stale = {}, {}
    for _, page in ipairs(D.pages(DIR)) do
      for _, blk in ipairs(D.blocks(DIR, page)) do
        for _, line in ipairs(D.check_lines(blk)) do seen[page .. ":" .. line] = true end
      end
    end
    for where, why in pairs(SKIP) do
      if not seen[where] then stale[#stale + 1] = where .. " (" .. why .. ")" end
    end
    table.sort(stale)
    assert(#stale == 0, "SKIP names lines with no `-->` example (moved?): " .. table.concat(stale, ", "))
  end)
end)
