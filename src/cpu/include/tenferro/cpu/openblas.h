#pragma once
/// \file
/// OpenBLAS's thread count, for modules that call OpenBLAS (BLAS or its LAPACK) through
/// the engine's rules (Note [OpenBLAS threads] in gemm.cc).

namespace tenferro::cpu {

/// Sets OpenBLAS's process-global thread count to `threads` (>= 1) when it differs; the
/// change is serialized. Call it before an OpenBLAS call: with 1 from outer-parallel
/// lanes (which all agree on it), with the context's budget only from kInner calls that
/// are not running concurrently with lanes. Thread-safe.
void set_openblas_threads(int threads);

}  // namespace tenferro::cpu
