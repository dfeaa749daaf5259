#!/usr/bin/python3
"""Peer figures for `tenferro bench ad`: torch forward and forward+backward of the same
3-layer MLP loss (f64, width 512, batch 256), median milliseconds, one JSON object.

Usage: /usr/bin/python3 bench/peer_ad.py THREADS
"""
import json
import sys
import time

import torch


def median_ms(f, reps=7, warm=2):
    for _ in range(warm):
        f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    n, w = 256, 512
    x = torch.randn(n, w, dtype=torch.float64)
    ps = []
    for _ in range(3):
        ps.append((torch.randn(w, w, dtype=torch.float64) / w ** 0.5).requires_grad_())
        ps.append(torch.zeros(w, dtype=torch.float64).requires_grad_())

    def forward():
        h = torch.tanh(x @ ps[0] + ps[1])
        h = torch.tanh(h @ ps[2] + ps[3])
        out = h @ ps[4] + ps[5]
        return (out * out).sum() / n

    def fwd_only():
        with torch.no_grad():
            forward()

    def fwd_bwd():
        for p in ps:
            p.grad = None
        forward().backward()

    print(json.dumps({"torch mlp forward ms": median_ms(fwd_only), "torch mlp forward+backward ms": median_ms(fwd_bwd)}))


if __name__ == "__main__":
    main()
