#pragma once
/// \file
/// CPU capabilities probed at run time (Note [CPU capabilities] in caps.cc): the ISA level
/// the processor supports and the library was built for, which kernels BLIS and
/// OpenBLAS actually run on this processor, and cache sizes. The engine probes them once
/// at creation; the dot_general planner reads them from the execution context, so a test
/// can plan for any capability set on any machine.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tenferro/core/result.h"

namespace tenferro::cpu {

/// SIMD level, ordered. kAvx2 means AVX2 + FMA; kAvx512 means AVX-512 F/DQ/BW/VL.
enum class IsaLevel : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

/// "scalar", "avx2", "avx512".
std::string_view isa_name(IsaLevel level) noexcept;

/// Parses an ISA name ("scalar", "avx2", "avx512"; any case). Errors: kInvalidArgument naming the
/// text and the accepted names (stage kConfiguration).
Result<IsaLevel> parse_isa(std::string_view text);

/// What the engine knows about the processor and its BLAS libraries. A value type:
/// probed by `probe()`, or written by hand (tests, planners asked "what if").
struct CpuCaps {
  std::string cpu_vendor;  ///< "GenuineIntel", "AuthenticAMD", ... (cpuid)
  std::string cpu_model;   ///< cpuid brand string, trimmed
  int32_t cpu_family = 0;  ///< cpuid display family
  int32_t cpu_model_id = 0;  ///< cpuid display model
  IsaLevel detected_isa = IsaLevel::kScalar;  ///< supported by the CPU and the OS
  IsaLevel built_isa = IsaLevel::kScalar;     ///< highest level the SIMD kernels were compiled for
  /// Level the rest of the library was compiled for (its -march baseline): the CPU must
  /// have at least this (a native build on a newer machine may not run here at all).
  IsaLevel baseline_isa = IsaLevel::kScalar;
  /// Cap on the kernels' level: TENFERRO_MAX_ISA when probed, or CpuEngineConfig::max_isa
  /// (tests run every kernel level on one machine; users debug numerics).
  IsaLevel max_isa = IsaLevel::kAvx512;
  std::string blis_arch;     ///< BLIS's chosen sub-configuration ("haswell", "zen3", "generic")
  bool blis_tuned = false;   ///< BLIS runs kernels written for this CPU (not "generic")
  bool blis_zen = false;     ///< ... one of its AMD Zen configurations ("zen", "zen2", "zen3", ...)
  std::string openblas_core;  ///< OpenBLAS's chosen core ("Haswell", "SkylakeX", "Prescott")
  bool openblas_tuned = false;     ///< that core uses this CPU's vector ISA (not SSE-only)
  bool openblas_avx512 = false;    ///< that core runs 512-bit kernels (SkylakeX, CooperLake, SapphireRapids)
  bool openblas_threaded = false;  ///< OpenBLAS's own threads (global thread count) vs serial
  /// The library that this process's BLAS symbols (cblas_dgemm, dgemm_) resolve to, when
  /// it is not OpenBLAS (empty: OpenBLAS). BLIS exports them too: linked before OpenBLAS
  /// it receives the cblas calls and OpenBLAS's own LAPACK calls; the provider called
  /// "openblas" is then not OpenBLAS, so it is planned as slow (openblas_tuned false).
  /// Note [BLAS symbol order] in caps.cc.
  std::string blas_symbols_elsewhere;
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  ///< per-core L1d/L2, shared L3; 0 = unknown

  /// Probes this process's CPU and the linked BLIS/OpenBLAS (cheap; no global state is
  /// changed), and reads the cap TENFERRO_MAX_ISA (ignored here when it does not parse:
  /// `isa_cap_from_env` reports that, and engine creation fails with it). Never fails:
  /// unknown facts stay at their defaults.
  static CpuCaps probe();

  /// The ISA level kernels may use: min(detected, built, max_isa).
  IsaLevel usable_isa() const noexcept {
    IsaLevel l = detected_isa < built_isa ? detected_isa : built_isa;
    return max_isa < l ? max_isa : l;
  }

  /// Multi-line human-readable report (`tenferro info`).
  std::string describe() const;
  /// One JSON object (`tenferro info --json`).
  std::string to_json() const;

  friend bool operator==(const CpuCaps&, const CpuCaps&) = default;
};

/// This process's capabilities, probed on first use and immutable afterwards (module
/// metadata, ARCHITECTURE §3.3). Contexts built without an engine plan with these.
const CpuCaps& host_caps();

/// The level kernels run at for planning caps `caps`: caps.usable_isa(), never above
/// what this process's CPU supports (caps written by hand may claim more; a kernel
/// never executes instructions the machine lacks). Thread-safe.
IsaLevel kernel_isa(const CpuCaps& caps) noexcept;

/// The environment's ISA cap: TENFERRO_MAX_ISA=scalar|avx2|avx512, or nullopt when unset
/// or empty. Errors: kInvalidArgument (stage kConfiguration) naming the variable and its
/// value when it is set to anything else.
Result<std::optional<IsaLevel>> isa_cap_from_env();

/// Whether an OpenBLAS core name uses the vector ISA `level` offers: on an AVX2 or
/// AVX-512 CPU, SSE-only cores (Prescott, Core2, Nehalem, ..., the fallbacks OpenBLAS
/// picks for CPUs it does not know) are not tuned. Pure function of its arguments.
bool openblas_core_tuned(std::string_view core, IsaLevel cpu_level) noexcept;

/// Whether an OpenBLAS core name runs 512-bit (AVX-512) kernels. Pure.
bool openblas_core_avx512(std::string_view core) noexcept;

/// Whether streamed transposes of 4- and 8-byte elements walk their line tiles in
/// source-row order (true) or column order (Note [Row-order line tiles] in
/// copy_transpose.cc): row order was measured faster only with an L1d of 32 KiB (Zen 4)
/// and 1.3-3x slower with one of 48 KiB (Zen 5); a larger or unknown L1d gets column
/// order. Pure; `tenferro info` prints the answer.
bool row_order_line_tiles(const CpuCaps& caps) noexcept;

/// Destination bytes per row block of a transpose (Note [Transpose blocking] in
/// copy_transpose.cc).
inline constexpr int64_t kTransposeBlockBytes = 512;
/// The most elements of a transpose's source group (Note [Transpose source group] in
/// copy_groups.cc): a row block, kTransposeBlockBytes of destination rows across the
/// whole source group, stays within a quarter of the L2 (l2_bytes / 2048 elements, a
/// power of two from 64 to 4096); 4096 (the offset tables' limit) when the L2 is unknown.
/// Pure; `tenferro info` prints the answer.
int64_t transpose_source_group(const CpuCaps& caps) noexcept;

/// Cache sizes in bytes (0 = unknown).
struct CacheSizes {
  int64_t l1d = 0, l2 = 0, l3 = 0;
  friend bool operator==(const CacheSizes&, const CacheSizes&) = default;
};

/// The caches of one CPU as Linux describes them under `cache_dir` (e.g.
/// /sys/devices/system/cpu/cpu0/cache): the index* entries' `level`, `type` (Data,
/// Instruction, Unified) and `size` ("32K", "1024K", "32768K"; K, M or G). Entries that
/// are missing or do not parse are skipped: a level not found stays 0. Never fails.
/// (CpuCaps::probe prefers this to sysconf, which glibc derives from cpuid and which a
/// hypervisor can make wrong: 320 MiB of L3 reported for a 32 MiB one, Zen 4 VM.)
CacheSizes read_cache_sizes(const std::string& cache_dir);

}  // namespace tenferro::cpu
