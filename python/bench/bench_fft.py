"""tenferro.fft against numpy.fft (pocketfft) and torch.fft, f64/c128, side by side.

    PYTHONPATH=build/release/python /usr/bin/python3 python/bench/bench_fft.py [THREADS]

Prints the best mean per call (5 rounds) of numpy arrays in and out (tenferro on an
engine of THREADS workers, default 1; torch with as many threads; numpy's pocketfft is
single-threaded), eager tensors, and the peers' time over tenferro's array call.
"""

import sys

import numpy as np

import tenferro
from timing import best_mean

try:
    import torch
except ImportError:  # torch is optional: tenferro's and numpy's figures alone
    torch = None

CASES = [
    # (label, function, shape, kwargs)
    ("fft 64 x 4096 (axis -1)", "fft", (4096, 64), {}),
    ("fft 1024 x 256", "fft", (256, 1024), {}),
    ("fft 2^20", "fft", (1 << 20,), {}),
    ("fft 1000 x 100 (prime factors)", "fft", (100, 1000), {}),
    ("fft 257 x 1024 (axis 0)", "fft", (257, 1024), {"axis": 0}),
    ("rfft 4096 x 256", "rfft", (256, 4096), {}),
    ("irfft 4096 x 256", "irfft", (256, 2049), {}),
    ("fft2 512 x 512", "fft2", (512, 512), {}),
    ("rfft2 1024 x 1024", "rfft2", (1024, 1024), {}),
    ("fftn 64^3", "fftn", (64, 64, 64), {}),
    ("rfftn 128^3", "rfftn", (128, 128, 128), {}),
]


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    if torch is not None:
        torch.set_num_threads(threads)
    eng = tenferro.Engine(threads=threads)
    rt = tenferro.Runtime(threads=threads)
    rng = np.random.default_rng(0)
    print(f"threads: {threads}")
    print("| case | tenferro (ms) | eager (ms) | numpy (ms) | torch (ms) | numpy / tenferro | torch / tenferro |")
    print("|---|---|---|---|---|---|---|")
    for label, name, shape, kw in CASES:
        real = name.startswith("rfft")
        a = rng.standard_normal(shape)
        if not real:
            a = a + 1j * rng.standard_normal(shape)
        size = a.size
        reps = max(3, min(200, (1 << 22) // size))
        f_tf = getattr(tenferro.fft, name)
        f_np = getattr(np.fft, name)
        tt = best_mean(lambda: f_tf(a, engine=eng, **kw), reps, rounds=5)
        x = rt.tensor(a)
        te = best_mean(lambda: f_tf(x, **kw), reps, rounds=5)
        tn = best_mean(lambda: f_np(a, **kw), reps, rounds=5)
        if torch is not None:
            t = torch.from_numpy(a)
            f_t = getattr(torch.fft, name)
            kt = {"dim": kw["axis"]} if "axis" in kw else {}
            tr = best_mean(lambda: f_t(t, **kt), reps, rounds=5)
            print(f"| {label} | {tt * 1e3:.3f} | {te * 1e3:.3f} | {tn * 1e3:.3f} | {tr * 1e3:.3f} | "
                  f"{tn / tt:.2f} | {tr / tt:.2f} |")
        else:
            print(f"| {label} | {tt * 1e3:.3f} | {te * 1e3:.3f} | {tn * 1e3:.3f} | - | {tn / tt:.2f} | - |")


if __name__ == "__main__":
    main()
