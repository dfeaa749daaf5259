"""An MPS inner product over C-ordered operands: tenferro.einsum on numpy arrays, on eager
tensors and on Fortran-ordered copies, and numpy's einsum on the same path (one thread).

    PYTHONPATH=build/release/python /usr/bin/python3 python/bench/bench_row_major.py \
        [SITES] [BOND] [--npy DIR]

SITES tensors of shape [bond, 2, bond] per state (bond 1 at the ends), two states, the
closed network <A|B>. Prints the median milliseconds of 21 calls each. With --npy, also
writes the C-ordered operands to DIR as .npy files and prints the `tenferro einsum`
command that contracts them (Note [Row-major operands]: the CLI plans C-ordered files
as row-major).
"""

import os
import sys

import numpy as np

import tenferro
from timing import median_ms

LABELS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def network(sites, bond):
    """(subscripts, operands) of <A|B> for random C-ordered site tensors."""
    if 3 * sites + 2 > len(LABELS):
        raise SystemExit(f"at most {(len(LABELS) - 2) // 3} sites")
    rng = np.random.default_rng(0)
    terms, ops = [], []
    for i in range(sites):
        shape = (1 if i == 0 else bond, 2, 1 if i == sites - 1 else bond)
        phys = LABELS[2 * sites + 2 + i]
        terms.append(LABELS[i] + phys + LABELS[i + 1])
        ops.append(rng.standard_normal(shape))
        terms.append(LABELS[sites + 1 + i] + phys + LABELS[sites + 2 + i])
        ops.append(rng.standard_normal(shape))
    return ",".join(terms) + "->", ops


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sites = int(args[0]) if args else 16
    bond = int(args[1]) if len(args) > 1 else 128
    subscripts, ops = network(sites, bond)
    fortran = [np.asfortranarray(o) for o in ops]
    rt = tenferro.Runtime(threads=1)
    eager = [rt.tensor(o) for o in ops]
    path = [tuple(p) for p in tenferro.contract_path(subscripts, *ops)[0]]
    print(f"MPS <A|B>, {sites} sites, bond {bond}, one thread (median of 21, ms)")
    print(f"  tenferro.einsum, C-ordered arrays:       {median_ms(lambda: tenferro.einsum(subscripts, *ops, threads=1)):.2f}")
    print(f"  tenferro.einsum, Fortran-ordered arrays: {median_ms(lambda: tenferro.einsum(subscripts, *fortran, threads=1)):.2f}")
    print(f"  tenferro.einsum, eager tensors:          {median_ms(lambda: tenferro.einsum(subscripts, *eager)):.2f}")
    np_path = ["einsum_path"] + path
    print(f"  numpy.einsum, same path:                 {median_ms(lambda: np.einsum(subscripts, *ops, optimize=np_path)):.2f}")
    if "--npy" in sys.argv:
        out = sys.argv[sys.argv.index("--npy") + 1]
        os.makedirs(out, exist_ok=True)
        files = []
        for k, o in enumerate(ops):
            files.append(os.path.join(out, f"op{k:03d}.npy"))
            np.save(files[-1], o)
        print(f"build/release/apps/tenferro/tenferro einsum '{subscripts}' {' '.join(files)} --repeat 15")


if __name__ == "__main__":
    main()
