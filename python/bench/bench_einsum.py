#!/usr/bin/env python3
"""Python-side einsum benchmarks (issue targets of the Python package), same run:

1. per-call overhead of tenferro.einsum("ij,jk->ik", a, b) on 2x2 float64 next to
   numpy.einsum and torch.einsum (when torch is importable), interleaved rounds;
2. einsum-benchmark instances through tenferro.einsum (the instance's path, row-major
   arrays) next to the C++ CLI `tenferro bench einsum FILE --threads N --json` on the same
   instance and path (column-major operands: the same memory).

    PYTHONPATH=build/release/python python3 python/bench/bench_einsum.py \
        --cli build/release/apps/tenferro/tenferro --threads 1 ../shared/data/einsum-benchmark
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

import numpy as np

import tenferro


def per_call(eng, rounds=7, number=20000):
    a, b = np.random.rand(2, 2), np.random.rand(2, 2)
    cands = {"tenferro": lambda: tenferro.einsum("ij,jk->ik", a, b, engine=eng),
             "numpy": lambda: np.einsum("ij,jk->ik", a, b)}
    try:
        import torch
        torch.set_num_threads(1)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        cands["torch"] = lambda: torch.einsum("ij,jk->ik", ta, tb)
    except ImportError:
        pass
    for f in cands.values():
        f()
    best = {k: float("inf") for k in cands}
    for _ in range(rounds):  # interleaved: each round times every candidate once
        for k, f in cands.items():
            best[k] = min(best[k], timeit.timeit(f, number=number) / number * 1e6)
    return best


def load(path):
    with open(path) as f:
        d = json.load(f)
    shapes = d["shapes"]
    if isinstance(shapes, str):
        shapes = json.loads(shapes)
    paths = d.get("paths", {})
    if isinstance(paths, str):
        paths = json.loads(paths.replace("'", '"'))
    dtype = np.complex128 if "complex" in str(d.get("dtype", "float64")) else np.float64
    return d.get("name", os.path.splitext(os.path.basename(path))[0]), d["format_string"], shapes, dtype, paths


def timed_runs(call):
    """The CLI's protocol (`tenferro bench einsum`): warm up for at least two runs and
    0.3 s, then time at least 5 runs and at most 15 within 1 s; the median in ms."""
    first = time.perf_counter()
    call()
    if time.perf_counter() - first < 5:
        warm = time.perf_counter()
        while True:
            call()
            if time.perf_counter() - warm >= 0.3:
                break
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (len(times) < 15 and time.perf_counter() - start < 1.0):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), len(times)


def instance(path, threads, cli, rounds):
    # A fresh engine per instance (an empty buffer pool, as the CLI clears its pool per
    # instance); only one engine is alive at a time, so no idle workers share the cores.
    eng = tenferro.Engine(threads=threads)
    name, subs, shapes, dtype, paths = load(path)
    rng = np.random.default_rng(1)
    arrays = []
    for s in shapes:
        x = rng.standard_normal(s)
        if dtype == np.complex128:
            x = x + 1j * rng.standard_normal(s)
        arrays.append(np.ascontiguousarray(x, dtype=dtype))
    p = paths.get("opt_flops", {}).get("path")
    optimize = [tuple(step) for step in p] if p else "greedy"
    # Rounds alternate Python and the CLI (the host is shared and noisy); each side's
    # figure is its best round's median.
    py_ms, cli_ms, runs = float("inf"), None, 0
    for _ in range(rounds):
        ms, n = timed_runs(lambda: tenferro.einsum(subs, *arrays, optimize=optimize, engine=eng))
        if ms < py_ms:
            py_ms, runs = ms, n
        if cli:
            out = subprocess.run([cli, "bench", "einsum", path, "--threads", str(threads), "--json"],
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                if line.startswith("{"):
                    c = json.loads(line)["median_ms"]
                    cli_ms = c if cli_ms is None else min(cli_ms, c)
    return {"instance": name, "threads": threads, "python_ms": py_ms, "cli_ms": cli_ms,
            "ratio": py_ms / cli_ms if cli_ms else None, "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("instances", nargs="*", help="instance files or directories")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cli", help="the tenferro CLI, for the same-run reference")
    ap.add_argument("--rounds", type=int, default=2, help="alternating Python/CLI rounds per instance")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    pc = per_call(tenferro.Engine(threads=args.threads))  # dropped before the instances run
    rows.append({"case": "per-call 2x2 ij,jk->ik", **{k + "_us": v for k, v in pc.items()}})
    files = []
    for p in args.instances:
        files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json")) if os.path.isdir(p) else [p]
    for f in files:
        rows.append(instance(f, args.threads, args.cli, args.rounds))
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    r0 = rows[0]
    print(f"per call, 2x2 ij,jk->ik: tenferro {r0['tenferro_us']:.2f} us, numpy {r0['numpy_us']:.2f} us "
          f"(ratio {r0['tenferro_us'] / r0['numpy_us']:.2f})"
          + (f", torch {r0['torch_us']:.2f} us (ratio {r0['tenferro_us'] / r0['torch_us']:.2f})" if "torch_us" in r0 else ""))
    for r in rows[1:]:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        cli = f"{r['cli_ms']:.3f}" if r["cli_ms"] else "-"
        print(f"{r['instance']:<48} threads {r['threads']}  python {r['python_ms']:10.3f} ms  cli {cli:>10} ms  ratio {ratio}")


if __name__ == "__main__":
    sys.exit(main())
