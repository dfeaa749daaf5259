#include "tenferro/eager/eager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/test_support/index.h"
#include "tenferro/test_support/order.h"
#include "tenferro/test_support/strided.h"

namespace tenferro::eager {
namespace {

using program::Attrs;
using program::OpCode;

// ---- helpers ----

// Column-major values of any tensor as c128.
std::vector<c128> values(const Tensor& t) {
  Tensor c = t.to_col_major().value();
  std::vector<c128> out(static_cast<size_t>(c.numel()));
  visit_dtype(c.dtype(), [&]<class T>() {
    const T* p = static_cast<const T*>(c.storage()->data()) + c.offset();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, c64>) {
        out[i] = c128(p[i].real(), p[i].imag());
      } else if constexpr (std::is_same_v<T, c128>) {
        out[i] = p[i];
      } else {
        out[i] = c128(static_cast<double>(p[i]), 0.0);
      }
    }
  });
  return out;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const double tol = (got.dtype() == DType::kF32 || got.dtype() == DType::kC64) ? 1e-4 : 1e-10;
  const auto g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i].real()) || std::isnan(w[i].imag())) {
      EXPECT_TRUE(std::isnan(g[i].real()) || std::isnan(g[i].imag())) << what << " at " << i;
      continue;
    }
    EXPECT_LE(std::abs(g[i] - w[i]), tol * (1.0 + std::abs(w[i]))) << what << " at " << i << ": " << g[i] << " vs "
                                                                     << w[i];
  }
}

// The reference interpreter running one core op (an independent implementation of the
// program semantics).
Result<Tensor> oracle(OpCode code, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  program::ProgramBuilder b;
  std::vector<program::Value> vals;
  for (const Tensor& t : inputs) {
    program::ValueType type{t.dtype(), {}};
    for (int64_t e : t.shape()) type.shape.push_back(program::Extent::exact(e));
    TENFERRO_TRY(program::Value v, b.input(type));
    vals.push_back(v);
  }
  TENFERRO_TRY(program::Value out, b.op(code, vals, attrs));
  TENFERRO_TRY(program::CompiledGraph g, b.finish({out}));
  TENFERRO_TRY(std::vector<Tensor> r, program::interpret(g, inputs));
  return r.front();
}

Tensor broadcast_copy(const Tensor& t, const Shape& shape) {
  return t.broadcast_to(shape).value().to_col_major().value();
}

// A bridge that forwards every request to the CPU bridge but is not a CPU bridge for the
// eager layer: eager calls on it are promoted (same kernels, prepared graphs).
class ForwardingBridge final : public runtime::EngineBridge {
 public:
  explicit ForwardingBridge(std::shared_ptr<const runtime::EngineBridge> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return "forwarding"; }
  std::span<const int32_t> domains() const override { return inner_->domains(); }
  Result<runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>> prepare_core(
      const runtime::NodeRequest& r) const override {
    return inner_->prepare_core(r);
  }
  Result<void> enter(int32_t domain, FunctionRef<Result<void>(runtime::EngineContext&)> body) const override {
    return inner_->enter(domain, body);
  }

 private:
  std::shared_ptr<const runtime::EngineBridge> inner_;
};

// An engine that runs nothing: every op is unsupported; counts entries.
class NullBridge final : public runtime::EngineBridge {
 public:
  std::string_view name() const override { return "null"; }
  std::span<const int32_t> domains() const override { return domains_; }
  Result<runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>> prepare_core(
      const runtime::NodeRequest&) const override {
    return runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>::unsupported("null engine");
  }
  Result<void> enter(int32_t, FunctionRef<Result<void>(runtime::EngineContext&)>) const override {
    entries.fetch_add(1);
    return ok();
  }
  mutable std::atomic<int> entries{0};

 private:
  int32_t domains_[1] = {0};
};

struct Runtimes {
  std::shared_ptr<EagerRuntime> direct, promoted;
};

Runtimes make_runtimes() {
  Runtimes r;
  r.direct = EagerRuntime::create().value();
  auto& rt = r.direct->runtime();
  auto inner = rt.engine_bridge(r.direct->engine()).value();
  const runtime::EngineId fwd = rt.register_engine(std::make_shared<ForwardingBridge>(inner)).value();
  r.promoted = EagerRuntime::adopt(r.direct->shared_runtime(), fwd).value();
  return r;
}

EagerTensor adopt(EagerRuntime& rt, const Tensor& t) { return rt.from_host(t).value(); }

ErrorCode with_session_error(EagerRuntime& rt) {
  Result<void> r = rt.with_session([](Context&) -> Result<void> { return ok(); });
  return r ? ErrorCode::kInternal : r.error().code();
}

// ---- tests ----

TEST(Eager, OperatorsAndFunctionsComputeValues) {
  auto rt = EagerRuntime::create().value();
  EagerTensor a = rt->from_values<double>({2, 3}, {1, 2, 3, 4, 5, 6}).value();
  EagerTensor b = rt->from_values<double>({3}, {10, 20, 30}).value();
  EagerTensor c = a + b;  // numpy broadcasting over the leading axis
  EXPECT_EQ(c.shape(), Shape({2, 3}));
  EXPECT_EQ(item(c, {1, 2}).value(), c128(36, 0));
  EXPECT_EQ(item(a * 2.0, {1, 0}).value(), c128(8, 0));
  EXPECT_EQ(item(1.0 - a, {0, 1}).value(), c128(-1, 0));
  EXPECT_EQ(item(-a, {0, 0}).value(), c128(-1, 0));
  EXPECT_EQ(item(a / b, {0, 2}).value(), c128(0.1, 0));
  EagerTensor gt = a > (a * 0.0 + 3.0);
  EXPECT_EQ(gt.dtype(), DType::kBool);
  EXPECT_EQ(item(gt, {1, 0}).value(), c128(1, 0));
  EXPECT_EQ(item(gt, {0, 2}).value(), c128(0, 0));
  EXPECT_EQ(item(sum(a).value()).value(), c128(21, 0));
  EagerTensor s0 = sum(a, {0}).value();
  EXPECT_EQ(s0.shape(), Shape({3}));
  EXPECT_EQ(item(s0, {2}).value(), c128(9, 0));
  EXPECT_EQ(sum(a, {-1}, true).value().shape(), Shape({2, 1}));
  EXPECT_EQ(item(mean(a, {1}).value(), {1}).value(), c128(5, 0));
  EXPECT_EQ(item(amax(a).value()).value(), c128(6, 0));
  EXPECT_EQ(item(prod(b).value()).value(), c128(6000, 0));
  // numpy matmul: (2,3) @ (3,) -> (2,)
  EagerTensor mv = matmul(a, b).value();
  EXPECT_EQ(mv.shape(), Shape({2}));
  EXPECT_EQ(item(mv, {1}).value(), c128(4 * 10 + 5 * 20 + 6 * 30, 0));
  EagerTensor e = einsum("ij,j->i", {a, b}).value();
  expect_close(e.tensor(), mv.tensor(), "einsum vs matmul");
  EXPECT_NE(a.to_string().find("6"), std::string::npos);
}

TEST(Eager, ViewsShareStorageAndFollowNumpy) {
  auto rt = EagerRuntime::create().value();
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  EagerTensor x = rt->from_values<double>({2, 3, 4}, std::span<const double>(v)).value();  // x[i,j,k] = 12i+4j+k
  const auto same_storage = [&](const EagerTensor& y) { return y.tensor().storage() == x.tensor().storage(); };
  EagerTensor p = permute(x, {2, 0, 1}).value();
  EXPECT_TRUE(same_storage(p));
  EXPECT_EQ(item(p, {3, 1, 2}).value(), c128(12 + 8 + 3, 0));
  EagerTensor t = transpose(x).value();
  EXPECT_EQ(t.shape(), Shape({4, 3, 2}));
  EXPECT_EQ(item(t, {1, 2, 0}).value(), c128(9, 0));
  EagerTensor s = slice(x, -1, 1, 4, 2).value();
  EXPECT_TRUE(same_storage(s));
  EXPECT_EQ(item(s, {1, 2, 1}).value(), c128(12 + 8 + 3, 0));
  EagerTensor r = reshape(x, {6, -1}).value();
  EXPECT_EQ(r.shape(), Shape({6, 4}));
  // reshape keeps column-major element order (the library's convention, numpy's
  // order='F'): r's element 1 in that order is x[1, 0, 0].
  EXPECT_EQ(item(r, {5, 3}).value(), c128(23, 0));
  EXPECT_EQ(item(r, {1, 0}).value(), c128(12, 0));
  EagerTensor rt2 = reshape(t, {4, 6}).value();       // not a view: copied
  EXPECT_EQ(item(rt2, {1, 0}).value(), item(t, {1, 0, 0}).value());
  EagerTensor sq = rt->from_values<double>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}).value();
  EagerTensor d = diagonal(sq).value();
  EXPECT_EQ(d.shape(), Shape({3}));
  EXPECT_EQ(item(d, {2}).value(), c128(9, 0));
  EagerTensor dx = diagonal(x, 0, 1).value();  // numpy: the diagonal becomes the last axis
  EXPECT_EQ(dx.shape(), Shape({4, 2}));
  EXPECT_EQ(item(dx, {3, 1}).value(), c128(12 + 4 + 3, 0));
  EagerTensor dy = diagonal(x, 2, 1).value();  // extents 4 and 3: the leading 3x3 part
  EXPECT_EQ(dy.shape(), Shape({2, 3}));
  EXPECT_EQ(item(dy, {1, 2}).value(), c128(12 + 8 + 2, 0));
  // The first axis named after the second, with the remaining axis between them: the
  // remaining axis keeps its place, the diagonal goes last (numpy's x.diagonal(0, 2, 0)).
  EagerTensor dz = diagonal(x, 2, 0).value();
  EXPECT_EQ(dz.shape(), Shape({3, 2}));
  EXPECT_EQ(item(dz, {2, 1}).value(), c128(12 + 8 + 1, 0));
  EXPECT_EQ(item(dz, {1, 0}).value(), c128(4, 0));
  EagerTensor bc = broadcast_to(d, {2, 3}).value();
  EXPECT_TRUE(bc.tensor().storage() == sq.tensor().storage());
  EXPECT_EQ(item(bc, {1, 1}).value(), c128(5, 0));
  EagerTensor z = rt->from_values<c128>({2}, {c128(1, 2), c128(3, -4)}).value();
  EagerTensor re = real(z).value(), im = imag(z).value();
  EXPECT_EQ(re.dtype(), DType::kF64);
  EXPECT_TRUE(re.tensor().storage() == z.tensor().storage());
  EXPECT_EQ(item(im, {1}).value(), c128(-4, 0));
  EXPECT_EQ(item(imag(sq).value(), {0, 0}).value(), c128(0, 0));
  EXPECT_EQ(item(flip(sq, {0}).value(), {0, 0}).value(), c128(7, 0));
  EXPECT_GT(rt->metrics().views, 0);
}

TEST(Eager, ErrorsAreTypedAndNothingRuns) {
  auto rt = EagerRuntime::create().value();
  auto other = EagerRuntime::create().value();
  EagerTensor a = rt->from_values<double>({2}, {1, 2}).value();
  EagerTensor f = rt->from_values<float>({2}, {1, 2}).value();
  EagerTensor b3 = rt->from_values<double>({3}, {1, 2, 3}).value();
  EagerTensor foreign = other->from_values<double>({2}, {1, 2}).value();
  EagerTensor bl = rt->from_values<bool>({2}, {true, false}).value();
  const EagerMetrics before = rt->metrics();
  EXPECT_EQ(add(a, f).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(add(a, b3).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(add(a, foreign).error().code(), ErrorCode::kRuntimeMismatch);
  EXPECT_EQ(add(a, EagerTensor()).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(add(bl, bl).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(atan2(a, f).error().code(), ErrorCode::kDTypeMismatch);
  for (const EagerTensor& t :
       {rt->from_values<int64_t>({2}, {1, 2}).value(), rt->from_values<c128>({1}, {c128(1, 1)}).value()}) {
    const auto r = atan2(t, t);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kDTypeMismatch);
    EXPECT_EQ(r.error().op(), "atan2");
  }
  EXPECT_EQ(sum(a, {1}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(sum(a, {0, -1}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(mean(rt->from_values<int64_t>({2}, {1, 2}).value()).error().code(), ErrorCode::kDTypeMismatch);
  // Reductions a dtype does not define name the reduction called, before any kernel runs.
  EagerTensor z = rt->from_values<c128>({2}, {c128(1, 1), c128(2, 0)}).value();
  for (const auto& [r, op] :
       {std::pair{sum(bl), "sum"}, {prod(bl), "prod"}, {amax(z), "amax"}, {amin(z, {0}), "amin"}}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kDTypeMismatch) << op;
    EXPECT_EQ(r.error().op(), op);
    EXPECT_EQ(r.error().message().rfind("not defined for dtype", 0), 0u) << r.error().message();
  }
  EXPECT_EQ(matmul(a, b3).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(einsum("ij,jk->ik", {a, a}).error().stage(), ErrorStage::kUsage);
  EXPECT_EQ(reshape(a, {3}).error().code(), ErrorCode::kInvalidShape);
  // Target extents whose product overflows int64 (signed overflow before), with and
  // without a -1; a zero extent makes the product 0 whatever the others are.
  EXPECT_EQ(reshape(a, {int64_t{1} << 62, 4}).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(reshape(a, {int64_t{1} << 62, 4, -1}).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(reshape(a, {int64_t{1} << 62, 4, 0}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_NE(sum(a, {-7}).error().message().find("axis -7"), std::string::npos);  // named as given
  EXPECT_EQ(rt->on(CpuPlacement::domain(99)).add(a, a).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(rt->context().gather(a, a, 0).error().stage(), ErrorStage::kUsage);  // f64 indices
  const EagerMetrics after = rt->metrics();
  EXPECT_EQ(after.fast_inline + after.fast_entered + after.promoted,
            before.fast_inline + before.fast_entered + before.promoted)
      << "no failing call reached a kernel or a prepared graph";
  try {
    EagerTensor bad = a + f;
    FAIL() << "operator+ must throw";
  } catch (const Exception& e) {
    EXPECT_EQ(e.error().code(), ErrorCode::kDTypeMismatch);
  }
  // Integer division by zero is a completion error, as in the interpreter.
  EagerTensor i = rt->from_values<int64_t>({2}, {4, 5}).value();
  EagerTensor zero = rt->from_values<int64_t>({2}, {1, 0}).value();
  EXPECT_EQ(div(i, zero).error().stage(), ErrorStage::kCompletion);
}

// Every op on random shapes, layouts and dtypes, on the direct path and promoted, against
// the reference interpreter (or loops).
TEST(Eager, RandomOpsMatchTheInterpreterOnBothPaths) {
  Runtimes rts = make_runtimes();
  std::mt19937_64 rng(20261201);
  const DType dtypes[] = {DType::kF32, DType::kF64, DType::kC128};
  const auto rand_shape = [&](int64_t max_rank) {
    Shape s;
    const int64_t r = static_cast<int64_t>(rng() % static_cast<uint64_t>(max_rank + 1));
    for (int64_t i = 0; i < r; ++i) s.push_back(1 + static_cast<int64_t>(rng() % 4));
    return s;
  };
  int checked = 0;
  for (int iter = 0; iter < 300; ++iter) {
    const DType d = dtypes[rng() % 3];
    const Shape shape = rand_shape(3);
    const Tensor x = test_support::strided_random(rng, d, shape, 0.5, 2.0);
    const int kind = static_cast<int>(rng() % 9);
    for (EagerRuntime* rt : {rts.direct.get(), rts.promoted.get()}) {
      const std::string path = rt == rts.direct.get() ? "direct" : "promoted";
      const EagerTensor ex = adopt(*rt, x);
      Context c = rt->context();
      if (kind == 0) {  // unary
        const OpCode ops[] = {OpCode::kNeg, OpCode::kExp, OpCode::kLog, OpCode::kSin, OpCode::kTanh, OpCode::kSqrt,
                              OpCode::kAbs, OpCode::kConj};
        const OpCode op = ops[rng() % 8];
        Result<EagerTensor> got = op == OpCode::kNeg    ? c.neg(ex)
                                  : op == OpCode::kExp  ? c.exp(ex)
                                  : op == OpCode::kLog  ? c.log(ex)
                                  : op == OpCode::kSin  ? c.sin(ex)
                                  : op == OpCode::kTanh ? c.tanh(ex)
                                  : op == OpCode::kSqrt ? c.sqrt(ex)
                                  : op == OpCode::kAbs  ? c.abs(ex)
                                                        : c.conj(ex);
        Result<Tensor> want = oracle(op, {}, {x});
        ASSERT_EQ(got.has_value(), want.has_value()) << path << " " << program::op_name(op);
        if (got) expect_close(got->tensor(), *want, path + " " + std::string(program::op_name(op)));
      } else if (kind == 1) {  // binary with broadcasting: y's shape is a suffix of x's, some axes 1
        Shape ys;
        const size_t drop = shape.empty() ? 0 : rng() % (shape.size() + 1);
        for (size_t i = drop; i < shape.size(); ++i) ys.push_back(rng() % 3 == 0 ? 1 : shape[i]);
        const Tensor y = test_support::strided_random(rng, d, ys, 0.5, 2.0);
        const OpCode ops[] = {OpCode::kAdd, OpCode::kSub, OpCode::kMul, OpCode::kDiv, OpCode::kMax, OpCode::kPow};
        OpCode op = ops[rng() % 6];
        if (is_complex(d) && op == OpCode::kMax) op = OpCode::kAdd;
        const EagerTensor ey = adopt(*rt, y);
        Result<EagerTensor> got = op == OpCode::kAdd   ? c.add(ey, ex)
                                  : op == OpCode::kSub ? c.sub(ey, ex)
                                  : op == OpCode::kMul ? c.mul(ey, ex)
                                  : op == OpCode::kDiv ? c.div(ey, ex)
                                  : op == OpCode::kMax ? c.maximum(ey, ex)
                                                       : c.pow(ey, ex);
        Result<Tensor> want = oracle(op, {}, {broadcast_copy(y, shape), x});
        ASSERT_EQ(got.has_value(), want.has_value()) << path << " " << program::op_name(op);
        if (got) expect_close(got->tensor(), *want, path + " " + std::string(program::op_name(op)));
      } else if (kind == 2 && !is_complex(d)) {  // compare, where, clamp
        const Tensor y = test_support::strided_random(rng, d, shape, 0.5, 2.0);
        const EagerTensor ey = adopt(*rt, y);
        Attrs a;
        a.direction = program::CompareDirection::kLt;
        const EagerTensor lt = c.lt(ex, ey).value();
        const Tensor want_lt = oracle(OpCode::kCompare, a, {x, y}).value();
        expect_close(lt.tensor(), want_lt, path + " lt");
        expect_close(c.where(lt, ex, ey).value().tensor(), oracle(OpCode::kSelect, {}, {want_lt, x, y}).value(),
                     path + " where");
        const Tensor lo = Tensor::full(d, {}, c128(0.8, 0)).value(), hi = Tensor::full(d, {}, c128(1.5, 0)).value();
        expect_close(c.clamp(ex, adopt(*rt, lo), adopt(*rt, hi)).value().tensor(),
                     oracle(OpCode::kClamp, {}, {broadcast_copy(lo, shape), x, broadcast_copy(hi, shape)}).value(),
                     path + " clamp");
      } else if (kind == 3) {  // reductions
        std::vector<int64_t> axes;
        for (int64_t i = 0; i < x.rank(); ++i) {
          if (rng() % 2) axes.push_back(i);
        }
        const program::ReduceKind kinds[] = {program::ReduceKind::kSum, program::ReduceKind::kProd,
                                             program::ReduceKind::kMax, program::ReduceKind::kMin};
        program::ReduceKind k = kinds[rng() % 4];
        if (is_complex(d)) k = program::ReduceKind::kSum;
        std::vector<int64_t> all_axes = axes;
        if (axes.empty()) {
          for (int64_t i = 0; i < x.rank(); ++i) all_axes.push_back(i);
        }
        Result<EagerTensor> got = k == program::ReduceKind::kSum    ? c.sum(ex, axes)
                                  : k == program::ReduceKind::kProd ? c.prod(ex, axes)
                                  : k == program::ReduceKind::kMax  ? c.amax(ex, axes)
                                                                    : c.amin(ex, axes);
        Attrs a;
        a.dims = all_axes;
        a.reduce = k;
        Result<Tensor> want = oracle(OpCode::kReduce, a, {x});
        ASSERT_EQ(got.has_value(), want.has_value()) << path << " reduce";
        if (got) expect_close(got->tensor(), *want, path + " reduce");
      } else if (kind == 4) {  // matmul with batch broadcasting, checked by loops
        const int64_t m = 1 + static_cast<int64_t>(rng() % 4), k = 1 + static_cast<int64_t>(rng() % 4),
                      n = 1 + static_cast<int64_t>(rng() % 4), bt = 1 + static_cast<int64_t>(rng() % 3);
        const Tensor A = test_support::strided_random(rng, d, {bt, m, k}, -1, 1);
        const Tensor B = test_support::strided_random(rng, d, {k, n}, -1, 1);
        const EagerTensor r = c.matmul(adopt(*rt, A), adopt(*rt, B)).value();
        ASSERT_EQ(r.shape(), Shape({bt, m, n}));
        // The plain 2-D product (its own path) against loops too.
        const Tensor A2 = test_support::strided_random(rng, d, {m, k}, -1, 1);
        const EagerTensor r2 = c.matmul(adopt(*rt, A2), adopt(*rt, B)).value();
        ASSERT_EQ(r2.shape(), Shape({m, n}));
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            c128 s2(0, 0);
            for (int64_t l = 0; l < k; ++l) s2 += item(adopt(*rt, A2), {i, l}).value() * item(adopt(*rt, B), {l, j}).value();
            EXPECT_LE(std::abs(item(r2, {i, j}).value() - s2), 1e-4 * (1 + std::abs(s2))) << path << " matmul 2-D";
          }
        }
        if (m != k) {
          EXPECT_EQ(c.matmul(adopt(*rt, A2), adopt(*rt, A2)).error().code(), ErrorCode::kShapeMismatch);
        }
        for (int64_t b = 0; b < bt; ++b) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              c128 s(0, 0);
              for (int64_t l = 0; l < k; ++l) {
                s += item(adopt(*rt, A), {b, i, l}).value() * item(adopt(*rt, B), {l, j}).value();
              }
              EXPECT_LE(std::abs(item(r, {b, i, j}).value() - s), 1e-4 * (1 + std::abs(s))) << path << " matmul";
            }
          }
        }
      } else if (kind == 5) {  // einsum (native module vs promoted lowering), checked by loops
        const int64_t I = 1 + static_cast<int64_t>(rng() % 3), J = 1 + static_cast<int64_t>(rng() % 3),
                      K = 1 + static_cast<int64_t>(rng() % 3);
        const Tensor A = test_support::strided_random(rng, d, {I, J}, -1, 1);
        const Tensor B = test_support::strided_random(rng, d, {J, K, I}, -1, 1);
        const EagerTensor r = c.einsum("ij,jki->ki", {adopt(*rt, A), adopt(*rt, B)}).value();
        ASSERT_EQ(r.shape(), Shape({K, I}));
        for (int64_t kk = 0; kk < K; ++kk) {
          for (int64_t i = 0; i < I; ++i) {
            c128 s(0, 0);
            for (int64_t j = 0; j < J; ++j) {
              s += item(adopt(*rt, A), {i, j}).value() * item(adopt(*rt, B), {j, kk, i}).value();
            }
            EXPECT_LE(std::abs(item(r, {kk, i}).value() - s), 1e-4 * (1 + std::abs(s))) << path << " einsum";
          }
        }
      } else if (kind == 6 && x.rank() >= 1) {  // gather, concatenate, pad
        const int64_t axis = static_cast<int64_t>(rng() % static_cast<uint64_t>(x.rank()));
        const Tensor idx = Tensor::from_col_major<int64_t>({3}, {0, x.shape()[static_cast<size_t>(axis)] - 1, 7}).value();
        Attrs ga;
        ga.axis = axis;
        expect_close(c.gather(ex, adopt(*rt, idx), axis).value().tensor(), oracle(OpCode::kGather, ga, {x, idx}).value(),
                     path + " gather");
        expect_close(c.concatenate({ex, ex}, axis).value().tensor(), oracle(OpCode::kConcatenate, ga, {x, x}).value(),
                     path + " concatenate");
        std::vector<int64_t> low(x.shape().size(), 1), high(x.shape().size(), 0), interior(x.shape().size(), 1);
        const Tensor pv = Tensor::full(d, {}, c128(3, 0)).value();
        Attrs pa;
        pa.low = low;
        pa.high = high;
        pa.interior = interior;
        expect_close(c.pad(ex, adopt(*rt, pv), low, high, interior).value().tensor(),
                     oracle(OpCode::kPad, pa, {x, pv}).value(), path + " pad");
      } else if (kind == 7 && x.rank() >= 2) {  // tril/triu, astype
        Attrs ta;
        ta.k = static_cast<int64_t>(rng() % 3) - 1;
        expect_close(c.tril(ex, ta.k).value().tensor(), oracle(OpCode::kTril, ta, {x}).value(), path + " tril");
        expect_close(c.triu(ex, ta.k).value().tensor(), oracle(OpCode::kTriu, ta, {x}).value(), path + " triu");
      } else if (kind == 8) {
        const DType to = is_complex(d) ? DType::kC64 : DType::kF64;
        Attrs ca;
        ca.dtype = to;
        expect_close(c.astype(ex, to).value().tensor(), oracle(OpCode::kConvert, ca, {x}).value(), path + " astype");
        expect_close(c.contiguous(ex).value().tensor(), x.to_col_major().value(), path + " contiguous");
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 400);
  EXPECT_GT(rts.promoted->metrics().promoted, 100) << "the forwarding target promotes every kernel call";
  EXPECT_EQ(rts.direct->metrics().promoted, 0);
}

// Single ops take the fast path: no program, fingerprint, preparation, plan-cache lookup
// or schedule (the runtime's counters and the prepare hook prove it).
TEST(Eager, SingleOpsTakeTheFastPath) {
  auto rt = EagerRuntime::create().value();
  std::atomic<int> prepares{0};
  rt->runtime().set_prepare_hook([&](const program::Fingerprint&) { prepares++; });
  EagerTensor a = rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  EagerTensor v = rt->from_values<double>({8}, {1, 2, 3, 4, 5, 6, 7, 8}).value();
  const runtime::ExecutionMetrics m0 = rt->runtime().metrics();
  const runtime::PlanCacheStats p0 = rt->runtime().plan_cache_stats();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(add(v, v));
    ASSERT_TRUE(matmul(a, a));
    ASSERT_TRUE(einsum("ij,jk->ik", {a, a}));
    ASSERT_TRUE(sum(v));
    ASSERT_TRUE(exp(v));
  }
  const runtime::ExecutionMetrics m1 = rt->runtime().metrics();
  const runtime::PlanCacheStats p1 = rt->runtime().plan_cache_stats();
  EXPECT_EQ(prepares.load(), 0);
  EXPECT_EQ(m1.preparations, m0.preparations);
  EXPECT_EQ(m1.lookups, m0.lookups);
  EXPECT_EQ(m1.executions, m0.executions);
  EXPECT_EQ(p1.hits + p1.misses, p0.hits + p0.misses);
  const EagerMetrics e = rt->metrics();
  EXPECT_EQ(e.promoted, 0);
  EXPECT_EQ(e.programs_built, 0);
  EXPECT_EQ(e.fast_inline, 50) << "tiny ops run inline: no executor entry";
  EXPECT_EQ(rt->einsum_cache_stats().misses, 1);
  EXPECT_EQ(rt->einsum_cache_stats().hits, 9);
}

TEST(Eager, EntryDecisionAndExecutorEntries) {
  EXPECT_EQ(decide_entry(false, false, 1, 10).entry, Entry::kPromote);
  EXPECT_EQ(decide_entry(false, true, 1, 10).entry, Entry::kPromote);
  EXPECT_EQ(decide_entry(true, true, 100, 10).entry, Entry::kSession);
  EXPECT_EQ(decide_entry(true, false, 9, 10).entry, Entry::kInline);
  EXPECT_EQ(decide_entry(true, false, 10, 10).entry, Entry::kEnter);
  // inline_work = 0: every op makes exactly one executor entry.
  auto rt = EagerRuntime::create(EagerConfig{.inline_work = 0}).value();
  auto cpu = cpu_runtime::cpu_engine_of(*rt->runtime().engine_bridge(rt->engine()).value());
  ASSERT_NE(cpu, nullptr);
  EagerTensor a = rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  const int64_t e0 = cpu->entry_count(rt->default_domain());
  ASSERT_TRUE(add(a, a));
  ASSERT_TRUE(matmul(a, a));
  ASSERT_TRUE(einsum("ij,jk->ik", {a, a}));
  EXPECT_EQ(cpu->entry_count(rt->default_domain()) - e0, 3);
  EXPECT_EQ(rt->metrics().fast_entered, 3);
}

TEST(Eager, SessionsUseOneEntryAndRejectReentryAndContention) {
  auto rt = EagerRuntime::create(EagerConfig{.inline_work = 0}).value();
  auto cpu = cpu_runtime::cpu_engine_of(*rt->runtime().engine_bridge(rt->engine()).value());
  EagerTensor a = rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  const int64_t e0 = cpu->entry_count(rt->default_domain());
  EagerTensor out;
  ASSERT_TRUE(rt->with_session([&](Context& s) -> Result<void> {
    EagerTensor x = a;
    for (int i = 0; i < 5; ++i) {
      TENFERRO_TRY(x, s.matmul(x, a));
    }
    TENFERRO_TRY(out, s.sum(x));
    // Nested sessions are rejected before their callback.
    bool called = false;
    Result<void> nested = s.with_session([&](Context&) -> Result<void> {
      called = true;
      return ok();
    });
    EXPECT_EQ(nested.error().code(), ErrorCode::kReentered);
    EXPECT_FALSE(called);
    return ok();
  }));
  EXPECT_EQ(cpu->entry_count(rt->default_domain()) - e0, 1);
  EXPECT_EQ(rt->metrics().fast_session, 6);
  // A^6 summed: compare with repeated matmul outside the session.
  EagerTensor y = a;
  for (int i = 0; i < 5; ++i) y = matmul(y, a).value();
  EXPECT_EQ(item(out).value(), item(sum(y).value()).value());
  // Contention: another thread's session holds the domain.
  std::atomic<bool> inside{false}, release{false};
  std::thread holder([&] {
    (void)rt->with_session([&](Context&) -> Result<void> {
      inside = true;
      while (!release) std::this_thread::yield();
      return ok();
    });
  });
  while (!inside) std::this_thread::yield();
  bool called = false;
  Result<void> r = rt->with_session([&](Context&) -> Result<void> {
    called = true;
    return ok();
  });
  release = true;
  holder.join();
  EXPECT_EQ(r.error().code(), ErrorCode::kContended);
  EXPECT_FALSE(called);
  // An exception thrown by the callback releases the session (the next one enters).
  EXPECT_THROW((void)rt->with_session([&](Context&) -> Result<void> { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_TRUE(rt->with_session([&](Context&) -> Result<void> { return ok(); }));
}

TEST(Eager, EinsumWithoutNativeModuleIsPromotedUntilOneIsRegistered) {
  auto native = EagerRuntime::create().value();
  auto lowered = EagerRuntime::create(EagerConfig{.einsum_module = false}).value();
  std::mt19937_64 rng(7);
  const Tensor A = test_support::strided_random(rng, DType::kF64, {3, 4, 2}, -1, 1);
  const Tensor B = test_support::strided_random(rng, DType::kF64, {4, 5}, -1, 1);
  const Tensor C = test_support::strided_random(rng, DType::kF64, {5, 3}, -1, 1);
  const EagerTensor rn = einsum("ijk,jl,li->k", {adopt(*native, A), adopt(*native, B), adopt(*native, C)}).value();
  const EagerTensor rl = einsum("ijk,jl,li->k", {adopt(*lowered, A), adopt(*lowered, B), adopt(*lowered, C)}).value();
  expect_close(rl.tensor(), rn.tensor(), "lowered vs native einsum");
  EXPECT_EQ(native->metrics().promoted, 0);
  EXPECT_EQ(lowered->metrics().promoted, 1);
  EXPECT_GE(lowered->runtime().metrics().preparations, 1) << "promotion goes through the runtime's preparation";
  // Registering the module (a reconfiguration: new epoch) moves einsum to the fast path.
  ASSERT_TRUE(lowered->runtime().register_extension(lowered->engine(), cpu_runtime::cpu_einsum_module()));
  const EagerTensor again =
      einsum("ijk,jl,li->k", {adopt(*lowered, A), adopt(*lowered, B), adopt(*lowered, C)}).value();
  expect_close(again.tensor(), rn.tensor(), "after registration");
  EXPECT_EQ(lowered->metrics().promoted, 1);
  EXPECT_EQ(lowered->einsum_cache_stats().misses, 1);
}

// Context::einsum with a path policy: an explicit path and every algorithm give the
// default's values, each a plan of its own (the policy is part of the cache key); a path
// that does not fit the operands is a typed error; a runtime that would promote the
// einsum (no native module) refuses a policy it could not honour.
TEST(Eager, EinsumTakesAPathPolicy) {
  auto rt = EagerRuntime::create().value();
  std::mt19937_64 rng(9);
  const Tensor A = test_support::strided_random(rng, DType::kF64, {3, 4}, -1, 1);
  const Tensor B = test_support::strided_random(rng, DType::kF64, {4, 5}, -1, 1);
  const Tensor C = test_support::strided_random(rng, DType::kF64, {5, 2}, -1, 1);
  const EagerTensor ops[] = {adopt(*rt, A), adopt(*rt, B), adopt(*rt, C)};
  const Context c = rt->context();
  const EagerTensor want = c.einsum("ij,jk,kl->il", ops).value();
  const int64_t misses = rt->einsum_cache_stats().misses;
  einsum::PathPolicy right_first;
  right_first.algorithm = einsum::PathAlgorithm::kExplicit;
  right_first.explicit_tree = einsum::tree_from_pairs(3, {{1, 2}, {0, 1}}).value();
  for (einsum::PathAlgorithm a : {einsum::PathAlgorithm::kOptimal, einsum::PathAlgorithm::kLeftToRight,
                                  einsum::PathAlgorithm::kTreeSA, einsum::PathAlgorithm::kExplicit}) {
    einsum::PathPolicy p = a == einsum::PathAlgorithm::kExplicit ? right_first : einsum::PathPolicy{};
    p.algorithm = a;
    const EagerTensor got = c.einsum("ij,jk,kl->il", ops, p).value();
    expect_close(got.tensor(), want.tensor(), std::string(einsum::path_algorithm_name(a)).c_str());
  }
  EXPECT_EQ(rt->einsum_cache_stats().misses, misses + 4);
  einsum::PathPolicy bad = right_first;
  bad.explicit_tree = einsum::tree_from_pairs(2, {{0, 1}}).value();  // a tree over two operands
  const Result<EagerTensor> r = c.einsum("ij,jk,kl->il", ops, bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().to_string();
  auto lowered = EagerRuntime::create(EagerConfig{.einsum_module = false}).value();
  const EagerTensor lops[] = {adopt(*lowered, A), adopt(*lowered, B), adopt(*lowered, C)};
  EXPECT_EQ(lowered->context().einsum("ij,jk,kl->il", lops, right_first).error().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(lowered->context().einsum("ij,jk,kl->il", lops));
}

// Spec 004: the implementation comes from the runtime's target engine; an engine with no
// einsum module (and no kernels) gives a typed error; nothing runs on the CPU; calls never
// register modules.
TEST(Eager, TargetedDispatchNeverFallsBackToTheCpu) {
  auto cpu_rt = EagerRuntime::create().value();
  auto null_bridge = std::make_shared<NullBridge>();
  const runtime::EngineId null_id = cpu_rt->runtime().register_engine(null_bridge).value();
  auto target = EagerRuntime::adopt(cpu_rt->shared_runtime(), null_id).value();
  auto cpu = cpu_runtime::cpu_engine_of(*cpu_rt->runtime().engine_bridge(cpu_rt->engine()).value());
  const int64_t cpu_entries = cpu->entry_count(cpu_rt->default_domain());
  const uint64_t epoch = cpu_rt->runtime().epoch();
  EagerTensor a = target->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  for (int i = 0; i < 3; ++i) {
    Result<EagerTensor> r = einsum("ij,jk->ik", {a, a});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported) << r.error().to_string();
    Result<EagerTensor> s = add(a, a);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
  }
  EXPECT_EQ(null_bridge->entries.load(), 0);
  EXPECT_EQ(cpu->entry_count(cpu_rt->default_domain()), cpu_entries);
  EXPECT_EQ(cpu_rt->runtime().epoch(), epoch) << "no call registered anything";
  EXPECT_EQ(cpu_rt->runtime().extension_module("einsum", null_id), nullptr);
  EXPECT_EQ(with_session_error(*target), ErrorCode::kUnsupported);
  // Mixed contexts fail in input validation, before module selection.
  EagerTensor c = cpu_rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  const int64_t promoted = target->metrics().promoted;
  EXPECT_EQ(einsum("ij,jk->ik", {a, c}).error().code(), ErrorCode::kRuntimeMismatch);
  EXPECT_EQ(target->metrics().promoted, promoted);
}


std::shared_ptr<EagerRuntime> two_domain_runtime(CpuAffinityPolicy policy, std::optional<int32_t> default_domain = {}) {
  EagerConfig cfg;
  for (int32_t id : {0, 1}) {
    cfg.engine.domains.push_back(
        cpu::CpuDomainConfig{.id = id, .cpus = {}, .threads = 1, .external = cpu::make_tbb_executor(1).value()});
  }
  cfg.affinity = policy;
  cfg.default_domain = default_domain;
  return EagerRuntime::create(cfg).value();
}

TEST(Eager, PlacementChoosesTheDominantDomain) {
  // The pure rule.
  const InputAffinity ab[] = {{0, 100}, {1, 300}, {0, 150}};
  EXPECT_EQ(choose_domain(ab, CpuAffinityPolicy::kDominantInputBytes, 0).value(), 1);
  const InputAffinity tie[] = {{1, 64}, {0, 64}};
  EXPECT_EQ(choose_domain(tie, CpuAffinityPolicy::kDominantInputBytes, 5).value(), 0) << "ties: smaller id";
  const InputAffinity unknown[] = {{-1, 1 << 20}, {1, 8}};
  EXPECT_EQ(choose_domain(unknown, CpuAffinityPolicy::kDominantInputBytes, 0).value(), 1);
  const InputAffinity none[] = {{-1, 8}};
  EXPECT_EQ(choose_domain(none, CpuAffinityPolicy::kDominantInputBytes, 7).value(), 7);
  EXPECT_EQ(choose_domain(ab, CpuAffinityPolicy::kRequireSingleDomain, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(choose_domain(ab, CpuAffinityPolicy::kRequireSingleDomain, 0, 0).value(), 0) << "explicit wins";

  // Through eager calls on a runtime with two CPU domains.
  auto rt = two_domain_runtime(CpuAffinityPolicy::kDominantInputBytes, 1);
  Tensor big = Tensor::random_normal(DType::kF64, {4, 8}, 1).value();
  Tensor row = Tensor::random_normal(DType::kF64, {8}, 2).value();
  EagerTensor b1 = rt->from_host(big, CpuPlacement::domain(1)).value();
  EagerTensor r0 = rt->from_host(row, CpuPlacement::domain(0)).value();
  EagerTensor u = rt->from_host(big).value();  // unknown affinity
  EXPECT_EQ(add(b1, r0).value().domain(), 1) << "dominant bytes";
  EXPECT_EQ(add(u, r0).value().domain(), 0) << "unknown affinity does not count";
  EXPECT_EQ(add(u, u).value().domain(), 1) << "no affinity: the default domain";
  EagerTensor r1 = rt->from_host(row, CpuPlacement::domain(1)).value();
  EXPECT_EQ(add(r0, r1).value().domain(), 0) << "tie: smaller domain id";
  EXPECT_EQ(rt->on(CpuPlacement::domain(0)).add(b1, b1).value().domain(), 0) << "explicit placement wins";
  EXPECT_EQ(permute(b1, {1, 0}).value().domain(), 1) << "views keep their input's affinity";
  expect_close(rt->on(CpuPlacement::domain(0)).add(b1, r0).value().tensor(),
               add(b1, r0).value().tensor(), "same values in either domain");
  auto strict = two_domain_runtime(CpuAffinityPolicy::kRequireSingleDomain);
  EagerTensor s0 = strict->from_host(row, CpuPlacement::domain(0)).value();
  EagerTensor s1 = strict->from_host(row, CpuPlacement::domain(1)).value();
  EXPECT_EQ(add(s0, s1).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(strict->on(CpuPlacement::domain(1)).add(s0, s1).value().domain(), 1);
  EXPECT_EQ(rt->from_host(row, CpuPlacement::domain(3)).error().code(), ErrorCode::kOutOfRange);
}

TEST(Eager, ContextsRefreshAfterReconfiguration) {
  auto rt = EagerRuntime::create(EagerConfig{.einsum_module = false}).value();
  Context c = rt->on(CpuPlacement::domain(rt->default_domain()));
  EagerTensor a = rt->from_values<double>({2, 2}, {1, 2, 3, 4}).value();
  ASSERT_TRUE(c.einsum("ij,jk->ik", {a, a}));
  EXPECT_EQ(rt->metrics().promoted, 1);
  ASSERT_TRUE(rt->runtime().reconfigure(runtime::RuntimeConfig{.plan_cache_capacity = 8}));
  ASSERT_TRUE(rt->runtime().register_extension(rt->engine(), cpu_runtime::cpu_einsum_module()));
  // Same long-lived context: its next call sees the new registration.
  EagerTensor r = c.einsum("ij,jk->ik", {a, a}).value();
  EXPECT_EQ(rt->metrics().promoted, 1);
  EXPECT_EQ(item(r, {1, 1}).value(), c128(22, 0));
  // Registering the same module again is a no-op: no new epoch.
  const uint64_t epoch = rt->runtime().epoch();
  ASSERT_TRUE(rt->runtime().register_extension(rt->engine(), cpu_runtime::cpu_einsum_module()));
  EXPECT_EQ(rt->runtime().epoch(), epoch);
}

TEST(Eager, ImportNpyAndHostData) {
  auto rt = EagerRuntime::create().value();
  auto other = EagerRuntime::create().value();
  EagerTensor a = rt->from_values<double>({2, 3}, {1, 2, 3, 4, 5, 6}).value();
  EagerTensor shared = other->import(a).value();
  EXPECT_EQ(shared.runtime(), other.get());
  EXPECT_TRUE(shared.tensor().storage() == a.tensor().storage());
  EagerTensor copied = other->import(a, ImportMode::kCopy).value();
  EXPECT_FALSE(copied.tensor().storage() == a.tensor().storage());
  expect_close(copied.tensor(), a.tensor(), "copy");
  ASSERT_TRUE(add(shared, copied));
  const std::string path = (std::filesystem::temp_directory_path() / "tenferro_eager_test.npy").string();
  ASSERT_TRUE(write_npy(path, transpose(a).value()));
  EagerTensor back = rt->read_npy(path).value();
  std::filesystem::remove(path);
  expect_close(back.tensor(), transpose(a).value().tensor(), "npy round trip");
  EXPECT_TRUE(to_host(a).value().storage() == a.tensor().storage());
  EXPECT_EQ(to_host(EagerTensor()).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(item(a, {2, 0}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(rt->from_host(Tensor()).error().code(), ErrorCode::kInvalidArgument);
  Context z = rt->context();
  EXPECT_EQ(item(z.full({2}, c128(3, 0), DType::kI32).value(), {1}).value(), c128(3, 0));
  EXPECT_EQ(item(z.iota({2, 3}, 1).value(), {1, 2}).value(), c128(2, 0));
  EXPECT_EQ(z.ones({2}).value().dtype(), DType::kF64);
}

// A changing-shape einsum sequence (every call new shapes, as in tensor cross
// interpolation) computes the same values as fresh contractions and keeps the plan
// cache bounded. (Its per-call time is in `tenferro bench eager`, not asserted here.)
TEST(Eager, ChangingShapeEinsumSequence) {
  auto rt = EagerRuntime::create(EagerConfig{.einsum_plan_capacity = 4}).value();
  std::mt19937_64 rng(3);
  for (int64_t step = 0; step < 12; ++step) {
    const int64_t I = 1 + step % 5, J = 2 + step % 3, K = 1 + step % 4;
    const Tensor A = test_support::strided_random(rng, DType::kF64, {I, J}, -1, 1);
    const Tensor B = test_support::strided_random(rng, DType::kF64, {J, K}, -1, 1);
    const EagerTensor r = einsum("ij,jk->ik", {adopt(*rt, A), adopt(*rt, B)}).value();
    const EagerTensor m = matmul(adopt(*rt, A), adopt(*rt, B)).value();
    expect_close(r.tensor(), m.tensor(), "step " + std::to_string(step));
  }
  EXPECT_LE(rt->einsum_cache_stats().entries, 4);
}


// The remaining core ops (and integer dtypes) on random inputs, both paths, against the
// interpreter: errors must agree too (both fail or both succeed).
TEST(Eager, MoreCoreOpsMatchTheInterpreterOnBothPaths) {
  Runtimes rts = make_runtimes();
  std::mt19937_64 rng(77);
  const auto ri = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  const auto scalar_i64 = [&](int64_t v) { return Tensor::full(DType::kI64, {}, c128(static_cast<double>(v), 0)).value(); };
  int compared = 0;
  for (int iter = 0; iter < 240; ++iter) {
    const DType dtypes[] = {DType::kF64, DType::kF32, DType::kC64, DType::kI64, DType::kI32};
    const DType d = dtypes[rng() % 5];
    Shape shape;
    const int64_t rank = ri(1, 3);
    for (int64_t i = 0; i < rank; ++i) shape.push_back(ri(1, 4));
    const bool integral = d == DType::kI64 || d == DType::kI32;
    const Tensor x = integral ? Tensor::random_uniform(DType::kF64, shape, rng(), -5, 5)
                                    .value()
                                    .to_col_major()
                                    .value()
                              : test_support::strided_random(rng, d, shape, 0.3, 1.7);
    const Tensor xi = integral ? oracle(OpCode::kConvert, [&] { Attrs a; a.dtype = d; return a; }(), {x}).value() : x;
    const int kind = static_cast<int>(rng() % 10);
    const int64_t axis = ri(0, rank - 1);
    for (EagerRuntime* rt : {rts.direct.get(), rts.promoted.get()}) {
      const std::string path = rt == rts.direct.get() ? "direct" : "promoted";
      Context c = rt->context();
      const EagerTensor ex = adopt(*rt, xi);
      Result<EagerTensor> got = usage_error(ErrorCode::kInternal, "unset", "");
      Result<Tensor> want = usage_error(ErrorCode::kInternal, "unset", "");
      std::string what;
      if (kind == 0) {  // unary ops not covered by the other random test
        const OpCode ops[] = {OpCode::kSign, OpCode::kExpm1, OpCode::kLog1p, OpCode::kCos, OpCode::kRsqrt};
        const OpCode op = ops[rng() % 5];
        what = std::string(program::op_name(op));
        got = op == OpCode::kSign    ? c.sign(ex)
              : op == OpCode::kExpm1 ? c.expm1(ex)
              : op == OpCode::kLog1p ? c.log1p(ex)
              : op == OpCode::kCos   ? c.cos(ex)
                                     : c.rsqrt(ex);
        want = oracle(op, {}, {xi});
      } else if (kind == 1) {  // rem / minimum / atan2 / integer arithmetic with a nonzero divisor
        const Tensor y = oracle(OpCode::kAdd, {}, {xi, xi}).value();  // 2x, nonzero where x is
        const Tensor ones = Tensor::full(d, shape, c128(-3, 0)).value();
        const OpCode ops[] = {OpCode::kRem, OpCode::kMin, OpCode::kMul, OpCode::kSub, OpCode::kAtan2};
        OpCode op = ops[rng() % 5];
        if (is_complex(d) && (op == OpCode::kRem || op == OpCode::kMin)) op = OpCode::kMul;
        what = std::string(program::op_name(op));
        const EagerTensor ey = adopt(*rt, y), e3 = adopt(*rt, ones);
        // atan2 of complex or integer tensors fails in both (a DTypeMismatch)
        got = op == OpCode::kRem     ? c.rem(ey, e3)
              : op == OpCode::kMin   ? c.minimum(ex, ey)
              : op == OpCode::kMul   ? c.mul(ex, ey)
              : op == OpCode::kAtan2 ? c.atan2(ex, e3)
                                     : c.sub(ex, ey);
        want = op == OpCode::kRem || op == OpCode::kAtan2 ? oracle(op, {}, {op == OpCode::kRem ? y : xi, ones})
                                                          : oracle(op, {}, {xi, y});
      } else if (kind == 2) {  // dynamic_slice with clamped starts
        std::vector<EagerTensor> starts;
        std::vector<Tensor> ins{xi};
        Attrs a;
        for (int64_t i = 0; i < rank; ++i) {
          const int64_t st = ri(-2, 5);
          starts.push_back(adopt(*rt, scalar_i64(st)));
          ins.push_back(scalar_i64(st));
          a.sizes.push_back(ri(0, shape[static_cast<size_t>(i)]));
        }
        what = "dynamic_slice";
        got = c.dynamic_slice(ex, starts, a.sizes);
        want = oracle(OpCode::kDynamicSlice, a, ins);
      } else if (kind == 3) {  // dynamic_update_slice
        Shape us;
        for (int64_t e : shape) us.push_back(ri(0, e));
        const Tensor u = integral ? Tensor::full(d, us, c128(7, 0)).value() : test_support::strided_random(rng, d, us, -1, 1);
        std::vector<EagerTensor> starts;
        std::vector<Tensor> ins{xi, u};
        for (int64_t i = 0; i < rank; ++i) {
          const int64_t st = ri(-1, 4);
          starts.push_back(adopt(*rt, scalar_i64(st)));
          ins.push_back(scalar_i64(st));
        }
        what = "dynamic_update_slice";
        got = c.dynamic_update_slice(ex, adopt(*rt, u), starts);
        want = oracle(OpCode::kDynamicUpdateSlice, {}, ins);
      } else if (kind == 4) {  // scatter_add with some out-of-range indices
        const Tensor idx = Tensor::from_col_major<int64_t>({4}, {0, shape[static_cast<size_t>(axis)] - 1, -3, 0}).value();
        Shape us;
        for (int64_t i = 0; i < rank; ++i) {
          if (i == axis) {
            us.push_back(4);
          } else {
            us.push_back(shape[static_cast<size_t>(i)]);
          }
        }
        const Tensor u = integral ? Tensor::full(d, us, c128(2, 0)).value() : test_support::strided_random(rng, d, us, -1, 1);
        Attrs a;
        a.axis = axis;
        what = "scatter_add";
        got = c.scatter_add(ex, adopt(*rt, idx), adopt(*rt, u), axis);
        want = oracle(OpCode::kScatterAdd, a, {xi, idx, u});
      } else if (kind == 5) {  // embed_diag and iota
        Attrs a;
        a.axis = axis;
        what = "embed_diag";
        got = c.embed_diag(ex, axis);
        want = oracle(OpCode::kEmbedDiag, a, {xi});
        if (got && want) expect_close(got->tensor(), *want, path + " embed_diag");
        Attrs io;
        io.axis = axis;
        io.dtype = d;
        for (int64_t e : shape) io.shape.push_back(program::Extent::exact(e));
        what = "iota";
        got = c.iota(shape, axis, d);
        want = oracle(OpCode::kIota, io, {});
      } else if (kind == 6) {  // broadcast_in_dim: x into a larger result
        Shape out;
        for (int64_t i = 0; i < rank; ++i) {
          if (i == axis) out.push_back(3);
          out.push_back(shape[static_cast<size_t>(i)]);
        }
        std::vector<int64_t> dims;
        for (int64_t i = 0; i < rank; ++i) dims.push_back(i < axis ? i : i + 1);
        Attrs a;
        a.dims = dims;
        for (int64_t e : out) a.shape.push_back(program::Extent::exact(e));
        what = "broadcast_in_dim";
        got = c.broadcast_in_dim(ex, out, dims);
        want = oracle(OpCode::kBroadcastInDim, a, {xi});
      } else if (kind == 7) {  // program slice, reverse, transpose
        Attrs a;
        for (int64_t e : shape) {
          const int64_t st = ri(0, e), lim = ri(st, e);
          a.start.push_back(st);
          a.limit.push_back(lim);
          a.stride.push_back(ri(1, 2));
        }
        what = "slice";
        got = c.slice(ex, a.start, a.limit, a.stride);
        want = oracle(OpCode::kSlice, a, {xi});
        if (got && want) expect_close(got->tensor(), *want, path + " slice");
        Attrs r;
        r.dims = {axis};
        what = "reverse";
        got = c.flip(ex, r.dims);
        want = oracle(OpCode::kReverse, r, {xi});
        if (got && want) expect_close(got->tensor(), *want, path + " reverse");
        Attrs t;
        for (int64_t i = rank - 1; i >= 0; --i) t.dims.push_back(i);
        what = "transpose";
        got = c.transpose(ex);
        want = oracle(OpCode::kTranspose, t, {xi});
      } else if (kind == 8) {  // reshape (column-major order) and integer reductions
        Attrs a;
        a.shape = {program::Extent::exact(xi.numel())};
        what = "reshape";
        got = c.reshape(ex, {-1});
        want = oracle(OpCode::kReshape, a, {xi});
        if (got && want) expect_close(got->tensor(), *want, path + " reshape");
        Attrs red;
        red.dims = {axis};
        red.reduce = program::ReduceKind::kSum;
        what = "sum";
        got = c.sum(ex, {axis});
        want = oracle(OpCode::kReduce, red, {xi});
      } else {  // comparisons on any dtype (ordering ones fail on complex in both)
        Attrs a;
        a.direction = program::CompareDirection::kGe;
        const Tensor y = oracle(OpCode::kNeg, {}, {xi}).value();
        what = "ge";
        got = c.ge(ex, adopt(*rt, y));
        want = oracle(OpCode::kCompare, a, {xi, y});
      }
      ASSERT_EQ(got.has_value(), want.has_value())
          << path << " " << what << " dtype " << dtype_name(d) << ": "
          << (got ? std::string("eager ok") : got.error().to_string()) << " / "
          << (want ? std::string("oracle ok") : want.error().to_string());
      if (got) {
        expect_close(got->tensor(), *want, path + " " + what);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 300);
}

TEST(Eager, ArgsortAndSortFollowNumpy) {
  // Both paths: argsort is numpy's stable order (check_argsort), sort the values it picks;
  // strided operands, every axis, ties, NaN and signed zeros, integers and bools.
  Runtimes rts = make_runtimes();
  std::mt19937_64 rng(91);
  std::vector<double> v(60);
  for (double& e : v) {
    const int k = static_cast<int>(rng() % 7) - 3;
    e = k == 3 ? std::nan("") : k == -3 ? -0.0 : k;
  }
  const Tensor f64 = Tensor::from_col_major<double>({3, 4, 5}, v).value().permute({2, 0, 1}).value();
  const Tensor i32 = Tensor::from_col_major<int32_t>({6}, std::vector<int32_t>{4, -2, 4, 0, -2, 7}).value();
  const Tensor bl = Tensor::from_col_major<bool>({4}, std::vector<bool>{true, false, true, false}).value();
  for (EagerRuntime* rt : {rts.direct.get(), rts.promoted.get()}) {
    for (const Tensor& x : {f64, i32, bl}) {
      const EagerTensor ex = adopt(*rt, x);
      for (int64_t axis = -1; axis < x.rank(); ++axis) {
        const int64_t ax = axis < 0 ? axis + x.rank() : axis;
        const EagerTensor order = argsort(ex, axis).value();
        EXPECT_EQ(test_support::check_argsort(x, order.tensor(), ax), "") << dtype_name(x.dtype()) << " axis " << axis;
        const EagerTensor sorted = sort(ex, axis).value();
        ASSERT_EQ(sorted.shape(), x.shape());
        ASSERT_EQ(sorted.dtype(), x.dtype());
        test_support::for_each_index(x.shape(), [&](const test_support::Index& i) {
          test_support::Index from = i;
          from[static_cast<size_t>(ax)] = order.tensor().get<int64_t>(i).value();
          const c128 want = x.get_as_c128(from).value(), got = sorted.tensor().get_as_c128(i).value();
          EXPECT_TRUE(got == want || (std::isnan(got.real()) && std::isnan(want.real())));
          EXPECT_EQ(std::signbit(got.real()), std::signbit(want.real()));
        });
      }
    }
    // Complex values: numpy's lexicographic order with its NaN classes.
    const double nan = std::nan("");
    const Tensor z =
        Tensor::from_col_major<c128>({6}, std::vector<c128>{{nan, 1}, {1, nan}, {1, 2}, {1, -1}, {nan, nan}, {0, 5}})
            .value();
    const Tensor zorder = argsort(adopt(*rt, z)).value().tensor();
    EXPECT_EQ(test_support::check_argsort(z, zorder, 0), "");
    const int64_t want[] = {5, 3, 2, 1, 0, 4};  // (0,5) (1,-1) (1,2) | (1,nan) | (nan,1) | (nan,nan)
    for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(zorder.get<int64_t>({k}).value(), want[k]) << k;
    EXPECT_EQ(sort(adopt(*rt, z)).value().tensor().get_as_c128({0}).value(), c128(0, 5));
    EXPECT_EQ(sort(adopt(*rt, f64), 3).error().code(), ErrorCode::kOutOfRange);
    EXPECT_EQ(argsort(adopt(*rt, f64), -4).error().code(), ErrorCode::kOutOfRange);
  }
}

TEST(Eager, FreeFunctionsCoverTheDataMovementOps) {
  auto rt = EagerRuntime::create().value();
  EagerTensor x = rt->from_values<double>({2, 3}, {1, 2, 3, 4, 5, 6}).value();
  EagerTensor idx = rt->from_values<int64_t>({2}, {2, 0}).value();
  EagerTensor g = gather(x, idx, 1).value();  // columns 2 and 0
  EXPECT_EQ(g.shape(), Shape({2, 2}));
  EXPECT_EQ(item(g, {1, 0}).value(), c128(6, 0));
  EagerTensor sa = scatter_add(x, idx, g, 1).value();  // adds each gathered column back
  EXPECT_EQ(item(sa, {0, 2}).value(), c128(6, 0));
  EXPECT_EQ(item(sa, {1, 1}).value(), c128(5, 0));
  EagerTensor cat = concatenate({x, x}, 0).value();
  EXPECT_EQ(cat.shape(), Shape({4, 3}));
  EXPECT_EQ(item(cat, {3, 2}).value(), c128(6, 0));
  EXPECT_EQ(concatenate(std::span<const EagerTensor>{}, 0).error().code(), ErrorCode::kInvalidArgument);
  EagerTensor zero = rt->context().scalar(c128(0, 0)).value();
  EagerTensor p = pad(x, zero, {1, 0}, {0, 1}, {0, 0}).value();
  EXPECT_EQ(p.shape(), Shape({3, 4}));
  EXPECT_EQ(item(p, {1, 0}).value(), c128(1, 0));
  EXPECT_EQ(item(p, {0, 0}).value(), c128(0, 0));
  EagerTensor one = rt->from_values<int64_t>({}, {1}).value();
  const EagerTensor starts[2] = {one, one};
  EagerTensor ds = dynamic_slice(x, starts, {1, 2}).value();
  EXPECT_EQ(item(ds, {0, 1}).value(), c128(6, 0));
  EagerTensor dus = dynamic_update_slice(x, ds, starts).value();
  EXPECT_EQ(item(dus, {1, 2}).value(), c128(6, 0));
  EagerTensor v = rt->from_values<double>({3}, {1, 2, 3}).value();
  EagerTensor dm = embed_diag(v).value();
  EXPECT_EQ(dm.shape(), Shape({3, 3}));
  EXPECT_EQ(item(dm, {2, 2}).value(), c128(3, 0));
  EXPECT_EQ(item(dm, {0, 1}).value(), c128(0, 0));
  EagerTensor b = broadcast_in_dim(v, {3, 2}, {0}).value();
  EXPECT_EQ(item(b, {2, 1}).value(), c128(3, 0));
  EagerTensor s = slice(x, {0, 0}, {2, 3}, {1, 2}).value();
  EXPECT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_EQ(item(s, {1, 1}).value(), c128(6, 0));
}

}  // namespace
}  // namespace tenferro::eager
