// The runtime against a small test engine (no CPU engine linked): resolution order,
// fallback, extension modules and lowering, epochs, identity, guards before provider
// calls, the plan cache (single flight, negative caching, cycles, eviction) and explain.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <thread>

#include "tenferro/program/interpreter.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/test_support/test_extension.h"

namespace tenferro::runtime {
namespace {

using program::Attrs;
using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

struct TestContext final : EngineContext {};

// f64 add / mul / neg on equal shapes, rank-0 f64 constants, broadcast_in_dim of a scalar.
class TestKernel final : public NodeKernel {
 public:
  TestKernel(OpCode code, Shape out, double constant) : code_(code), out_(std::move(out)), constant_(constant) {}
  Result<void> run(EngineContext&, std::span<const Tensor> in, std::span<Tensor> out) const override {
    if (code_ == OpCode::kConstant) {
      TENFERRO_TRY(out[0], Tensor::full(DType::kF64, {}, constant_));
      return ok();
    }
    if (code_ == OpCode::kBroadcastInDim) {
      TENFERRO_TRY(double v, in[0].get<double>({}));
      TENFERRO_TRY(out[0], Tensor::full(DType::kF64, out_, v));
      return ok();
    }
    TENFERRO_TRY(Tensor a, in[0].to_col_major());
    TENFERRO_TRY(Tensor r, in[0].to_col_major());
    const auto* pa = static_cast<const double*>(a.storage()->data());
    auto* pr = static_cast<double*>(r.storage()->data());
    Tensor b;
    if (in.size() > 1) {
      TENFERRO_TRY(b, in[1].to_col_major());
    }
    const double* pb = in.size() > 1 ? static_cast<const double*>(b.storage()->data()) : nullptr;
    for (int64_t i = 0; i < r.numel(); ++i) {
      pr[i] = code_ == OpCode::kAdd ? pa[i] + pb[i] : code_ == OpCode::kMul ? pa[i] * pb[i] : -pa[i];
    }
    out[0] = r;
    return ok();
  }
  std::string_view provider() const override { return "test.kernel"; }

 private:
  OpCode code_;
  Shape out_;
  double constant_;
};

class TestEngine final : public EngineBridge {
 public:
  mutable std::atomic<int> prepare_calls{0}, entries{0};
  std::optional<OpCode> wants_specialization;  // answers kNeedsSpecialization for this op
  std::string_view name() const override { return "test"; }
  std::span<const int32_t> domains() const override { return domains_; }
  Result<PrepareCapability<std::shared_ptr<const NodeKernel>>> prepare_core(const NodeRequest& r) const override {
    using Cap = PrepareCapability<std::shared_ptr<const NodeKernel>>;
    ++prepare_calls;
    const OpCode c = r.op->code();
    if (wants_specialization == c) return Cap::needs_specialization("extent of axis 0");
    if (r.determinism == DeterminismMode::kReproducible && c == OpCode::kAdd) {
      return Error(ErrorStage::kPrepare, ErrorCode::kDeterminismUnsupported, "test.add", "cannot fix the order");
    }
    const bool f64 = r.output_dtypes[0] == DType::kF64;
    if (!f64 || (c != OpCode::kAdd && c != OpCode::kMul && c != OpCode::kNeg && c != OpCode::kConstant &&
                 c != OpCode::kBroadcastInDim)) {
      return Cap::unsupported("the test engine has no " + std::string(program::op_name(c)));
    }
    double constant = 0;
    if (c == OpCode::kConstant) std::memcpy(&constant, r.op->attrs().literal->bytes.data(), sizeof(double));
    return Cap::prepared(std::make_shared<TestKernel>(c, r.output_shapes[0], constant));
  }
  Result<void> enter(int32_t, FunctionRef<Result<void>(EngineContext&)> body) const override {
    ++entries;
    TestContext ctx;
    return body(ctx);
  }

 private:
  std::vector<int32_t> domains_{0, 1};
};

// test.scale natively: y = factor * x (counts its preparations).
class ScaleModule final : public ExtensionModule {
 public:
  mutable std::atomic<int> prepared{0};
  std::string_view family_id() const override { return "test.scale"; }
  Result<PrepareCapability<std::shared_ptr<const NodeKernel>>> prepare(const NodeRequest& r) const override {
    ++prepared;
    struct K final : NodeKernel {
      double f;
      explicit K(double factor) : f(factor) {}
      Result<void> run(EngineContext&, std::span<const Tensor> in, std::span<Tensor> out) const override {
        TENFERRO_TRY(Tensor y, in[0].to_col_major());
        auto* p = static_cast<double*>(y.storage()->data());
        for (int64_t i = 0; i < y.numel(); ++i) p[i] *= f;
        out[0] = y;
        if (out.size() > 1) out[1] = in[0];
        return ok();
      }
      std::string_view provider() const override { return "test.scale.native"; }
    };
    return PrepareCapability<std::shared_ptr<const NodeKernel>>::prepared(
        std::make_shared<K>(static_cast<const test_support::ScaleOp*>(r.op->extension())->factor));
  }
};

struct Rig {
  std::shared_ptr<Runtime> rt;
  std::shared_ptr<TestEngine> engine;
  EngineId id;
};
Rig make_rig(RuntimeConfig cfg = {}) {
  Rig s;
  s.rt = Runtime::create(cfg).value();
  s.engine = std::make_shared<TestEngine>();
  s.id = s.rt->register_engine(s.engine).value();
  return s;
}

// y = -(x + x) * x over f64[n, 3] (n symbolic).
program::CompiledGraph chain(OpCode extra = OpCode::kNeg) {
  ProgramBuilder b;
  const Extent n = b.symbol("n").value();
  Value x = b.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x").value();
  Value s = b.op(OpCode::kAdd, {x, x}).value();
  Value m = b.op(OpCode::kMul, {s, x}).value();
  Value y = b.op(extra, {m}).value();
  return b.finish({y}).value();
}

Tensor input(int64_t rows, uint64_t seed = 1) { return Tensor::random_normal(DType::kF64, {rows, 3}, seed).value(); }

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    const Tensor g = got[i].to_col_major().value(), w = want[i].to_col_major().value();
    for (int64_t k = 0; k < g.numel(); ++k) {
      EXPECT_DOUBLE_EQ(static_cast<const double*>(g.storage()->data())[k], static_cast<const double*>(w.storage()->data())[k]);
    }
  }
}

TEST(Runtime, PreparesOnceAndReplaysWithOneEntryPerExecution) {
  Rig s = make_rig();
  const auto g = chain();
  const std::vector<Tensor> x{input(4)};
  auto plan = s.rt->prepare_for(g, signature_of(x));
  ASSERT_TRUE(plan) << plan.error().to_string();
  EXPECT_EQ(s.engine->prepare_calls.load(), 3);
  for (int rep = 0; rep < 3; ++rep) {
    auto out = s.rt->execute_prepared(**plan, x);
    ASSERT_TRUE(out) << out.error().to_string();
    expect_same(*out, program::interpret(g, x).value());
  }
  EXPECT_EQ(s.engine->entries.load(), 3);
  EXPECT_EQ(s.engine->prepare_calls.load(), 3);
  const PreparedInfo info = prepared_info(**plan);
  EXPECT_EQ(info.nodes, 3);
  EXPECT_EQ(info.domain, 0);
  EXPECT_EQ(info.peak_bytes, 2 * 4 * 3 * 8);  // two intermediates of 96 bytes live at once
  const std::string text = s.rt->explain(**plan);
  EXPECT_NE(text.find("provider test.kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("native test"), std::string::npos) << text;
}

// Intermediates whose byte sizes overflow int64 (f64[2^60, 3]: prepared, never run): the
// peak estimate saturates at INT64_MAX and stays there through the releases. Before, a
// saturated running total less the released sizes went negative and then overflowed
// (signed overflow, which the sanitizer build reports) once several such values were
// released: here three are live at once, then two die at each of two nodes.
TEST(Runtime, PeakEstimateSaturatesForHugeIntermediates) {
  Rig s = make_rig();
  ProgramBuilder b;
  const Extent n = b.symbol("n").value();
  Value x = b.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x").value();
  Value a = b.op(OpCode::kAdd, {x, x}).value();
  Value m = b.op(OpCode::kMul, {x, x}).value();
  Value d = b.op(OpCode::kNeg, {x}).value();
  Value am = b.op(OpCode::kMul, {a, m}).value();
  Value y = b.op(OpCode::kMul, {am, d}).value();
  const auto g = b.finish({b.op(OpCode::kNeg, {y}).value()}).value();
  const std::vector<TensorSignature> sig{TensorSignature{DType::kF64, {int64_t{1} << 60, 3}}};
  auto plan = s.rt->prepare_for(g, sig);
  ASSERT_TRUE(plan) << plan.error().to_string();
  EXPECT_EQ(prepared_info(**plan).peak_bytes, std::numeric_limits<int64_t>::max());
}

TEST(Runtime, UnsupportedOpsFailAtPrepareUnlessAFallbackIsConfigured) {
  Rig s = make_rig();
  const auto g = chain(OpCode::kTanh);
  const std::vector<Tensor> x{input(2)};
  auto plan = s.rt->prepare_for(g, signature_of(x));
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(plan.error().stage(), ErrorStage::kPrepare);
  EXPECT_NE(plan.error().message().find("tanh"), std::string::npos) << plan.error().to_string();

  Rig f = make_rig(RuntimeConfig{.fallback = Fallback::kReferenceInterpreter});
  auto out = f.rt->run(g, x);
  ASSERT_TRUE(out) << out.error().to_string();
  expect_same(*out, program::interpret(g, x).value());
  auto fp = f.rt->prepare_for(g, signature_of(x)).value();
  EXPECT_NE(f.rt->explain(*fp).find("configured fallback"), std::string::npos);
}

TEST(Runtime, ExtensionsResolveToTheModuleElseTheirLowering) {
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(2), Extent::exact(3)}}).value();
  auto ys = b.extension(test_support::make_scale(2.5, 2), std::vector<Value>{x}).value();
  Value z = b.op(OpCode::kAdd, {ys[0], ys[1]}).value();
  const auto g = b.finish({z, ys[1]}).value();
  const std::vector<Tensor> in{input(2, 7)};
  const auto want = program::interpret(g, in).value();

  Rig s = make_rig();
  auto lowered = s.rt->prepare_for(g, signature_of(in)).value();
  EXPECT_NE(s.rt->explain(*lowered).find("core lowering"), std::string::npos) << s.rt->explain(*lowered);
  expect_same(s.rt->execute_prepared(*lowered, in).value(), want);

  auto module = std::make_shared<ScaleModule>();
  const uint64_t before = s.rt->epoch();
  ASSERT_TRUE(s.rt->register_extension(s.id, module));
  EXPECT_EQ(s.rt->epoch(), before + 1);
  ASSERT_TRUE(s.rt->register_extension(s.id, module));  // the same registration: a no-op
  EXPECT_EQ(s.rt->epoch(), before + 1);
  auto conflict = s.rt->register_extension(s.id, std::make_shared<ScaleModule>());
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().stage(), ErrorStage::kConfiguration);
  EXPECT_EQ(s.rt->register_extension(EngineId{9}, module).error().code(), ErrorCode::kOutOfRange);

  // The old plan is stale now; the new one runs the module.
  EXPECT_EQ(s.rt->execute_prepared(*lowered, in).error().code(), ErrorCode::kStalePreparedGraph);
  auto native = s.rt->prepare_for(g, signature_of(in)).value();
  EXPECT_EQ(module->prepared.load(), 1);
  EXPECT_NE(s.rt->explain(*native).find("test.scale.native"), std::string::npos);
  expect_same(s.rt->execute_prepared(*native, in).value(), want);

  auto replacement = std::make_shared<ScaleModule>();
  ASSERT_TRUE(s.rt->register_extension(s.id, replacement, Runtime::Registration::kReplace));
  expect_same(s.rt->run(g, in).value(), want);
  EXPECT_EQ(replacement->prepared.load(), 1);
}

TEST(Runtime, ShapesAndGuardsAreCheckedBeforeAnyProviderCall) {
  Rig s = make_rig();
  const auto g = chain();
  const std::vector<TensorSignature> wrong_cols{TensorSignature{DType::kF64, Shape{4, 2}}};
  auto r = s.rt->prepare_for(g, wrong_cols);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kShapeMismatch);
  const std::vector<TensorSignature> wrong_dtype{TensorSignature{DType::kF32, Shape{4, 3}}};
  EXPECT_EQ(s.rt->prepare_for(g, wrong_dtype).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(s.rt->prepare_for(g, {}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.engine->prepare_calls.load(), 0);

  // Execution checks the prepared signature before entering the engine.
  auto plan = s.rt->prepare_for(g, signature_of(std::vector<Tensor>{input(4)})).value();
  const int entries = s.engine->entries.load();
  auto bad = s.rt->execute_prepared(*plan, std::vector<Tensor>{input(5)});
  EXPECT_EQ(bad.error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(s.rt->execute_prepared(*plan, std::vector<Tensor>{Tensor()}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.engine->entries.load(), entries);
  // run() prepares a plan per shape instead.
  expect_same(s.rt->run(g, std::vector<Tensor>{input(5)}).value(), program::interpret(g, std::vector<Tensor>{input(5)}).value());
}

TEST(Runtime, PlacementAndIdentityAreChecked) {
  Rig s = make_rig();
  Rig other = make_rig();
  const auto g = chain();
  const std::vector<Tensor> x{input(3)};
  auto on1 = s.rt->prepare_for(g, signature_of(x), PrepareOptions{.domain = 1}).value();
  EXPECT_EQ(prepared_info(*on1).domain, 1);
  EXPECT_EQ(s.rt->prepare_for(g, signature_of(x), PrepareOptions{.domain = 7}).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.rt->prepare_for(g, signature_of(x), PrepareOptions{.engine = EngineId{3}}).error().code(),
            ErrorCode::kInvalidArgument);
  auto foreign = other.rt->execute_prepared(*on1, x);
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code(), ErrorCode::kRuntimeMismatch);
  auto empty = Runtime::create().value();
  EXPECT_EQ(empty->prepare_for(g, signature_of(x)).error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(Runtime::create(RuntimeConfig{.plan_cache_capacity = 0}).error().stage(), ErrorStage::kConfiguration);
}

TEST(Runtime, ReconfigurationMakesPlansStaleAndRunRepreparesThem) {
  Rig s = make_rig();
  const auto g = chain();
  const std::vector<Tensor> x{input(3)};
  auto plan = s.rt->prepare_for(g, signature_of(x)).value();
  EXPECT_EQ(s.rt->reconfigure(RuntimeConfig{.plan_cache_capacity = -1}).error().stage(), ErrorStage::kConfiguration);
  ASSERT_TRUE(s.rt->execute_prepared(*plan, x));  // a failed reconfiguration changes nothing
  ASSERT_TRUE(s.rt->reconfigure(RuntimeConfig{.plan_cache_capacity = 8}));
  auto stale = s.rt->execute_prepared(*plan, x);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), ErrorCode::kStalePreparedGraph);
  const int64_t preps = s.rt->plan_cache_stats().preparations;
  expect_same(s.rt->run(g, x).value(), program::interpret(g, x).value());
  EXPECT_EQ(s.rt->plan_cache_stats().preparations, preps + 1);
  EXPECT_EQ(s.rt->plan_cache_stats().capacity, 8);
}

TEST(Runtime, ProviderContractAndDeterminismErrorsAreTyped) {
  Rig s = make_rig();
  s.engine->wants_specialization = OpCode::kMul;
  const std::vector<Tensor> x{input(3)};
  auto r = s.rt->prepare_for(chain(), signature_of(x));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kProviderContract);

  Rig d = make_rig(RuntimeConfig{.determinism = DeterminismMode::kReproducible});
  auto det = d.rt->prepare_for(chain(), signature_of(x));
  ASSERT_FALSE(det);
  EXPECT_EQ(det.error().code(), ErrorCode::kDeterminismUnsupported);
}

TEST(Runtime, FailuresAreCachedPerEpoch) {
  Rig s = make_rig();
  const auto g = chain(OpCode::kTanh);
  const std::vector<Tensor> x{input(3)};
  ASSERT_FALSE(s.rt->prepare_for(g, signature_of(x)));
  const int calls = s.engine->prepare_calls.load();
  ASSERT_FALSE(s.rt->prepare_for(g, signature_of(x)));
  EXPECT_EQ(s.engine->prepare_calls.load(), calls);
  EXPECT_EQ(s.rt->plan_cache_stats().negative_hits, 1);
  // A new epoch (a fallback configured) prepares again and succeeds.
  ASSERT_TRUE(s.rt->reconfigure(RuntimeConfig{.fallback = Fallback::kReferenceInterpreter}));
  ASSERT_TRUE(s.rt->prepare_for(g, signature_of(x)));
}

TEST(Runtime, APreparationThatNeedsItselfIsACycle) {
  Rig s = make_rig();
  const auto g = chain();
  const std::vector<Tensor> x{input(3)};
  std::optional<Error> inner;
  bool once = false;
  s.rt->set_prepare_hook([&](const program::Fingerprint&) {
    if (once) return;
    once = true;
    auto r = s.rt->prepare_for(g, signature_of(x));
    if (!r) inner = r.error();
  });
  ASSERT_TRUE(s.rt->prepare_for(g, signature_of(x)));
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->code(), ErrorCode::kPreparationCycle);
}

TEST(Runtime, SingleFlightPerKeyWhileOtherKeysProceed) {
  Rig s = make_rig();
  const auto g = chain();
  const std::vector<Tensor> x{input(4)};
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const PreparedProgram>> got(16);
  for (size_t t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] { got[t] = s.rt->prepare_for(g, signature_of(x)).value(); });
  }
  for (auto& t : threads) t.join();
  for (size_t t = 1; t < 16; ++t) EXPECT_EQ(got[t], got[0]);
  const PlanCacheStats st = s.rt->plan_cache_stats();
  EXPECT_EQ(st.preparations, 1);
  EXPECT_EQ(st.misses, 1);
  EXPECT_EQ(st.hits + st.waits >= 15, true);

  // Hold the preparation of one key: another key prepares meanwhile.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, held = false;
  const auto held_graph = chain(OpCode::kNeg);
  const std::vector<Tensor> y{input(9)};
  s.rt->set_prepare_hook([&](const program::Fingerprint&) {
    std::unique_lock<std::mutex> lock(mu);
    if (held) return;  // only the first preparation waits
    held = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  std::thread slow([&] { ASSERT_TRUE(s.rt->prepare_for(held_graph, signature_of(y))); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return held; });
  }
  ASSERT_TRUE(s.rt->prepare_for(g, signature_of(std::vector<Tensor>{input(2)})));  // proceeds while held
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  slow.join();
}

TEST(Runtime, TheCacheIsBoundedAndEvictedPlansStayValid) {
  Rig s = make_rig(RuntimeConfig{.plan_cache_capacity = 2});
  const auto g = chain();
  std::vector<std::shared_ptr<const PreparedProgram>> plans;
  for (int64_t rows = 1; rows <= 3; ++rows) {
    plans.push_back(s.rt->prepare_for(g, signature_of(std::vector<Tensor>{input(rows)})).value());
  }
  PlanCacheStats st = s.rt->plan_cache_stats();
  EXPECT_EQ(st.entries, 2);
  EXPECT_EQ(st.evictions, 1);
  EXPECT_GT(st.retained_bytes, 0);
  const std::vector<Tensor> x{input(1)};
  expect_same(s.rt->execute_prepared(*plans[0], x).value(), program::interpret(g, x).value());
  s.rt->clear_plan_cache();
  st = s.rt->plan_cache_stats();
  EXPECT_EQ(st.entries, 0);
  EXPECT_EQ(st.retained_bytes, 0);
}

TEST(Runtime, TwoRuntimesAreIndependent) {
  Rig a = make_rig(RuntimeConfig{.plan_cache_capacity = 1});
  Rig b = make_rig(RuntimeConfig{.fallback = Fallback::kReferenceInterpreter});
  EXPECT_NE(a.rt->id().value, b.rt->id().value);
  const auto g = chain(OpCode::kTanh);
  const std::vector<Tensor> x{input(3)};
  EXPECT_FALSE(a.rt->run(g, x));
  expect_same(b.rt->run(g, x).value(), program::interpret(g, x).value());
  EXPECT_EQ(a.rt->plan_cache_stats().preparations, 1);
  EXPECT_EQ(b.rt->plan_cache_stats().preparations, 1);
  EXPECT_EQ(a.rt->metrics().executions, 0);
  EXPECT_EQ(b.rt->metrics().executions, 1);
}

TEST(Runtime, ACompletionErrorNamesTheNodeAndReturnsNoOutputs) {
  // Integer division by zero: the reference interpreter's completion error, through the
  // configured fallback (the test engine has no integer ops).
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kI64, {Extent::exact(2)}}).value();
  Value y = b.input(ValueType{DType::kI64, {Extent::exact(2)}}).value();
  Value q = b.op(OpCode::kDiv, {x, y}).value();
  const auto g = b.finish({q}).value();
  Rig s = make_rig(RuntimeConfig{.fallback = Fallback::kReferenceInterpreter});
  const std::vector<Tensor> in{Tensor::from_col_major<int64_t>({2}, {4, 6}).value(),
                               Tensor::from_col_major<int64_t>({2}, {2, 0}).value()};
  auto r = s.rt->run(g, in);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("node 0 (div"), std::string::npos) << r.error().to_string();
  ASSERT_NE(r.error().cause(), nullptr);
}

}  // namespace
}  // namespace tenferro::runtime
