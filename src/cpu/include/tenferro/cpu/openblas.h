#pragma once
/// \file
/// OpenBLAS's thread count, for modules that call OpenBLAS (BLAS or its LAPACK) through
/// the engine's rules (Note [OpenBLAS threads] in gemm.cc).

namespace tenferro::cpu {

/// Holds OpenBLAS's process-global thread count at `threads` (>= 1) while OpenBLAS calls
/// run, and gives the process its own setting back when the last such scope in the
/// process ends (Note [OpenBLAS threads] in gemm.cc): code outside tenferro that uses
/// OpenBLAS (numpy in the same process, the application) never finds the count tenferro
/// needed. Create one around the calls: with 1 from outer-parallel lanes (which all agree
/// on it), with the context's budget only from kInner calls that are not running
/// concurrently with lanes. Thread-safe; never blocks on other scopes' calls (the
/// bookkeeping takes one short lock). Not copyable.
class OpenBlasThreads {
 public:
  explicit OpenBlasThreads(int threads);
  ~OpenBlasThreads();
  OpenBlasThreads(const OpenBlasThreads&) = delete;
  OpenBlasThreads& operator=(const OpenBlasThreads&) = delete;
};

/// Sets OpenBLAS's process-global thread count to `threads` for good (benchmark
/// programs that time raw OpenBLAS calls next to tenferro's). The library itself uses
/// OpenBlasThreads. Thread-safe.
void set_openblas_threads(int threads);

}  // namespace tenferro::cpu
