"""tenferro.linalg.expm against torch.linalg.matrix_exp, one thread each, f64.

    PYTHONPATH=build/release/python /usr/bin/python3 python/bench/bench_expm.py

Prints the best mean per call (5 rounds) for eager tensors, numpy arrays in and out,
and torch (Debian's python3-torch), and torch's time over tenferro's eager one. The
matrices are Gaussian scaled to a 1-norm of about `norm` (degree 13 without and with
squarings at the larger sizes).
"""

import numpy as np

import tenferro
from timing import best_mean

try:
    import torch
except ImportError:  # torch is optional: tenferro's figures alone
    torch = None


def main():
    if torch is not None:
        torch.set_num_threads(1)
    rt = tenferro.Runtime(threads=1)
    rng = np.random.default_rng(0)
    print("| n | norm | eager (us) | numpy in/out (us) | torch (us) | torch / eager |")
    print("|---|---|---|---|---|---|")
    for n, norm in ((8, 1.0), (64, 1.0), (256, 1.0), (256, 50.0)):
        a = rng.standard_normal((n, n))
        a *= norm / np.abs(a).sum(axis=0).max()
        x = rt.tensor(a)
        reps = max(3, 2000 // n)
        te = best_mean(lambda: tenferro.linalg.expm(x), reps, rounds=5)
        tn = best_mean(lambda: tenferro.linalg.expm(a, threads=1), reps, rounds=5)
        if torch is not None:
            t = torch.from_numpy(a)
            tt = best_mean(lambda: torch.linalg.matrix_exp(t), reps, rounds=5)
            print(f"| {n} | {norm:g} | {te * 1e6:.1f} | {tn * 1e6:.1f} | {tt * 1e6:.1f} | {tt / te:.2f} |")
        else:
            print(f"| {n} | {norm:g} | {te * 1e6:.1f} | {tn * 1e6:.1f} | - | - |")


if __name__ == "__main__":
    main()
