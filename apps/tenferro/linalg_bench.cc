// `tenferro bench linalg`: the cases of ../shared/bench/peer_linalg.py under the same
// names (f64, median of repeated calls, ms), with a raw LAPACKE call (or a loop of them
// for batches) on the same input as the same-run reference; plus the truncated-SVD case.

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#define LAPACK_COMPLEX_CUSTOM
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/cpu/openblas.h"
#include "tenferro/linalg/linalg.h"

namespace tenferro::cli {

namespace {

using Clock = std::chrono::steady_clock;

// The peer script's timing rule: one warm-up, then repeated calls for up to 2 s (at
// least 3, at most 50); the median in ms.
double median_ms(const std::function<void()>& f) {
  f();
  std::vector<double> ts;
  const auto end = Clock::now() + std::chrono::seconds(2);
  while (ts.size() < 3 || (Clock::now() < end && ts.size() < 50)) {
    const auto t0 = Clock::now();
    f();
    ts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

// Column-major f64 items: batch x n x n, as a tensor and as a raw array.
struct Input {
  Tensor t;
  std::vector<double> raw;  // item b at raw[b * rows * cols], column-major
  int64_t batch = 1, rows = 0, cols = 0;
};

Input random_input(int64_t batch, int64_t rows, int64_t cols, uint64_t seed) {
  Input in;
  in.batch = batch;
  in.rows = rows;
  in.cols = cols;
  Tensor t = must(Tensor::random_normal(DType::kF64, {rows, cols, batch}, seed), "random");
  in.raw.assign(static_cast<const double*>(t.storage()->data()),
                static_cast<const double*>(t.storage()->data()) + batch * rows * cols);
  in.t = must(t.permute({2, 0, 1}), "permute");
  if (batch == 1) in.t = must(in.t.reshape({rows, cols}), "reshape");
  return in;
}

// S = A A^T + n I per item (symmetric positive definite).
Input spd_input(int64_t batch, int64_t n, uint64_t seed) {
  Input a = random_input(batch, n, n, seed);
  Input s = a;
  for (int64_t b = 0; b < batch; ++b) {
    const double* x = a.raw.data() + b * n * n;
    double* y = s.raw.data() + b * n * n;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        double acc = i == j ? static_cast<double>(n) : 0.0;
        for (int64_t k = 0; k < n; ++k) acc += x[i + k * n] * x[j + k * n];
        y[i + j * n] = acc;
      }
  }
  Tensor t = must(Tensor::uninitialized(DType::kF64, {n, n, batch}), "alloc");
  std::memcpy(t.storage()->data(), s.raw.data(), s.raw.size() * sizeof(double));
  s.t = must(t.permute({2, 0, 1}), "permute");
  if (batch == 1) s.t = must(s.t.reshape({n, n}), "reshape");
  return s;
}

struct Row {
  std::string name;
  double tenferro_ms = 0;
  double lapacke_ms = 0;  // 0: no reference
};

}  // namespace

int run_bench_linalg(int argc, char** argv) {
  int threads = 1;
  bool json = false;
  std::string only;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<int>(parse_count(argv[++i], 1, kMaxThreads).value_or(0));  // 0: rejected below
    } else if (a == "--json") {
      json = true;
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: tenferro bench linalg [--threads N] [--json] [--only SUBSTRING]\n");
      return 2;
    }
  }
  if (threads < 1) {
    std::fprintf(stderr, "tenferro bench linalg: --threads takes a whole number from 1 to %lld\n",
                 static_cast<long long>(kMaxThreads));
    return 2;
  }
  cpu::CpuTopology topo = must(cpu::CpuTopology::discover(), "topology");
  cpu::CpuEngineConfig cfg;
  cfg.domains = {cpu::CpuDomainConfig{0, topo.allowed_cpus, threads, nullptr}};
  auto engine = must(cpu::CpuEngine::create(cfg, &topo), "engine");
  const auto& pool = engine->pool(0);
  auto run = [&](const std::function<Result<void>(cpu::CpuExecutionContext&)>& f) {
    return [&engine, f] { must(engine->run(0, cpu::ParallelMode::kInner, f), "run"); };
  };
  std::vector<Row> rows;
  auto want = [&](const std::string& name) { return only.empty() || name.find(only) != std::string::npos; };
  std::vector<double> work;
  std::vector<double> w2, w3, w4;
  std::vector<lapack_int> iw;

  // Single large matrices: a raw LAPACKE call on a copy of the input (LAPACK overwrites
  // it), OpenBLAS with the same thread count.
  for (int64_t n : {64, 256, 512, 1024}) {
    const std::string nn = std::to_string(n);
    if (!want("svd " + nn) && !want("svdvals " + nn) && !want("qr " + nn) && !want("eigh " + nn) &&
        !want("cholesky " + nn) && !want("solve " + nn + "x4")) {
      continue;
    }
    const Input a = random_input(1, n, n, 1);
    const Input s = spd_input(1, n, 2);
    const Input b = random_input(1, n, 4, 3);
    const lapack_int ln = static_cast<lapack_int>(n);
    std::vector<double> copy(static_cast<size_t>(n * n)), u(static_cast<size_t>(n * n)), vt(static_cast<size_t>(n * n)),
        sv(static_cast<size_t>(n)), bc(static_cast<size_t>(n * 4)), tau(static_cast<size_t>(n));
    std::vector<lapack_int> ipiv(static_cast<size_t>(n));
    auto raw = [&](const std::function<void()>& f) {
      return [&, f] {
        cpu::set_openblas_threads(threads);
        f();
      };
    };
    // The raw call's median, then OpenBLAS's threads left to park before tenferro's next
    // timing (Note [Peer threads settle]).
    auto reference_ms = [&](const std::function<void()>& f) {
      const double ms = median_ms(f);
      settle_peer_threads(threads);
      return ms;
    };
    const std::string ns = std::to_string(n);
    if (want("svd " + ns)) {
      rows.push_back({"svd " + ns, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        linalg::SvdOptions o;
                        o.mode = linalg::SvdMode::kFull;
                        TENFERRO_TRY_VOID(linalg::svd(ctx, a.t, o, pool));
                        return ok();
                      })),
                      reference_ms(raw([&] {
                        std::memcpy(copy.data(), a.raw.data(), copy.size() * sizeof(double));
                        LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'A', ln, ln, copy.data(), ln, sv.data(), u.data(), ln,
                                       vt.data(), ln);
                      }))});
    }
    if (want("svdvals " + ns)) {
      rows.push_back({"svdvals " + ns, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        linalg::SvdOptions o;
                        o.mode = linalg::SvdMode::kValuesOnly;
                        TENFERRO_TRY_VOID(linalg::svd(ctx, a.t, o, pool));
                        return ok();
                      })),
                      reference_ms(raw([&] {
                        std::memcpy(copy.data(), a.raw.data(), copy.size() * sizeof(double));
                        LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', ln, ln, copy.data(), ln, sv.data(), u.data(), ln,
                                       vt.data(), ln);
                      }))});
    }
    if (want("qr " + ns)) {
      rows.push_back({"qr " + ns, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::qr(ctx, a.t, linalg::QrMode::kReduced, {}, pool));
                        return ok();
                      })),
                      reference_ms(raw([&] {
                        std::memcpy(copy.data(), a.raw.data(), copy.size() * sizeof(double));
                        LAPACKE_dgeqrf(LAPACK_COL_MAJOR, ln, ln, copy.data(), ln, tau.data());
                        std::memcpy(u.data(), copy.data(), copy.size() * sizeof(double));  // R
                        LAPACKE_dorgqr(LAPACK_COL_MAJOR, ln, ln, ln, copy.data(), ln, tau.data());
                      }))});
    }
    if (want("eigh " + ns)) {
      rows.push_back({"eigh " + ns, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::eigh(ctx, s.t, linalg::Uplo::kLower, {}, pool));
                        return ok();
                      })),
                      reference_ms(raw([&] {
                        std::memcpy(copy.data(), s.raw.data(), copy.size() * sizeof(double));
                        LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', ln, copy.data(), ln, sv.data());
                      }))});
    }
    if (want("cholesky " + ns)) {
      rows.push_back({"cholesky " + ns, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::cholesky(ctx, s.t, linalg::Uplo::kLower, {}, pool));
                        return ok();
                      })),
                      reference_ms(raw([&] {
                        std::memcpy(copy.data(), s.raw.data(), copy.size() * sizeof(double));
                        LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', ln, copy.data(), ln);
                      }))});
    }
    if (want("solve " + ns + "x4")) {
      rows.push_back({"solve " + ns + "x4", median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::solve(ctx, a.t, b.t, {}, pool));
                        return ok();
                      })),
                      reference_ms(raw([&] {
                        std::memcpy(copy.data(), a.raw.data(), copy.size() * sizeof(double));
                        std::memcpy(bc.data(), b.raw.data(), bc.size() * sizeof(double));
                        LAPACKE_dgesv(LAPACK_COL_MAJOR, ln, 4, copy.data(), ln, ipiv.data(), bc.data(), ln);
                      }))});
    }
  }

  // Batches of small matrices: a loop of raw LAPACKE calls on one thread as reference.
  for (int64_t m : {4, 8}) {
    const std::string tag = " batched 10000x" + std::to_string(m) + "x" + std::to_string(m);
    if (!want("svd" + tag) && !want("qr" + tag) && !want("eigh" + tag) && !want("cholesky" + tag) &&
        !want("solve" + tag)) {
      continue;
    }
    const int64_t batch = 10000;
    const Input a = random_input(batch, m, m, 4);
    const Input s = spd_input(batch, m, 5);
    const Input r = random_input(batch, m, 1, 6);
    const lapack_int lm = static_cast<lapack_int>(m);
    std::vector<double> copy(static_cast<size_t>(m * m)), u(static_cast<size_t>(m * m)), vt(static_cast<size_t>(m * m)),
        sv(static_cast<size_t>(m)), bc(static_cast<size_t>(m)), tau(static_cast<size_t>(m));
    std::vector<lapack_int> ipiv(static_cast<size_t>(m));

    auto loop = [&](const Input& in, const std::function<void(const double*, int64_t)>& f) {
      return [&in, f] {
        cpu::set_openblas_threads(1);
        for (int64_t i = 0; i < in.batch; ++i) f(in.raw.data() + i * in.rows * in.cols, i);
      };
    };
    auto cp = [&](const double* x) { std::memcpy(copy.data(), x, copy.size() * sizeof(double)); };
    if (want("svd" + tag)) {
      rows.push_back({"svd" + tag, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::svd(ctx, a.t, {}, pool));
                        return ok();
                      })),
                      median_ms(loop(a, [&](const double* x, int64_t) {
                        cp(x);
                        LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', lm, lm, copy.data(), lm, sv.data(), u.data(), lm,
                                       vt.data(), lm);
                      }))});
    }
    if (want("qr" + tag)) {
      rows.push_back({"qr" + tag, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::qr(ctx, a.t, linalg::QrMode::kReduced, {}, pool));
                        return ok();
                      })),
                      median_ms(loop(a, [&](const double* x, int64_t) {
                        cp(x);
                        LAPACKE_dgeqrf(LAPACK_COL_MAJOR, lm, lm, copy.data(), lm, tau.data());
                        LAPACKE_dorgqr(LAPACK_COL_MAJOR, lm, lm, lm, copy.data(), lm, tau.data());
                      }))});
    }
    if (want("eigh" + tag)) {
      rows.push_back({"eigh" + tag, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::eigh(ctx, s.t, linalg::Uplo::kLower, {}, pool));
                        return ok();
                      })),
                      median_ms(loop(s, [&](const double* x, int64_t) {
                        cp(x);
                        LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', lm, copy.data(), lm, sv.data());
                      }))});
    }
    if (want("cholesky" + tag)) {
      rows.push_back({"cholesky" + tag, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::cholesky(ctx, s.t, linalg::Uplo::kLower, {}, pool));
                        return ok();
                      })),
                      median_ms(loop(s, [&](const double* x, int64_t) {
                        cp(x);
                        LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', lm, copy.data(), lm);
                      }))});
    }
    if (want("solve" + tag)) {
      rows.push_back({"solve" + tag, median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                        TENFERRO_TRY_VOID(linalg::solve(ctx, a.t, r.t, {}, pool));
                        return ok();
                      })),
                      median_ms(loop(a, [&](const double* x, int64_t i) {
                        cp(x);
                        std::memcpy(bc.data(), r.raw.data() + i * m, bc.size() * sizeof(double));
                        LAPACKE_dgesv(LAPACK_COL_MAJOR, lm, 1, copy.data(), lm, ipiv.data(), bc.data(), lm);
                      }))});
    }
  }

  // Truncated SVD of a 2000 x 2000 matrix dominated by rank 50 (exact rank-50 part plus
  // 1e-3 noise), keeping 50: randomized method vs full SVD + slicing (both tenferro).
  if (want("truncated_svd")) {
    const int64_t n = 2000, r = 50;
    const Input x = random_input(1, n, r, 7), y = random_input(1, r, n, 8), noise = random_input(1, n, n, 9);
    Tensor a = must(Tensor::uninitialized(DType::kF64, {n, n}), "alloc");
    auto* pa = static_cast<double*>(a.storage()->data());
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        double acc = 1e-3 * noise.raw[static_cast<size_t>(i + j * n)];
        for (int64_t k = 0; k < r; ++k) acc += x.raw[static_cast<size_t>(i + k * n)] * y.raw[static_cast<size_t>(k + j * r)];
        pa[i + j * n] = acc;
      }
    linalg::TruncatedSvdOptions o;
    o.max_rank = r;
    rows.push_back({"truncated_svd 2000 rank50", median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                      TENFERRO_TRY_VOID(linalg::truncated_svd(ctx, a, o, pool));
                      return ok();
                    })),
                    0});
    o.method = linalg::TruncatedSvdMethod::kExact;
    rows.push_back({"truncated_svd 2000 rank50 exact", median_ms(run([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                      TENFERRO_TRY_VOID(linalg::truncated_svd(ctx, a, o, pool));
                      return ok();
                    })),
                    0});
  }

  if (rows.empty()) {
    std::fprintf(stderr, "tenferro bench linalg: no case matches --only '%s'\n", only.c_str());
    return 2;
  }
  for (const Row& row : rows) {
    if (json) {
      nlohmann::json j{{"case", row.name}, {"tenferro_ms", row.tenferro_ms}, {"threads", threads}};
      if (row.lapacke_ms > 0) j["lapacke_ms"] = row.lapacke_ms;
      std::printf("%s\n", json_text(j).c_str());
    } else {
      std::printf("%-34s %10.4f ms", row.name.c_str(), row.tenferro_ms);
      if (row.lapacke_ms > 0) std::printf("   lapacke %10.4f ms  ratio %.2f", row.lapacke_ms, row.tenferro_ms / row.lapacke_ms);
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace tenferro::cli
