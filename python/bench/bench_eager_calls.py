"""Per-call cost of eager tensors from Python against numpy and torch (one thread).

    PYTHONPATH=build/release/python /usr/bin/python3 python/bench/bench_eager_calls.py

Tiny operands (8 x 8 f64, vectors of 8), so the figures are the per-call cost: the best
of seven rounds of 2000 calls each, tenferro (`Runtime(threads=1)`), numpy on arrays and
torch (Debian's python3-torch, `torch.set_num_threads(1)`) in the same process. Prints a
Markdown table (µs per call).
"""

import numpy as np

import tenferro
from timing import best_mean

try:
    import torch
except ImportError:
    torch = None


def best_us(f):
    return best_mean(f, 2000) * 1e6


def main():
    rt = tenferro.Runtime(threads=1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 8))
    v = rng.standard_normal(8)
    x, xv = rt.tensor(a), rt.tensor(v)
    if torch is not None:
        torch.set_num_threads(1)
        t, tv = torch.from_numpy(a.copy()), torch.from_numpy(v.copy())
    cases = [
        ("`x * 2.0`", lambda: x * 2.0, lambda: a * 2.0, lambda: t * 2.0),
        ("`x * x`", lambda: x * x, lambda: a * a, lambda: t * t),
        ("`np.exp(x)` (`torch.exp`)", lambda: np.exp(x), lambda: np.exp(a), lambda: torch.exp(t)),
        ("`x.sum()`", lambda: x.sum(), lambda: a.sum(), lambda: t.sum()),
        ("`np.sum(x, axis=0)` (`t.sum(0)`)", lambda: np.sum(x, axis=0), lambda: np.sum(a, axis=0), lambda: t.sum(0)),
        ("`x @ x`", lambda: x @ x, lambda: a @ a, lambda: t @ t),
        ("`x[1:, ::2]`", lambda: x[1:, ::2], lambda: a[1:, ::2], lambda: t[1:, ::2]),
        ("`x[[0, 3, 5]]` (advanced)", lambda: x[[0, 3, 5]], lambda: a[[0, 3, 5]], lambda: t[[0, 3, 5]]),
        ("`np.dot(x, x)` (`torch.mm`)", lambda: np.dot(x, x), lambda: np.dot(a, a), lambda: torch.mm(t, t)),
        ("`np.dot(x, v)` (`torch.mv`)", lambda: np.dot(x, xv), lambda: np.dot(a, v), lambda: torch.mv(t, tv)),
        ("`np.tensordot(x, x, 1)`", lambda: np.tensordot(x, x, 1), lambda: np.tensordot(a, a, 1),
         lambda: torch.tensordot(t, t, 1)),
        ("`np.outer(v, v)`", lambda: np.outer(xv, xv), lambda: np.outer(v, v), lambda: torch.outer(tv, tv)),
        ("`np.kron(x, x)`", lambda: np.kron(x, x), lambda: np.kron(a, a), lambda: torch.kron(t, t)),
        ("`np.moveaxis(x, 0, 1)` (`torch.movedim`)", lambda: np.moveaxis(x, 0, 1), lambda: np.moveaxis(a, 0, 1),
         lambda: torch.movedim(t, 0, 1)),
    ]
    print("| operation (8 x 8 f64) | tenferro µs | numpy µs | torch µs |")
    print("|---|---:|---:|---:|")
    for name, f_tf, f_np, f_torch in cases:
        tt = f"{best_us(f_torch):.2f}" if torch is not None else "-"
        print(f"| {name} | {best_us(f_tf):.2f} | {best_us(f_np):.2f} | {tt} |")


if __name__ == "__main__":
    main()
