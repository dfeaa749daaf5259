// `tenferro demo`: a guided tour of what exists so far.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <iostream>

#include "commands.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/cpu/kernels.h"
#include "tenferro/cpu/reduce.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cli {

namespace {

void section(const char* title) { std::printf("\n== %s ==\n", title); }

// Unwraps a Result for the demo; a failure here is a bug, reported and counted.
Tensor must(Result<Tensor> r, int& failures) {
  if (!r.has_value()) {
    std::printf("unexpected error: %s\n", r.error().to_string().c_str());
    ++failures;
    return Tensor{};
  }
  return std::move(r).value();
}

}  // namespace

int run_demo(int /*argc*/, char** /*argv*/) {
  int failures = 0;
  std::printf("tenferro %s: dense tensors with strided views\n", kVersion);

  section("construction");
  // The same logical 2x3 matrix [[1,2,3],[4,5,6]] from column-major and row-major data.
  Tensor a = must(Tensor::from_col_major<double>({2, 3}, {1, 4, 2, 5, 3, 6}), failures);
  Tensor b = must(Tensor::from_row_major<double>({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}), failures);
  std::cout << "from_col_major (adopts the vector, no copy):\n" << a << "\n";
  std::cout << "from_row_major (one reorder copy), equal element-wise:\n" << b << "\n";
  std::cout << "arange(f32, 0, 2, 0.25):\n" << must(Tensor::arange(DType::kF32, 0.0, 2.0, 0.25), failures) << "\n";
  std::cout << "random_normal(c128, [2, 2], seed 7):\n"
            << must(Tensor::random_normal(DType::kC128, {2, 2}, 7), failures) << "\n";

  section("metadata-only views (share storage, no copy)");
  Tensor t = must(Tensor::arange(DType::kF64, 24), failures);
  Tensor cube = must(t.reshape({2, 3, 4}), failures);
  std::cout << "arange(24).reshape([2, 3, 4]):\n" << cube << "\n";
  std::cout << "permute([2, 0, 1]):\n" << must(cube.permute({2, 0, 1}), failures) << "\n";
  std::cout << "slice(axis 2, 3, -1, step -2) (negative step):\n" << must(cube.slice(2, 3, -1, -2), failures) << "\n";
  std::cout << "select(axis 1, index 2):\n" << must(cube.select(1, 2), failures) << "\n";
  Tensor sq = must(t.slice(0, 0, 16).and_then([](const Tensor& x) { return x.reshape({4, 4}); }), failures);
  std::cout << "diagonal of a 4x4 over axes [0, 1]:\n" << must(sq.diagonal({0, 1}), failures) << "\n";
  Tensor row = must(Tensor::arange(DType::kI64, 3), failures);
  std::cout << "broadcast_to([2, 3]) with a stride-0 axis:\n"
            << must(row.reshape({1, 3}).and_then([](const Tensor& x) { return x.broadcast_to({2, 3}); }), failures)
            << "\n";
  Tensor z = must(Tensor::random_uniform(DType::kC64, {3}, 1), failures);
  std::cout << "imag() of a complex vector (a real view, strides double):\n" << must(z.imag(), failures) << "\n";
  std::printf("views share storage: %s (use count %ld)\n", cube.shares_storage_with(t) ? "yes" : "no",
              t.storage_use_count());

  section("typed errors (nothing is written on failure)");
  auto bad_perm = cube.permute({0, 0, 1});
  std::printf("permute([0, 0, 1]) -> %s\n", bad_perm.error().to_string().c_str());
  auto bad_slice = cube.slice(1, 0, 5);
  std::printf("slice(axis 1, 0, 5) -> %s\n", bad_slice.error().to_string().c_str());
  Tensor pt = must(cube.permute({1, 0, 2}), failures);
  auto bad_reshape = pt.reshape({6, 4});
  std::printf("permuted.reshape([6, 4]) -> %s\n", bad_reshape.error().to_string().c_str());
  std::printf("permuted.reshape_copy([6, 4]) -> shape %s\n",
              format_dims(must(pt.reshape_copy({6, 4}), failures).shape()).c_str());
  auto bad_mut = t.view_mut<double>();
  std::printf("view_mut on shared storage -> %s\n", bad_mut.error().to_string().c_str());
  auto bad_len = Tensor::from_col_major<double>({2, 2}, {1, 2, 3});
  std::printf("from_col_major([2, 2], 3 values) -> %s\n", bad_len.error().to_string().c_str());

  section("exclusive mutation");
  Tensor m = must(Tensor::zeros(DType::kF64, {2, 2}), failures);
  if (auto view = m.view_mut<double>(); view.has_value()) {
    if (!view->set({0, 1}, 7.5) || !view->set({1, 0}, -1.0)) ++failures;
  } else {
    ++failures;
  }
  std::cout << m << "\n";

  section("pooled storage");
  auto pool = HostBufferPool::create();
  for (int i = 0; i < 3; ++i) {
    Tensor p = must(Tensor::ones(DType::kF32, {256, 256}, pool), failures);
    (void)p;
  }
  HostBufferPoolStats st = pool->stats();
  std::printf("3 tensors of 256x256 f32 from one pool: %lld allocation(s), %lld reuse(s), %lld retained bytes\n",
              static_cast<long long>(st.misses), static_cast<long long>(st.hits),
              static_cast<long long>(st.retained_bytes));

  section("CPU engine: domains, dot_general, permute, reduce");
  auto engine = cpu::CpuEngine::create();
  if (!engine) {
    std::printf("unexpected error: %s\n", engine.error().to_string().c_str());
    ++failures;
  } else {
    for (const auto& d : (*engine)->domains()) {
      std::printf("domain %d: %d worker(s) on CPUs", d.id, d.threads);
      for (int c : d.cpus) std::printf(" %d", c);
      std::printf(" (gemm provider: %s)\n", (*engine)->providers().dot_general->name.c_str());
    }
    Result<void> r = (*engine)->run((*engine)->domains()[0].id, cpu::ParallelMode::kInner,
                                    [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
      TENFERRO_TRY(Tensor x, Tensor::random_normal(DType::kF64, {3, 4, 5}, 1));
      TENFERRO_TRY(Tensor y, Tensor::random_normal(DType::kF64, {5, 4, 2}, 2));
      cpu::DotDims dims;  // C[i, k] = sum_{j, l} A[i, j, l] B[l, j, k]
      dims.lhs_contracting = {1, 2};
      dims.rhs_contracting = {1, 0};
      TENFERRO_TRY(Tensor c, cpu::dot_general(ctx, x, y, dims));
      std::cout << "dot_general contracting (j, l) of A[3,4,5] and B[5,4,2]:\n" << c << "\n";
      TENFERRO_TRY(Tensor p, cpu::permute_copy(ctx, x, {2, 0, 1}));
      std::printf("permute_copy([2, 0, 1]) -> shape %s, compact: %s\n", format_dims(p.shape()).c_str(),
                  p.is_contiguous() ? "yes" : "no");
      TENFERRO_TRY(Tensor s, cpu::reduce(ctx, cpu::ReduceOp::kSum, x, {0, 2}));
      std::cout << "sum over axes [0, 2]:\n" << s << "\n";
      return ok();
    });
    if (!r) {
      std::printf("unexpected error: %s\n", r.error().to_string().c_str());
      ++failures;
    }
    std::printf("executor entries into domain %d: %lld (one per run)\n", (*engine)->domains()[0].id,
                static_cast<long long>((*engine)->entry_count((*engine)->domains()[0].id)));
  }

  section("einsum: a random 3-regular tensor network");
  {
    // 24 vertices, each a rank-3 tensor of bond dimension 2 on the edges of a random
    // 3-regular graph (pairing model, re-drawn until simple); closed network -> scalar.
    std::mt19937_64 rng(2026);
    const int n = 24;
    std::vector<std::vector<einsum::Label>> labels;
    for (;;) {
      std::vector<int> stubs;
      for (int v = 0; v < n; ++v) stubs.insert(stubs.end(), {v, v, v});
      std::shuffle(stubs.begin(), stubs.end(), rng);
      labels.assign(n, {});
      bool simple = true;
      std::set<std::pair<int, int>> edges;
      for (size_t e = 0; e < stubs.size(); e += 2) {
        const int u = stubs[e], w = stubs[e + 1];
        if (u == w || !edges.insert({std::min(u, w), std::max(u, w)}).second) simple = false;
        labels[static_cast<size_t>(u)].push_back(static_cast<einsum::Label>(e / 2));
        labels[static_cast<size_t>(w)].push_back(static_cast<einsum::Label>(e / 2));
      }
      if (simple) break;
    }
    std::vector<Shape> shapes(n, Shape{2, 2, 2});
    std::vector<Tensor> ops;
    for (int v = 0; v < n; ++v) ops.push_back(Tensor::random_uniform(DType::kF64, {2, 2, 2}, 100 + v, 0.5, 1.5).value());
    auto spec = einsum::make_spec(labels, {}, shapes).value();
    std::printf("network: %d tensors [2, 2, 2], %zu bonds, closed (scalar result)\n", n, 3 * static_cast<size_t>(n) / 2);
    auto ctx = cpu::CpuExecutionContext::sequential();
    double reference = 0;
    for (einsum::PathAlgorithm algo : {einsum::PathAlgorithm::kLeftToRight, einsum::PathAlgorithm::kGreedy,
                                       einsum::PathAlgorithm::kTreeSA}) {
      einsum::PathPolicy policy;
      policy.algorithm = algo;
      policy.treesa.time_budget_s = 0.5;
      auto plan = einsum::EinsumPlan::prepare(spec, shapes, DType::kF64, policy);
      if (!plan) {
        std::printf("unexpected error: %s\n", plan.error().to_string().c_str());
        ++failures;
        continue;
      }
      auto value = (*plan)->execute(ctx, ops);
      if (!value) {
        std::printf("unexpected error: %s\n", value.error().to_string().c_str());
        ++failures;
        continue;
      }
      const double v = value->get<double>({}).value();
      if (algo == einsum::PathAlgorithm::kLeftToRight) reference = v;
      std::printf("%-14s log10 flops %6.3f, largest intermediate %9.0f elements, search %7.2f ms -> %.10g%s\n",
                  std::string(einsum::path_algorithm_name(algo)).c_str(), (*plan)->cost().log10_flops(),
                  (*plan)->cost().largest_intermediate, (*plan)->search_seconds() * 1e3, v,
                  std::abs(v - reference) <= 1e-9 * std::abs(reference) ? "" : "  (MISMATCH)");
      if (std::abs(v - reference) > 1e-9 * std::abs(reference)) ++failures;
    }
    std::printf("same value on every path: the paths differ only in cost\n");
  }

  if (failures > 0) {
    std::printf("\ndemo failed: %d unexpected error(s)\n", failures);
    return 1;
  }
  std::printf("\ndemo finished\n");
  return 0;
}

}  // namespace tenferro::cli
