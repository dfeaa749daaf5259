#!/usr/bin/env bash
# Checks a portable build (Note [ISA kernels] in src/cpu/gemm_kernels.cc): in every
# tenferro static library given, each function whose code uses AVX registers (ymm/zmm)
# lives in an ISA namespace (detail::avx2 or detail::avx512). A function outside them
# with such instructions could crash a CPU without AVX2 or AVX-512.
#   isa_objects_check.sh BUILD_DIR     (checks every libtenferro_*.a under it)
set -euo pipefail
status=0
mapfile -t libs < <(find "$1" -name 'libtenferro_*.a' | sort)
[ ${#libs[@]} -gt 0 ] || { echo "no libtenferro_*.a under $1"; exit 1; }
for lib in "${libs[@]}"; do
  bad=$(objdump -d -C --no-show-raw-insn "$lib" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; next }
    /%[yz]mm[0-9]/ { if (fn !~ /::avx2::/ && fn !~ /::avx512::/) print fn }' | sort -u)
  if [ -n "$bad" ]; then
    echo "$lib: functions outside the ISA namespaces use AVX registers:"
    echo "$bad" | head -20
    status=1
  fi
done
[ $status -eq 0 ] && echo "no AVX instructions outside the ISA kernels in ${#libs[@]} libraries"
exit $status
