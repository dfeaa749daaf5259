#!/usr/bin/python3
"""Markdown table of `tenferro bench einsum --json` output next to the peers'
(../shared/bench/peer_einsum.py JSONL) measured in the same session.

Usage: einsum_table.py TENFERRO.jsonl NUMPY.jsonl TORCH.jsonl
Ratio = tenferro median / best peer median (< 1: tenferro faster; target <= 0.5).
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
    print("| instance | tenferro ms | GFLOP/s | numpy ms | torch ms | best peer | ratio |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for name in sorted(ours):
        t = ours[name]["median_ms"]
        peers = {}
        for label, src in (("numpy", npy), ("torch", tor)):
            r = src.get(name, {})
            if r.get("median_ms"):
                peers[label] = r["median_ms"]
        best = min(peers.items(), key=lambda kv: kv[1]) if peers else None
        fmt = lambda v: "%.3f" % v if v is not None else "skipped"
        print("| %s | %.3f | %.2f | %s | %s | %s | %s |" % (
            name, t, ours[name]["gflops"], fmt(peers.get("numpy")), fmt(peers.get("torch")),
            best[0] if best else "-", "%.2f" % (t / best[1]) if best else "-"))


if __name__ == "__main__":
    main()
