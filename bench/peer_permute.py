#!/usr/bin/python3
"""numpy peer figures for `tenferro bench kernels --only permute`: the same permutation
copies (a column-major source, a compact column-major destination) timed as
numpy.copyto of a transposed view, median of 5, in milliseconds, next to a copy of the
same bytes. Fix threads before Python starts (OPENBLAS_NUM_THREADS does not matter:
numpy copies on one thread).

Usage: /usr/bin/python3 bench/peer_permute.py [--json]
"""
import json
import sys
import time

import numpy as np

CASES = [
    ("f64 64^4 [3210]", "float64", (64, 64, 64, 64), (3, 2, 1, 0)),
    ("f64 64^4 [1032]", "float64", (64, 64, 64, 64), (1, 0, 3, 2)),
    ("f32 64^4 [3210]", "float32", (64, 64, 64, 64), (3, 2, 1, 0)),
    ("f32 64^4 [1023]", "float32", (64, 64, 64, 64), (1, 0, 2, 3)),
    ("c128 48^4 [3210]", "complex128", (48, 48, 48, 48), (3, 2, 1, 0)),
    ("bool 8192^2 [10]", "bool", (8192, 8192), (1, 0)),
    ("f64 2x4e6 [10]", "float64", (2, 4000000), (1, 0)),
    ("f64 4e6x2 [10]", "float64", (4000000, 2), (1, 0)),
    ("f64 2000x2x2000 [102]", "float64", (2000, 2, 2000), (1, 0, 2)),
    ("f64 7x600x1000x3 [3120]", "float64", (7, 600, 1000, 3), (3, 1, 2, 0)),
    ("f64 7x600x1000x3 [0321]", "float64", (7, 600, 1000, 3), (0, 3, 2, 1)),
    ("f64 3x1000x3x1000 [2103]", "float64", (3, 1000, 3, 1000), (2, 1, 0, 3)),
    ("f64 4x4x1e6 [102]", "float64", (4, 4, 1000000), (1, 0, 2)),
    ("c128 2^23 qubits 1<->3", "complex128", (2,) * 23, (0, 3, 2, 1) + tuple(range(4, 23))),
    ("f64 5^10 reversed", "float64", (5,) * 10, tuple(range(9, -1, -1))),
]


def median_ms(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[repeat // 2] * 1e3


def main():
    as_json = "--json" in sys.argv[1:]
    for name, dtype, shape, perm in CASES:
        n = len(shape)
        # Column-major data of `shape` is the row-major array of the reversed shape; the
        # destination's axis k (source axis perm[k]) is numpy axis n - 1 - k.
        src = np.ones(tuple(reversed(shape)), dtype=dtype)
        axes = [n - 1 - perm[n - 1 - j] for j in range(n)]
        view = src.transpose(axes)
        dst = np.empty(view.shape, dtype=dtype)
        same = np.empty_like(src)
        ms = median_ms(lambda: np.copyto(dst, view))
        ref = median_ms(lambda: np.copyto(same, src))
        if as_json:
            print(json.dumps({"case": "permute " + name, "numpy_ms": ms, "copy_ms": ref}))
        else:
            print(f"permute {name:28s} numpy {ms:9.3f} ms   copy of the same bytes {ref:7.3f} ms")


if __name__ == "__main__":
    main()
