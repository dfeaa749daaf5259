#!/bin/bash
# The Portable CPU engine issue's per-machine targets in one session, for a machine type
# not measured yet (docs/benchmarks.md "The targets per machine"):
#   - dot_general f64 / f32 / c128 at n = 256 and 2048, 1 and 2 threads, against the
#     peers at their best: cblas (OpenBLAS) under each OPENBLAS_CORETYPE of CORETYPES
#     and BLIS (the bench's forced "[blis]" row), each round one process per core type;
#   - every permutation of 64^4 f64 and of the rank-24 size-2 tensor against memcpy at
#     1 and 2 threads (target >= 0.6);
#   - with NATIVE (a -march=native build's tenferro, e.g. the release-native preset's),
#     the einsum suite at one thread, portable and native alternating (target <= 1.1);
#   - the einsum suite at 1 and 2 threads (instances over 50 ms at one thread: >= 1.5x).
# The einsum suite against numpy and torch is bench/einsum_session.sh.
#
# Usage (from the repository root, after a release build):
#   bench/cpu_targets.sh OUT_DIR [ROUNDS]        (default 3 rounds)
# Environment: TENFERRO (binary, default build/release/apps/tenferro/tenferro), NATIVE
# (optional native binary), DATA (instance directory, default
# ../shared/data/einsum-benchmark), CORETYPES (default "default SkylakeX Haswell";
# "default" leaves OPENBLAS_CORETYPE as the environment has it), PARTS (default "dot
# permute suite native"). Writes OUT_DIR/*.json (one file per process) and prints the
# tables of bench/cpu_targets_table.py; SUMMARY_ONLY=1 prints them for an existing
# OUT_DIR. Takes about 40 minutes for three rounds on the 2-core development VM.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [ROUNDS]" >&2
  exit 2
fi
out=$1
rounds=${2:-3}
bin=${TENFERRO:-build/release/apps/tenferro/tenferro}
data=${DATA:-../shared/data/einsum-benchmark}
coretypes=${CORETYPES:-default SkylakeX Haswell}
parts=${PARTS:-dot permute suite native}
here=$(dirname "$0")
mkdir -p "$out"

want() { [[ " $parts " == *" $1 "* ]]; }

if [ -z "${SUMMARY_ONLY:-}" ]; then
  "$bin" info --json > "$out/info.json"
  for r in $(seq 1 "$rounds"); do
    for t in 1 2; do
      if want dot; then
        for c in $coretypes; do
          echo "round $r: dot_general, $t thread(s), OpenBLAS core $c" >&2
          if [ "$c" = default ]; then
            "$bin" bench kernels --threads "$t" --only "n=2" --json > "$out/dot_t${t}_${c}_r${r}.json"
          else
            OPENBLAS_CORETYPE=$c "$bin" bench kernels --threads "$t" --only "n=2" --json \
              > "$out/dot_t${t}_${c}_r${r}.json"
          fi
        done
      fi
      if want permute; then
        echo "round $r: permutations, $t thread(s)" >&2
        "$bin" bench kernels --threads "$t" --only "permute 64^4" --json > "$out/perm64_t${t}_r${r}.json"
        "$bin" bench kernels --threads "$t" --only "permute rank-24" --json > "$out/perm24_t${t}_r${r}.json"
      fi
      if want suite; then
        echo "round $r: einsum suite, $t thread(s)" >&2
        "$bin" bench einsum "$data" --threads "$t" --json > "$out/suite_t${t}_r${r}.json" 2>/dev/null
      fi
    done
    if want native && [ -n "${NATIVE:-}" ]; then
      echo "round $r: einsum suite, native build, 1 thread" >&2
      "$NATIVE" bench einsum "$data" --threads 1 --json > "$out/native_t1_r${r}.json" 2>/dev/null
    fi
  done
fi
python3 "$here/cpu_targets_table.py" "$out"
