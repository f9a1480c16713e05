-- launch_jobs.lua - whole mpirun jobs, started from one process (make
-- test-mpi runs this file with busted after the per-rank specs): a rank
-- that raises mid-step ends the job on every rank in bounded time, and 3
-- ranks split unevenly (and run the collectives and training specs).
-- MPIRUN (the make variable) gives the launcher.
local MPIRUN = os.getenv("MPIRUN") or "mpirun --oversubscribe"
local BIN = os.getenv("CELL_BIN") or "bin/cell"

--- Run `script` on np ranks (with `prog` in place of the cell binary).
local function run(np, script, env, prog)
  local t0 = os.time()
  if not script:find("/", 1, true) then script = "spec/mpi/scripts/" .. script end
  local p = io.popen(("timeout 300 %s -np %d %s %s %s 2>&1; echo \"<rc=$?>\""):format(MPIRUN, np, env or "",
    prog or BIN, script))
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

  it("end, with CELL_COMM_TIMEOUT, when a rank never joins a collective", function()
    local out, rc, secs = run(2, "stuck_rank.lua", "-x CELL_COMM_TIMEOUT=2")
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, "the job hung until the timeout:\n" .. out)
    assert.is_true(secs < 45, "the job took " .. secs .. " s")
    assert.is_truthy(out:find("cell.communication: rank 0: all_reduce did not complete within 2 s (CELL_COMM_TIMEOUT): "
      .. "another rank is not taking part (stuck, or in another call); aborting the job", 1, true), out)
    assert.is_falsy(out:find("should not get here", 1, true), out)
  end)

  it("end, with CELL_COMM_TIMEOUT, when send and recv never match (another tag)", function()
    local out, rc, secs = run(2, "stuck_p2p.lua", "-x CELL_COMM_TIMEOUT=2")
    assert.are_not.equal(0, rc, out)
    assert.are_not.equal(124, rc, "the job hung until the timeout:\n" .. out)
    assert.is_true(secs < 45, "the job took " .. secs .. " s")
    assert.is_truthy(out:find("did not complete within 2 s (CELL_COMM_TIMEOUT): another rank is not taking part", 1,
      true), out)
    assert.is_truthy(out:find("cell.communication: rank 0: send did not complete", 1, true)
      or out:find("cell.communication: rank 1: recv did not complete", 1, true), out)
    assert.is_falsy(out:find("should not get here", 1, true), out)
  end)

  it("run examples/fashion_mnist_ddp.lua on 2 ranks (4096 training images) to one process's accuracy", function()
    local dir = os.getenv("CELL_MPI_TMP") or "build/mpi-test"
    local path = dir .. "/ddp_example.safetensors"
    os.remove(path)
    local out, rc = run(2, "examples/fashion_mnist_ddp.lua 1 '' " .. path .. " 4096")
    assert.are.equal(0, rc, out)
    assert.is_truthy(out:find("2 ranks, 32 samples per rank per step, 64 steps per epoch", 1, true), out)
    local acc2 = tonumber(out:match("on 2 ranks: 1 epochs in [%d.]+ s, test accuracy ([%d.]+)%%"))
    assert.is_truthy(acc2, out)
    assert.is_truthy(out:find("saved " .. path, 1, true), out)
    local f = io.open(path, "rb")
    assert.is_truthy(f, "rank 0 wrote the checkpoint")
    f:close()
    -- one process on the same images, batch 64: the same global batches, so
    -- the same training up to float32 rounding (which Adam's first steps magnify a little)
    local out1, rc1 = run(1, "examples/fashion_mnist_ddp.lua 1 '' " .. dir .. "/ddp_one.safetensors 4096")
    assert.are.equal(0, rc1, out1)
    local acc1 = tonumber(out1:match("on 1 ranks: 1 epochs in [%d.]+ s, test accuracy ([%d.]+)%%"))
    assert.is_truthy(acc1, out1)
    assert.is_true(acc1 > 50, out1) -- it learned (10 classes: 10% by chance)
    assert.is_true(acc2 >= acc1 - 1.5, ("2 ranks reached %.2f%%, one process %.2f%%"):format(acc2, acc1))
  end)

  it("train a model split across 2 ranks (examples/pipeline_parallel.lua) to one process's weights", function()
    local out, rc = run(2, "examples/pipeline_parallel.lua 12")
    assert.are.equal(0, rc, out)
    assert.is_truthy(out:find("rank 0: stage 1 after 12 steps: largest difference from one process 0 (same weights)", 1,
      true), out)
    assert.is_truthy(out:find("rank 1: stage 2 after 12 steps: largest difference from one process 0 (same weights)", 1,
      true), out)
    local first, last = out:match("rank 1: loss ([%d.]+) after step 1, ([%d.]+) after step 12")
    assert.is_truthy(first and tonumber(last) < tonumber(first), out)
  end)

  it("pass send and recv's values and gradients down a chain of 3 ranks (p2p_mpi.lua)", function()
    local lua = os.getenv("CELL_LUA") or "lua5.4"
    local out, rc = run(3, "spec/mpi/p2p_mpi.lua", nil, lua .. " /usr/bin/busted -o TAP")
    assert.are.equal(0, rc, out)
    local oks = 0
    for _ in ("\n" .. out):gmatch("\nok %d+") do oks = oks + 1 end
    assert.is_falsy(out:find("not ok", 1, true), out)
    assert.is_true(oks >= 3 * 8, out)
  end)

  for _, spec in ipairs({ { "collectives_mpi.lua", 50 }, { "training_mpi.lua", 10 } }) do
    it("run spec/mpi/" .. spec[1] .. " on 3 ranks (an odd group size, uneven shards)", function()
      local lua = os.getenv("CELL_LUA") or "lua5.4"
      local out, rc = run(3, "spec/mpi/" .. spec[1], nil, lua .. " /usr/bin/busted -o TAP")
      assert.are.equal(0, rc, out)
      local oks = 0
      for _ in ("\n" .. out):gmatch("\nok %d+") do oks = oks + 1 end
      assert.is_falsy(out:find("not ok", 1, true), out)
      assert.is_true(oks >= 3 * spec[2], out)
    end)
  end

  it("split unevenly over 3 ranks", function()
    local out, rc = run(3, "three_ranks.lua")
    assert.are.equal(0, rc, out)
    for r = 0, 2 do assert.is_truthy(out:find("ok " .. r, 1, true), out) end
  end)
end)
