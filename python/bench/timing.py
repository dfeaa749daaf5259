"""The timing helper the Python benchmarks share."""

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
