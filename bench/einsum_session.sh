#!/bin/bash
# One einsum benchmark session: tenferro, numpy and torch on every einsum-benchmark
# instance, at each thread count, with the peers run right after tenferro on the same
# instance (so each ratio compares runs minutes apart on a machine whose speed drifts),
# and the machine's dgemm rate measured at the start and end of each thread count and
# right before and after each GEMM-dominated instance (matrix chain, MERA).
#
# Usage (from the repository root, after a release build):
#   bench/einsum_session.sh OUT_DIR [THREADS...]        (default threads: 1 2)
# Environment: TENFERRO (binary, default build/release/apps/tenferro/tenferro),
# DATA (instance directory, default ../shared/data/einsum-benchmark), PEER (default
# ../shared/bench/peer_einsum.py), PYTHON (default /usr/bin/python3), PEER_CORETYPE (an
# OPENBLAS_CORETYPE for the peers only, to measure them at their best; tenferro keeps
# the environment it was given).
# Writes OUT_DIR/tfN.jsonl, npN.jsonl, thN.jsonl and dgemm readings (kN_*.txt), then
# prints per thread count the table of bench/einsum_table.py (start dgemm) and, for the
# GEMM-dominated instances, tenferro's and the best peer's share of the dgemm measured
# around them. Takes about 35 minutes for 1 and 2 threads on the 2-core development VM.
# SUMMARY_ONLY=1 skips the measurements and prints the summary of an existing OUT_DIR.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [THREADS...]" >&2
  exit 2
fi
out=$1
shift
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(1 2)
bin=${TENFERRO:-build/release/apps/tenferro/tenferro}
data=${DATA:-../shared/data/einsum-benchmark}
peer=${PEER:-../shared/bench/peer_einsum.py}
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"

# The peers come from Debian packages that scripts/install-deps does not install
# (apt-get install python3-numpy python3-torch): stop before measuring anything when one
# is missing, rather than after the first instance.
if [ "${SUMMARY_ONLY:-0}" != 1 ] && ! "$python" -c "import numpy, torch" 2>/dev/null; then
  echo "$0: $python cannot import numpy and torch (apt-get install python3-numpy python3-torch)" >&2
  exit 2
fi

dgemm() {  # $1 threads, $2 output file
  "$bin" bench kernels --threads "$1" --only "f64 n=2048" >"$2" 2>&1
}

for n in "${threads[@]}"; do
  [ "${SUMMARY_ONLY:-0}" = 1 ] && break
  rm -f "$out/tf$n.jsonl" "$out/np$n.jsonl" "$out/th$n.jsonl"
  dgemm "$n" "$out/k${n}_start.txt"
  for f in "$data"/*.json; do
    name=$(basename "$f" .json)
    gemm=0
    case $name in str_matrix_chain* | str_nw_mera*) gemm=1 ;; esac
    [ $gemm = 1 ] && dgemm "$n" "$out/k${n}_before_$name.txt"
    "$bin" bench einsum "$f" --threads "$n" --json >>"$out/tf$n.jsonl" 2>>"$out/tf$n.err"
    for backend in numpy torch; do
      file=$out/np$n.jsonl
      [ $backend = torch ] && file=$out/th$n.jsonl
      env OMP_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n" MKL_NUM_THREADS="$n" \
        ${PEER_CORETYPE:+OPENBLAS_CORETYPE="$PEER_CORETYPE"} \
        "$python" "$peer" $backend "$n" "$file" opt_flops "$name" >>"$out/$backend$n.log" 2>&1
    done
    [ $gemm = 1 ] && dgemm "$n" "$out/k${n}_after_$name.txt"
    echo "$(date +%T) threads $n $name" >&2
  done
  dgemm "$n" "$out/k${n}_end.txt"
done

"$python" - "$out" "${threads[@]}" <<'EOF'
import json
import subprocess
import sys

out, threads = sys.argv[1], sys.argv[2:]


def dgemm(path):
    # GFLOP/s of cblas_dgemm (the reference column) on the n = 2048 row.
    with open(path) as f:
        for line in f:
            p = line.split()
            if line.startswith("dot_general f64 n=2048 ") and "[blis]" not in line:
                return 2 * 2048**3 / float(p[5]) / 1e6
    raise SystemExit(f"no dgemm row in {path}")


def load(path):
    with open(path) as f:
        return {r["instance"]: r for r in (json.loads(l) for l in f if l.startswith("{"))}


for n in threads:
    start, end = dgemm(f"{out}/k{n}_start.txt"), dgemm(f"{out}/k{n}_end.txt")
    print(f"\n{n} thread(s): dgemm {start:.2f} GFLOP/s at the start, {end:.2f} at the end\n")
    sys.stdout.flush()
    subprocess.run([sys.executable, "bench/einsum_table.py", f"{out}/tf{n}.jsonl", f"{out}/np{n}.jsonl",
                    f"{out}/th{n}.jsonl", f"{start:.2f}"], check=True)
    tf, npy, th = load(f"{out}/tf{n}.jsonl"), load(f"{out}/np{n}.jsonl"), load(f"{out}/th{n}.jsonl")
    print()
    for name, r in sorted(tf.items()):
        if not (name.startswith("str_matrix_chain") or name.startswith("str_nw_mera")):
            continue
        adj = (dgemm(f"{out}/k{n}_before_{name}.txt") + dgemm(f"{out}/k{n}_after_{name}.txt")) / 2
        peers = [p[name]["median_ms"] for p in (npy, th) if name in p and p[name].get("median_ms")]
        flops = 10 ** r["log10_flops"]
        line = f"{name}: dgemm around it {adj:.2f} GFLOP/s; tenferro {100 * r['gflops'] / adj:.0f} %"
        if peers:
            best = min(peers)
            line += f", best peer {100 * flops / (best * 1e-3) / 1e9 / adj:.0f} %, ratio {r['median_ms'] / best:.3f}"
        print(line)
EOF
