// The runtime's buffer plan, donation, provider overrides, family preferences and
// placement on the CPU engine (Note [Buffer plan], Note [Preparation order]).
#include <gtest/gtest.h>

#include <cmath>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/interpreter.h"

namespace tenferro {
namespace {

using program::Attrs;
using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;
using runtime::PrepareOptions;
using runtime::ProviderKind;

std::shared_ptr<runtime::Runtime> cpu_runtime_with(runtime::RuntimeConfig config = {}, bool einsum_module = true,
                                                   int domains = 1) {
  auto rt = runtime::Runtime::create(std::move(config)).value();
  const std::vector<int> cpus = cpu::CpuTopology::discover().value().allowed_cpus;
  cpu::CpuEngineConfig cfg;
  for (int d = 0; d < domains; ++d) {
    cpu::CpuDomainConfig domain;
    domain.id = d;
    domain.threads = 1;
    if (static_cast<size_t>(domains) <= cpus.size()) {
      domain.cpus = {cpus[static_cast<size_t>(d)]};
    } else {
      // Fewer allowed CPUs than domains (a one-CPU machine): domains may not share a
      // CPU, so each runs on an executor of its own.
      domain.external = cpu::make_tbb_executor(1).value();
    }
    cfg.domains.push_back(domain);
  }
  cfg.pin_workers = false;
  EXPECT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value(),
                                               cpu_runtime::CpuRegistration{.einsum_module = einsum_module}));
  return rt;
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to_col_major().value();
  const auto* p = static_cast<const double*>(c.storage()->data()) + c.offset();
  return std::vector<double>(p, p + c.numel());
}

Tensor vec(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_col_major<double>({n}, std::move(v)).value();
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << i;
}

// x -> op(x, y) repeated: add, mul, tanh in turn (the replay benchmark chain).
program::CompiledGraph chain(int nodes, int64_t n) {
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(n)}}).value();
  Value y = b.input(ValueType{DType::kF64, {Extent::exact(n)}}).value();
  Value v = x;
  for (int i = 0; i < nodes; ++i) {
    const OpCode code = i % 3 == 0 ? OpCode::kAdd : i % 3 == 1 ? OpCode::kMul : OpCode::kTanh;
    v = code == OpCode::kTanh ? b.op(code, {v}).value() : b.op(code, {v, y}).value();
  }
  return b.finish({v}).value();
}

TEST(BufferPlan, AChainRunsInPlaceInOneBuffer) {
  auto rt = cpu_runtime_with();
  const auto g = chain(100, 8);
  const std::vector<Tensor> in{vec({0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8}), vec({1, 0.5, 0.25, -1, 2, 0.1, -0.3, 0.9})};
  auto plan = rt->prepare_for(g, runtime::signature_of(in)).value();
  const runtime::PreparedInfo info = runtime::prepared_info(*plan);
  // The first node writes a new buffer; 98 continue it in place; the last one writes the
  // program output (never a workspace buffer).
  EXPECT_EQ(info.planned_buffers, 1);
  EXPECT_EQ(info.workspace_bytes, 64);
  EXPECT_EQ(info.in_place_nodes, 98);
  const auto want = program::interpret(g, in).value();
  for (int rep = 0; rep < 3; ++rep) {
    auto got = rt->execute_prepared(*plan, in);
    ASSERT_TRUE(got) << got.error().to_string();
    expect_near(values((*got)[0]), values(want[0]));
  }
  EXPECT_NE(rt->explain(*plan).find("into buffer b0 in place of %"), std::string::npos) << rt->explain(*plan);
}

// Values die and their buffers serve later values (best fit); views keep their base's
// buffer alive; outputs stay intact across executions.
TEST(BufferPlan, DeadBuffersAreReusedAndViewsKeepTheirBaseAlive) {
  auto rt = cpu_runtime_with();
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(4), Extent::exact(3)}}).value();
  Value a = b.op(OpCode::kExp, {x}).value();                                       // buffer A
  Value at = b.op(OpCode::kTranspose, {a}, Attrs{.dims = {1, 0}}).value();         // view of A
  Value s = b.op(OpCode::kSin, {x}).value();                                       // buffer B
  Value c = b.op(OpCode::kAdd, {s, x}).value();                                    // in place of s (B)
  Value ct = b.op(OpCode::kTranspose, {c}, Attrs{.dims = {1, 0}}).value();         // view of B
  Value d = b.op(OpCode::kMul, {at, ct}).value();  // A and B die here: d takes one of them in place
  Value e = b.op(OpCode::kCos, {d}).value();       // in place of d
  Value f = b.op(OpCode::kNeg, {x}).value();       // a free buffer of A/B is reused
  Value r = b.op(OpCode::kReduce, {f}, Attrs{.dims = {0}, .reduce = program::ReduceKind::kSum}).value();
  Value out = b.op(OpCode::kSub, {e, b.op(OpCode::kBroadcastInDim, {r}, Attrs{.dims = {0}, .shape = {Extent::exact(3), Extent::exact(4)}}).value()}).value();
  const auto g = b.finish({out, at}).value();  // `at` is an output: A is never planned
  const Tensor x1 = Tensor::random_normal(DType::kF64, {4, 3}, 7).value();
  const Tensor x2 = Tensor::random_normal(DType::kF64, {4, 3}, 8).value();
  auto plan = rt->prepare_for(g, runtime::signature_of(std::vector<Tensor>{x1})).value();
  const runtime::PreparedInfo info = runtime::prepared_info(*plan);
  EXPECT_LE(info.planned_buffers, 2) << rt->explain(*plan);
  EXPECT_GE(info.in_place_nodes, 2) << rt->explain(*plan);
  const auto want1 = program::interpret(g, std::vector<Tensor>{x1}).value();
  const auto want2 = program::interpret(g, std::vector<Tensor>{x2}).value();
  auto got1 = rt->execute_prepared(*plan, std::vector<Tensor>{x1}).value();
  auto got2 = rt->execute_prepared(*plan, std::vector<Tensor>{x2}).value();
  for (size_t i = 0; i < 2; ++i) {
    expect_near(values(got1[i]), values(want1[i]));  // unchanged by the second execution
    expect_near(values(got2[i]), values(want2[i]));
  }
}

// A value read through a view of itself at the node that consumes it (u + u^T) is not
// overwritten in place; the same for a donated argument.
TEST(BufferPlan, NoInPlaceWriteWhileAViewOfTheInputIsRead) {
  auto rt = cpu_runtime_with();
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(3)}}).value();
  Value u = b.op(OpCode::kExp, {x}).value();
  Value ut = b.op(OpCode::kTranspose, {u}, Attrs{.dims = {1, 0}}).value();
  Value s = b.op(OpCode::kAdd, {u, ut}).value();
  Value xt = b.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
  Value t = b.op(OpCode::kSub, {x, xt}).value();
  Value out = b.op(OpCode::kMul, {b.op(OpCode::kNeg, {s}).value(), t}).value();
  const auto g = b.finish({out}).value();
  const Tensor xv = Tensor::random_normal(DType::kF64, {3, 3}, 21).value();
  const auto want = program::interpret(g, std::vector<Tensor>{xv}).value();
  auto plan = rt->prepare_for(g, runtime::signature_of(std::vector<Tensor>{xv}), PrepareOptions{.donate_arguments = {0}})
                  .value();
  EXPECT_EQ(runtime::prepared_info(*plan).donating_nodes, 0) << rt->explain(*plan);
  std::vector<Tensor> args{xv.clone().value()};
  auto got = rt->execute_prepared(*plan, args);
  ASSERT_TRUE(got) << got.error().to_string() << "\n" << rt->explain(*plan);
  expect_near(values((*got)[0]), values(want[0]));
}

TEST(BufferPlan, DeclaredArgumentsAreDonatedOnlyWhenExclusive) {
  auto rt = cpu_runtime_with();
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(5)}}).value();
  Value dx = b.input(ValueType{DType::kF64, {Extent::exact(5)}}).value();
  Value step = b.op(OpCode::kMul, {dx, dx}).value();
  Value next = b.op(OpCode::kAdd, {x, step}).value();  // x_next = x + dx*dx, in place of x
  const auto g = b.finish({next}).value();
  const std::vector<double> xv{1, 2, 3, 4, 5}, dv{0.5, -1, 2, 0, 3};
  const std::vector<double> want{1.25, 3, 7, 4, 14};
  auto sig = runtime::signature_of(std::vector<Tensor>{vec(xv), vec(dv)});
  auto plan = rt->prepare_for(g, sig, PrepareOptions{.donate_arguments = {0}}).value();
  EXPECT_EQ(runtime::prepared_info(*plan).donating_nodes, 1);
  EXPECT_NE(rt->explain(*plan).find("in place of argument 0 when it is donated"), std::string::npos);

  // The only handle: the result is computed in x's storage.
  std::vector<Tensor> args{vec(xv), vec(dv)};
  const void* x_data = args[0].storage()->data();
  auto out = rt->execute_prepared(*plan, args).value();
  EXPECT_EQ(out[0].storage()->data(), x_data);
  EXPECT_EQ(values(out[0]), want);
  EXPECT_EQ(rt->metrics().donated_arguments, 1);

  // Another handle to x's storage exists: no donation, x is untouched.
  std::vector<Tensor> args2{vec(xv), vec(dv)};
  const Tensor keep = args2[0];
  auto out2 = rt->execute_prepared(*plan, args2).value();
  EXPECT_NE(out2[0].storage()->data(), keep.storage()->data());
  EXPECT_EQ(values(out2[0]), want);
  EXPECT_EQ(values(keep), xv);
  EXPECT_EQ(rt->metrics().donated_arguments, 1);

  // Undeclared: never donated. Invalid declarations are typed prepare errors.
  auto plain = rt->prepare_for(g, sig).value();
  EXPECT_EQ(runtime::prepared_info(*plain).donating_nodes, 0);
  std::vector<Tensor> args3{vec(xv), vec(dv)};
  const void* x3 = args3[0].storage()->data();
  EXPECT_NE(rt->execute_prepared(*plain, args3).value()[0].storage()->data(), x3);
  EXPECT_EQ(values(args3[0]), xv);
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{2}, std::vector<int32_t>{-1}, std::vector<int32_t>{0, 0}}) {
    auto r = rt->prepare_for(g, sig, PrepareOptions{.donate_arguments = bad});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.error().stage(), ErrorStage::kPrepare);
  }
  // An argument that is still needed later, or is itself an output, is not donated.
  ProgramBuilder b2;
  Value x2 = b2.input(ValueType{DType::kF64, {Extent::exact(5)}}).value();
  Value y2 = b2.op(OpCode::kNeg, {x2}).value();
  const auto g2 = b2.finish({y2, x2}).value();
  auto p2 = rt->prepare_for(g2, std::vector<runtime::TensorSignature>{sig[0]}, PrepareOptions{.donate_arguments = {0}});
  ASSERT_TRUE(p2);
  EXPECT_EQ(runtime::prepared_info(**p2).donating_nodes, 0);
}

program::CompiledGraph einsum_graph() {
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(2), Extent::exact(3)}}).value();
  Value y = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(2)}}).value();
  Value z = einsum::emit_einsum(b, "ij,jk->ik", std::vector<Value>{x, y}).value();
  return b.finish({z}).value();
}

TEST(Resolution, OverridesAndFamilyPreferencesChooseTheProvider) {
  const auto g = einsum_graph();
  const std::vector<Tensor> in{Tensor::random_normal(DType::kF64, {2, 3}, 1).value(),
                               Tensor::random_normal(DType::kF64, {3, 2}, 2).value()};
  const auto want = program::interpret(g, in).value();
  const auto sig = runtime::signature_of(in);
  auto rt = cpu_runtime_with();
  // Default: the native module.
  auto native = rt->prepare_for(g, sig).value();
  EXPECT_NE(rt->explain(*native).find("cpu.einsum"), std::string::npos);
  // Override to the lowering.
  auto lowered = rt->prepare_for(g, sig, PrepareOptions{.overrides = {{0, ProviderKind::kLowering}}}).value();
  const std::string how = rt->explain(*lowered);
  EXPECT_NE(how.find("core lowering"), std::string::npos) << how;
  EXPECT_NE(how.find("[override of op 0]"), std::string::npos) << how;
  expect_near(values(rt->execute_prepared(*lowered, in).value()[0]), values(want[0]));
  // An override that cannot be satisfied fails: nothing else is tried.
  auto forced = rt->prepare_for(g, sig, PrepareOptions{.overrides = {{0, ProviderKind::kFallback}}});
  ASSERT_FALSE(forced);
  EXPECT_EQ(forced.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(forced.error().message().find("override to fallback"), std::string::npos) << forced.error().to_string();
  for (const std::vector<runtime::ProviderOverride>& bad :
       {std::vector<runtime::ProviderOverride>{{1, ProviderKind::kNative}},
        std::vector<runtime::ProviderOverride>{{0, ProviderKind::kNative}, {0, ProviderKind::kLowering}}}) {
    auto r = rt->prepare_for(g, sig, PrepareOptions{.overrides = bad});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
  // A runtime-wide family preference: lowering first.
  auto pref = cpu_runtime_with(runtime::RuntimeConfig{.family_preferences = {{"einsum", ProviderKind::kLowering}}});
  auto p = pref->prepare_for(g, sig).value();
  EXPECT_NE(pref->explain(*p).find("core lowering"), std::string::npos);
  expect_near(values(pref->execute_prepared(*p, in).value()[0]), values(want[0]));
  // A preference for the fallback that is not configured moves on (native next).
  auto fb = cpu_runtime_with(runtime::RuntimeConfig{.family_preferences = {{"einsum", ProviderKind::kFallback}}});
  auto pf = fb->prepare_for(g, sig).value();
  EXPECT_NE(fb->explain(*pf).find("cpu.einsum"), std::string::npos) << fb->explain(*pf);
  // Two preferences for one family: a configuration error.
  auto dup = runtime::Runtime::create(runtime::RuntimeConfig{
      .family_preferences = {{"einsum", ProviderKind::kLowering}, {"einsum", ProviderKind::kNative}}});
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().stage(), ErrorStage::kConfiguration);
}

// One symbolic einsum graph run on a sequence of changing shapes: one plan per
// signature, each a distinct cache entry; repeats hit.
TEST(PlanCache, ChangingShapeEinsumsPopulateDistinctEntries) {
  auto rt = cpu_runtime_with(runtime::RuntimeConfig{.plan_cache_capacity = 64});
  ProgramBuilder b;
  Extent m = b.symbol("m").value(), k = b.symbol("k").value(), n = b.symbol("n").value();
  Value x = b.input(ValueType{DType::kF64, {m, k}}).value();
  Value y = b.input(ValueType{DType::kF64, {k, n}}).value();
  const auto g = b.finish({einsum::emit_einsum(b, "ij,jk->ik", std::vector<Value>{x, y}).value()}).value();
  constexpr int kShapes = 12;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < kShapes; ++i) {
      const Tensor xv = Tensor::random_normal(DType::kF64, {2 + i % 3, 1 + i}, 10 + static_cast<uint64_t>(i)).value();
      const Tensor yv = Tensor::random_normal(DType::kF64, {1 + i, 3 + i % 2}, 50 + static_cast<uint64_t>(i)).value();
      auto out = rt->run(g, std::vector<Tensor>{xv, yv});
      ASSERT_TRUE(out) << out.error().to_string();
      expect_near(values((*out)[0]), values(program::interpret(g, std::vector<Tensor>{xv, yv}).value()[0]));
    }
  }
  const runtime::PlanCacheStats st = rt->plan_cache_stats();
  EXPECT_EQ(st.entries, kShapes);
  EXPECT_EQ(st.preparations, kShapes);
  EXPECT_EQ(st.misses, kShapes);
  EXPECT_EQ(st.hits, kShapes);
}

TEST(Placement, TheDomainHoldingMostInputBytesIsChosen) {
  auto rt = cpu_runtime_with({}, true, 2);
  const auto g = chain(3, 6);
  const auto place = [](const Tensor& t, Placement p) {
    return Tensor::from_storage(t.dtype(), t.storage(), t.layout(), p).value();
  };
  const Tensor x = Tensor::random_normal(DType::kF64, {6}, 3).value();
  const Tensor y = Tensor::random_normal(DType::kF64, {6}, 4).value();
  const auto domain_of = [&](std::vector<Tensor> in, PrepareOptions o = {}) {
    return runtime::prepared_info(*rt->prepare_for(g, runtime::signature_of(in), o).value()).domain;
  };
  EXPECT_EQ(domain_of({x, y}), 0);  // no placed input: the engine's first domain
  EXPECT_EQ(domain_of({place(x, Placement::cpu_domain(1)), y}), 1);
  EXPECT_EQ(domain_of({place(x, Placement::cpu_domain(1)), place(y, Placement::cpu_domain(0))}), 0);  // tie: lower id
  EXPECT_EQ(domain_of({place(x, Placement::cpu_domain(1)), y}, PrepareOptions{.domain = 0}), 0);  // explicit wins
  EXPECT_EQ(domain_of({place(x, Placement::cpu_domain(7)), y}), 0);  // not a domain of this engine
  // Results do not depend on the placement.
  const std::vector<Tensor> in{place(x, Placement::cpu_domain(1)), y};
  auto out = rt->run(g, in);
  ASSERT_TRUE(out) << out.error().to_string();
  expect_near(values((*out)[0]), values(program::interpret(g, std::vector<Tensor>{x, y}).value()[0]));
}

}  // namespace
}  // namespace tenferro
