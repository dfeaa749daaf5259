#include "dot_plan.h"

#include <algorithm>
#include <limits>
#include <string>

namespace tenferro::cpu {

// Note [dot_general planner]: every choice dot_general makes (batch policy, provider,
// kernel, thread split, which operands are packed and in which form, whether a free
// group is split) is made here, by plan_dot, a pure function of the problem's geometry
// (DotProblem, from the layouts), the CPU's capabilities (CpuCaps) and the settings;
// dot_general executes the answer (a switch on DotRoute::kernel) and
// explain_dot_general returns it with its reason. Each threshold is a named constant
// next to the note that records its measurement; a route that depends on the CPU
// (tenferro's SIMD kernels, BLIS or OpenBLAS kernels tuned for it) is chosen only where
// the capabilities say it holds, and untuned libraries or a lower ISA level get the
// safe default (the providers' own kernels). Tests plan for tables of capability sets,
// so every branch is reachable on every machine.
//
// Note [dot_general routes]: each operand is viewed as a strided batch of matrices
// (lhs: batch x M x K, rhs: batch x K x N, out: batch x M x N) by merging its batch,
// free and contracting dimensions into one stride each. An operand whose dimensions do
// not merge, or whose strides the chosen provider cannot take, is packed alone into a
// compact canonical copy; the others are passed as they are (no copy). A destination
// that cannot be addressed is computed in a compact scratch and copied back once.
//
// Note [Default GEMM provider]: kAuto uses plain loops for tiny products (Note [Tiny
// products]) and integer dtypes; OpenBLAS for single products and provider-item
// batches (f64 on AVX-512 builds: the blocked kernel, Note [Blocked AVX-512 GEMM]; c128
// on one thread: BLIS's Zen kernels, Note [Complex products on BLIS's Zen kernels]);
// BLIS (one thread per call) for sequential, outer-parallel and whole-batch vendor
// batches, where BLIS runs tuned kernels (Note [Untuned BLIS]). Figures:
// docs/benchmarks.md ("CPU kernels and dot_general").
//
// Note [Batch policy thresholds]: kAuto runs batches outer-parallel when the context
// has more than one thread and each product is below DotOptions::outer_parallel_flops
// multiply-adds; otherwise sequentially, each product using the context's threads.

namespace {

using detail::DotAxes;

std::string s(int64_t v) { return std::to_string(v); }
// a * b, or INT64_MAX when that overflows: products of extents of broadcast (stride-0)
// views can exceed int64 while every tensor's element count fits.
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return checked_mul(a, b, &r) ? r : std::numeric_limits<int64_t>::max();
}
bool integral_dtype(DType d) { return d == DType::kBool || d == DType::kI32 || d == DType::kI64; }

// Note [Batch policies]: the effective policy and provider are resolved before any
// write. kAuto: outer-parallel (BLIS, one thread per product) when the context has
// several threads, the batch several products and each product fewer than
// outer_parallel_flops multiply-adds; otherwise provider items (OpenBLAS with the
// context's threads). kSequential and kOuterParallel run every product on one thread
// (BLIS by default; OpenBLAS is set to one thread through its global control).
// kWholeBatchVendor makes one BLIS ?gemm_batch_ call (floating dtypes only). Typed
// errors: OpenBLAS under an outer-parallel batch (two fan-out levels); the vendor batch
// with OpenBLAS (0.3.21 has no batch entry point), plain loops or integer dtypes.
// Products below tiny_flops (OpenBLAS) or tiny_flops_blis (BLIS) use plain loops
// unless a provider is forced (Note [Tiny products]).
//
// Note [Tiny products]: `tenferro bench kernels --only tiny` times 512 products of
// n x n x n, one thread each, through each provider against the plain-loop route
// (Note [Plain-loop GEMM]). 2026-11-29, 1 thread: OpenBLAS is slower than plain loops up
// to 216 multiply-adds (ratio 0.93) and faster from 512 (1.10); a BLIS call costs about
// 2 us (0.2 us for OpenBLAS), so BLIS loses up to 13824 (0.95). Defaults: tiny_flops 256,
// tiny_flops_blis 16384 (docs/benchmarks.md). Matrix-vector shaped products (a side of
// 1) use plain loops up to 16x the threshold. With A and C column-major (after packing),
// f64 products up to kSmallMaxFlops multiply-adds and contractions up to kSmallMaxK use
// the register-blocked small kernel. With its 8 x 6 blocks (2026-11-30) the same bench
// has plain loops 2.0x faster than OpenBLAS at n = 24, 2.9x at 32, 2.0x at 48 and 1.5x
// at 64; one thread, hot, per call: 12 x 12 x 144 1.6 us (OpenBLAS 3.9, BLIS 3.8),
// 8 x 8 x 256 1.3 us (3.6, 3.4), 16 x 16 x 128 2.1 us (3.1, 3.2).
struct Resolved {
  BatchPolicy policy;
  GemmProvider provider;
  const char* reason;
};

// Note [Parallel work]: parallel_min_flops and the thresholds derived from it count real
// multiply-adds; a complex one is four (c128 64^3 on two threads: one thread 0.048 ms
// against cblas_zgemm's own two threads 0.030 while it counted one).
int64_t real_work(DType dtype, int64_t flops) { return is_complex(dtype) ? sat_mul(flops, 4) : flops; }

// Note [Complex products on BLIS's Zen kernels].
constexpr int64_t kZenComplexMaxFlops = int64_t{1} << 30;

// The batch policy and the provider (Note [Batch policies], Note [Default GEMM provider]).
Result<Resolved> resolve_provider(const DotSettings& st, const CpuCaps& caps, DType dtype, int64_t batch, int64_t m,
                                  int64_t n, int64_t flops) {
  const bool integral = integral_dtype(dtype);
  const BatchSettings& bs = st.batch;
  Resolved r{bs.policy, bs.provider, "the provider requested"};
  if (r.policy == BatchPolicy::kAuto) {
    r.policy = (batch > 1 && st.threads > 1 && flops < bs.outer_parallel_flops && r.provider != GemmProvider::kOpenBlas)
                   ? BatchPolicy::kOuterParallel
                   : BatchPolicy::kProviderItems;
  }
  if (r.policy == BatchPolicy::kWholeBatchVendor) {
    if (integral || (r.provider != GemmProvider::kAuto && r.provider != GemmProvider::kBlis)) {
      return usage_error(ErrorCode::kUnsupported, "dot_general",
                         "batch policy whole-batch-vendor needs a vendor batch entry point (BLIS ?gemm_batch_, "
                         "floating dtypes); provider " + std::string(gemm_provider_name(r.provider)) +
                             (integral ? " with an integer dtype" : "") + " has none");
    }
    r.provider = GemmProvider::kBlis;
    r.reason = "batch policy whole-batch-vendor: one BLIS ?gemm_batch_ call";
    return r;
  }
  if (integral) {
    r.provider = GemmProvider::kNaive;
    r.reason = "integer and bool dtypes have no BLAS: plain loops";
  }
  if (r.provider == GemmProvider::kOpenBlas && r.policy == BatchPolicy::kOuterParallel && batch > 1 && st.threads > 1) {
    return usage_error(ErrorCode::kUnsupported, "dot_general",
                       "provider openblas (its own worker threads, global thread control) cannot run under an "
                       "outer-parallel batch of " + s(batch) + " products: that would be two fan-out levels");
  }
  if (r.provider == GemmProvider::kAuto) {
    // Note [Untuned BLIS]: every automatic BLIS route requires caps.blis_tuned (Note [CPU
    // capabilities] in caps.cc). BLIS 0.9 picks its 'generic' sub-configuration on CPUs
    // it does not know (AMD family 0x1A, Zen 5, 2026-11-30): `tenferro bench kernels`,
    // one thread, dot_general f64 n = 2048 forced to blis 16.1 GFLOP/s against
    // cblas_dgemm (OpenBLAS) 51.0. There the batches BLIS would run (outer-parallel,
    // sequential) make one-thread OpenBLAS calls instead, and single products stay with
    // OpenBLAS (no column split, no thin BLIS products). A product forced to provider
    // blis still runs BLIS.
    // Note [Untuned OpenBLAS]: the mirror case. OpenBLAS 0.3.21 runs SSE3 'Prescott'
    // kernels on some CPUs it does not know (a Sapphire Rapids class Xeon, 2026-12-01:
    // cblas_dgemm 2048 at 1 thread 10 GFLOP/s against 29 with its Haswell kernels; c128
    // n = 512 8.4 against 28 through BLIS). When OpenBLAS is untuned and BLIS tuned, the
    // products OpenBLAS would run as provider items go to BLIS instead.
    // Note [Complex products on BLIS's Zen kernels]: c128 products on one thread, with
    // BLIS on one of its Zen configurations and OpenBLAS on 512-bit kernels (Zen 4: BLIS
    // zen3, OpenBLAS Cooperlake), go to BLIS. `tenferro bench kernels --only
    // "dot_general c128"`, one thread, four rounds (2026-12-04): n = 128 / 256 / 512 /
    // 1024 1.06-1.07x / 1.07-1.10x / 1.07x / 1.00-1.11x cblas_zgemm's speed on BLIS,
    // against 0.96-1.03x on OpenBLAS; at 2048 BLIS was bimodal (1.28-1.60
    // s against 1.35-1.41), hence up to kZenComplexMaxFlops multiply-adds. On two threads
    // BLIS's pieces were bimodal too (n = 256 0.57-0.90x of OpenBLAS's), so products
    // that take several threads keep OpenBLAS; f64 and f32 ran alike on both, and other
    // CPUs are not measured.
    const bool one_thread = st.threads == 1 || real_work(dtype, flops) < bs.parallel_min_flops;
    const bool zen_complex = dtype == DType::kC128 && caps.blis_zen && caps.openblas_avx512 && one_thread &&
                             flops <= kZenComplexMaxFlops && r.policy == BatchPolicy::kProviderItems;
    const bool blis_items = caps.blis_tuned && (!caps.openblas_tuned || zen_complex);
    const bool openblas = (r.policy == BatchPolicy::kProviderItems && !blis_items) || !caps.blis_tuned;
    r.provider = openblas ? GemmProvider::kOpenBlas : GemmProvider::kBlis;
    r.reason = !caps.blis_tuned ? "BLIS runs generic kernels on this CPU: OpenBLAS (Note [Untuned BLIS])"
               : zen_complex
                   ? "a c128 product on one thread: BLIS's Zen kernels (Note [Complex products on BLIS's Zen kernels])"
               : blis_items ? "OpenBLAS runs kernels below this CPU's ISA: BLIS (Note [Untuned OpenBLAS])"
               : openblas   ? "a single product or provider items: OpenBLAS (Note [Default GEMM provider])"
                            : "an outer-parallel or sequential batch: BLIS, one thread per product";
    // Matrix-vector shaped products (a side of 1) pay a GEMM call's setup for little
    // work: plain loops up to 16x the threshold (Note [Tiny products]).
    const int64_t tiny = openblas ? bs.tiny_flops : bs.tiny_flops_blis;
    if (flops < tiny || (std::min(m, n) == 1 && flops < 16 * tiny)) {
      r.provider = GemmProvider::kNaive;
      r.reason = "a tiny product, below the provider's call cost: plain loops (Note [Tiny products])";
    }
  }
  return r;
}

// Note [Pack order]: an operand that must be packed is copied into one of two compact
// forms, both BLAS matrices: [free, contracting] (the default) or [contracting, free].
// The default makes the copy a transpose whenever the operand's smallest stride is a
// contracted label, and the transpose works in tiles whose first side is the leading
// free axis: when that axis is short (< 16) the tiles are tiny, and if the contracted
// labels hold a unit-stride run of at least 16 elements the other form is used (the copy
// then moves those runs, contiguous on both sides). lm brackets' [4, 1996, 4, 4, 4]
// operand (a contracted run of 16, leading free axis 4) packed in 1.9 ms in the default
// form and 0.7-0.9 ms in the other; MPS site tensors [19, k, 19] (leading free axis 19)
// in 80 us in the default form and 136 us in the other; a rank-24 operand of extent-2
// axes (runs of 2) in 123 ms in the other form, where the default transposes its many
// tiny axes as one matrix. Symmetrically for the rhs, except for a wide rhs with a
// short contraction: with N at least kRowMajorRhsMaxN and K from kRowMajorRhsMinK to
// kRowMajorRhsMaxK the GEMM itself is much slower on an N-fastest B (2 threads,
// 2026-11-30, column-major B against N-fastest, BLIS: 189 x 15390 x 114 13.1 against
// 20.4 ms, 189 x 15390 x 500 56 against 70, 540 x 58320 x 136 136 against 227, 189 x
// 4096 x 114 3.8 against 6.9; OpenBLAS: 2000 x 8000 x 64 34 against 54; 189 x 2000 x
// 114 and 256 x 1996 x 16 even), more than the copy saves (MERA closed's 189 x 15390 x
// 114 step: the transposing copy 3.8 ms, the run-wise one 6.6; in the step profile 44
// -> 15 ms). With a long contraction the N-fastest form was as fast or faster
// (OpenBLAS 399 x 4320 x 7290: 393 against 615 ms column-major), so MERA closed's
// 252 MB operand of that step keeps its run-wise copy.
constexpr int64_t kRowMajorRhsMaxN = 4096, kRowMajorRhsMinK = 32, kRowMajorRhsMaxK = 512;

// The short-side kernel replaces packing an operand of at least this many elements
// (Note [Short-side products with a strided contraction] in gemm_kernels.cc): below it the pack
// is cheap and, across a batch, shared, and BLIS's per-product speed won (lm
// sentence_3's 1100 products of 12 x 12 x 144 against a packed 1728-element lhs: 5.2 ms
// packed with BLIS, 6.7 ms in the kernel's tile mode).
constexpr int64_t kShortSideMinPacked = 4096;

// Note [Short-contraction products]: C (M x N, column-major) = A B with K <= kWideMaxK,
// N >= kWideMinN and A at most kWideMaxA elements: the small kernel with its column
// blocks outermost (Note [Small-kernel loop order] in gemm_kernels.cc) keeps A in L2, B's block
// in L1 and writes C once, in address order. OpenBLAS first zeroes C in a separate pass
// (beta = 0) and then reads and writes it again. Per-step medians of 5 interleaved runs,
// 1 thread (2026-11-30), OpenBLAS -> this route: lm sentence_3 1584 x 1100 x 11 (a 14 MB
// C) 3.4-3.9 -> 2.3-2.4 ms, 144 x 1728 x 12 0.70 -> 0.52 ms; lm sentence_4 176 x 1900 x
// 11 0.80-0.84 -> 0.55-0.58 ms, 256 x 1900 x 16 1.31-1.35 -> 0.92-0.99 ms.
constexpr int64_t kWideMaxK = 32;
// Products up to this many multiply-adds with A and C column-major (after packing) use
// the small kernel (Note [Tiny products]).
constexpr int64_t kSmallMaxFlops = 262144;
constexpr int64_t kWideMinN = 16;
// Note [Streamed-output products] (gemm_kernels.cc): C of at least kOutMinC elements (32 MB),
// kOutMinK <= K <= kOutMaxK, A or B at most kOutCachedOperand elements (512 KB, L2),
// several threads. 2026-11-30, per-step medians of 3 interleaved runs at 2 threads,
// previous route -> this one: MERA open 177147 x 243 x 50 115 -> 101 ms, 39600 x 252 x
// 56 37 -> 28 ms (whole run inside dot_general 705 -> 603 ms); MERA closed 1026 x 33048
// x 40 96 -> 86 ms. At one thread these steps are compute-bound and OpenBLAS's kernel
// won (MERA closed 1026 x 33048 x 40: 120 ms against 159; standalone, without the
// instance's other traffic, this kernel had won 113 to 126). With K = 11 (196830 x 45
// x 11) it lost (20 ms against 16, one thread): too little arithmetic per stored
// element to hide the tile copies.
constexpr int64_t kOutMinC = int64_t{1} << 22;
constexpr int64_t kOutMinK = 32;
constexpr int64_t kOutCachedOperand = 65536;
constexpr int64_t kWideMaxA = 32768;
// Note [Transposed short-contraction products]: a row-major C = A B with A tall and
// row-major, B small (N x K <= kWideMaxA) with its rows contiguous and a short
// contraction runs as C^T = B^T A^T on the same kernel (column blocks of C^T are rows of
// C, written once). Against the routes before (one thread: OpenBLAS, which packed A;
// two: BLIS pieces), f64, Zen 4, 2026-12-04, best of 30 calls, m x k x n with C of
// 158400 x n: 1.5-2.3x at one thread for k = 4, 12, 30 and n = 8, 12, 24
// (158400 x 12 x 12 2.31 -> 1.56 ms), 1.04-2.15x at two; C of 20000 x n: 1.4-2.5x at
// k = 12 and 30, lost at k = 4 (0.71-0.83 for n = 8, 12); C of 2000 x n (in L2): 0.82-0.97.
// Hence from kWideTransposedMinK contraction steps and a C of kWideTransposedMinC
// elements.
constexpr int64_t kWideTransposedMinK = 8;
constexpr int64_t kWideTransposedMinC = int64_t{1} << 17;

// Note [Streamed tall products] (gemm_streamed.cc): the shapes dot_general sends there. Below
// k = 64 the small and thin kernels or OpenBLAS serve; a short side below 8 stays on
// OpenBLAS (Note [Short-side products]).
// Note [Matrix-vector thresholds].
constexpr int64_t kMatVecMinFlops = 1024;
constexpr int64_t kMatVecRowMinK = 8;
constexpr int64_t kMatVecColMinRows = 16;
constexpr int64_t kMatVecPieceRows = 64;
constexpr int64_t kMatVecPieceK = 128;
constexpr int64_t kMatVecParallelScale = 8;
constexpr int64_t kMatVecVectorsMinRows = 64;
constexpr int64_t kMatVecMaxComplexRowVectors = 4;
constexpr int64_t kMatVecMaxComplexColumnVectors = 4;  // AVX-512
constexpr int64_t kMatVecMaxComplexColumnVectorsAvx2 = 2;
constexpr int64_t kStreamMinK = 64;
constexpr int64_t kStreamMinLong = 64;
constexpr int64_t kStreamMinShort = 8;

// Note [Short-side products]: with a short side (M or N <= 32) and a long contraction,
// OpenBLAS spends its time packing the long operand, and a plain-loop dot-product form
// re-reads the long operand once per pair of short-side columns. BLIS with its general
// strides ran these shapes fastest (2026-11-29, one thread, f64, long operand cold:
// 453 x 21 x 503: BLIS 17-18 GFLOP/s, OpenBLAS 14-15, dot form 9-12; 19 x 19 x 2300:
// 15 / 11 / 11; 12 x 1000 x 144: 28 / 19 / 11), and it takes any positive strides, so
// fewer operands are packed. With a short contraction (K < 64) that holds with several
// threads, where BLIS splits the long side over the workers and OpenBLAS's own threads
// lost (MPS 2318 x 19 x 19: 0.1 ms on one thread, 0.2 ms on two); on one thread those
// stay on OpenBLAS (lm sentence_4 ran 25-36 ms with OpenBLAS, 40-44 ms with BLIS).
// A short side below 8 stays on OpenBLAS too (8192 x 4 x 256: BLIS 4.9 ms, OpenBLAS
// 2.0 ms; its 4 x 8 kernel fits four rows exactly), unless it is M, C's rows, in a
// column-major C with rows of at least kFewRowsMinN (B past L2): OpenBLAS then packs all
// of B for a few rows, which BLIS reads in place (f64, one thread, Zen 4, 2026-12-03:
// 4 x 32768 x 256 with B column- / row-major 12.3-15.4 / 25-35 ms against BLIS 7.3-8.1
// / 13-15; 2 and 6 rows alike; 4 x 65536 x 64 7.4 / 5.5-6.4; a batch of 8 of 4 x 8192
// x 256 24-28 / 13-15; 4 x 1024 x 256 0.17-0.23 / 0.08-0.17, but 4 x 512 x 256, B in L2,
// 0.024 / 0.034). The mirrored case, 8192 x 4 x 256 above, stays on OpenBLAS (16-19 ms
// with BLIS against 6.9-8.6).
constexpr int64_t kFewRowsMinN = 1024;
// Small products with A and C column-major go to the register-blocked small kernel,
// which beat OpenBLAS up to 262144 multiply-adds (Note [Tiny products]).

// Note [Column-split products]: with several threads, a product at most four times
// taller than wide (M <= 4N) runs as one sequential BLIS call per worker on its own
// piece of the longer side (the engine's workers, no second thread pool) instead of
// OpenBLAS with its own threads: OpenBLAS's threads synchronize per block and wait
// in sched_yield loops, and with beta = 0 it first zeroes C in a separate pass (for
// MERA's 540 x 58320 outputs a 252 MB write). Much taller products stay with
// OpenBLAS, which ran them faster (MERA 4320 x 594 x 399: 35 ms against 39 ms;
// 177147 x 243 x 50: 122 against 138 ms). 2 threads, per-step minima over 3
// interleaved runs (2026-11-30): MERA closed 1040 -> 953 ms in sum (540 x 58320 x
// 136: 177 -> 152 ms; 399 x 4320 x 7290: 490 -> 457 ms); the matrix chain's last
// step 424 x 371 x 24: 0.47 -> 0.25 ms. Only when the longer side is at least four
// times the contraction: square products lost (2 threads, `bench kernels`, against
// cblas_dgemm: n = 256 0.83-0.87, 1024 0.70-0.88, 2048 0.76-0.82 with the split;
// 0.95-1.19 without; bin_matmul_256 0.58-0.69 -> 0.52-0.57 ms), BLIS's kernel being
// slower than OpenBLAS's there (the Zen 4 VM without AVX-512 of 2026-11-30: 28 against 36
// GFLOP/s on one thread). Nor where OpenBLAS runs 512-bit kernels and the contraction is
// below kBlisSlowK with both sides at least kBlisSlowMinSide: there BLIS's (256-bit)
// kernel ran 0.65-0.8x OpenBLAS's on one thread (Zen 4, 512 x 8192 with K = 64, 128,
// 192: 25-35 against 32-40 GFLOP/s; from K = 256 on both 42-46), and the split lost to
// OpenBLAS pieces at two threads (K = 128: 38-55 against 59-78 GFLOP/s;
// tensornetwork_permutation_focus's 4 x 512 x 8192 x 128 step, that layout alone: 88-117
// -> 62-74 ms, alternating runs, 2026-12-03). With a short side BLIS stays (4 x 8192 x
// 256: 3.5-3.7 ms against 7.7-7.8 with OpenBLAS pieces; 48 to 256 rows within the
// spread).
constexpr int64_t kBlisSlowK = 256;
constexpr int64_t kBlisSlowMinSide = 256;

// Note [OpenBLAS pieces]: with several threads an automatic OpenBLAS product runs as
// one-thread OpenBLAS calls on pieces of C (which side: below), taken by the engine's workers,
// instead of one call on OpenBLAS's own threads. After each threaded call OpenBLAS's
// workers keep polling (sched_yield) for a while, so the engine's workers then share two
// cores with a third busy thread: MERA open at 2 threads ran 0.91x / 0.95x (medians /
// minima of 4 interleaved runs) with OPENBLAS_THREAD_TIMEOUT=4 (polling cut short), and
// MERA closed 0.93x / 0.92x; with these pieces MERA open 0.91 / 0.78, MERA closed 0.98
// / 1.04 and 0.94 / 0.87 in two sets (2026-11-30). In isolation the pieces match
// OpenBLAS's threads (399 x 4320 x 7290: 355-370 against 393-453 ms; 990 x 2187 x 4620,
// 4320 x 594 x 399, 480 x 4620 x 243, 810 x 12474 x 154 within the spread). Each piece
// packs the whole other operand again (OpenBLAS's threads share their packed panels),
// which cost about 17 / width of the product on that machine, so pieces are at least
// kOpenBlasPiece wide unless that leaves fewer than one per worker, and at most four
// per worker (a worker that starts late then hands its pieces to the others; 8 pieces
// of 990 x 2187 x 4620 took 1.15-1.3x as long as 2), and a whole number per worker: 3
// pieces of lm sentence_3's 1728 x 1100 x 144 on 2 workers left one worker a third of
// the product alone (2 threads, that step alone: 9.6-10.5 ms; 2 pieces 7.8-9.0, Zen 4,
// 2026-12-03). The pieces are fixed by the thread count, so the result does not depend
// on which worker runs which piece. A product forced to provider openblas keeps
// OpenBLAS's own threads (the provider's contract).
// Which side: the pieces are blocks of C's outer side (columns of a column-major C,
// rows of a row-major one), each C block contiguous, whenever that side gives every
// worker at least kOpenBlasOuterMin of it; else blocks of the longer side. Two one-thread
// cblas_dgemm calls on two persistent threads, column-major C, blocks of columns against
// blocks of rows (Zen 4, OpenBLAS Cooperlake, 2026-12-04, minima of 7 alternating
// rounds): 2048^3 165-184 against 173-191 ms (1.04-1.09x), 990 x 2187 x 4620 1.08x,
// 594 x 4320 x 399 1.31x, 810 x 12474 x 154 1.16-1.48x, 1000 x 3000 x 200 1.24x, 3000
// x 1000 x 200 1.12x; where the columns are the short side, even from 192-256 columns a
// piece (20000 x 384 x 256 1.00, 8000 x 512 x 512 1.01) and lost below (20000 x 256 x
// 256 in pieces of 128: 0.94; 177147 x 243 x 50 in 4 pieces: 0.88). The bench's row-major
// n = 2048 product had run in blocks of its contiguous rows' halves (blocks of columns
// of a row-major C): 0.91 of cblas's own two threads. BLIS's pieces keep the longer
// side: the same comparison on bli_dgemm went either way (2048^3 0.91, 20000 x 384 x 256
// 0.87, 3000 x 1000 x 200 1.10).
constexpr int64_t kOpenBlasPiece = 512;
constexpr int64_t kOpenBlasOuterMin = 256;
// Note [Blocked pieces]: the blocked GEMM's pieces (Note [Blocked AVX-512 GEMM]) are
// narrower than OpenBLAS's: each packs the other operand again, but a second worker
// that wakes late still finds pieces to take. At 2 threads with pieces of 512 a 256^3
// or 512^3 product ran entirely on the first worker (it had taken both pieces before
// the second woke): 0.44 / 3.0 ms, the one-thread times.
constexpr int64_t kBlockedPiece = 128;

// Note [Planar complex thresholds]: a complex product on the blocked kernel first copies
// A and B into real and imaginary planes and writes C from two real planes afterwards
// (Note [Complex products on the blocked kernel] in dot_general.cc): about three passes
// over MK + KN + MN elements against 4 MNK real multiply-adds. Only large products
// repay them. `tenferro bench kernels --only skinny` and `--only "dot_general c128"`,
// AMD Zen 5 (OpenBLAS's Haswell kernels), 2026-12-05, as ratios to cblas_zgemm's speed
// in the same process (blocked / the short complex kernel, Note [Short complex
// products] in gemm_complex.cc / OpenBLAS):
// - short contractions, one thread: c128 1024^2 with K = 16 / 24 / 31: 0.71 / 0.87 / ~1
//   against 2.33 / 2.21 / 2.09 and 0.99-1.05; 8192 x N x 256 with N = 8 / 16 / 32: 0.54 /
//   0.67 / 0.88 against 2.8 (N = 8, K = 64) / 1.5 (N = 32 to 63); gate-like products
//   16384 x 4 x 4 and 32768 x 2 x 2: 0.26-0.31 against 3.0-3.5; 2048^2 x 8 0.49 against
//   1.7-1.8; c64 alike (the short kernel 2.0-4.4);
// - cubes n = 64 / 128 / 256 / 512 / 1024 / 2048, one thread, same minute: blocked
//   1.07 / 1.57 / 1.78 / 1.70 / 1.67 / 1.76, the short kernel 1.69 / 1.81 / 1.95 / 1.83
//   / 1.67 / 1.53 (its contraction in chunks of 128 rewrites C; chunks of 256 were
//   slower); two threads n = 64 to 512: blocked 0.7 / 0.8 / 1.39-1.48 / 1.44-1.45, the
//   short kernel 2.8 / 1.8 / 1.56-1.75 / 1.51-1.66; n = 1024 alternating: one thread 96
//   against 98 ms, two 55-58 against 56-61 (short kernel first);
// - with packed operands the planar copies come on top of the packs: a circuit
//   network's 256 x 1024 x 2048 step (bench/circuit_instance.py, 24 qubits, 8 layers,
//   seed 1) 82.6 ms planar against 52.6 on the short kernel, the instance 95-96 -> 71-73.
// Hence planar only from a contraction of kPlanarMinK, sides of kPlanarMinSide and
// kPlanarMinFlops multiply-adds (n ~ 1290); below, the short kernel where it applies
// (Note [Short complex thresholds]), else a tuned OpenBLAS, which computes the
// interleaved form directly (an untuned one, SSE3 kernels, keeps the blocked kernel).
constexpr int64_t kPlanarMinK = 32, kPlanarMinSide = 64, kPlanarMinFlops = int64_t{1} << 31;

// A complex product long enough on every side for the planar copies to pay.
bool planar_shape(int64_t m, int64_t n, int64_t k) {
  return k >= kPlanarMinK && std::min(m, n) >= kPlanarMinSide && sat_mul(m * n, k) >= kPlanarMinFlops;
}

// Whether the blocked kernel takes a product of this dtype and shape (real: always;
// complex: Note [Planar complex thresholds]).
bool planar_pays(DType dtype, const CpuCaps& caps, int64_t m, int64_t n, int64_t k) {
  return !is_complex(dtype) || !caps.openblas_tuned || planar_shape(m, n, k);
}

// The short complex kernel takes columns of at least kComplexShortMinRowBytes (one
// register block of rows at AVX-512) and splits rows when each worker gets
// kComplexShortMinRows, else columns (Note [Short complex thresholds]).
constexpr int64_t kComplexShortMinRowBytes = 256, kComplexShortMinRows = 64;
// Whether the short complex kernel takes the operands (after any free-group split): A
// and C column-major where their groups merge, packed where they do not (not after a
// split, whose groups are batch dimensions a pack would have to follow); an A of at most
// kComplexShortPackedA elements is packed column-major whatever its layout (a gate
// against a state: the copy costs nothing next to the product).
constexpr int64_t kComplexShortPackedA = 4096;
bool complex_short_pack_a(const DotGroup& lm, const DotGroup& lk) {
  return !(lm.mergeable && lk.mergeable && (lm.stride == 1 || lm.extent <= 1));
}
bool complex_short_operands(const DotRoute& r, const DotGroup& lm, const DotGroup& lk, const DotGroup& rk,
                            const DotGroup& rn, const DotGroup& om, const DotGroup& on) {
  const bool no_split = !r.split_lhs_free && !r.split_rhs_free;
  const bool a = !complex_short_pack_a(lm, lk) ||
                 (no_split && (!(lm.mergeable && lk.mergeable) || lm.extent * lk.extent <= kComplexShortPackedA));
  const bool b = (rk.mergeable && rn.mergeable) || no_split;
  const bool c = om.mergeable && on.mergeable ? om.stride == 1 : no_split;
  return a && b && c;
}

// At AVX2 the kernel holds 8 accumulators (16 registers) and won only on short
// contractions: TENFERRO_MAX_ISA=avx2 on Zen 5 against cblas_zgemm (Haswell kernels),
// one thread, 2026-12-05: c128 K = 4 / 8 / 16 1.15-2.2 (16384 x 4 x 4, 2048^2 x 8,
// 65536 x 16 x 16), K = 32 0.86 (1024^2), 8192 x 32 x 256 0.72, cubes 64 to 512 0.81-0.88;
// c64 alike (K <= 16 1.3-2.7, K = 32 0.94, 8192 x 32 x 256 0.77).
constexpr int64_t kComplexShortMaxKAvx2 = 16;
// Note [Blocked thresholds]: the blocked kernel (Note [Blocked AVX-512 GEMM]) packs B for
// register blocks of 24 (f64) or 48 (f32) rows. A real C of at most a quarter of that many
// rows from a contraction of at most kBlockedShortK (a small matrix applied to many
// vectors: 2 x 2 against 2 x 524288) fills a fraction of each block and spends its time
// packing B, which OpenBLAS's 256-bit kernels do not: `tenferro.einsum('ik,kj->ij')` on
// Fortran-ordered operands, one thread, Zen 5, 2026-12-05, two rounds, OpenBLAS / blocked
// time: f32 M = 2 to 12, K = 2 and 4, N = 2^20 / K: 0.38-0.73; f64 M = 2 to 6: 0.28-0.83;
// with K = 8 even (0.55-1.62), from 16 rows (f32) or 8 (f64, the wide kernel's range)
// the blocked kernel or the wide one won. From L2 (best of 7 x 2000 calls, N = 16 to
// 16384): f32 OpenBLAS 1.1-2.2x faster at every N; f64 even or the blocked kernel up to
// 1.2x faster (M = 4, K = 4; 6, 3), and in the einsum suite's 4 x 16 x 4 steps 3-4 us
// against 7-20. So f32 products of that shape keep OpenBLAS at any size, f64 ones where
// the kernel's B (all batch items) exceeds L2 (the suite's steps that change route, three
// alternating rounds: tensornetwork's 2 x (4 x 524288 x 4) 15.7-23.6 -> 10.2-11.5 ms,
// gm_queen's 9 x (1 x 177147 x 3) 14.2-23.0 -> 12.8-15.5). Products of two rows or more
// that the narrow kernel holds in registers take it before this rule (Note [Narrow
// thresholds]; tensornetwork's step 11.3-12.1 -> 7.6-9.7 ms there); single rows keep it.
constexpr int64_t kBlockedShortK = 4;
// Few complex vectors (Note [Few-vector products]) against A's columns with a contraction
// of at most kComplexShortOverVectorsMaxK take the short kernel: the matrix-vector
// kernel's column form adds each column of A into stack tiles of Y and writes them out
// afterwards, which from beyond L2 with a short contraction cost more than the product
// (a gate on the slowest axis of a 2^20-element c128 state, 524288 x 2 x 2: 1.77 ms
// against cblas_zgemm's 1.22-1.32). `bench kernels --only "skinny c"`, one thread, Zen 5,
// 2026-12-05, two rounds, matrix-vector -> short kernel: c128 524288 x 2 x 2 1.77 ->
// 0.68-1.26 ms, 524288 x 4 x 2 3.98-4.18 -> 0.97-1.05, 262144 x 4 x 4 2.35-3.14 ->
// 1.09-1.34, 131072 x 2 x 8 0.91-0.93 -> 0.69-0.70, 65536 x 2 x 16 0.70-0.83 -> 0.69-0.79;
// c64 524288 x 2 x 2 1.26-1.34 -> 0.23, 131072 x 2 x 8 0.43-0.48 -> 0.18-0.26, 65536 x 2 x
// 16 0.30-0.32 -> 0.17-0.19; under TENFERRO_MAX_ISA=avx2 (two vectors) c128 524288 x 2 x 2
// 2.15-2.37 -> 0.73-0.81, 131072 x 2 x 8 1.21-1.31 -> 0.68-0.81, K = 16 even. Longer
// contractions keep the matrix-vector kernel (Note [Short complex thresholds]).
constexpr int64_t kComplexShortOverVectorsMaxK = 16;
// Note [Narrow thresholds] (plan_dot): f64 and f32 products with an A that the narrow
// kernel holds in registers (detail::narrow_takes: one vector of rows with K <= 8, two
// with K <= 4) of at least two rows against at least kNarrowMinColumns columns. `tenferro
// bench kernels --only "skinny f"` (A, B, C column-major: B's columns contiguous), one
// thread, Zen 5, 2026-12-05, three alternating rounds against the routes before (OpenBLAS
// under Note [Blocked thresholds], the blocked, wide or matrix-vector kernels):
// f64 3 x 10^6 x 3 3.1-5.8 -> 1.7-2.6 ms, 2 x 524288 x 2 0.90-1.49 -> 0.37-0.54, 8 x
// 131072 x 8 0.35-0.48 -> 0.27-0.38, in cache 3 x 4096 x 3 0.011 -> 0.005; f32 3 x 10^6 x 3
// 2.1-2.4 -> 1.0-1.3, 16 x 65536 x 4 0.20-0.30 -> 0.08-0.11. A sweep through the CLI
// (`einsum 'ij,jk->ik'` on Fortran-ordered files, N = 4096 to 524288, M and K of 2 to
// 32, best of four or five rounds, time before / after): f32 1.3-6.4 wherever the kernel
// takes the product (at AVX2 too), except two vectors with K = 8 (not taken); f64 with
// one vector of rows 1.1-5 (K = 6 and 8 against the matrix-vector kernel 1.25-1.6), at
// AVX2 with two vectors below 8 rows 1.7-2.2; f64 over two vectors from 8 rows lost or
// drew against the wide kernel (9 rows 0.77-1.07, 12 0.92-1.58, 16 1.02-1.18; at AVX2 8
// rows 0.94-0.97), so f64 takes two vectors only below kNarrowF64TwoVectorsBelow rows.
// Where OpenBLAS runs 512-bit kernels (Zen 4, Intel: not measured there), the same
// bench in a process of this machine with OPENBLAS_CORETYPE=SkylakeX (two rounds): from
// beyond L2 the kernel ran 2.7-5.8x OpenBLAS's speed (f64 3 x 10^6 x 3 1.9-2.4 against
// 7.1-7.7 ms, 2 x 524288 x 2 0.50-0.55 against 2.7-2.9; f32 3 x 10^6 x 3 1.3-1.5 against
// 3.9-4.0), but in L2 OpenBLAS's small-matrix kernels were as fast or faster (f64 3 x
// 4096 x 3 0.007-0.008 against 0.004-0.005, 4 x 16384 x 4 0.021-0.029 against
// 0.019-0.028; f32 4 x 16384 x 4 0.023 against 0.019), so with such an OpenBLAS the
// kernel takes only a long operand (all batch items) beyond L2.
// Several workers from parallel_min_flops / kNarrowParallelScale (a multiply-add here
// moves an element of B and one of C), pieces of the kernel's columns (two threads, f64
// 8 x 10^6 x 8 against the wide kernel 1.64-1.77 against 1.76-2.26 ms).
constexpr int64_t kNarrowMinColumns = 16;
constexpr int64_t kNarrowParallelScale = 8;
constexpr int64_t kNarrowF64TwoVectorsBelow = 8;
// Note [Batch-lane thresholds]: the shortest part of a lane unit's rows (or columns)
// given to a worker (a multiple of the register blocks' 4 and 3 rows).
constexpr int64_t kLanePartMin = 12;

// Note [Batch-fastest operands]: f64 and f32 batches whose items are one element apart
// in all three operands run as vector lanes on AVX-512 (Note [Batch-lane thresholds]);
// the rest of this note is about the others. BLIS takes any strides, but an operand whose unit
// stride is a batch dimension gives each product rows and columns that are both
// strided, which BLIS gathers element by element; packing the whole batch once (one
// vectorized copy) is faster there (bin_batched_matmul, batch label fastest, 2
// threads: 0.89 ms -> 0.42-0.47 ms side by side; tensornetwork, lm and gm_queen
// unchanged within the spread).

// Note [Blocked AVX-512 GEMM] (gemm_blocked.cc): automatic floating products that would
// make OpenBLAS calls run the blocked kernel at ISA level AVX-512 when OpenBLAS's core
// runs 256-bit kernels there (the measured case: Zen 5, where OpenBLAS 0.3.21 picks
// Haswell), with one packing workspace per worker (DotScratch::work or the pool). An
// OpenBLAS core with 512-bit kernels keeps its products: on Zen 4 (OpenBLAS's
// Cooperlake kernels; 512-bit FMAs executed in two halves) the blocked kernel ran
// 0.88-1.13x OpenBLAS's time by size and thread count, and the einsum suite 0.88-1.07x,
// within the host's drift (docs/benchmarks.md, "AMD Zen 4"); Intel cores with such
// kernels are not measured. Outer-parallel items stay with OpenBLAS (their workers
// share no lane index).

// Neither a BLAS matrix nor its transpose: rows and columns both strided.
bool strided_both(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  int64_t ld = 0;
  return !detail::blas_form(rows, cols, rs, cs, false, &ld) && !detail::blas_form(rows, cols, rs, cs, true, &ld);
}

}  // namespace

namespace detail {

// Note [Tiny matrix shortcut] (dot_general.cc): the most runs (k times the longer side).
constexpr int64_t kShortcutMaxRuns = 196;
bool tiny_matmul_shortcut(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                          const DotOptions& options) {
  if (!lhs.defined() || !rhs.defined() || lhs.rank() != 2 || rhs.rank() != 2 || lhs.dtype() != rhs.dtype()) {
    return false;
  }
  if (!dims.lhs_batch.empty() || !dims.rhs_batch.empty() || dims.lhs_contracting.size() != 1 ||
      dims.rhs_contracting.size() != 1 || dims.lhs_contracting[0] != 1 || dims.rhs_contracting[0] != 0) {
    return false;
  }
  const DotOptions defaults;
  const GemmProvider provider = options.provider != GemmProvider::kAuto ? options.provider : ctx.batch().provider;
  if (provider != GemmProvider::kAuto || options.conj_lhs || options.conj_rhs || options.alpha != defaults.alpha) {
    return false;
  }
  const DType d = lhs.dtype();
  if (d != DType::kF32 && d != DType::kF64 && d != DType::kC64 && d != DType::kC128) return false;
  const int64_t m = lhs.shape()[0], k = lhs.shape()[1], n = rhs.shape()[1];
  return k == rhs.shape()[0] && m * n > 0 &&
         sat_mul(m * n, k) <= options.shortcut_flops.value_or(ctx.batch().shortcut_flops) &&
         sat_mul(std::max(m, n), k) <= kShortcutMaxRuns;
}

}  // namespace detail

Result<DotRoute> plan_dot(const DotProblem& p, const CpuCaps& caps, const DotSettings& st) {
  DotRoute r;
  const bool integral = integral_dtype(p.dtype);
  const bool f64 = p.dtype == DType::kF64;
  const IsaLevel isa = caps.usable_isa();
  const bool kernels = isa >= IsaLevel::kAvx2;  // tenferro's vector kernels (Note [ISA kernels])
  const int64_t l2 = caps.l2_bytes > 0 ? caps.l2_bytes : int64_t{512} << 10;  // 512 KiB assumed when unknown
  const int64_t elem = dtype_size(p.dtype);
  // The matrix-vector kernel's dtypes, and the most vectors it takes (Note [Few-vector products]).
  const bool matvec_dtype = f64 || p.dtype == DType::kF32 || p.dtype == DType::kC128 || p.dtype == DType::kC64;
  const bool narrow_dtype = f64 || p.dtype == DType::kF32;  // the narrow kernel's (Note [Narrow products])
  // Complex types: fewer, and fewer still when A's columns are contiguous below AVX-512
  // (Note [Few-vector products]).
  const bool complex_vectors = is_complex(p.dtype);
  auto max_vectors = [&](bool row_form) {
    if (!complex_vectors) return detail::kMatVecMaxVectors;
    if (row_form) return kMatVecMaxComplexRowVectors;
    return isa >= IsaLevel::kAvx512 ? kMatVecMaxComplexColumnVectors : kMatVecMaxComplexColumnVectorsAvx2;
  };
  int64_t B = p.batch, M = p.m, N = p.n;
  const int64_t K = p.k;
  r.batch = B;
  r.m = M;
  r.n = N;
  if (B * M * N == 0) {
    r.policy = BatchPolicy::kSequential;
    r.provider = GemmProvider::kNaive;
    r.kernel = DotKernel::kNone;
    r.reason = "the output is empty";
    return r;
  }
  int64_t flops = sat_mul(M * N, std::max<int64_t>(K, 1));
  TENFERRO_TRY(Resolved res, resolve_provider(st, caps, p.dtype, B, M, N, flops));
  r.policy = res.policy;
  r.provider = res.provider;
  r.reason = res.reason;
  if (M == 1 && N == 1 && K == 1) {
    r.kernel = DotKernel::kElementwise;
    r.provider = GemmProvider::kNaive;
    r.reason = "every dimension is a batch dimension: an elementwise product";
    return r;
  }
  const bool vendor = r.policy == BatchPolicy::kWholeBatchVendor;
  const bool automatic = st.batch.provider == GemmProvider::kAuto;
  DotGroup lm = p.lm, lk = p.lk, rk = p.rk, rn = p.rn, om = p.om, on = p.on;
  // Free groups that do not merge become inner runs plus batch dims (Note [Split free
  // groups]); at most one side is split.
  if (!integral && !vendor && r.provider != GemmProvider::kNaive) {
    // Each product of the batch packs the other operand again (BLAS does): fine while it
    // stays in cache, or while all those packs move less than packing this operand.
    auto repack_ok = [](int64_t other, int64_t items, int64_t self) {
      return other <= 65536 || sat_mul(items, other) <= self;
    };
    const DotFreeSplit& rs = p.rhs_split;
    const DotFreeSplit& ls = p.lhs_split;
    // A matrix-vector product whose long operand's rows and contraction both fail to
    // merge ('abcd,bd->ac' on a C-order A; the rhs when transposed, 'bd,abcd->ac'): the
    // rows' inner run and the contraction's innermost loop go to the kernel, the rest to
    // the batch and the walked loops (Note [Matrix-vector contraction levels]); only where
    // the kernel's branch below then takes it (one vector, or A beyond L2 with a long
    // side of kMatVecVectorsMinRows).
    auto walked_vector_split = [&](bool rhs) {
      const DotFreeSplit& sp = rhs ? rs : ls;
      const DotGroup& rows_group = rhs ? rn : lm;
      const DotGroup& k_group = rhs ? rk : lk;
      const bool other_ok = rhs ? lm.mergeable && om.mergeable : rn.mergeable && on.mergeable;
      const int64_t vectors = rhs ? M : N, inner_stride = rhs ? p.k_inner_rhs : p.k_inner_lhs;
      if (!matvec_dtype || st.batch.provider != GemmProvider::kAuto || !detail::matvec_available(isa) ||
          rows_group.mergeable || k_group.mergeable || !p.k_levels || p.k_inner < 2 || !sp.valid || !other_ok) {
        return false;
      }
      const int64_t rows = sp.op.extent;
      const bool row_form = inner_stride == 1 && p.k_inner >= kMatVecRowMinK;
      if (vectors > max_vectors(row_form)) return false;
      const bool col_form = sp.op.stride == 1 && rows >= kMatVecColMinRows;
      const int64_t elements = rhs ? p.rhs_elements : p.lhs_elements;
      const bool sized = vectors == 1 || (rows >= kMatVecVectorsMinRows && elements > l2 / elem);
      return (row_form || col_form) && sized && rows * p.k_inner >= kMatVecMinFlops && rows >= vectors;
    };
    if ((!rn.mergeable && rk.mergeable && om.mergeable && p.rhs_elements >= 32768 && rs.valid && rs.op.extent >= 8 &&
         M <= 64 && sat_mul(M * rs.op.extent, K) >= 16384 && repack_ok(M * K, rs.items, p.rhs_elements) &&
         rs.providers_take) ||
        walked_vector_split(true)) {
      rn = rs.op;
      on = rs.out;
      N = rs.op.extent;
      B *= rs.items;
      r.split_rhs_free = true;
    } else if ((!lm.mergeable && lk.mergeable && on.mergeable && p.lhs_elements >= 32768 && ls.valid &&
                ls.op.extent >= 8 && N <= 64 && sat_mul(ls.op.extent * N, K) >= 16384 &&
                repack_ok(N * K, ls.items, p.lhs_elements) && ls.providers_take) ||
               walked_vector_split(false)) {
      lm = ls.op;
      om = ls.out;
      M = ls.op.extent;
      B *= ls.items;
      r.split_lhs_free = true;
    }
    if (r.split_lhs_free || r.split_rhs_free) {
      flops = sat_mul(M * N, std::max<int64_t>(K, 1));
      TENFERRO_TRY(res, resolve_provider(st, caps, p.dtype, B, M, N, flops));
      r.policy = res.policy;
      r.provider = res.provider;
      r.reason = res.reason;
    }
  }
  r.batch = B;
  r.m = M;
  r.n = N;
  // Note [Batch-lane thresholds]: batch items as vector lanes (Note [Batch-lane
  // products] in gemm_lanes.cc) when the lane run fills its vectors and every group
  // merges (the kernel takes any strides but packs nothing). `tenferro bench kernels
  // --only lanes`, one thread, Zen 4 (L2 1 MiB), medians of 3 alternating runs against
  // the packing routes (2026-12-03), b x n^3 with the batch fastest: f64 32 x 64^3 0.57
  // -> 0.44 ms, 64 x 32^3 0.19 -> 0.13, 256 x 16^3 0.16 -> 0.10 (bin_batched_matmul in
  // the einsum suite 0.54 -> 0.42 ms at one thread, 0.27 -> 0.23 at two); f32 32 x 64^3
  // 0.32 -> 0.22, 256 x 16^3 0.11 -> 0.04, 16 x 256^3 12.2 -> 9.0.
  // - Fill: a last vector at most a fourth empty (f64, 12 items in vectors of 8, three
  //   fourths full: 0.18 -> 0.23 ms, lost).
  // - Size: the kernel re-reads the smaller operand's lane slice (min(M K, K N) vectors)
  //   once per register block of the other, so it must stay in a near cache level
  //   (f64): slices of 1 MiB (16 x 128^3) 2.82 -> 1.78 ms, 4 MiB (8 x 256^3) 9.8 -> 7.3, 9.4 MiB
  //   (8 x 384^3) even, 16 MiB (8 x 512^3) 60 -> 76 (lost). Taken up to four times L2
  //   (512 KiB assumed when unknown).
  // - ISA: AVX-512 only. Under TENFERRO_MAX_ISA=avx2 on the same machine (vectors of 4
  //   f64 / 8 f32, 3 x 4 blocks; half a cache line per load) the kernel lost to the
  //   packing routes at AVX2: f64 32 x 64^3 0.56 -> 1.09 ms, 256 x 16^3 0.12 -> 0.25,
  //   8 x 256^3 11.2 -> 19.3; f32 16 x 256^3 9.9 -> 20.3 (256 x 16^3 alone won, 0.11 ->
  //   0.09). Its AVX2 and scalar forms exist (dispatch, tests) but are not planned.
  // - Threads: units of one vector of lanes of one item over the workers; with fewer
  //   than two units per worker, each unit's rows (or columns) in parts of at least
  //   kLanePartMin, so a batch of one vector still uses every worker.
  const bool lane_dtype = (f64 || p.dtype == DType::kF32) && isa >= IsaLevel::kAvx512;
  const int64_t width = f64 ? detail::lane_width<double>(isa) : detail::lane_width<float>(isa);
  if (lane_dtype && automatic && !vendor && kernels && K >= 1 && p.lane_batch >= width && lm.mergeable &&
      lk.mergeable && rk.mergeable && rn.mergeable && om.mergeable && on.mergeable) {
    const int64_t vector_bytes = width * (f64 ? 8 : 4);
    const int64_t padded = (p.lane_batch + width - 1) / width * width;
    if (std::min(M * K, K * N) <= 4 * (l2 / vector_bytes) && 4 * padded <= 5 * p.lane_batch) {
      r.kernel = DotKernel::kBatchLanes;
      r.provider = GemmProvider::kNaive;
      r.lanes = p.lane_batch;
      r.columns_outer = M * K < K * N;  // A's slice is the one re-read
      const int64_t units = B / p.lane_batch * (padded / width);
      const bool parallel =
          r.policy != BatchPolicy::kSequential && st.threads > 1 && flops >= (st.batch.parallel_min_flops + B - 1) / B;
      const int64_t side = r.columns_outer ? N : M;
      r.lane_parts = parallel && units < 2 * st.threads ? std::clamp<int64_t>((2 * st.threads + units - 1) / units, 1,
                                                                              std::max<int64_t>(1, side / kLanePartMin))
                                                        : 1;
      r.threads = parallel && units * r.lane_parts > 1 ? st.threads : 1;
      if (r.threads > 1) {
        r.split = DotSplit::kPieces;
        r.pieces = units * r.lane_parts;
      }
      r.reason =
          "batch items one element apart in every operand: the batch-lane kernel, no packing (Note "
          "[Batch-lane products])";
      return r;
    }
  }
  // Note [Matrix-vector thresholds]: f64, f32, c128 and c64 products (complex: Note
  // [Complex matrix-vector products] in gemm_matvec.cc; the byte limits below count
  // bytes, the others elements) with a side of extent 1 (after the free-group split)
  // with every group merged and the long operand contiguous along its rows or its
  // columns: the matrix-vector kernel (Note [Matrix-vector products] in gemm_matvec.cc),
  // A = the long operand, x = the other; C^T = B^T A^T when the long operand is the rhs.
  // `tenferro bench kernels --only matvec`, Zen 4, 2026-12-04, against the routes before
  // (a GEMM call with n = 1, or plain loops below the call cost): 128 x 16384 with rows
  // contiguous 2.05 -> 0.35 ms at one thread, 0.94 -> 0.15 at two; 2048^2 with columns
  // contiguous 3.1 -> 1.5 and 1.6 -> 0.8; 8192 x 32 rows 0.105 -> 0.030; against
  // cblas_dgemv on the same A, 1.0-1.9x at one thread. Limits, one thread, A of 65536
  // rows (rows form) or 65536 columns (column form), against the other routes:
  // - Row form from a contraction of kMatVecRowMinK: K = 16 0.44-0.61 -> 0.16-0.19 ms, K
  //   = 8 0.18-0.23 -> 0.15-0.17, K = 4 even (0.17-0.20 against 0.15-0.21).
  // - Column form from kMatVecColMinRows rows: 16 rows 0.33 -> 0.12-0.14 ms; 8 rows lost
  //   (OpenBLAS's GEMM 0.079 against 0.114-0.119).
  // - From kMatVecMinFlops multiply-adds: below, the plain loops (Note [Tiny products])
  //   were as fast or faster (lm brackets' 1996 products of 16 x 7: 0.084 ms against
  //   0.107); from 32 x 32 the kernel is as fast or faster than the plain loops (100
  //   calls of 32 x 32 with rows contiguous 0.05-0.11 ms against 0.09-0.19; 128 x 128
  //   0.24-0.27 against 0.44-0.63).
  // - One run at a time (Note [Matrix-vector products]) for rows (row form) or columns
  //   (column form) of at most kMatVecShortRunBytes in an A of more than twice L2 (512
  //   KiB assumed when unknown), counting every item of a batch (each item's A is read
  //   once, so a batch of small ones streams like one large A): 2 KiB rows of an A of
  //   4-16 MB ran 1.2-1.9x faster one at a time, of 1 MB 1.3x slower; 'ijk,j->ik' on
  //   128^3 (128 items of 128 x 128, 1 KiB columns) 0.80 -> 0.54-0.63 ms at one thread.
  // Threads: a multiply-add here moves an element of A, several times the
  // time of a GEMM's, so products from parallel_min_flops / kMatVecParallelScale run on
  // every worker (two threads, 512^2 with rows contiguous 0.030 -> 0.020 ms; 256^2 5-7
  // us either way): pieces of rows where each worker gets kMatVecPieceRows (in the
  // column form from beyond L2, column segments of at least kMatVecShortRunBytes; 256^2
  // with columns contiguous on one thread 6.4-7 us, OpenBLAS's two 4.8-5.4), else, for few rows
  // and a long contraction (20 x 100000 with rows contiguous, a dot product, 128 x
  // 16384 with columns contiguous), the contraction in parts added afterwards (Note
  // [Split-K products]), so each
  // worker reads a contiguous part of A: 20 x 100000 0.31 -> 0.12-0.16 ms at two
  // threads; 128 x 16384 (columns) 1.56 ms in pieces of 64 rows against 0.29-0.35. Parts
  // from kMatVecPieceK steps each: with 4096 (before), 'ijk,jk->i' on 64^3 at two threads
  // ran on one (f64 0.055 ms, c128 0.091); with 128, 0.029 and 0.056 (numpy 0.041-0.065,
  // 0.065-0.077), c128 100 x 1000 0.042 -> 0.030.
  // A few vectors (Note [Few-vector products]): a short side of 2 to kMatVecMaxVectors
  // (complex: fewer, below) against a long side of at least
  // kMatVecVectorsMinRows (both sides short: the short-side and small kernels) whose
  // operand, all batch items counted, exceeds L2. `bench kernels --only vectors`, Zen 4,
  // 2026-12-04, against cblas_dgemm on the same product: f64 2048^2 with 2 / 4 / 7
  // vectors 2.0-2.5x / 1.8-2.1x / 1.1-1.3x at one thread; 512^2 (2 MiB) with four
  // 4.7x, with two and rows contiguous 0.9; in L2 the GEMM was as fast (256^2 with four
  // 0.011-0.013 ms against 0.010-0.011). Against the BLIS route for few rows of long
  // column-major rows (Note [Short-side products]) 32768 x 256 with four 3-4x. Complex
  // (c128 against cblas_zgemm, one thread, Zen 4, 2026-12-04): with A's rows contiguous
  // 2048^2 with 2 / 3 / 4 vectors 1.9x / 1.7-2.0x / 1.7x at AVX-512, 1.45x / 1.1x /
  // 1.0x at AVX2, but 7 (4 + 3) 1.09x / 0.76x; with its columns contiguous 2 / 3 / 4 /
  // 7 vectors 1.25-1.5x / 1.04-1.51x / 1.04-1.43x / 0.78-1.1x at AVX-512 and 1.2x /
  // 0.88-1.2x / 0.69-0.89x / 0.55x at AVX2 (three rounds; the AVX2 column form takes one
  // column of A per pass for 3 and 4 vectors). Complex takes up to
  // kMatVecMaxComplexRowVectors vectors in the row form, kMatVecMaxComplexColumnVectors
  // in the column form at AVX-512 and kMatVecMaxComplexColumnVectorsAvx2 below.
  const bool vectors =
      std::min(M, N) == 1 || (std::min(M, N) <= detail::kMatVecMaxVectors && std::max(M, N) >= kMatVecVectorsMinRows &&
                              sat_mul(sat_mul(B, std::max(M, N)), K) > l2 / elem);
  // A contraction that does not merge walks its outer loops around the kernel (Note
  // [Matrix-vector contraction levels]): the kernel's contraction is the innermost loop.
  const bool k_merged = lk.mergeable && rk.mergeable;
  const bool k_walk = !k_merged && p.k_levels && p.k_inner >= 2;
  const int64_t k_run = k_merged ? K : p.k_inner;  // the kernel's contraction
  const int64_t lks = k_merged ? lk.stride : p.k_inner_lhs, rks = k_merged ? rk.stride : p.k_inner_rhs;
  // The short complex kernel's conditions (its branch below, Note [Short complex
  // thresholds]): for the product as given, or for C^T = B^T A^T where C is row-major and
  // that form needs no packing.
  const bool short_common = is_complex(p.dtype) && automatic && !vendor && r.provider != GemmProvider::kNaive &&
                            detail::complex_short_available(isa) && K >= 2 && !planar_shape(M, N, K) &&
                            (isa >= IsaLevel::kAvx512 || K <= kComplexShortMaxKAvx2) && !caps.openblas_avx512;
  const int64_t rows_per_vector = (isa >= IsaLevel::kAvx512 ? 64 : 32) / elem;  // complex elements
  auto short_rows = [&](int64_t rows) {
    return rows * elem >= kComplexShortMinRowBytes || detail::narrow_takes(rows, K, rows_per_vector);
  };
  const bool complex_short_plain = short_common && short_rows(M) && complex_short_operands(r, lm, lk, rk, rn, om, on);
  // ... C^T's rows contiguous (C row-major), or strided for a B^T held in registers (C
  // column-major: Note [Narrow complex products]).
  const bool c_t_rows = on.stride == 1 && om.stride != 1 && short_rows(N);
  const bool c_t_narrow = om.stride == 1 && on.stride != 1 && detail::narrow_takes(N, K, rows_per_vector);
  const bool complex_short_t = short_common && !complex_short_plain && lm.mergeable && lk.mergeable && om.mergeable &&
                               on.mergeable && (c_t_rows || c_t_narrow) && !r.split_lhs_free && !r.split_rhs_free;
  const bool complex_short = complex_short_plain || complex_short_t;
  // A few complex vectors against A's columns with a short contraction: the short kernel
  // (Note [Short complex thresholds]).
  const bool short_over_vectors = complex_short_plain && std::min(M, N) >= 2 && M >= N &&
                                  K <= kComplexShortOverVectorsMaxK && lm.mergeable && lk.mergeable && lm.stride == 1;
  // Note [Narrow thresholds]: a real A within two vectors of rows and a short contraction
  // (detail::narrow_takes) against at least kNarrowMinColumns columns of B, C's rows
  // contiguous: the narrow kernel (Note [Narrow products] in gemm_narrow.cc); C^T = B^T
  // A^T when B is the small one and C is row-major. Operands whose groups do not merge are
  // packed compact (the long one [k, n]: its columns contiguous, as the kernel reads them),
  // unless a free group was split (its outer labels are batch dimensions a pack would have
  // to follow).
  if (narrow_dtype && automatic && !vendor && r.provider != GemmProvider::kNaive && detail::narrow_available(isa) &&
      K >= 2 && om.mergeable && on.mergeable &&
      (!(r.split_lhs_free || r.split_rhs_free) || (lm.mergeable && lk.mergeable && rk.mergeable && rn.mergeable))) {
    const int64_t rpv = f64 ? detail::narrow_rows_per_vector<double>(isa) : detail::narrow_rows_per_vector<float>(isa);
    auto rows_ok = [&](int64_t rows) {
      return rows >= 2 && detail::narrow_takes(rows, K, rpv) &&
             (!f64 || rows <= rpv || rows < kNarrowF64TwoVectorsBelow);
    };
    // Where OpenBLAS runs 512-bit kernels, only a long operand beyond L2 (see the Note).
    auto sized = [&](int64_t long_side) {
      return !caps.openblas_avx512 || sat_mul(sat_mul(B, K), long_side) > l2 / elem;
    };
    const bool plain = rows_ok(M) && N >= kNarrowMinColumns && om.stride == 1 && sized(N);
    const bool trans = !plain && rows_ok(N) && M >= kNarrowMinColumns && on.stride == 1 && sized(M);
    if (plain || trans) {
      r.kernel = DotKernel::kNarrow;
      r.provider = GemmProvider::kNaive;
      r.transposed = trans;
      r.pack_lhs = !(lm.mergeable && lk.mergeable);
      r.pack_rhs = !(rk.mergeable && rn.mergeable);
      r.lhs_k_first = trans && r.pack_lhs;  // A^T's columns contiguous
      r.reason = trans ? "a small real B^T against many rows of A, C row-major: the narrow kernel on C^T = B^T A^T "
                         "(Note [Narrow products])"
                       : "a small real A against many columns of B, C's rows contiguous: the narrow kernel (Note "
                         "[Narrow products])";
      const bool outer = r.policy == BatchPolicy::kOuterParallel && B > 1;
      const bool parallel = !outer && r.policy == BatchPolicy::kProviderItems && st.threads > 1 &&
                            flops >= st.batch.parallel_min_flops / kNarrowParallelScale &&
                            (trans ? M : N) >= kNarrowMinColumns * st.threads;
      if (outer) {
        r.split = DotSplit::kOuterBatch;
      } else if (parallel) {
        r.split = DotSplit::kPieces;
        r.split_columns = true;  // the kernel's columns (C^T's when transposed)
        r.pieces = st.threads;
        r.threads = st.threads;
      }
      return r;
    }
  }
  if (matvec_dtype && automatic && !vendor && detail::matvec_available(isa) && vectors && K >= 2 &&
      flops >= kMatVecMinFlops && lm.mergeable && (k_merged || k_walk) && rn.mergeable && om.mergeable &&
      on.mergeable && !short_over_vectors) {
    auto takes = [&](int64_t rsa, int64_t csa, int64_t rows, int64_t count) {
      // Each call of the kernel does at least kMatVecMinFlops multiply-adds when it walks levels.
      if (k_walk && rows * k_run < kMatVecMinFlops) return false;
      // The kernel's form (gemm_matvec.cc): rows when the contraction is contiguous, unless
      // the rows are too.
      if (count > max_vectors(csa == 1 && !(rsa == 1 && rows > 1))) return false;
      return (csa == 1 && k_run >= kMatVecRowMinK) || (rsa == 1 && rows >= kMatVecColMinRows);
    };
    const bool plain = N <= M && takes(lm.stride, lks, M, N);
    if (plain || takes(rn.stride, rks, N, M)) {
      r.kernel = DotKernel::kMatVec;
      r.provider = GemmProvider::kNaive;
      r.transposed = !plain;
      const int64_t rows = plain ? M : N;
      const bool row_form = plain ? lks == 1 && !(lm.stride == 1 && M > 1) : rks == 1 && !(rn.stride == 1 && N > 1);
      const bool outer = r.policy == BatchPolicy::kOuterParallel && B > 1;
      const bool parallel = !outer && r.policy == BatchPolicy::kProviderItems && st.threads > 1 &&
                            real_work(p.dtype, flops) >= st.batch.parallel_min_flops / kMatVecParallelScale;
      const bool beyond = sat_mul(sat_mul(B, rows), K) > 2 * (l2 / elem);  // A (all items) streams from beyond L2
      // Pieces of rows keep each worker's share of A contiguous in the row form; in the
      // column form (from beyond L2) only while each piece's column segment is a long run.
      const bool row_pieces = rows >= kMatVecPieceRows * st.threads &&
                              (row_form || !beyond || rows / st.threads * elem >= detail::kMatVecShortRunBytes);
      if (outer) {
        r.split = DotSplit::kOuterBatch;
      } else if (parallel && row_pieces) {
        r.split = DotSplit::kPieces;
        r.pieces = st.threads;
      } else if (parallel && !k_walk && M * N <= detail::kSplitKMaxOutput && K >= kMatVecPieceK * st.threads) {
        r.split = DotSplit::kSplitK;  // Note [Split-K products]
        r.pieces = std::min(st.threads, detail::kSplitKMaxParts);
      }
      r.threads = r.split == DotSplit::kPieces || r.split == DotSplit::kSplitK ? st.threads : 1;
      r.one_run = (row_form ? k_run : rows) * elem <= detail::kMatVecShortRunBytes && beyond;
      r.k_walk = k_walk;
      r.reason = std::min(M, N) == 1
                     ? "a side of extent 1, the long operand contiguous along its rows or columns: the "
                       "matrix-vector kernel, no packing (Note [Matrix-vector products])"
                     : "a short side of 2 to 7 (a few vectors), the long operand contiguous along its rows or "
                       "columns: the matrix-vector kernel, no packing (Note [Few-vector products])";
      return r;
    }
  }
  // Note [Short complex thresholds]: complex products whose planar copies would not pay
  // (Note [Planar complex thresholds]), A and C column-major (packed so where their
  // groups do not merge): the short complex kernel (Note [Short complex products] in
  // gemm_complex.cc), rows (or, for fewer than kComplexShortMinRows rows per worker,
  // columns) in pieces over the workers. Columns of A shorter than one register block of rows (AVX-512) waste the
  // kernel's masked lanes: 8 x 16384 x 4 c128 0.88 against OpenBLAS's 0.96, c64 16 x
  // 8192 x 256 0.70 against 1.05 (one thread, the figures' run), so they stay with the
  // providers, unless A fits in registers (Note [Narrow complex products]). An A of at most kComplexShortPackedA
  // elements is packed column-major whatever its layout. A row-major C (C^T column-major) runs as C^T = B^T A^T when
  // that form needs no packing but B's ([n, k] for B^T); so does a column-major C whose B^T fits in registers, C^T's
  // rows then strided (a gate against a state whose contraction is contiguous: C-ordered 2^20-element c128 states, one
  // thread, against OpenBLAS on the same product, gates on the two fastest axes 2.9-3.0 -> 1.8-2.0 ms, 8 x 4 gates
  // 5.1-6.6 -> 3.0-3.1, on the fastest axis 1.5-1.9 -> 1.2-1.3; c64 even or faster). Other operands the kernel does
  // not take (A's rows not contiguous) go to the providers too; few vectors to the matrix-vector kernel above (as fast
  // as this one with A's columns contiguous, 2048^2 with 2 to 4 vectors within 8 %), except against a contraction of
  // at most kComplexShortOverVectorsMaxK (see there). Measured where OpenBLAS runs 256-bit kernels (Zen 5
  // at AVX-512 and under an AVX2 cap); where it runs 512-bit ones (Zen 4, Intel) the kernel is not measured, so the
  // products keep the providers there (in a process of this machine with OpenBLAS's SkylakeX kernels, the kernel
  // ran 1.2-2.3x their speed on the skinny cases: docs/benchmarks.md).
  if (complex_short) {
    r.kernel = DotKernel::kComplexShort;
    r.provider = GemmProvider::kNaive;
    // Operands whose groups do not merge are packed compact (A [m, k], B [k, n], C's
    // scratch [m, n]: column-major, as the kernel takes them); the transposed form takes
    // A and C as they are and packs B as [n, k] unless its rows are contiguous (B^T is
    // the kernel's A).
    r.transposed = complex_short_t;
    r.pack_lhs = !complex_short_t && complex_short_pack_a(lm, lk);
    r.pack_rhs = complex_short_t ? !(rk.mergeable && rn.mergeable && rn.stride == 1) : !(rk.mergeable && rn.mergeable);
    r.rhs_n_first = complex_short_t && r.pack_rhs;
    r.pack_out = !(om.mergeable && on.mergeable);
    r.reason =
        complex_short_t
            ? "a complex product below the planar copies' thresholds, C row-major or B^T in registers: the short "
              "complex kernel on C^T = B^T A^T (Note [Short complex products], [Narrow complex products])"
            : "a complex product below the planar copies' thresholds, A and C column-major (or packed so): the "
              "short complex kernel (Note [Short complex products])";
    const bool outer = r.policy == BatchPolicy::kOuterParallel && B > 1;
    const bool parallel = !outer && r.policy == BatchPolicy::kProviderItems && st.threads > 1 &&
                          real_work(p.dtype, flops) >= st.batch.parallel_min_flops;
    if (outer) {
      r.split = DotSplit::kOuterBatch;
    } else if (parallel) {
      r.split = DotSplit::kPieces;
      r.split_columns = (complex_short_t ? N : M) < kComplexShortMinRows * st.threads;
      r.pieces = st.threads;
      r.threads = st.threads;
    }
    return r;
  }
  // Pack forms of operands that do not merge (Note [Pack order]).
  const bool lhs_k_first = p.lhs_first_free < 16 && p.lhs_k_unit_run >= 16;
  const bool rhs_n_first = p.rhs_first_k < 16 && p.rhs_n_unit_run >= 16 &&
                           (N < kRowMajorRhsMaxN || K < kRowMajorRhsMinK || K > kRowMajorRhsMaxK);
  // Both sides short, one operand contiguous along its free side, and an operand that
  // would be packed: the short-side kernel walks the contraction in place and takes the
  // other operand's rows at any offsets (Note [Short-side products with a strided
  // contraction] in gemm_kernels.cc).
  auto short_route = [&]() {
    if (!detail::short_sides_available(isa) || M > detail::kShortSideMax || N > detail::kShortSideMax || M < 4 ||
        N < 4 || K < 8 || !om.mergeable || !on.mergeable) {
      return false;
    }
    const int64_t packed = (lm.mergeable && lk.mergeable ? 0 : p.lhs_elements) +
                           (rk.mergeable && rn.mergeable ? 0 : p.rhs_elements);
    const bool rhs_vec = rn.mergeable && rn.stride == 1, lhs_vec = lm.mergeable && lm.stride == 1;
    if (packed < kShortSideMinPacked || !(rhs_vec || lhs_vec) || !p.k_levels) return false;
    r.transposed = !rhs_vec;  // C^T = B^T A^T when only the lhs is contiguous along its free side
    return true;
  };
  bool thin_form = false, wide_form = false, out_form = false, short_form = false, stream_form = false;
  bool small_form = false, small_pack_lhs = false;
  if (f64 && automatic && !vendor && r.provider != GemmProvider::kNaive && kernels) {
    // Strides after packing (Note [Pack order]).
    const int64_t lms = lm.mergeable && lk.mergeable ? lm.stride : lhs_k_first ? K : 1;
    const int64_t oms = om.mergeable && on.mergeable ? om.stride : 1;
    // The short-side kernel first: the small and thin kernels below assume packing.
    short_form = short_route();
    // The small kernel takes C^T = B^T A^T when C is row-major and B's rows contiguous
    // (numpy's row-major batched matmul 'bij,bjk->bik').
    const int64_t rns = rk.mergeable && rn.mergeable ? rn.stride : rhs_n_first ? 1 : K;
    const int64_t ons = om.mergeable && on.mergeable ? on.stride : M;
    // An lhs without a unit stride (batch-fastest operands, Note [Batch-fastest
    // operands]) is packed [free, contracting] for the small kernel, as any provider
    // but BLIS would pack it, and so is such a rhs (each of its elements on its own
    // cache line otherwise).
    const bool lhs_packed = !(lm.mergeable && lk.mergeable) || (lm.stride != 1 && lk.stride != 1);
    small_form = !short_form && flops <= kSmallMaxFlops && K <= detail::kSmallMaxK &&
                 ((M >= 4 && (lms == 1 || lhs_packed) && oms == 1) || (N >= 4 && rns == 1 && ons == 1 && oms != 1));
    small_pack_lhs = small_form && oms == 1 && lms != 1;
    // A tall operand (column- or row-major) against a narrow one with a long
    // contraction, C column- or row-major, no operand packed: streamed in memory order
    // (Note [Streamed tall products] in gemm_streamed.cc); C^T = B^T A^T when the tall
    // side is the rhs. The kernel writes C once per row chunk at any row stride (the
    // narrow side's stride), which costs nothing next to the contraction.
    const bool merged = lm.mergeable && lk.mergeable && rk.mergeable && rn.mergeable && om.mergeable && on.mergeable;
    const bool c_plain = om.stride == 1 || on.stride == 1;
    if (!short_form && !small_form && merged && K >= kStreamMinK && c_plain) {
      if (M >= kStreamMinLong && N >= kStreamMinShort && N <= detail::kStreamMaxN && (lm.stride == 1 || lk.stride == 1)) {
        stream_form = true;
      } else if (N >= kStreamMinLong && M >= kStreamMinShort && M <= detail::kStreamMaxN &&
                 (rn.stride == 1 || rk.stride == 1)) {
        stream_form = true;
        r.transposed = true;
      }
    }
    // A long side against a short contraction and a narrow B, A's contraction
    // contiguous and C column-major: the thin kernel (Note [Thin transposed products]
    // in gemm_kernels.cc), one piece of the long side per worker.
    thin_form = !small_form && !short_form && !stream_form && M >= 64 && N <= 32 && K <= 32 && lm.mergeable &&
                lk.mergeable && lk.stride == 1 && om.mergeable && on.mergeable && om.stride == 1 && rk.mergeable &&
                rn.mergeable;
    // A short contraction against many columns, with an A that fits in L2 (packed
    // column-major when it is not): the small kernel with column blocks outermost
    // (Note [Short-contraction products]).
    wide_form = !small_form && !short_form && !stream_form && !thin_form && K <= kWideMaxK && M >= 8 &&
                N >= kWideMinN && M * K <= kWideMaxA && om.mergeable && on.mergeable && om.stride == 1 &&
                rk.mergeable && rn.mergeable;
    // ... and C^T = B^T A^T for a row-major C whose B is small and column-major as B^T
    // (B's rows contiguous), every group merged (nothing packed): a tall row-major A
    // against a small B with a short contraction ('bij,jk->bik' on numpy arrays; Note
    // [Transposed short-contraction products]).
    if (!small_form && !short_form && !stream_form && !thin_form && !wide_form && merged && K <= kWideMaxK &&
        K >= kWideTransposedMinK && N >= 8 && M >= kWideMinN && N * K <= kWideMaxA && M * N >= kWideTransposedMinC &&
        on.stride == 1 && om.stride != 1 && rn.stride == 1) {
      wide_form = true;
      r.transposed = true;
    }
    // A C far larger than the caches from a short contraction, with A or B small
    // enough to stay in L2: written once with non-temporal stores (Note
    // [Streamed-output products]). A is packed column-major and B compact when they do
    // not merge (both are small next to C). Only on several workers, which share the
    // memory bandwidth: one thread is compute-bound there and OpenBLAS's kernel won.
    out_form = !small_form && !short_form && !stream_form && !thin_form && !wide_form && p.beta_zero &&
               st.threads > 1 && flops >= st.batch.parallel_min_flops && K >= kOutMinK && K <= detail::kOutMaxK &&
               M * N >= kOutMinC && (M * K <= kOutCachedOperand || K * N <= kOutCachedOperand) && om.mergeable &&
               on.mergeable && om.stride == 1;
    if (small_form || thin_form || short_form || stream_form || wide_form || out_form) {
      r.provider = GemmProvider::kNaive;
      r.reason = short_form    ? "both sides short, an operand that would be packed: the short-side kernel"
                 : small_form  ? "a small f64 product with A and C column-major: the small kernel (Note [Tiny products])"
                 : stream_form ? "a tall operand against a narrow one, long contraction: the streamed kernel"
                 : thin_form   ? "a long side, short contraction, narrow B: the thin kernel"
                 : wide_form   ? "a short contraction against many columns, A in L2: the small kernel, column blocks outermost"
                               : "a C far larger than the caches from a short contraction: the streamed-output kernel";
    } else if (std::min(M, N) <= 32 && std::min(M, N) >= 8 && (K >= 64 || st.threads > 1) && caps.blis_tuned) {
      r.provider = GemmProvider::kBlis;
      r.reason = "a short side (8 to 32) with a long contraction or several threads: BLIS (Note [Short-side products])";
    } else if (f64 && M >= 2 && M < 8 && N >= kFewRowsMinN && K >= 64 && om.mergeable && om.stride == 1 &&
               caps.blis_tuned) {
      r.provider = GemmProvider::kBlis;
      r.reason = "fewer than 8 rows of a column-major C, long rows: BLIS (Note [Short-side products])";
    }
  } else if (f64 && automatic && !vendor) {
    short_form = short_route();  // products the plain loops would take after packing
    if (short_form) r.reason = "both sides short, an operand that would be packed: the short-side kernel";
  }
  // Note [Column-split products].
  if (!integral && automatic && r.policy == BatchPolicy::kProviderItems && r.provider == GemmProvider::kOpenBlas &&
      caps.blis_tuned && st.threads > 1 && real_work(p.dtype, flops) >= st.batch.parallel_min_flops && M <= 4 * N &&
      std::max(M, N) >= 32 * int64_t{st.threads} && std::max(M, N) >= 4 * K &&
      !(caps.openblas_avx512 && K < kBlisSlowK && std::min(M, N) >= kBlisSlowMinSide)) {
    r.provider = GemmProvider::kBlis;
    r.reason = "several threads, a product at most 4x taller than wide: one BLIS call per worker (Note [Column-split products])";
  }
  // Which operands are packed (Note [dot_general routes], Note [Batch-fastest operands]).
  const bool blis = r.provider == GemmProvider::kBlis;
  const bool cl = p.conj_lhs, cr = p.conj_rhs;
  r.pack_lhs = !(short_form || (lm.mergeable && lk.mergeable &&
                                detail::operand_ok(r.policy, r.provider, false, cl, M, K, lm.stride, lk.stride) &&
                                !(((wide_form && !r.transposed) || out_form || small_pack_lhs) && lm.stride != 1) &&
                                !(blis && p.lhs_batch_unit && strided_both(M, K, lm.stride, lk.stride))));
  r.pack_rhs = !(short_form ||
                 (rk.mergeable && rn.mergeable && detail::operand_ok(r.policy, r.provider, false, cr, K, N, rk.stride, rn.stride) &&
                  !(small_pack_lhs && rk.stride != 1 && rn.stride != 1) &&
                  !(blis && p.rhs_batch_unit && strided_both(K, N, rk.stride, rn.stride))));
  r.pack_out = !(om.mergeable && on.mergeable && detail::operand_ok(r.policy, r.provider, true, false, M, N, om.stride, on.stride) &&
                 !(blis && p.out_batch_unit && strided_both(M, N, om.stride, on.stride)));
  // Compact [free, contracting] (unit row stride), or [contracting, free] when a
  // Fortran call must conjugate it or Note [Pack order] says so.
  r.lhs_k_first = r.pack_lhs && !wide_form && !out_form && !small_pack_lhs && ((vendor && cl) || lhs_k_first);
  r.rhs_n_first = r.pack_rhs && ((vendor && cr) || rhs_n_first);
  // Threads per product, and the batch split.
  if (vendor) {
    r.kernel = DotKernel::kVendorBatch;
    r.threads = 1;
    return r;
  }
  const bool outer = r.policy == BatchPolicy::kOuterParallel && B > 1;
  // A product below parallel_min_flops runs on one thread even with provider items:
  // waking and joining the other threads costs more than it saves (Note [Tiny products]).
  r.threads =
      !outer && r.policy == BatchPolicy::kProviderItems && real_work(p.dtype, flops) >= st.batch.parallel_min_flops
          ? st.threads
          : 1;
  if (outer) r.split = DotSplit::kOuterBatch;
  const int threads = r.threads;
  auto pieces = [&](int64_t count) {
    if (threads > 1) {
      r.split = DotSplit::kPieces;
      r.pieces = count;
    }
  };
  // Pieces of at least `piece` along a side of `len`, one to four per worker, a whole
  // number per worker (Note [OpenBLAS pieces]).
  auto balanced = [&](int64_t len, int64_t piece) {
    const int64_t n = std::clamp<int64_t>(len / piece, threads, 4 * int64_t{threads});
    return n - n % threads;
  };
  if (K == 0) {
    r.kernel = DotKernel::kScaleOutput;
    r.reason = "an empty contraction: out = beta out";
    return r;
  }
  if (K == 1 && automatic && p.dtype != DType::kBool) {
    r.kernel = DotKernel::kOuter;
    r.reason = "nothing contracted (K = 1): the outer-product loop (Note [Outer products])";
    pieces(threads);
    return r;
  }
  switch (r.provider) {
    case GemmProvider::kOpenBlas: {
      // OpenBLAS would run its 256-bit kernels on an AVX-512 CPU (Note [Blocked AVX-512 GEMM]).
      const bool blocked = !integral && automatic && r.policy != BatchPolicy::kOuterParallel &&
                           detail::blocked_available(isa) && !caps.openblas_avx512;
      // Note [Blocked thresholds]: the rows of the kernel's C (C^T's for a row-major C).
      const bool c_columns = r.pack_out || om.stride <= on.stride;
      const int64_t blocked_rows = c_columns ? M : N;
      const int64_t b_elements = sat_mul(sat_mul(B, K), c_columns ? N : M);  // the kernel's B, all items
      const bool few_rows = !is_complex(p.dtype) && K <= kBlockedShortK && blocked_rows * 4 <= (f64 ? 24 : 48) &&
                            (!f64 || b_elements > l2 / elem);
      if (blocked && planar_pays(p.dtype, caps, M, N, K) && !few_rows) {
        r.kernel = DotKernel::kBlocked;
        r.reason = "a product OpenBLAS would run with 256-bit kernels on an AVX-512 CPU: the blocked kernel (Note "
                   "[Blocked AVX-512 GEMM])";
        // Pieces of at least kBlockedPiece along the longer side (Note [Blocked pieces]),
        // each lane its own panels.
        r.split_columns = N >= M;
        pieces(balanced(std::max(M, N), kBlockedPiece));
      } else {
        r.kernel = DotKernel::kOpenBlas;
        if (blocked && few_rows) {
          r.reason =
              "a few rows of C from a short contraction: OpenBLAS, which does not pack B for them (Note "
              "[Blocked thresholds])";
        } else if (blocked) {
          r.reason =
              "a complex product below the planar copies' thresholds: OpenBLAS on the interleaved operands (Note "
              "[Planar complex thresholds])";
        }
        if (threads > 1 && automatic) {
          // Note [OpenBLAS pieces]: blocks of C's outer side where each is wide enough,
          // else of the longer side.
          const bool c_columns_outer = r.pack_out || om.stride <= on.stride;
          const int64_t c_outer = c_columns_outer ? N : M;
          r.split_columns = c_outer >= kOpenBlasOuterMin * threads ? c_columns_outer : N >= M;
          pieces(balanced(r.split_columns ? N : M, kOpenBlasPiece));
        } else if (threads > 1) {
          if (st.batch.strict_placement) {
            return usage_error(ErrorCode::kUnsupported, "dot_general",
                               "strict placement: provider openblas would run this product on its own " +
                                   s(threads) + " threads (global thread control), which the engine cannot place");
          }
          r.split = DotSplit::kProviderThreads;
        }
      }
      break;
    }
    case GemmProvider::kBlis:
      r.kernel = DotKernel::kBlis;
      if (threads > 1 && std::max(M, N) >= 32 * int64_t{threads}) {
        // The longer side over the engine's workers, one piece each (every BLIS call
        // packs the other operand again; each reads its share of the long operand once).
        r.split_columns = N >= M;
        pieces(threads);
      } else if (threads > 1 && M * N <= detail::kSplitKMaxOutput && K >= 256 * int64_t{threads}) {
        r.split = DotSplit::kSplitK;  // Note [Split-K products]
        r.pieces = std::min(threads, detail::kSplitKMaxParts);
      }
      break;
    default:
      if (short_form) {
        r.kernel = DotKernel::kShortSides;
        if (threads > 1) r.split = DotSplit::kSplitK;  // parts fixed by the contraction's outer loop
      } else if (stream_form) {
        r.kernel = DotKernel::kStreamed;
        if (threads > 1) r.split = DotSplit::kPieces;  // pieces of whole slices (Note [Streamed pieces])
        // Note [Streamed row-major products] (gemm_streamed.cc): a tall side whose
        // contraction is contiguous keeps C's rows in registers on AVX-512 when the narrow
        // side's rows are contiguous or dot_general packs them (not for outer-parallel
        // items). The kernel's arguments: A = the tall side, B = the narrow one.
        const int64_t rsa = r.transposed ? rn.stride : lm.stride, csa = r.transposed ? rk.stride : lk.stride;
        const int64_t csb = r.transposed ? lm.stride : rn.stride;
        if (detail::streamed_rows_form(isa, rsa, csa, csb, r.split != DotSplit::kOuterBatch)) {
          r.reason = "a tall operand against a narrow one, long contraction, the tall side's contraction contiguous: "
                     "the streamed kernel with C's rows in registers";
        }
      } else if (out_form) {
        r.kernel = DotKernel::kStreamedOutput;
        r.columns_outer = M * K <= kOutCachedOperand;  // A stays in cache (Note [Streamed-output products])
        if (threads > 1) r.split = DotSplit::kPieces;
      } else if (wide_form) {
        r.kernel = DotKernel::kWide;
        if (threads > 1) r.split = DotSplit::kPieces;
      } else if (thin_form) {
        r.kernel = DotKernel::kThin;
        if (threads > 1) r.split = DotSplit::kPieces;
      } else if (small_form) {
        r.kernel = DotKernel::kSmall;
        r.threads = 1;
      } else {
        r.kernel = DotKernel::kPlainLoops;
        r.threads = 1;
      }
  }
  return r;
}

namespace detail {

// Note [Lane-first results]: operands whose batch items lie one element apart (numpy's
// 'bij,bjk->bik' in column-major tensors) get a result laid out the same way when the
// planner then runs the batch-lane kernel (Note [Batch-lane products] in
// gemm_lanes.cc), which writes such a C with whole vectors; in the usual layout it would
// write each item's block lane by lane. Otherwise (no lane run, or products the lane
// kernel does not take) the result keeps the usual layout, which the BLAS routes address
// without a scratch.
Layout own_result_layout(const CpuExecutionContext& ctx, DType dtype, const Layout& lhs, const Layout& rhs,
                         const DotDims& dims, const DotOptions& options, const DotAxes& axes, const Shape& shape) {
  if (auto lanes = lane_first_layout(lhs, rhs, dims, shape)) {
    DotAnalysis an;
    analyze_dot(dtype, lhs, rhs, *lanes, dims, axes, options, &an);
    const DotSettings settings{effective_batch_settings(ctx, options), ctx.threads()};
    auto route = plan_dot(an.problem, ctx.caps(), settings);
    if (route && route->kernel == DotKernel::kBatchLanes) return *lanes;
  }
  return dot_general_result_layout(shape, dims.lhs_batch.size());
}

}  // namespace detail

Result<Layout> dot_general_own_layout(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs,
                                      const DotDims& dims, const DotOptions& options) {
  TENFERRO_TRY(DotAxes axes, detail::validate_dot(lhs, rhs, dims));
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape(), rhs.shape(), dims));
  DotOptions own = options;  // dot_general's own result: beta = 0
  own.beta = 0.0;
  return detail::own_result_layout(ctx, lhs.dtype(), lhs.layout(), rhs.layout(), dims, own, axes, shape);
}

Result<DotRoute> explain_dot_general(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs,
                                     const DotDims& dims, const DotOptions& options, const Layout* out_layout) {
  TENFERRO_TRY(DotAxes axes, detail::validate_dot(lhs, rhs, dims));
  if (out_layout == nullptr && detail::tiny_matmul_shortcut(ctx, lhs, rhs, dims, options)) {
    DotRoute r;
    r.policy = BatchPolicy::kSequential;
    r.provider = GemmProvider::kNaive;
    r.kernel = DotKernel::kPlainLoops;
    r.m = axes.m;
    r.n = axes.n;
    r.reason = "a tiny 2-D matrix product: the direct loop before planning (Note [Tiny matrix shortcut])";
    return r;
  }
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape(), rhs.shape(), dims));
  DotOptions own = options;  // dot_general's own result: beta = 0
  own.beta = 0.0;
  const Layout out = out_layout != nullptr ? *out_layout
                                           : detail::own_result_layout(ctx, lhs.dtype(), lhs.layout(), rhs.layout(),
                                                                       dims, own, axes, shape);
  if (!(out.shape == shape)) {
    return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                       "destination shape " + format_dims(out.shape) + " differs from result shape " + format_dims(shape));
  }
  detail::DotAnalysis a;
  detail::analyze_dot(lhs.dtype(), lhs.layout(), rhs.layout(), out, dims, axes, options, &a);
  const DotSettings settings{effective_batch_settings(ctx, options), ctx.threads()};
  return plan_dot(a.problem, ctx.caps(), settings);
}

std::string_view dot_kernel_name(DotKernel k) noexcept {
  switch (k) {
    case DotKernel::kNone: return "none";
    case DotKernel::kElementwise: return "elementwise";
    case DotKernel::kScaleOutput: return "scale-output";
    case DotKernel::kOuter: return "outer";
    case DotKernel::kPlainLoops: return "plain-loops";
    case DotKernel::kSmall: return "small";
    case DotKernel::kThin: return "thin";
    case DotKernel::kWide: return "wide";
    case DotKernel::kShortSides: return "short-sides";
    case DotKernel::kStreamed: return "streamed";
    case DotKernel::kStreamedOutput: return "streamed-output";
    case DotKernel::kBlocked: return "blocked";
    case DotKernel::kBatchLanes: return "batch-lanes";
    case DotKernel::kMatVec: return "matrix-vector";
    case DotKernel::kComplexShort: return "complex-short";
    case DotKernel::kNarrow: return "narrow";
    case DotKernel::kOpenBlas: return "openblas";
    case DotKernel::kBlis: return "blis";
    case DotKernel::kVendorBatch: return "vendor-batch";
  }
  return "unknown";
}

std::string_view dot_split_name(DotSplit s) noexcept {
  switch (s) {
    case DotSplit::kNone: return "none";
    case DotSplit::kOuterBatch: return "outer-batch";
    case DotSplit::kPieces: return "pieces";
    case DotSplit::kSplitK: return "split-k";
    case DotSplit::kProviderThreads: return "provider-threads";
  }
  return "unknown";
}

std::string describe(const DotRoute& r) {
  std::string out = "kernel ";
  // Provider naive in a route means tenferro's own code (plain loops or one of its
  // vector kernels, which `kernel` names), so it is printed as such.
  out.append(dot_kernel_name(r.kernel))
      .append(", provider ")
      .append(r.provider == GemmProvider::kNaive ? std::string_view("tenferro") : gemm_provider_name(r.provider));
  out.append(", batch ").append(std::to_string(r.batch)).append(" x ").append(std::to_string(r.m));
  out.append(" x ").append(std::to_string(r.n));
  if (r.kernel == DotKernel::kBatchLanes) out.append(" (").append(std::to_string(r.lanes)).append(" lanes)");
  out.append(", split ").append(dot_split_name(r.split));
  if (r.split == DotSplit::kPieces || r.split == DotSplit::kSplitK) {
    if (r.pieces > 1) out.append(" (").append(std::to_string(r.pieces)).append(")");
    const bool blocks =
        r.kernel == DotKernel::kOpenBlas || r.kernel == DotKernel::kBlis || r.kernel == DotKernel::kBlocked;
    if (r.split == DotSplit::kPieces && blocks) out.append(r.split_columns ? " of columns" : " of rows");
  }
  out.append(", ").append(std::to_string(r.threads)).append(r.threads == 1 ? " thread" : " threads");
  if (r.pack_lhs) out.append(r.lhs_k_first ? ", pack lhs [k, m]" : ", pack lhs [m, k]");
  if (r.pack_rhs) out.append(r.rhs_n_first ? ", pack rhs [n, k]" : ", pack rhs [k, n]");
  if (r.pack_out) out.append(", output scratch");
  if (r.split_lhs_free) out.append(", lhs free group split");
  if (r.split_rhs_free) out.append(", rhs free group split");
  if (r.transposed) out.append(", transposed");
  if (r.one_run) out.append(", one run at a time");
  if (r.k_walk) out.append(", contraction loops walked");
  out.append(": ").append(r.reason);
  return out;
}

}  // namespace tenferro::cpu
