#!/usr/bin/python3
"""Tables of the Portable CPU engine issue's per-machine targets from the files
bench/cpu_targets.sh writes into OUT_DIR (docs/benchmarks.md).

Usage: cpu_targets_table.py OUT_DIR

- dot_general: per product and thread count, tenferro (the default process's plain
  row), cblas under each OpenBLAS core type (the reference column of that core type's
  process) and BLIS (the default process's "[blis]" row), lowest-highest over the
  rounds; per round the fastest peer over tenferro; and the fastest peer's median over
  tenferro's median (target >= 0.95).
- Permutations: per thread count, the lowest ratio (memcpy time / tenferro time) of
  each case over the rounds, and the cases below 0.6 in any round.
- Einsum suite: per instance the median over rounds at 1 and 2 threads, and their ratio
  for instances over 50 ms at one thread (target >= 1.5); with native files, the
  portable / native ratio of the summed medians (target <= 1.1).
"""
import glob
import json
import os
import re
import statistics
import sys


def load_json(path):
    with open(path) as f:
        text = f.read().strip()
    if not text:
        return []
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def span(values, fmt="{:.3g}"):
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else fmt.format(lo) + "–" + fmt.format(hi)


def dot_table(out):
    files = glob.glob(os.path.join(out, "dot_t*_*_r*.json"))
    if not files:
        return
    # runs[(threads, core, round)] = {case: row}
    runs = {}
    for path in files:
        m = re.match(r"dot_t(\d+)_(\w+)_r(\d+)\.json$", os.path.basename(path))
        if m:
            runs[(int(m.group(1)), m.group(2), int(m.group(3)))] = {r["case"]: r for r in load_json(path)}
    cores = sorted({c for (_, c, _) in runs}, key=lambda c: (c != "default", c))
    rounds = sorted({r for (_, _, r) in runs})
    cases = sorted({c for rows in runs.values() for c in rows if c.startswith("dot_general") and "[" not in c},
                   key=lambda c: (c.split()[1], int(c.split("n=")[1])))
    print("dot_general against the peers at their best (ms, lowest–highest over rounds)\n")
    print("| product | threads | tenferro | " + " | ".join("cblas " + c for c in cores) +
          " | BLIS | best peer / tenferro per round | over medians |")
    print("|---|---:|---|" + "---|" * len(cores) + "---|---|---:|")
    for threads in sorted({t for (t, _, _) in runs}):
        for case in cases:
            ours, blis, per_core, per_round = [], [], {c: [] for c in cores}, []
            peer_by_round = {}
            for r in rounds:
                base = runs.get((threads, "default", r), {})
                if case not in base:
                    continue
                t = base[case]["tenferro_ms"]
                ours.append(t)
                peers = []
                b = base.get(case + " [blis]")
                if b:
                    blis.append(b["tenferro_ms"])
                    peers.append(b["tenferro_ms"])
                for c in cores:
                    row = runs.get((threads, c, r), {}).get(case)
                    if row:
                        per_core[c].append(row["reference_ms"])
                        peers.append(row["reference_ms"])
                if peers:
                    per_round.append(min(peers) / t)
                    peer_by_round[r] = peers
            if not ours:
                continue
            best_median = min(statistics.median(v) for v in list(per_core.values()) + [blis] if v)
            print(f"| {case.replace('dot_general ', '')} | {threads} | {span(ours)} | " +
                  " | ".join(span(per_core[c]) for c in cores) +
                  f" | {span(blis)} | {span(per_round, '{:.2f}')} | {best_median / statistics.median(ours):.2f} |")
    print()


def permute_table(out):
    files = glob.glob(os.path.join(out, "perm*_t*_r*.json"))
    if not files:
        return
    ratios = {}  # (threads, case) -> [ratio per round]
    for path in files:
        m = re.match(r"perm\w+_t(\d+)_r(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        for row in load_json(path):
            ratios.setdefault((int(m.group(1)), row["case"]), []).append(row["ratio"])
    print("Permutations against memcpy (memcpy time / tenferro time; target >= 0.6)\n")
    print("| threads | cases | lowest ratio (case) | cases below 0.6 in some round |")
    print("|---:|---:|---|---|")
    for threads in sorted({t for (t, _) in ratios}):
        mine = {c: v for (t, c), v in ratios.items() if t == threads}
        worst = min(mine, key=lambda c: min(mine[c]))
        below = sorted(c.replace("permute ", "") for c, v in mine.items() if min(v) < 0.6)
        print(f"| {threads} | {len(mine)} | {min(mine[worst]):.2f} ({worst.replace('permute ', '')}) | "
              f"{', '.join(below) if below else 'none'} |")
    print()


def suite_medians(out, prefix, threads):
    per = {}
    for path in glob.glob(os.path.join(out, f"{prefix}_t{threads}_r*.json")):
        for row in load_json(path):
            per.setdefault(row["instance"], []).append(row["median_ms"])
    return {k: statistics.median(v) for k, v in per.items()}


def suite_table(out):
    one, two = suite_medians(out, "suite", 1), suite_medians(out, "suite", 2)
    if one and two:
        print("Einsum suite, two threads against one (medians over rounds; target >= 1.5 over 50 ms)\n")
        print("| instance | 1 thread ms | 2 threads ms | 1 / 2 |")
        print("|---|---:|---:|---:|")
        for name in sorted(one):
            if name in two and one[name] > 50:
                print(f"| {name} | {one[name]:.1f} | {two[name]:.1f} | {one[name] / two[name]:.2f} |")
        print()
    native = suite_medians(out, "native", 1)
    if one and native:
        shared = sorted(set(one) & set(native))
        p, n = sum(one[k] for k in shared), sum(native[k] for k in shared)
        print(f"Portable / native, einsum suite at one thread (sum of medians over {len(shared)} instances): "
              f"{p:.1f} / {n:.1f} ms = {p / n:.3f} (target <= 1.1)\n")


def main():
    out = sys.argv[1]
    info = os.path.join(out, "info.json")
    if os.path.exists(info):
        with open(info) as f:
            i = json.load(f)
        print(f"Machine: {i.get('cpu_vendor')} {i.get('cpu_model')}, family {i.get('cpu_family')} model "
              f"{i.get('cpu_model_id')}, ISA {i.get('usable_isa')}, L2 {i.get('l2_bytes', 0) >> 10} KiB; BLIS "
              f"{i.get('blis_arch')} ({'tuned' if i.get('blis_tuned') else 'generic'}), OpenBLAS "
              f"{i.get('openblas_core')} ({'tuned' if i.get('openblas_tuned') else 'untuned'})\n")
    dot_table(out)
    permute_table(out)
    suite_table(out)


if __name__ == "__main__":
    main()
