"""End-to-end check of `tenferro ir lower` on every program of tests/xla/programs: random
inputs of the declared types; the program evaluated by tenferro's reference interpreter
(`tenferro ir eval`); its StableHLO lowering read back by mlir-opt (syntax, SSA names and
types) and evaluated by the numpy StableHLO evaluator (stablehlo_numpy.py, written from
the StableHLO specification); the outputs compared.

    python3 check_stablehlo.py --cli PATH/tenferro [--mlir-opt PATH] PROGRAM.tf ...
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stablehlo_numpy  # noqa: E402

_NP = {"f64": np.float64, "f32": np.float32, "c128": np.complex128, "c64": np.complex64, "i64": np.int64,
       "i32": np.int32, "bool": np.bool_}


def random_input(dtype, shape, rng):
    dtype = np.dtype(_NP[dtype])
    if dtype.kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dtype)
    if dtype.kind == "i":  # [-7, 7] without 0: divisors, exponents (abs) and indices (some out of range)
        v = rng.integers(1, 8, shape) * rng.choice([-1, 1], shape)
        return v.astype(dtype)
    return rng.integers(0, 2, shape).astype(bool)


def inputs_of(text):
    return [(m.group(1), m.group(2)) for m in re.finditer(r'= input "\w+" : (\w+)\[([^\]]*)\]', text)]


def tolerance(dtype):
    return 1e-5 if dtype in (np.float32, np.complex64) else 1e-11


def check(cli, mlir_opt, path, rng, work):
    text = open(path).read()
    args = []
    for k, (dtype, dims) in enumerate(inputs_of(text)):
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
        a = random_input(dtype, shape, rng)
        args.append(a)
        np.save(os.path.join(work, f"in{k}.npy"), a)
    ins = [os.path.join(work, f"in{k}.npy") for k in range(len(args))]
    mlir = os.path.join(work, "module.mlir")
    subprocess.run([cli, "ir", "lower", path, "-o", mlir], check=True)
    if mlir_opt:
        r = subprocess.run([mlir_opt, "--allow-unregistered-dialect", mlir], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"{path}: mlir-opt rejected the module:\n{r.stderr}")
    module = stablehlo_numpy.parse(open(mlir).read())
    got = stablehlo_numpy.evaluate(module, args)
    outs = [os.path.join(work, f"out{k}.npy") for k in range(len(got))]
    cmd = [cli, "ir", "eval", path] + ins
    for o in outs:
        cmd += ["-o", o]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    for k, (o, g) in enumerate(zip(outs, got)):
        want = np.load(o)
        if want.shape != g.shape or want.dtype != g.dtype:
            raise AssertionError(f"{path} output {k}: interpreter {want.dtype}{want.shape}, StableHLO {g.dtype}{g.shape}")
        if want.dtype.kind in "fc":
            tol = tolerance(want.dtype.type)
            np.testing.assert_allclose(g, want, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{path} output {k}")
        else:
            np.testing.assert_array_equal(g, want, err_msg=f"{path} output {k}")
    return len(got), len(module["ops"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--mlir-opt", default="")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("programs", nargs="+")
    a = ap.parse_args()
    if not a.mlir_opt:
        print("note: no mlir-opt given; the syntax check is skipped (scripts/install-deps installs mlir-16-tools)")
    with tempfile.TemporaryDirectory() as work:
        for path in a.programs:
            for seed in range(a.seeds):
                n_out, n_ops = check(a.cli, a.mlir_opt, path, np.random.default_rng(seed), work)
            print(f"ok {os.path.basename(path)}: {n_out} outputs, {n_ops} StableHLO ops, {a.seeds} seeds")


if __name__ == "__main__":
    main()
