"""The timing helpers the Python benchmarks share."""

import time


def best_mean(f, reps, rounds=7):
    """The best mean seconds per call of `f` over `rounds` rounds of `reps` calls (after
    one warm-up call)."""
    f()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def median_ms(f, reps=21):
    """The median milliseconds of `reps` single calls of `f` (after one warm-up call)."""
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e3
