#!/usr/bin/python3
"""Writes a random quantum-circuit tensor network as an einsum-benchmark instance
(complex128): each qubit starts as a vector; each layer pairs the qubits at random and
applies a two-qubit gate (a rank-4 tensor) to a pair with probability 0.6, else a
one-qubit gate (a matrix) to its first qubit; the first half of the qubits stay open in
the output, the others are closed with vectors. The instance carries a greedy pairwise
path (smallest result first) under "paths.opt_flops", so `tenferro bench einsum` and
../shared/bench/peer_einsum.py run the same steps.

Usage: bench/circuit_instance.py OUT.json [QUBITS=16] [LAYERS=10] [SEED=0]
"""
import json
import random
import sys


def symbol(i):
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[i] if i < len(letters) else chr(0xC0 + i)


def greedy_path(terms, out):
    """Pairs (positions in the current list, opt_einsum order) contracting the pair with
    the smallest result first; extents are all 2."""
    current = [set(t) for t in terms]
    keep = set(out)
    path = []
    while len(current) > 1:
        best = None
        for i in range(len(current)):
            for j in range(i + 1, len(current)):
                if len(current) > 2 and not current[i] & current[j]:
                    continue
                rest = set().union(*(c for k, c in enumerate(current) if k not in (i, j))) | keep
                result = (current[i] | current[j]) & rest
                if best is None or len(result) < best[0]:
                    best = (len(result), i, j, result)
        if best is None:  # only disconnected operands left
            rest = set().union(*current[2:]) | keep
            best = (0, 0, 1, (current[0] | current[1]) & rest)
        _, i, j, result = best
        path.append([i, j])
        current = [c for k, c in enumerate(current) if k not in (i, j)] + [result]
    return path


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_file = sys.argv[1]
    qubits = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    layers = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    wire = list(range(qubits))
    fresh = qubits
    terms = [[q] for q in range(qubits)]
    for _ in range(layers):
        order = list(range(qubits))
        rng.shuffle(order)
        for a, b in zip(order[::2], order[1::2]):
            if rng.random() < 0.6:
                terms.append([wire[a], wire[b], fresh, fresh + 1])
                wire[a], wire[b] = fresh, fresh + 1
                fresh += 2
            else:
                terms.append([wire[a], fresh])
                wire[a] = fresh
                fresh += 1
    out = [wire[q] for q in range(qubits // 2)]
    terms += [[wire[q]] for q in range(qubits // 2, qubits)]
    instance = {
        "name": f"circuit_{qubits}q_{layers}l",
        "format_string": ",".join("".join(symbol(x) for x in t) for t in terms) + "->" +
                         "".join(symbol(x) for x in out),
        "shapes": [[2] * len(t) for t in terms],
        "dtype": "complex128",
        "num_tensors": len(terms),
        "paths": {"opt_flops": {"path": greedy_path(terms, out), "log2_size": 0, "log10_flops": 0}},
    }
    with open(out_file, "w") as f:
        json.dump(instance, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
