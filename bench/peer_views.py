#!/usr/bin/python3
"""numpy peer figures for bench/tensor_bench.cc: the same view operations on the same
shapes (first extent 4, the others 2, float64), in nanoseconds per call.

Usage: /usr/bin/python3 bench/peer_views.py [--json]
"""
import json
import sys
import timeit

import numpy as np


def measure(stmt, env, number=200000):
    best = min(timeit.repeat(stmt, globals=env, number=number, repeat=5))
    return best / number * 1e9


def main():
    rows = []
    for rank in (2, 4, 8):
        shape = (4,) + (2,) * (rank - 1)
        a = np.zeros(shape, order="F")
        env = {"a": a, "np": np, "perm": tuple(range(rank - 1, -1, -1)),
               "target": (3,) + shape}
        cases = {
            "Permute": "a.transpose(perm)",
            "Slice": "a[3::-2]",
            "Select": "a[:, 1]",
            "ReshapeFlatten": "a.reshape(-1, order='F')",
            "BroadcastLeading": "np.broadcast_to(a, target)",
            "ElementCount": "a.size",
        }
        for name, stmt in cases.items():
            rows.append({"case": f"{name}/{rank}", "numpy_ns": round(measure(stmt, env), 1)})
    if "--json" in sys.argv:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['case']:<22} {r['numpy_ns']:>8.1f} ns")


if __name__ == "__main__":
    main()
