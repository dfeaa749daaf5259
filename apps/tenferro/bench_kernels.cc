// `tenferro bench kernels`: CPU kernel figures next to a reference measured in the same
// process run (raw cblas GEMM, memcpy, a plain read loop), with their ratio.

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/elementwise.h"
#include "tenferro/cpu/indexing.h"
#include "tenferro/cpu/kernels.h"
#include "tenferro/cpu/reduce.h"

namespace tenferro::cli {

namespace {

using Clock = std::chrono::steady_clock;

// [m, k, batch] x [k, n, batch] -> [batch, m, n]: batch products with the batch axis
// last in both operands (each product one contiguous column-major matrix).
cpu::DotDims batch_last_dims() {
  cpu::DotDims dims;
  dims.lhs_batch = {2};
  dims.rhs_batch = {2};
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  return dims;
}

// Note [Bench warm-up]: the first milliseconds of a process (or of a worker that has
// been idle long) are not its steady state: a 256^3 f32 product at two threads took
// the one-thread time (0.16-0.18 ms) for most of 9 calls right after start in about
// half of the processes, and 0.084-0.085 ms in every process after 20 ms of calls (the
// same calls from Python, 300 in a row: 0.099 ms from the fifth on). Each timing
// therefore warms up for at least one call and 20 ms, tenferro and peer alike.
double median_ms(int reps, const std::function<void()>& f) {
  const auto warm_end = Clock::now() + std::chrono::milliseconds(20);
  do {
    f();
  } while (Clock::now() < warm_end);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Median of a reference (OpenBLAS) timing at `threads` OpenBLAS threads: dot_general's
// automatic routes leave OpenBLAS's global thread count at 1 (Note [OpenBLAS pieces]),
// so the count is set again before each reference.
double reference_ms(int threads, int reps, const std::function<void()>& f) {
  openblas_set_num_threads(threads);
  const double ms = median_ms(reps, f);
  settle_peer_threads(threads);  // Note [Peer threads settle]
  return ms;
}

struct Row {
  std::string name;
  double tenferro_ms;
  std::string reference;
  double reference_ms;
  double gflops;  // tenferro rate, 0 when not a flop-bound case
};

void print(const std::vector<Row>& rows, bool json, int threads) {
  if (json) {
    std::printf("[");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"case\":\"%s\",\"threads\":%d,\"tenferro_ms\":%.4f,\"reference\":\"%s\",\"reference_ms\":%.4f,"
                  "\"ratio\":%.3f,\"gflops\":%.2f}",
                  i ? "," : "", r.name.c_str(), threads, r.tenferro_ms, r.reference.c_str(), r.reference_ms,
                  r.reference_ms / r.tenferro_ms, r.gflops);
    }
    std::printf("]\n");
    return;
  }
  std::printf("%-34s %12s %14s %12s %8s %9s\n", "case", "tenferro ms", "reference", "ref ms", "ratio", "GFLOP/s");
  for (const Row& r : rows) {
    std::printf("%-34s %12.3f %14s %12.3f %8.3f %9.2f\n", r.name.c_str(), r.tenferro_ms, r.reference.c_str(),
                r.reference_ms, r.reference_ms / r.tenferro_ms, r.gflops);
  }
  std::printf("ratio = reference time / tenferro time (>= 1: tenferro at least as fast)\n");
}

}  // namespace

int run_bench_kernels(int argc, char** argv) {
  int threads = 1;
  bool json = false;
  std::string only;
  int max_n = 2048;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<int>(parse_count(argv[++i], 1, kMaxThreads).value_or(0));  // 0: rejected below
    } else if (a == "--json") {
      json = true;
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--max-n" && i + 1 < argc) {
      max_n = static_cast<int>(parse_count(argv[++i], 1, 1 << 20).value_or(0));
    } else {
      std::fprintf(stderr, "usage: tenferro bench kernels [--threads N] [--json] [--only SUBSTRING] [--max-n N]\n");
      return 2;
    }
  }
  if (threads < 1 || max_n < 1) {
    std::fprintf(stderr, "tenferro bench kernels: --threads takes 1 to %lld and --max-n 1 to 1048576\n",
                 static_cast<long long>(kMaxThreads));
    return 2;
  }
  auto executor = cpu::make_tbb_executor(threads);
  if (!executor) {
    std::fprintf(stderr, "%s\n", executor.error().to_string().c_str());
    return 1;
  }
  openblas_set_num_threads(threads);
  settle_peer_threads(threads);
  std::vector<Row> rows;
  int failures = 0;
  auto want = [&](const std::string& name) { return only.empty() || name.find(only) != std::string::npos; };
  auto check = [&](const auto& r) {
    if (!r.has_value()) {
      std::fprintf(stderr, "error: %s\n", r.error().to_string().c_str());
      ++failures;
    }
  };
  (*executor)->install([&] {
    cpu::CpuExecutionContext ctx(executor->get(), cpu::ParallelMode::kInner, threads);
    // Where OpenBLAS runs 512-bit kernels, the planner gives products to it rather than
    // to the blocked kernel (Note [Blocked AVX-512 GEMM]); a second context plans with
    // caps that say otherwise, so `[blocked]` rows show the blocked kernel beside it.
    cpu::CpuCaps blocked_caps = cpu::host_caps();
    blocked_caps.openblas_avx512 = false;
    std::optional<cpu::CpuExecutionContext> blocked_ctx;
    if (cpu::host_caps().openblas_avx512) {
      blocked_ctx.emplace(executor->get(), cpu::ParallelMode::kInner, threads, cpu::BatchSettings{}, &blocked_caps);
    }
    // ---- dot_general vs raw GEMM.
    for (int n = 64; n <= max_n; n *= 2) {
      for (DType d : {DType::kF64, DType::kF32, DType::kC128}) {
        const std::string name = std::string("dot_general ") + std::string(dtype_name(d)) + " n=" + std::to_string(n);
        if (!want(name)) continue;
        Tensor a = Tensor::random_normal(d, {n, n}, 1).value();
        Tensor b = Tensor::random_normal(d, {n, n}, 2).value();
        Tensor c = Tensor::zeros(d, {n, n}).value();
        cpu::DotDims dims;
        dims.lhs_contracting = {1};
        dims.rhs_contracting = {0};
        const int reps = n >= 1024 ? 3 : n >= 256 ? 9 : 201;
        // Repeated calls keep their packing buffers in a DotScratch (Note [Dot scratch]),
        // as einsum and the runtime do; the peer keeps its own.
        cpu::DotScratch scratch;
        const double tf = median_ms(reps, [&] { check(cpu::dot_general_into(ctx, a, b, dims, {}, c, nullptr, &scratch)); });
        const double ref = reference_ms(threads, reps, [&] {
          if (d == DType::kF64) {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0,
                        static_cast<const double*>(a.storage()->data()), n,
                        static_cast<const double*>(b.storage()->data()), n, 0.0,
                        static_cast<double*>(c.storage()->data()), n);
          } else if (d == DType::kF32) {
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                        static_cast<const float*>(a.storage()->data()), n,
                        static_cast<const float*>(b.storage()->data()), n, 0.0f,
                        static_cast<float*>(c.storage()->data()), n);
          } else {
            const c128 one(1, 0), zero(0, 0);
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, &one, a.storage()->data(), n,
                        b.storage()->data(), n, &zero, c.storage()->data(), n);
          }
        });
        const double flops = (d == DType::kC128 ? 8.0 : 2.0) * n * double(n) * n;
        const char* peer = d == DType::kF64 ? "cblas_dgemm" : d == DType::kF32 ? "cblas_sgemm" : "cblas_zgemm";
        rows.push_back({name, tf, peer, ref, flops / tf / 1e6});
        // The BLIS provider on the same product (engine workers, one BLIS thread each).
        cpu::DotOptions blis;
        blis.provider = cpu::GemmProvider::kBlis;
        const double tb = median_ms(reps, [&] { check(cpu::dot_general_into(ctx, a, b, dims, blis, c)); });
        rows.push_back({name + " [blis]", tb, peer, ref, flops / tb / 1e6});
        if (blocked_ctx && d != DType::kC128) {
          // The blocked kernel where the planner keeps OpenBLAS (its 512-bit kernels):
          // the same product planned as if OpenBLAS ran 256-bit ones.
          cpu::DotScratch blocked_scratch;
          const double tk = median_ms(
              reps, [&] { check(cpu::dot_general_into(*blocked_ctx, a, b, dims, {}, c, nullptr, &blocked_scratch)); });
          rows.push_back({name + " [blocked]", tk, peer, ref, flops / tk / 1e6});
        }
      }
    }
    // ---- tiny products: plain loops vs the GEMM providers (Note [Tiny products]).
    // A batch of 512 n x n x n products, one thread per product, so the per-call cost
    // of each provider shows; the reference is the plain-loop route.
    if (want("tiny")) {
      for (int64_t n : {2, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
        Tensor a = Tensor::random_normal(DType::kF64, {n, n, 512}, 5).value();
        Tensor b = Tensor::random_normal(DType::kF64, {n, n, 512}, 6).value();
        Tensor c = Tensor::zeros(DType::kF64, {n, n, 512}).value().permute({2, 0, 1}).value();
        const cpu::DotDims dims = batch_last_dims();
        auto forced = [&](cpu::GemmProvider p) {
          cpu::DotOptions o;
          o.provider = p;
          o.batch_policy = cpu::BatchPolicy::kSequential;
          return median_ms(31, [&] { check(cpu::dot_general_into(ctx, a, b, dims, o, c)); });
        };
        const double naive = forced(cpu::GemmProvider::kNaive);
        const std::string name = "tiny 512x n=" + std::to_string(n) + " (" + std::to_string(n * n * n) + " madds)";
        rows.push_back({name + " [blis]", forced(cpu::GemmProvider::kBlis), "plain loops", naive, 0});
        rows.push_back({name + " [openblas]", forced(cpu::GemmProvider::kOpenBlas), "plain loops", naive, 0});
      }
    }
    // ---- the tiny matrix shortcut (Note [Tiny matrix shortcut]) against the planned route
    // (shortcut_flops 0) on 256 calls of small 2-D f64 products, column-major, square and
    // skinny (a short side against a longer one: the shortcut's runs are short there).
    struct ShortcutCase {
      int64_t m, n, k;
    };
    for (const ShortcutCase& sc :
         {ShortcutCase{6, 6, 6}, ShortcutCase{8, 8, 8}, ShortcutCase{10, 10, 10}, ShortcutCase{12, 12, 12},
          ShortcutCase{14, 14, 14}, ShortcutCase{2, 64, 2}, ShortcutCase{4, 32, 4}, ShortcutCase{2, 512, 2},
          ShortcutCase{3, 256, 3}, ShortcutCase{4, 128, 4}, ShortcutCase{256, 3, 3}, ShortcutCase{3, 64, 3},
          ShortcutCase{2, 32, 2}}) {
      const std::string name =
          "shortcut " + std::to_string(sc.m) + "x" + std::to_string(sc.n) + "x" + std::to_string(sc.k) + " (x256)";
      if (!want(name)) continue;
      const Tensor a = Tensor::random_normal(DType::kF64, {sc.m, sc.k}, 3).value();
      const Tensor b = Tensor::random_normal(DType::kF64, {sc.k, sc.n}, 4).value();
      Tensor c = Tensor::zeros(DType::kF64, {sc.m, sc.n}).value();
      const cpu::DotDims dims{{}, {}, {1}, {0}};
      cpu::DotOptions planned;
      planned.shortcut_flops = 0;
      const double tf = median_ms(31, [&] {
        for (int i = 0; i < 256; ++i) check(cpu::dot_general_into(ctx, a, b, dims, {}, c));
      });
      const double ref = median_ms(31, [&] {
        for (int i = 0; i < 256; ++i) check(cpu::dot_general_into(ctx, a, b, dims, planned, c));
      });
      rows.push_back({name, tf, "planned", ref, 256 * 2.0 * static_cast<double>(sc.m * sc.n * sc.k) / tf / 1e6});
    }
    // ---- thin transposed products (Note [Thin transposed products]): tensor-train steps
    // C[m, 19] = A^T B with A [19, m] (contraction contiguous) and B [19, 19], on one
    // operand (hot) and cycling through 128 operands (42 MB: from memory), against
    // cblas_dgemm with A transposed on the same data.
    for (const int cold : {0, 1}) {
      const int64_t m = 2185, k = 19, n = 19;
      const std::string name = std::string("thin ") + std::to_string(m) + "x19x19 " + (cold ? "cold" : "hot");
      if (!want(name)) continue;
      const int count = cold ? 128 : 1;
      std::vector<Tensor> as;
      for (int i = 0; i < count; ++i) as.push_back(Tensor::random_normal(DType::kF64, {k, m}, 40 + static_cast<uint64_t>(i)).value());
      Tensor b = Tensor::random_normal(DType::kF64, {k, n}, 7).value();
      Tensor c = Tensor::zeros(DType::kF64, {m, n}).value();
      cpu::DotDims dims;
      dims.lhs_contracting = {0};
      dims.rhs_contracting = {0};
      int next = 0;
      const double tf = median_ms(15, [&] {
        for (int i = 0; i < 64; ++i) check(cpu::dot_general_into(ctx, as[static_cast<size_t>(next++ % count)], b, dims, {}, c));
      });
      const double ref = reference_ms(threads, 15, [&] {
        for (int i = 0; i < 64; ++i) {
          cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0,
                      static_cast<const double*>(as[static_cast<size_t>(next++ % count)].storage()->data()), k,
                      static_cast<const double*>(b.storage()->data()), k, 0.0, static_cast<double*>(c.storage()->data()), m);
        }
      });
      rows.push_back({name + " (x64)", tf, "cblas_dgemm", ref, 64 * 2.0 * m * n * k / tf / 1e6});
    }
    // ---- short-side products with a strided contraction (Note [Short-side products with
    // a strided contraction]): tensor-train steps E[r, c] = sum_{l,s} L[l, r, s] T[c, s, l]
    // cycling through 64 site tensors L (from memory), against cblas_dgemm on the same
    // site tensors already packed as [r, (l, s)] (the reference gets the pack for free).
    if (want("short 19x19x1748")) {
      const int64_t d = 19, ph = 92, count = 64;
      std::vector<Tensor> ls, packed;
      for (int64_t i = 0; i < count; ++i) {
        ls.push_back(Tensor::random_normal(DType::kF64, {d, d, ph}, 60 + static_cast<uint64_t>(i)).value());
        packed.push_back(ls.back().permute({1, 0, 2}).value().contiguous().value());
      }
      Tensor t = Tensor::random_normal(DType::kF64, {d, ph, d}, 8).value();
      Tensor e = Tensor::zeros(DType::kF64, {d, d}).value();
      cpu::DotDims dims;
      dims.lhs_contracting = {0, 2};
      dims.rhs_contracting = {2, 1};
      int64_t next = 0;
      const double tf = median_ms(15, [&] {
        for (int i = 0; i < 64; ++i) check(cpu::dot_general_into(ctx, ls[static_cast<size_t>(next++ % count)], t, dims, {}, e));
      });
      // Packed L is [r, l, s] column-major: an r x (l, s) matrix (ld d); T as [l, s, c]
      // column-major: (l, s) x c (ld d * ph).
      Tensor tt = t.permute({2, 1, 0}).value().contiguous().value();
      const double ref = reference_ms(threads, 15, [&] {
        for (int i = 0; i < 64; ++i) {
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(d), static_cast<int>(d),
                      static_cast<int>(d * ph), 1.0,
                      static_cast<const double*>(packed[static_cast<size_t>(next++ % count)].storage()->data()),
                      static_cast<int>(d), static_cast<const double*>(tt.storage()->data()), static_cast<int>(d * ph),
                      0.0, static_cast<double*>(e.storage()->data()), static_cast<int>(d));
        }
      });
      rows.push_back({"short 19x19x1748 cold (x64)", tf, "cblas_dgemm (pre-packed)", ref, 64 * 2.0 * d * d * d * ph / tf / 1e6});
    }
    // ---- streamed tall products (Note [Streamed tall products]): matrix-chain steps
    // [465 x 396] x [396 x 21] cycling through 64 distinct column-major A (94 MB, from
    // memory), against cblas_dgemm on the same operands.
    if (want("stream 465x21x396")) {
      const int64_t m = 465, n = 21, k = 396, count = 64;
      std::vector<Tensor> as;
      for (int64_t i = 0; i < count; ++i) {
        as.push_back(Tensor::random_normal(DType::kF64, {m, k}, 70 + static_cast<uint64_t>(i)).value());
      }
      Tensor x = Tensor::random_normal(DType::kF64, {k, n}, 9).value();
      Tensor c = Tensor::zeros(DType::kF64, {m, n}).value();
      cpu::DotDims dims;
      dims.lhs_contracting = {1};
      dims.rhs_contracting = {0};
      int64_t next = 0;
      const double tf = median_ms(15, [&] {
        for (int i = 0; i < 64; ++i) check(cpu::dot_general_into(ctx, as[static_cast<size_t>(next++ % count)], x, dims, {}, c));
      });
      const double ref = reference_ms(threads, 15, [&] {
        for (int i = 0; i < 64; ++i) {
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                      static_cast<int>(k), 1.0, static_cast<const double*>(as[static_cast<size_t>(next++ % count)].storage()->data()),
                      static_cast<int>(m), static_cast<const double*>(x.storage()->data()), static_cast<int>(k), 0.0,
                      static_cast<double*>(c.storage()->data()), static_cast<int>(m));
        }
      });
      rows.push_back({"stream 465x21x396 cold (x64)", tf, "cblas_dgemm", ref, 64 * 2.0 * m * n * k / tf / 1e6});
    }
    // ---- a batch of small products streaming from memory (Note [Small-product
    // prefetch]): lm sentence_3's 1100 products of [144 x 12] x [12 x 12] (15 MB of A
    // in, 15 MB of C out), against one cblas_dgemm per product on the same operands.
    if (want("small batch 1100x144x12x12")) {
      const int64_t m = 144, n = 12, k = 12, items = 1100;
      Tensor a = Tensor::random_normal(DType::kF64, {m, k, items}, 11).value();
      Tensor b = Tensor::random_normal(DType::kF64, {k, n, items}, 12).value();
      Tensor c = Tensor::zeros(DType::kF64, {m, n, items}).value().permute({2, 0, 1}).value();
      const cpu::DotDims dims = batch_last_dims();
      const double tf = median_ms(15, [&] { check(cpu::dot_general_into(ctx, a, b, dims, {}, c)); });
      const auto* pa = static_cast<const double*>(a.storage()->data());
      const auto* pb = static_cast<const double*>(b.storage()->data());
      auto* pc = static_cast<double*>(c.storage()->data());
      const double ref = reference_ms(threads, 15, [&] {
        for (int64_t i = 0; i < items; ++i) {
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                      1.0, pa + i * m * k, static_cast<int>(m), pb + i * k * n, static_cast<int>(k), 0.0, pc + i * m * n,
                      static_cast<int>(m));
        }
      });
      rows.push_back({"small batch 1100x144x12x12", tf, "cblas_dgemm per product", ref, 2.0 * items * m * n * k / tf / 1e6});
    }
    // One column-major product C[m, n] = A[m, k] B[k, n] through dot_general against
    // cblas_dgemm on the same operands.
    auto single_product = [&](const std::string& name, int64_t m, int64_t n, int64_t k, int reps) {
      Tensor a = Tensor::random_normal(DType::kF64, {m, k}, 13).value();
      Tensor b = Tensor::random_normal(DType::kF64, {k, n}, 14).value();
      Tensor c = Tensor::zeros(DType::kF64, {m, n}).value();
      cpu::DotDims dims;
      dims.lhs_contracting = {1};
      dims.rhs_contracting = {0};
      const double tf = median_ms(reps, [&] { check(cpu::dot_general_into(ctx, a, b, dims, {}, c)); });
      const double ref = reference_ms(threads, reps, [&] {
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                    1.0, static_cast<const double*>(a.storage()->data()), static_cast<int>(m),
                    static_cast<const double*>(b.storage()->data()), static_cast<int>(k), 0.0,
                    static_cast<double*>(c.storage()->data()), static_cast<int>(m));
      });
      rows.push_back({name, tf, "cblas_dgemm", ref, 2.0 * static_cast<double>(m * n * k) / tf / 1e6});
    };
    // ---- a short contraction against many columns (Note [Short-contraction products]):
    // lm sentence_3's 1584 x 1100 x 11 (a 14 MB C).
    if (want("short-k 1584x1100x11")) single_product("short-k 1584x1100x11", 1584, 1100, 11, 15);
    // ---- a C far larger than the caches from a short contraction (Note
    // [Streamed-output products]; dot_general's route with several threads): MERA open's
    // last step 177147 x 243 x 50 (a 344 MB C).
    if (want("stream-out 177147x243x50")) single_product("stream-out 177147x243x50", 177147, 243, 50, 7);
    // ---- batched 32 x 64^3.
    if (want("batched")) {
      // Column-major tensors with the batch axis last: each batch is one contiguous
      // 64x64 matrix, the layout torch's row-major [32, 64, 64] has.
      Tensor a = Tensor::random_normal(DType::kF64, {64, 64, 32}, 3).value();
      Tensor b = Tensor::random_normal(DType::kF64, {64, 64, 32}, 4).value();
      Tensor c = Tensor::zeros(DType::kF64, {64, 64, 32}).value().permute({2, 0, 1}).value();
      const cpu::DotDims dims = batch_last_dims();
      const double tf = median_ms(51, [&] { check(cpu::dot_general_into(ctx, a, b, dims, {}, c)); });
      // Reference: one cblas_dgemm per batch on the batch-outermost layout (64x64 blocks).
      std::vector<double> ra(32 * 64 * 64), rb(32 * 64 * 64), rc(32 * 64 * 64);
      std::iota(ra.begin(), ra.end(), 0.0);
      std::iota(rb.begin(), rb.end(), 1.0);
      const double ref = reference_ms(threads, 51, [&] {
        for (int i = 0; i < 32; ++i) {
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 64, 64, 64, 1.0, ra.data() + i * 4096, 64,
                      rb.data() + i * 4096, 64, 0.0, rc.data() + i * 4096, 64);
        }
      });
      rows.push_back({"batched dot_general f64 32x64^3", tf, "dgemm_loop", ref, 2.0 * 32 * 64 * 64 * 64 / tf / 1e6});
      // Every forced batch policy on the same batch, against the same reference.
      const cpu::BatchPolicy policies[] = {cpu::BatchPolicy::kSequential, cpu::BatchPolicy::kOuterParallel,
                                           cpu::BatchPolicy::kProviderItems, cpu::BatchPolicy::kWholeBatchVendor};
      for (cpu::BatchPolicy p : policies) {
        cpu::DotOptions o;
        o.batch_policy = p;
        if (p == cpu::BatchPolicy::kSequential || p == cpu::BatchPolicy::kOuterParallel) o.provider = cpu::GemmProvider::kBlis;
        const double tp = median_ms(51, [&] { check(cpu::dot_general_into(ctx, a, b, dims, o, c)); });
        rows.push_back({"batched 32x64^3 [" + std::string(cpu::batch_policy_name(p)) + "]", tp, "dgemm_loop", ref,
                        2.0 * 32 * 64 * 64 * 64 / tp / 1e6});
      }
    }
    // ---- batched products with the batch label fastest in every operand ('bij,bjk->bik'
    // with column-major tensors: numpy's row-major einsum written in tenferro; Note
    // [Batch-lane products]), against one cblas_?gemm per item on contiguous matrices
    // (the layout BLAS wants, no copies). f64 cases, then f32 ones (32 items fill two
    // vectors of 16).
    struct LaneCase {
      DType dtype;
      int64_t items, n;
    };
    for (const LaneCase& lc :
         {LaneCase{DType::kF64, 32, 64}, LaneCase{DType::kF64, 12, 64}, LaneCase{DType::kF64, 256, 16},
          LaneCase{DType::kF64, 64, 32}, LaneCase{DType::kF64, 16, 128}, LaneCase{DType::kF64, 8, 256},
          LaneCase{DType::kF64, 8, 384}, LaneCase{DType::kF64, 8, 512}, LaneCase{DType::kF32, 32, 64},
          LaneCase{DType::kF32, 256, 16}, LaneCase{DType::kF32, 16, 256}}) {
      const int64_t items = lc.items, n = lc.n;
      const bool f32 = lc.dtype == DType::kF32;
      const std::string name =
          std::string("lanes ") + (f32 ? "f32 " : "f64 ") + std::to_string(items) + "x" + std::to_string(n) + "^3";
      if (!want(name)) continue;
      Tensor a = Tensor::random_normal(lc.dtype, {items, n, n}, 6).value();
      Tensor b = Tensor::random_normal(lc.dtype, {items, n, n}, 7).value();
      Tensor c = Tensor::zeros(lc.dtype, {items, n, n}).value();
      const cpu::DotDims dims{{0}, {0}, {2}, {1}};
      const double tf = median_ms(31, [&] { check(cpu::dot_general_into(ctx, a, b, dims, {}, c)); });
      const auto len = static_cast<size_t>(items * n * n);
      std::vector<double> ra(len), rb(len), rc(len);
      std::vector<float> fa(len), fb(len), fc(len);
      std::iota(ra.begin(), ra.end(), 0.0);
      std::iota(rb.begin(), rb.end(), 1.0);
      std::iota(fa.begin(), fa.end(), 0.0f);
      std::iota(fb.begin(), fb.end(), 1.0f);
      const int nn = static_cast<int>(n);
      const double ref = reference_ms(threads, 31, [&] {
        for (int64_t i = 0; i < items; ++i) {
          const size_t at = static_cast<size_t>(i * n * n);
          if (f32) {
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, nn, nn, nn, 1.0f, fa.data() + at, nn, fb.data() + at,
                        nn, 0.0f, fc.data() + at, nn);
          } else {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, nn, nn, nn, 1.0, ra.data() + at, nn, rb.data() + at,
                        nn, 0.0, rc.data() + at, nn);
          }
        }
      });
      rows.push_back(
          {name, tf, f32 ? "sgemm_loop" : "dgemm_loop", ref, 2.0 * static_cast<double>(items * n * n * n) / tf / 1e6});
    }
    // ---- matrix-vector products y = A x (Note [Matrix-vector products]): A with rows
    // contiguous ("rows", a C-order array's 'ij,j->i') or columns contiguous ("cols"),
    // against cblas_?gemv on the same A at the same thread count. The "[openblas]" rows
    // force the provider: a cblas_?gemm call with n = 1 (the route before the kernel).
    struct MatVecCase {
      DType dtype;
      int64_t m, k;
      bool rows;
      bool forced;
    };
    for (const MatVecCase& mc :
         {MatVecCase{DType::kF64, 128, 16384, true, false},   MatVecCase{DType::kF64, 128, 16384, true, true},
          MatVecCase{DType::kF64, 128, 16384, false, false},  MatVecCase{DType::kF64, 16384, 128, false, false},
          MatVecCase{DType::kF64, 2048, 2048, true, false},   MatVecCase{DType::kF64, 2048, 2048, false, false},
          MatVecCase{DType::kF64, 2048, 2048, false, true},   MatVecCase{DType::kF64, 20, 100000, true, false},
          MatVecCase{DType::kF64, 100000, 20, false, false},  MatVecCase{DType::kF64, 65536, 256, true, false},
          MatVecCase{DType::kF64, 256, 65536, false, false},  MatVecCase{DType::kF64, 512, 512, true, false},
          MatVecCase{DType::kF64, 512, 512, false, false},    MatVecCase{DType::kF64, 256, 256, true, false},
          MatVecCase{DType::kF64, 256, 256, false, false},    MatVecCase{DType::kF64, 8192, 32, true, false},
          MatVecCase{DType::kF64, 8192, 32, true, true},      MatVecCase{DType::kF64, 16, 8192, false, false},
          MatVecCase{DType::kF64, 16, 8192, false, true},     MatVecCase{DType::kF32, 2048, 2048, true, false},
          MatVecCase{DType::kF32, 2048, 2048, false, false},  MatVecCase{DType::kC128, 2048, 2048, true, false},
          MatVecCase{DType::kC128, 2048, 2048, false, false}, MatVecCase{DType::kC128, 2048, 2048, false, true},
          MatVecCase{DType::kC64, 2048, 2048, true, false},   MatVecCase{DType::kC64, 2048, 2048, false, false}}) {
      const bool f32 = mc.dtype == DType::kF32;
      const std::string name = std::string("matvec ") + std::string(dtype_name(mc.dtype)) + " " + std::to_string(mc.m) +
                               "x" + std::to_string(mc.k) + (mc.rows ? " rows" : " cols") +
                               (mc.forced ? " [openblas]" : "");
      if (!want(name)) continue;
      const Tensor a = mc.rows ? Tensor::random_normal(mc.dtype, {mc.k, mc.m}, 8).value().permute({1, 0}).value()
                               : Tensor::random_normal(mc.dtype, {mc.m, mc.k}, 8).value();
      const Tensor x = Tensor::random_normal(mc.dtype, {mc.k}, 9).value();
      Tensor y = Tensor::zeros(mc.dtype, {mc.m}).value();
      const cpu::DotDims dims{{}, {}, {1}, {0}};
      cpu::DotOptions o;
      if (mc.forced) o.provider = cpu::GemmProvider::kOpenBlas;
      const double tf = median_ms(31, [&] { check(cpu::dot_general_into(ctx, a, x, dims, o, y)); });
      const auto len = static_cast<size_t>(mc.m * mc.k);
      std::vector<double> ra(mc.dtype == DType::kF64 ? len : 0, 0.5), rx(static_cast<size_t>(mc.k), 1.0),
          ry(static_cast<size_t>(mc.m));
      std::vector<float> fa(f32 ? len : 0, 0.5f), fx(static_cast<size_t>(mc.k), 1.0f), fy(static_cast<size_t>(mc.m));
      const auto order = mc.rows ? CblasRowMajor : CblasColMajor;
      const int mm = static_cast<int>(mc.m), kk = static_cast<int>(mc.k), lda = mc.rows ? kk : mm;
      const bool z = mc.dtype == DType::kC128, c = mc.dtype == DType::kC64;
      std::vector<c128> za(z ? len : 0, c128(0.5, 0.25)), zx(z ? static_cast<size_t>(mc.k) : 0, c128(1.0, -0.5)),
          zy(z ? static_cast<size_t>(mc.m) : 0);
      std::vector<c64> ca(c ? len : 0, c64(0.5f, 0.25f)), cx(c ? static_cast<size_t>(mc.k) : 0, c64(1.0f, -0.5f)),
          cy(c ? static_cast<size_t>(mc.m) : 0);
      const c128 zone(1.0, 0.0), zzero(0.0, 0.0);
      const c64 cone(1.0f, 0.0f), czero(0.0f, 0.0f);
      const double ref = reference_ms(threads, 31, [&] {
        if (z) {
          cblas_zgemv(order, CblasNoTrans, mm, kk, &zone, za.data(), lda, zx.data(), 1, &zzero, zy.data(), 1);
        } else if (c) {
          cblas_cgemv(order, CblasNoTrans, mm, kk, &cone, ca.data(), lda, cx.data(), 1, &czero, cy.data(), 1);
        } else if (f32) {
          cblas_sgemv(order, CblasNoTrans, mm, kk, 1.0f, fa.data(), lda, fx.data(), 1, 0.0f, fy.data(), 1);
        } else {
          cblas_dgemv(order, CblasNoTrans, mm, kk, 1.0, ra.data(), lda, rx.data(), 1, 0.0, ry.data(), 1);
        }
      });
      const char* ref_name = z ? "zgemv" : c ? "cgemv" : f32 ? "sgemv" : "dgemv";
      rows.push_back({name, tf, ref_name, ref, (z || c ? 8.0 : 2.0) * static_cast<double>(mc.m * mc.k) / tf / 1e6});
    }
    // ---- a few vectors Y = A X, X with 2 to 7 columns (Note [Few-vector products]):
    // A with rows or columns contiguous, against cblas_?gemm on the same A (the route
    // before: OpenBLAS packs A); "[blis]" rows force the BLIS provider.
    struct VectorsCase {
      DType dtype;
      int64_t m, k, n;
      bool rows;
      cpu::GemmProvider provider;
    };
    constexpr auto kAutoP = cpu::GemmProvider::kAuto, kBlisP = cpu::GemmProvider::kBlis;
    for (const VectorsCase& vc : {VectorsCase{DType::kF64, 2048, 2048, 2, true, kAutoP},
                                  VectorsCase{DType::kF64, 2048, 2048, 2, false, kAutoP},
                                  VectorsCase{DType::kF64, 2048, 2048, 4, true, kAutoP},
                                  VectorsCase{DType::kF64, 2048, 2048, 4, false, kAutoP},
                                  VectorsCase{DType::kF64, 2048, 2048, 7, true, kAutoP},
                                  VectorsCase{DType::kF64, 2048, 2048, 7, false, kAutoP},
                                  VectorsCase{DType::kF64, 256, 256, 4, true, kAutoP},
                                  VectorsCase{DType::kF64, 256, 256, 4, false, kAutoP},
                                  VectorsCase{DType::kF64, 512, 512, 2, true, kAutoP},
                                  VectorsCase{DType::kF64, 512, 512, 2, false, kAutoP},
                                  VectorsCase{DType::kF64, 512, 512, 4, true, kAutoP},
                                  VectorsCase{DType::kF64, 512, 512, 4, false, kAutoP},
                                  VectorsCase{DType::kF64, 1024, 1024, 4, true, kAutoP},
                                  VectorsCase{DType::kF64, 1024, 1024, 4, false, kAutoP},
                                  VectorsCase{DType::kF64, 256, 256, 2, true, kAutoP},
                                  VectorsCase{DType::kF64, 256, 256, 2, false, kAutoP},
                                  VectorsCase{DType::kF64, 32768, 256, 4, false, kAutoP},
                                  VectorsCase{DType::kF64, 32768, 256, 4, false, kBlisP},
                                  VectorsCase{DType::kF64, 32768, 256, 2, false, kAutoP},
                                  VectorsCase{DType::kF64, 32768, 256, 2, false, kBlisP},
                                  VectorsCase{DType::kF64, 65536, 16, 4, true, kAutoP},
                                  VectorsCase{DType::kF32, 2048, 2048, 4, true, kAutoP},
                                  VectorsCase{DType::kF32, 2048, 2048, 4, false, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 2, true, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 2, false, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 3, true, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 3, false, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 4, true, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 4, false, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 7, true, kAutoP},
                                  VectorsCase{DType::kC128, 2048, 2048, 7, false, kAutoP},
                                  VectorsCase{DType::kC128, 512, 512, 4, true, kAutoP},
                                  VectorsCase{DType::kC128, 512, 512, 4, false, kAutoP}}) {
      const std::string name = std::string("vectors ") + std::string(dtype_name(vc.dtype)) + " " +
                               std::to_string(vc.m) + "x" + std::to_string(vc.k) + " n=" + std::to_string(vc.n) +
                               (vc.rows ? " rows" : " cols") + (vc.provider == kBlisP ? " [blis]" : "");
      if (!want(name)) continue;
      const Tensor a = vc.rows ? Tensor::random_normal(vc.dtype, {vc.k, vc.m}, 8).value().permute({1, 0}).value()
                               : Tensor::random_normal(vc.dtype, {vc.m, vc.k}, 8).value();
      const Tensor x = Tensor::random_normal(vc.dtype, {vc.k, vc.n}, 9).value();
      Tensor y = Tensor::zeros(vc.dtype, {vc.m, vc.n}).value();
      const cpu::DotDims dims{{}, {}, {1}, {0}};
      cpu::DotOptions o;
      o.provider = vc.provider;
      const double tf = median_ms(31, [&] { check(cpu::dot_general_into(ctx, a, x, dims, o, y)); });
      // The same product through cblas on column-major copies (A's layout as above).
      const auto len = static_cast<size_t>(vc.m * vc.k), xl = static_cast<size_t>(vc.k * vc.n),
                 yl = static_cast<size_t>(vc.m * vc.n);
      const bool f32 = vc.dtype == DType::kF32, z = vc.dtype == DType::kC128;
      std::vector<double> ra(!f32 && !z ? len : 0, 0.5), rx(!f32 && !z ? xl : 0, 1.0), ry(!f32 && !z ? yl : 0);
      std::vector<float> fa(f32 ? len : 0, 0.5f), fx(f32 ? xl : 0, 1.0f), fy(f32 ? yl : 0);
      std::vector<c128> za(z ? len : 0, c128(0.5, 0.25)), zx(z ? xl : 0, c128(1.0, -0.5)), zy(z ? yl : 0);
      const int mm = static_cast<int>(vc.m), kk = static_cast<int>(vc.k), nn = static_cast<int>(vc.n);
      const auto ta = vc.rows ? CblasTrans : CblasNoTrans;
      const int lda = vc.rows ? kk : mm;
      const c128 zone(1.0, 0.0), zzero(0.0, 0.0);
      const double ref = reference_ms(threads, 31, [&] {
        if (z) {
          cblas_zgemm(CblasColMajor, ta, CblasNoTrans, mm, nn, kk, &zone, za.data(), lda, zx.data(), kk, &zzero,
                      zy.data(), mm);
        } else if (f32) {
          cblas_sgemm(CblasColMajor, ta, CblasNoTrans, mm, nn, kk, 1.0f, fa.data(), lda, fx.data(), kk, 0.0f, fy.data(),
                      mm);
        } else {
          cblas_dgemm(CblasColMajor, ta, CblasNoTrans, mm, nn, kk, 1.0, ra.data(), lda, rx.data(), kk, 0.0, ry.data(),
                      mm);
        }
      });
      const char* ref_name = z ? "zgemm" : f32 ? "sgemm" : "dgemm";
      rows.push_back({name, tf, ref_name, ref, (z ? 8.0 : 2.0) * static_cast<double>(vc.m * vc.k * vc.n) / tf / 1e6});
    }
    // ---- skinny products: a short contraction or a short side (quantum-circuit gates,
    // tensor-train steps), A [m, k] and B [k, n] column-major, every dtype, against
    // cblas_?gemm on the same data; "[openblas]" and "[blis]" rows force the provider.
    struct SkinnyCase {
      int64_t m, n, k;
    };
    for (const DType d : {DType::kC128, DType::kC64, DType::kF64, DType::kF32}) {
      for (const SkinnyCase& sc :
           {SkinnyCase{16384, 4, 4}, SkinnyCase{32768, 2, 2}, SkinnyCase{4, 16384, 4}, SkinnyCase{2048, 2048, 8},
            SkinnyCase{512, 2048, 8}, SkinnyCase{65536, 16, 16}, SkinnyCase{8192, 8, 64}, SkinnyCase{1024, 1024, 32},
            SkinnyCase{256, 256, 4}, SkinnyCase{64, 64, 4}, SkinnyCase{8192, 32, 256}, SkinnyCase{16, 16384, 4},
            // A one-qubit gate on a 2^20-element state from memory: on its slowest axis
            // (A the state, column-major) and on its fastest (B the state, contraction
            // contiguous).
            SkinnyCase{524288, 2, 2}, SkinnyCase{2, 524288, 2},
            // A small matrix applied to many points stored point by point (B's columns
            // contiguous: Note [Narrow products]): beyond the caches and within them.
            SkinnyCase{3, 1000000, 3}, SkinnyCase{3, 4096, 3}, SkinnyCase{8, 131072, 8}, SkinnyCase{16, 65536, 4},
            SkinnyCase{2, 512, 2}}) {
        const std::string base = std::string("skinny ") + std::string(dtype_name(d)) + " " + std::to_string(sc.m) +
                                 "x" + std::to_string(sc.n) + "x" + std::to_string(sc.k);
        if (!want(base)) continue;
        const Tensor a = Tensor::random_normal(d, {sc.m, sc.k}, 11).value();
        const Tensor b = Tensor::random_normal(d, {sc.k, sc.n}, 12).value();
        Tensor c = Tensor::zeros(d, {sc.m, sc.n}).value();
        const cpu::DotDims dims{{}, {}, {1}, {0}};
        const int mm = static_cast<int>(sc.m), nn = static_cast<int>(sc.n), kk = static_cast<int>(sc.k);
        const void* pa = a.storage()->data();
        const void* pb = b.storage()->data();
        void* pc = c.storage()->data();
        const int reps = sc.m * sc.n >= (int64_t{1} << 22) ? 9 : 31;
        const double ref = reference_ms(threads, reps, [&] {
          if (d == DType::kC128) {
            const c128 one(1, 0), zero(0, 0);
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, mm, nn, kk, &one, pa, mm, pb, kk, &zero, pc, mm);
          } else if (d == DType::kC64) {
            const std::complex<float> one(1, 0), zero(0, 0);
            cblas_cgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, mm, nn, kk, &one, pa, mm, pb, kk, &zero, pc, mm);
          } else if (d == DType::kF64) {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, mm, nn, kk, 1.0, static_cast<const double*>(pa), mm,
                        static_cast<const double*>(pb), kk, 0.0, static_cast<double*>(pc), mm);
          } else {
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, mm, nn, kk, 1.0f, static_cast<const float*>(pa), mm,
                        static_cast<const float*>(pb), kk, 0.0f, static_cast<float*>(pc), mm);
          }
        });
        const char* peer = d == DType::kC128  ? "cblas_zgemm"
                           : d == DType::kC64 ? "cblas_cgemm"
                           : d == DType::kF64 ? "cblas_dgemm"
                                              : "cblas_sgemm";
        const double flops = (is_complex(d) ? 8.0 : 2.0) * static_cast<double>(sc.m * sc.n * sc.k);
        for (const auto& [suffix, provider] : {std::pair<const char*, cpu::GemmProvider>{"", cpu::GemmProvider::kAuto},
                                               {" [openblas]", cpu::GemmProvider::kOpenBlas},
                                               {" [blis]", cpu::GemmProvider::kBlis}}) {
          cpu::DotOptions o;
          o.provider = provider;
          cpu::DotScratch scratch;
          const double tf =
              median_ms(reps, [&] { check(cpu::dot_general_into(ctx, a, b, dims, o, c, nullptr, &scratch)); });
          rows.push_back({base + suffix, tf, peer, ref, flops / tf / 1e6});
        }
      }
    }
    // ---- permutations of 2^24 f64 elements vs memcpy.
    const int64_t n24 = int64_t{1} << 24;
    std::vector<double> raw_src(static_cast<size_t>(n24), 1.0), raw_dst(static_cast<size_t>(n24), 0.0);
    // The memory references use the same threads as tenferro: memcpy of one slice per
    // thread (so at 2 threads the reference is a 2-thread memcpy).
    auto par_memcpy = [&] {
      ctx.parallel_for(threads, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t lo = n24 * t / threads, hi = n24 * (t + 1) / threads;
          std::memcpy(raw_dst.data() + lo, raw_src.data() + lo, static_cast<size_t>(hi - lo) * 8);
        }
      });
    };
    // Each permutation is a row of its own: --only selects any of them by a substring of
    // its name ("permute", "permute 64^4", "bool"). The 128 MiB source is made for the
    // first row that runs.
    {
      Tensor src;
      auto source = [&]() -> const Tensor& {
        if (!src.defined()) src = Tensor::random_normal(DType::kF64, {64, 64, 64, 64}, 5).value();
        return src;
      };
      std::vector<int64_t> perm{0, 1, 2, 3};
      do {
        const std::string name = "permute 64^4 [" + std::to_string(perm[0]) + std::to_string(perm[1]) +
                                 std::to_string(perm[2]) + std::to_string(perm[3]) + "]";
        if (!want(name)) continue;
        Tensor view = source().permute(perm).value();
        Tensor dst = Tensor::zeros(DType::kF64, view.shape()).value();
        const double tf = median_ms(5, [&] { check(cpu::copy_into(ctx, view, dst)); });
        // Re-measure the reference next to each case: the machine's bandwidth drifts.
        rows.push_back({name, tf, "memcpy", median_ms(5, par_memcpy), 0});
      } while (std::next_permutation(perm.begin(), perm.end()));
      std::mt19937_64 rng(24);
      for (int t = 0; t < 4; ++t) {
        std::vector<int64_t> p(24);
        std::iota(p.begin(), p.end(), 0);
        if (t == 1) std::reverse(p.begin(), p.end());
        if (t >= 2) std::shuffle(p.begin(), p.end(), rng);
        const char* kind = t == 0 ? "identity" : t == 1 ? "reversed" : "random";
        const std::string name = std::string("permute rank-24 size-2 ") + kind + (t >= 2 ? std::to_string(t - 1) : "");
        if (!want(name)) continue;
        Tensor view = source().reshape(Shape(24, 2)).value().permute(p).value();
        Tensor dst = Tensor::zeros(DType::kF64, view.shape()).value();
        const double tf = median_ms(5, [&] { check(cpu::copy_into(ctx, view, dst)); });
        const double memcpy_here = median_ms(5, par_memcpy);
        rows.push_back({name, tf, "memcpy", memcpy_here, 0});
      }
      // Other element sizes and shapes (each at most 128 MiB), against a memcpy of the
      // same bytes: 4-byte and 1-byte transposes, 2 x n zips and unzips, axes of extent 3
      // and 7 next to long ones (Note [Blocked copies]), a batch of 4 x 4 matrices transposed
      // (Note [Tiny transposes]), two qubits of a state vector swapped (Note [Small-block
      // permutations]), many axes of extent 5.
      struct Other {
        const char* name;
        DType dtype;
        Shape shape;
        std::vector<int64_t> perm;
      };
      const Other others[] = {
          {"f32 64^4 [3210]", DType::kF32, {64, 64, 64, 64}, {3, 2, 1, 0}},
          {"f32 64^4 [1023]", DType::kF32, {64, 64, 64, 64}, {1, 0, 2, 3}},
          {"c128 48^4 [3210]", DType::kC128, {48, 48, 48, 48}, {3, 2, 1, 0}},
          {"bool 8192^2 [10]", DType::kBool, {8192, 8192}, {1, 0}},
          {"f64 2x4e6 [10]", DType::kF64, {2, 4000000}, {1, 0}},
          {"f64 4e6x2 [10]", DType::kF64, {4000000, 2}, {1, 0}},
          {"f64 2000x2x2000 [102]", DType::kF64, {2000, 2, 2000}, {1, 0, 2}},
          {"f64 7x600x1000x3 [3120]", DType::kF64, {7, 600, 1000, 3}, {3, 1, 2, 0}},
          {"f64 7x600x1000x3 [0321]", DType::kF64, {7, 600, 1000, 3}, {0, 3, 2, 1}},
          {"f64 3x1000x3x1000 [2103]", DType::kF64, {3, 1000, 3, 1000}, {2, 1, 0, 3}},
          {"f64 4x4x1e6 [102]", DType::kF64, {4, 4, 1000000}, {1, 0, 2}},
          {"c128 2^23 qubits 1<->3", DType::kC128, Shape(23, 2), {0,  3,  2,  1,  4,  5,  6,  7,  8,  9,  10, 11,
                                                                  12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}},
          {"f64 5^10 reversed", DType::kF64, Shape(10, 5), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      };
      for (const Other& o : others) {
        if (!want(std::string("permute ") + o.name)) continue;
        Tensor osrc = Tensor::random_uniform(o.dtype, o.shape, 11, -1, 1).value();
        Tensor view = osrc.permute(o.perm).value();
        Tensor dst = Tensor::zeros(o.dtype, view.shape()).value();
        const int64_t bytes = view.numel() * dtype_size(o.dtype);
        auto same_bytes = [&] {
          ctx.parallel_for(threads, 1, [&](int64_t b, int64_t e) {
            for (int64_t t = b; t < e; ++t) {
              const int64_t lo = bytes * t / threads, hi = bytes * (t + 1) / threads;
              std::memcpy(reinterpret_cast<char*>(raw_dst.data()) + lo, reinterpret_cast<const char*>(raw_src.data()) + lo,
                          static_cast<size_t>(hi - lo));
            }
          });
        };
        const double tf = median_ms(5, [&] { check(cpu::copy_into(ctx, view, dst)); });
        rows.push_back({std::string("permute ") + o.name, tf, "memcpy", median_ms(5, same_bytes), 0});
      }
    }
    // ---- argsort of one long line (Note [Argsort lines]) against std::stable_sort of the
    // same (value, position) pairs on one thread, and of many short lines.
    if (want("argsort")) {
      const int64_t n = int64_t{1} << 20;
      Tensor x = Tensor::random_normal(DType::kF64, {n}, 8).value();
      const double* p = static_cast<const double*>(x.storage()->data());
      std::vector<std::pair<double, int64_t>> pairs(static_cast<size_t>(n));
      const double ref = median_ms(5, [&] {
        for (int64_t j = 0; j < n; ++j) pairs[static_cast<size_t>(j)] = {p[j], j};
        std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      });
      auto pool = HostBufferPool::create();  // reused buffers, as the runtime's
      rows.push_back({"argsort f64 2^20", median_ms(5, [&] { check(cpu::argsort(ctx, x, 0, pool)); }),
                      "std::stable_sort 1T", ref, 0});
      Tensor m = Tensor::random_normal(DType::kF64, {64, n / 64}, 9).value();
      rows.push_back({"argsort f64 64 x 2^14, axis 0", median_ms(5, [&] { check(cpu::argsort(ctx, m, 0, pool)); }),
                      "std::stable_sort 1T", ref, 0});
    }
    // ---- elementwise add and sum.
    if (want("add") || want("sum")) {
      Tensor x = Tensor::random_normal(DType::kF64, {n24}, 6).value();
      Tensor y = Tensor::random_normal(DType::kF64, {n24}, 7).value();
      Tensor z = Tensor::zeros(DType::kF64, {n24}).value();
      if (want("add")) {
        const double tf = median_ms(9, [&] { check(cpu::binary_into(ctx, cpu::BinaryOp::kAdd, x, y, z)); });
        // add moves 3 x 8 bytes per element, memcpy 2 x 8: scale the reference to the same traffic.
        rows.push_back({"add f64 2^24", tf, "memcpy_x1.5", median_ms(9, par_memcpy) * 1.5, 0});
      }
      if (want("sum")) {
        const double* p = static_cast<const double*>(x.storage()->data());
        volatile double sink = 0;
        std::vector<double> partial(static_cast<size_t>(threads));
        const double ref = median_ms(9, [&] {
          ctx.parallel_for(threads, 1, [&](int64_t b, int64_t e) {
            for (int64_t t = b; t < e; ++t) {
              const int64_t lo = n24 * t / threads / 8 * 8, hi = n24 * (t + 1) / threads / 8 * 8;
              double acc[8] = {};
              for (int64_t i = lo; i < hi; i += 8)
                for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
              partial[static_cast<size_t>(t)] = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
            }
          });
          sink = partial[0];
        });
        const double tf = median_ms(9, [&] { check(cpu::reduce(ctx, cpu::ReduceOp::kSum, x, {0})); });
        rows.push_back({"sum f64 2^24", tf, "read_loop", ref, 0});
        (void)sink;
      }
    }
  });
  if (rows.empty()) {
    std::fprintf(stderr, "tenferro bench kernels: no case matches --only '%s'\n", only.c_str());
    return 2;
  }
  print(rows, json, threads);
  return failures == 0 ? 0 : 1;
}

}  // namespace tenferro::cli
