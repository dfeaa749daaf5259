"""A small real matrix applied to many points stored point by point (Note [Narrow
products]): tenferro.einsum('ij,nj->ni', R, P) against numpy's P @ R.T, P C-ordered
[N, K], f64 and f32, two alternating rounds.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/release/python /usr/bin/python3 \
        python/bench/bench_points.py [THREADS] [N]

THREADS (default 1) is tenferro's thread count; set numpy's with OPENBLAS_NUM_THREADS.
Prints the median milliseconds of 15 calls each and checks the values against numpy.
"""

import sys

import numpy as np

import tenferro
from timing import median_ms


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        for m, k in ((3, 3), (2, 2), (4, 4), (3, 4), (8, 8)):
            r = rng.random((m, k)).astype(dtype)
            p = rng.random((n, k)).astype(dtype)
            got = np.asarray(tenferro.einsum("ij,nj->ni", r, p, threads=threads))
            tol = 1e-4 if dtype == np.float32 else 1e-12
            assert np.allclose(got, p @ r.T, rtol=tol), (dtype, m, k)
            tf, npy = [], []
            for _ in range(2):
                tf.append(median_ms(lambda: tenferro.einsum("ij,nj->ni", r, p, threads=threads), reps=15))
                npy.append(median_ms(lambda: p @ r.T, reps=15))
            name = np.dtype(dtype).name
            print(f"{name} R[{m},{k}] P[{n},{k}]: tenferro {tf[0]:.2f} {tf[1]:.2f} ms, "
                  f"numpy P @ R.T {npy[0]:.2f} {npy[1]:.2f} ms, numpy / tenferro {min(npy) / min(tf):.2f}")


if __name__ == "__main__":
    main()
