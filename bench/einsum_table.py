#!/usr/bin/python3
"""Markdown table of `tenferro bench einsum --json` output next to the peers'
(../shared/bench/peer_einsum.py JSONL) measured in the same session.

Usage: einsum_table.py TENFERRO.jsonl NUMPY.jsonl TORCH.jsonl [DGEMM_GFLOPS]
Ratio = tenferro median / best peer median (< 1: tenferro faster; target <= 0.5).
With DGEMM_GFLOPS (the machine's dgemm rate at the same thread count, measured in the
same session), two more columns: the best peer's rate (its own GFLOP/s on the same
path) as a share of it and whether the <= 0.5 target applies (best peer below
50 % of dgemm).
"""
import json
import sys


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                out[r["instance"]] = r
    return out


def main():
    ours, npy, tor = (load(p) for p in sys.argv[1:4])
    dgemm = float(sys.argv[4]) if len(sys.argv) > 4 else None
    head = "| instance | tenferro ms | GFLOP/s | numpy ms | torch ms | best peer | ratio |"
    rule = "|---|---:|---:|---:|---:|---|---:|"
    if dgemm:
        head += " best peer % dgemm | <= 0.5 applies |"
        rule += "---:|---|"
    print(head)
    print(rule)
    for name in sorted(ours):
        t = ours[name]["median_ms"]
        peers, rates = {}, {}
        for label, src in (("numpy", npy), ("torch", tor)):
            r = src.get(name, {})
            if r.get("median_ms"):
                peers[label] = r["median_ms"]
                rates[label] = r.get("gflops")
        best = min(peers.items(), key=lambda kv: kv[1]) if peers else None
        fmt = lambda v: "%.3f" % v if v is not None else "skipped"
        row = "| %s | %.3f | %.2f | %s | %s | %s | %s |" % (
            name, t, ours[name]["gflops"], fmt(peers.get("numpy")), fmt(peers.get("torch")),
            best[0] if best else "-", "%.2f" % (t / best[1]) if best else "-")
        if dgemm:
            if best and rates.get(best[0]):
                share = rates[best[0]] / dgemm  # the peer's own GFLOP/s on the same path
                row += " %.0f %% | %s |" % (100 * share, "yes" if share < 0.5 else "no")
            else:
                row += " - | - |"
        print(row)


if __name__ == "__main__":
    main()
