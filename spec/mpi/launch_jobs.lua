-- launch_jobs.lua - whole mpirun jobs, started from one process (make
-- test-mpi runs this file with busted after the per-rank specs): a rank
-- that raises mid-step ends the job on every rank in bounded time, and 3
-- ranks split unevenly. MPIRUN (the make variable) gives the launcher.
local MPIRUN = os.getenv("MPIRUN") or "mpirun --oversubscribe"
local BIN = os.getenv("CELL_BIN") or "bin/cell"

local function run(np, script)
  local t0 = os.time()
  local p = io.popen(("timeout 120 %s -np %d %s spec/mpi/scripts/%s 2>&1; echo \"<rc=$?>\""):format(MPIRUN, np, BIN,
    script))
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.*)<rc=(%d+)>%s*$")
  return body, tonumber(rc), os.time() - t0
end

describe("mpirun jobs", function()
  it("end on every rank, with the error, when one rank raises mid-step", function()
    local out, rc, secs = run(2, "raise_mid_step.lua")
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, "the job hung until the timeout:\n" .. out)
    assert.is_true(secs < 60, "the job took " .. secs .. " s")
    assert.is_truthy(out:find("ValueError: boom in step 3 on rank 1", 1, true), out)
    assert.is_truthy(out:find("cell.communication: rank 1 exits with status 1: aborting the job on every rank", 1,
      true), out)
    -- rank 0 was waiting in the all-reduce of step 3: it says why it ends
    assert.is_truthy(out:find("cell.communication: rank 0: ended by signal 15", 1, true), out)
    assert.is_truthy(out:find("rank 0 finished step 2", 1, true), out)
    assert.is_falsy(out:find("rank 0 finished step 3", 1, true), out)
    assert.is_falsy(out:find("should not get here", 1, true), out)
  end)

  it("split unevenly over 3 ranks", function()
    local out, rc = run(3, "three_ranks.lua")
    assert.are.equal(0, rc, out)
    for r = 0, 2 do assert.is_truthy(out:find("ok " .. r, 1, true), out) end
  end)
end)
