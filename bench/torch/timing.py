"""timing.py - the timer the PyTorch benchmarks share: the best mean wall
time of fn() over `reps` runs of `calls` calls, after a warm-up, in
milliseconds (as bench/timing.lua times the Lua side)."""
import time


def bench_ms(fn, reps, calls):
    for _ in range(5):
        fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e3
