-- docs_examples_spec.lua - the examples of docs/reference/*.md agree with the
-- code: every ```lua block with `expr --> shown result` lines is run (in a
-- fresh environment, spec/helpers/doc_examples.lua) and each shown result
-- compared with what the expression gives. One test per page; a failure
-- names page:line, the expression, what the page shows and what the code
-- gives. An example described in words (MANUAL) is not compared, but one
-- that raises is a failure. The examples that cannot run here are listed in
-- SKIP, by page and expression, with the reason.
local D = require "helpers.doc_examples"

local DIR = "docs/reference"
local LUAJIT = type(jit) == "table"

-- "page: expression" of a `-->` line (the text before the arrow, as the
-- page writes it) -> why it is not checked. Keyed by the expression, not the
-- line number, so that editing a page above it does not move it.
local SKIP = {
  ["communication.md: local n = cell.communication.get_group_size()"] = "needs MPI (mpirun -np 2)",
  ['communication.md: comm.get_world_rank_from_group_rank("pair", 0)'] = "needs MPI (a group made with create_group)",
  ["communication.md: comm.all_reduce(cell.tensor({comm.get_rank() + 1}))"] = "needs MPI (2 ranks)",
  ["communication.md: comm.all_gather(cell.tensor({{comm.get_rank()}}))"] = "needs MPI (2 ranks)",
  ["communication.md: comm.reduce_scatter(cell.tensor({1, 2}))"] = "needs MPI (2 ranks)",
  ["communication.md: comm.reduce(cell.tensor({1}), 0)"] = "needs MPI (2 ranks)",
  ["communication.md: if comm.get_rank() == 1 then print(comm.recv(cell.zeros({1}), 0)) end"] = "needs MPI (2 ranks)",
  ["cuda.md: print(cell.cuda.memory_allocated())"] = "needs a GPU",
  ["dataset-vision.md: vision.RandomResizedCrop(224, {scale = {0.5, 1}})(img).shape"] =
    "needs an image file (img, decoded from a.jpg)",
  ["dataset-vision.md: ds:get_class_indexing()"] = "needs an image folder (ds, an ImageFolderDataset)",
  ["io.md: names[1], meta.note"] = "needs a file (/tmp/t.safetensors) no example writes",
  ["train.md: model:eval(test_set).accuracy"] = "needs a trained model and test_set",
  ["train.md: print(model:eval(test_set))"] = "needs a trained model and test_set",
  ['repl.md: require("cell.doc").find_reference()'] = "the path depends on where the source tree is",
}
-- Those that hold under some builds and settings only.
if not LUAJIT then -- cell.ffi is LuaJIT's: on Lua 5.4 its examples raise by design
  for _, e in ipairs { "F.C.cell_tensor_numel(F.handle(cell.ones({2, 3})))",
    "F.C.cell_tensor_ndim(F.handle(cell.zeros({2, 3})))", "local t = cell.zeros({3}); F.ptr(t)[2] = 7; t[3]",
    "F.tensor(F.transpose(cell.zeros({2, 3}), 1, 2)).shape" } do
    SKIP["ffi.md: " .. e] = "needs LuaJIT's ffi"
  end
else
  SKIP["tensor.md: t > 3"] = "LuaJIT compares a number with a Tensor without calling __lt"
end
if not pcall(require, "cell.cuda") then
  SKIP['cuda.md: print(require("cell.cuda").device_count())'] = "cell.cuda is not built (make cuda)"
end
local device = os.getenv("CELL_DEVICE")
if device and device ~= "" and device ~= "CPU" then -- make test-device: new tensors go there
  SKIP["runtime.md: cell.get_device()"] = "the default device is CELL_DEVICE's"
  SKIP['tensor.md: t:move_to("CPU") == t'] = "the default device is CELL_DEVICE's (move_to(\"CPU\") copies)"
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
              if BAD[r.status] and not SKIP[page .. ": " .. r.lhs] then
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
        for _, e in ipairs(D.check_exprs(blk)) do seen[page .. ": " .. e] = true end
      end
    end
    for where, why in pairs(SKIP) do
      if not seen[where] then stale[#stale + 1] = where .. " (" .. why .. ")" end
    end
    table.sort(stale)
    assert(#stale == 0, "SKIP names examples no page has (changed?): " .. table.concat(stale, ", "))
  end)
end)
