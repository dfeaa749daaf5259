// The README's usage example, compiled and checked so the documentation stays true.
#include <gtest/gtest.h>

#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/dot_route.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/tensor/tensor.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/eager/eager.h"
#include "tenferro/linalg_eager/linalg_eager.h"

namespace eager_readme {
using namespace tenferro::eager;
// --- begin README eager example (kept identical to README.md) ---

Result<double> eager_example() {
  auto rt = EagerRuntime::create().value();  // a runtime with the CPU engine registered
  TENFERRO_TRY(EagerTensor a, rt->from_values<double>({2, 2}, {1, 2, 3, 4}));  // row-major values
  TENFERRO_TRY(EagerTensor b, rt->from_values<double>({2}, {10, 20}));
  EagerTensor c = a * b + 1.0;                            // numpy broadcasting; operators throw
  TENFERRO_TRY(EagerTensor m, matmul(a, c));              // functions return Result
  TENFERRO_TRY(EagerTensor e, einsum("ij,jk->ik", {a, c}));  // the same product
  TENFERRO_TRY(EagerTensor s, sum(m - e));                // 0
  TENFERRO_TRY(EagerTensor t, sum(m, {1}));               // row sums of a @ c
  TENFERRO_TRY(c128 v, item(t, {0}));                     // [1, 2] @ [[11, 41], [31, 81]] = [73, 203]: 276
  TENFERRO_TRY(c128 zero, item(s));
  return v.real() + zero.real();
}
// --- end README eager example ---
}  // namespace eager_readme

namespace linalg_readme {
using namespace tenferro::eager;
// --- begin README linalg example (kept identical to README.md) ---
Result<double> linalg_example() {
  auto rt = EagerRuntime::create().value();
  // A batch of three symmetric 2 x 2 matrices: [[4, 1], [1, 3]], 2 I and I.
  TENFERRO_TRY(EagerTensor a, rt->from_values<double>({3, 2, 2}, {4, 1, 1, 3, 2, 0, 0, 2, 1, 0, 0, 1}));
  TENFERRO_TRY(linalg::Svd f, linalg::svd(a));       // U [3, 2, 2], S [3, 2] descending, Vh
  TENFERRO_TRY(EagerTensor l, linalg::cholesky(a));  // A = L L^T for every item
  TENFERRO_TRY(EagerTensor d, linalg::det(a));       // [11, 4, 1]
  TENFERRO_TRY(c128 s, item(f.s, {1, 0}));           // the largest singular value of 2 I: 2
  TENFERRO_TRY(c128 d0, item(d, {0}));               // 11
  return d0.real() + s.real();                       // 13
}
// --- end README linalg example ---
}  // namespace linalg_readme

namespace autograd_readme {
using namespace tenferro::eager;
// --- begin README autograd example (kept identical to README.md) ---
Result<double> autograd_example() {
  auto rt = EagerRuntime::create().value();
  TENFERRO_TRY(EagerTensor a, rt->from_values<double>({2, 2}, {1, 2, 3, 4}));
  TENFERRO_TRY(EagerTensor x, requires_grad(a));     // a leaf: calls on it record
  TENFERRO_TRY(EagerTensor y, matmul(x, x));
  TENFERRO_TRY(EagerTensor loss, sum(y));            // sum(x x)
  TENFERRO_TRY_VOID(backward(loss));                 // d loss / d x = 1 x^T + x^T 1
  TENFERRO_TRY(c128 g, item(grad_of(x), {0, 0}));    // 3 + 4
  return g.real();                                   // 7
}
// --- end README autograd example ---
}  // namespace autograd_readme

namespace readme {
using namespace tenferro;

// --- begin README example (kept identical to README.md) ---
Result<double> example() {
  // Rows [1, 2, 3] and [4, 5, 6]; from_col_major adopts the vector without copying.
  TENFERRO_TRY(Tensor m, Tensor::from_col_major<double>({2, 3}, {1, 4, 2, 5, 3, 6}));
  TENFERRO_TRY(Tensor t, m.transpose());          // a view: shares storage, no copy
  TENFERRO_TRY(Tensor rev, t.slice(0, 2, -1, -1));  // rows 2, 1, 0 of the transpose
  return rev.get<double>({0, 1});                 // t[2, 1] = m[1, 2] = 6
}

Result<void> write_example() {
  TENFERRO_TRY(Tensor z, Tensor::zeros(DType::kF64, {2, 2}));
  // Writes need exclusive storage: this fails with not_exclusive while a view exists.
  TENFERRO_TRY(auto w, z.view_mut<double>());
  return w.set({0, 1}, 2.5);
}
// --- end README example ---


Result<Tensor> engine_example(const Tensor& a, const Tensor& b) {
  Tensor result;
  // --- begin README engine example (kept close to README.md) ---
  auto engine = cpu::CpuEngine::create().value();  // one domain per NUMA node
  Result<void> r = engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
    cpu::DotDims mm;  // C[i, k] = sum_j A[i, j] B[j, k]
    mm.lhs_contracting = {1};
    mm.rhs_contracting = {0};
    TENFERRO_TRY(Tensor c, cpu::dot_general(ctx, a, b, mm));
    // How it ran and why: kernel, provider, thread split, packed operands, the reason.
    TENFERRO_TRY(cpu::DotRoute route, cpu::explain_dot_general(ctx, a, b, mm));
    EXPECT_NE(cpu::describe(route).find("kernel "), std::string::npos);
    result = c;
    return ok();
  });
  // --- end README engine example ---
  if (!r) return std::move(r).error();
  return result;
}

Result<Tensor> einsum_example(cpu::CpuEngine& engine, const Tensor& a, const Tensor& b, const Tensor& v) {
  Tensor result;
  // --- begin README einsum example (kept close to README.md) ---
  einsum::PlanCache cache;                                  // prepared plans, reused by shape
  Result<void> r = engine.run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
    std::vector<Tensor> ops{a, b, v};
    TENFERRO_TRY(result, einsum::einsum(ctx, "ij,jk,k->i", ops, {}, &cache, engine.pool(0)));
    return ok();
  });
  // --- end README einsum example ---
  if (!r) return std::move(r).error();
  return result;
}

// --- begin README program example (kept identical to README.md) ---
// y = exp(x) w for any number of rows n: traced once, compiled, evaluated.
Result<std::vector<Tensor>> program_example(const Tensor& x, const Tensor& w) {
  using namespace tenferro::program;
  compiler::TraceContext tc;
  TENFERRO_TRY(Extent n, tc.symbol("n"));                   // a symbolic extent
  TENFERRO_TRY(Value xv, tc.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x"));
  TENFERRO_TRY(Value wv, tc.capture(w, "w"));               // data stays out of the program
  TENFERRO_TRY(Value e, tc.op(OpCode::kExp, {xv}));
  TENFERRO_TRY(Value y, tc.op(OpCode::kDotGeneral, {e, wv}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}));
  TENFERRO_TRY(compiler::TracedGraph traced, tc.finish({y}));
  compiler::GraphCompiler compiler;                         // bounded compile cache
  TENFERRO_TRY(CompiledGraph graph, compiler.compile(traced));
  return interpret(graph, std::vector<Tensor>{x});          // the reference interpreter
}
// --- end README program example ---

TEST(Readme, ProgramExampleEvaluates) {
  Tensor x = Tensor::from_row_major<double>({2, 3}, std::vector<double>{0, 1, 2, 3, 4, 5}).value();
  Tensor w = Tensor::from_row_major<double>({3, 1}, std::vector<double>{1, 0, 1}).value();
  const auto y = program_example(x, w).value();
  ASSERT_EQ(y[0].shape(), (Shape{2, 1}));
  EXPECT_DOUBLE_EQ(y[0].get<double>({0, 0}).value(), std::exp(0.0) + std::exp(2.0));
  EXPECT_DOUBLE_EQ(y[0].get<double>({1, 0}).value(), std::exp(3.0) + std::exp(5.0));
}

// The README's runtime snippet (kept identical to README.md), wrapped in a function.
std::vector<Tensor> runtime_example(const program::CompiledGraph& graph, const Tensor& x) {
  auto rt = runtime::Runtime::create().value();                     // user-owned, no global state
  auto engine_id = cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create().value()).value();
  std::vector<Tensor> args{x};
  auto plan = rt->prepare_for(graph, runtime::signature_of(args)).value();  // for these shapes
  std::vector<Tensor> y = rt->execute_prepared(*plan, args, graph.bindings).value();
  std::puts(rt->explain(*plan).c_str());                             // provider and why, per node
  (void)engine_id;
  return y;
}

TEST(Readme, RuntimeExampleMatchesTheInterpreter) {
  using namespace tenferro::program;
  compiler::TraceContext tc;
  const Tensor w = Tensor::random_normal(DType::kF64, {3, 2}, 2).value();
  const Tensor x = Tensor::random_normal(DType::kF64, {5, 3}, 1).value();
  Value xv = tc.input(ValueType{DType::kF64, {Extent::exact(5), Extent::exact(3)}}, "x").value();
  Value wv = tc.capture(w, "w").value();
  Value e = tc.op(OpCode::kExp, {xv}).value();
  Value y = tc.op(OpCode::kDotGeneral, {e, wv}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  const CompiledGraph graph = compiler::GraphCompiler().compile(tc.finish({y}).value()).value();
  const auto got = runtime_example(graph, x);
  const auto want = interpret(graph, std::vector<Tensor>{x}).value();
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      EXPECT_NEAR(got[0].get<double>({i, j}).value(), want[0].get<double>({i, j}).value(), 1e-12);
    }
  }
}

TEST(Readme, EinsumExampleContractsAChain) {
  Tensor a = Tensor::from_row_major<double>({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}).value();
  Tensor b = Tensor::from_row_major<double>({3, 2}, std::vector<double>{1, 0, 0, 1, 1, 1}).value();
  Tensor v = Tensor::from_row_major<double>({2}, std::vector<double>{1, 2}).value();
  auto engine = cpu::CpuEngine::create().value();
  Tensor r = einsum_example(*engine, a, b, v).value();
  EXPECT_EQ(r.get<double>({0}).value(), 4.0 + 2 * 5.0);    // (AB)v, AB = [[4, 5], [10, 11]]
  EXPECT_EQ(r.get<double>({1}).value(), 10.0 + 2 * 11.0);
}

TEST(Readme, EngineExampleMultipliesMatrices) {
  Tensor a = Tensor::from_row_major<double>({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}).value();
  Tensor b = Tensor::from_row_major<double>({3, 2}, std::vector<double>{1, 0, 0, 1, 1, 1}).value();
  Tensor c = engine_example(a, b).value();
  EXPECT_EQ(c.get<double>({0, 0}).value(), 4.0);   // 1 + 3
  EXPECT_EQ(c.get<double>({1, 1}).value(), 11.0);  // 5 + 6
}

TEST(Readme, ExampleComputesWhatItSays) {
  EXPECT_EQ(example().value(), 6.0);
  EXPECT_TRUE(write_example().has_value());
}

TEST(Readme, EagerExampleComputes) { EXPECT_EQ(::eager_readme::eager_example().value(), 276.0); }
TEST(Readme, LinalgExampleComputes) { EXPECT_NEAR(::linalg_readme::linalg_example().value(), 13.0, 1e-12); }
TEST(Readme, AutogradExampleComputes) { EXPECT_DOUBLE_EQ(::autograd_readme::autograd_example().value(), 7.0); }

}  // namespace readme
