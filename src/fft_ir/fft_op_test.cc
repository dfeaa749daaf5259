// The fft extension family: payload text, type inference, the interpreter against the
// CPU module, and the AD rules (JVP vs central differences, VJP vs JVP by the adjoint
// identity) for every kind and norm.

#include "tenferro/fft_ir/fft_op.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tenferro/compiler/compiler.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/test_support/ad_check.h"

namespace tenferro::fft_ir {
namespace {

using compiler::TraceContext;
using fft::FftSpec;
using fft::Kind;
using fft::Norm;
using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;
using test_support::vt;

FftSpec spec(Kind k, Norm n, std::vector<int64_t> axes, int64_t len = -1) {
  FftSpec s{k, n, std::move(axes)};
  s.last_length = len;
  return s;
}

TEST(FftOp, PayloadTextRoundTrips) {
  for (const FftSpec& s : {spec(Kind::kC2C, Norm::kOrtho, {0, 2}), spec(Kind::kC2CInverse, Norm::kBackward, {1}),
                           spec(Kind::kR2C, Norm::kForward, {2, 0}), spec(Kind::kC2R, Norm::kBackward, {1}, 8)}) {
    const auto op = FftOp::make(s);
    const auto back = parse_fft_payload(op->payload_text());
    ASSERT_TRUE(back) << op->payload_text() << ": " << back.error().to_string();
    EXPECT_TRUE((*back)->payload_equal(*op)) << op->payload_text();
    EXPECT_EQ((*back)->payload_hash(), op->payload_hash());
  }
  EXPECT_EQ(FftOp::make(spec(Kind::kC2R, Norm::kOrtho, {0, 1}, 7))->payload_text(), "c2r;norm=ortho;axes=0,1;n=7");
  for (const char* bad : {"", "dft;axes=0", "c2c", "c2c;axes=", "c2c;axes=0,", "c2c;axes=x", "c2c;norm=none;axes=0",
                          "c2c;axes=0;axes=1", "c2r;axes=0", "c2c;axes=0;n=4", "c2r;axes=0;n=", "r2c;axes=0;size"}) {
    const auto r = parse_fft_payload(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kParse) << bad;
  }
}

TEST(FftOp, MutatedPayloadsParseBackOrFailTyped) {
  // A deterministic mutation run over the payload grammar: every string either parses to
  // an op whose text parses to an equal op, or fails with kParse (never anything else).
  const std::vector<std::string> seeds = {"c2c;norm=ortho;axes=0,2", "c2r;norm=backward;axes=1;n=8",
                                          "r2c;norm=forward;axes=2,0,1", "c2c_inverse;axes=3"};
  const std::string alphabet = "cr2_invesomatxbkwdfl;=,-0123456789 ";
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string t = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t at = t.empty() ? 0 : rng() % (t.size() + 1);
      switch (rng() % 3) {
        case 0: t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), alphabet[rng() % alphabet.size()]); break;
        case 1:
          if (at < t.size()) t.erase(at, 1);
          break;
        default:
          if (at < t.size()) t[at] = alphabet[rng() % alphabet.size()];
      }
    }
    const auto r = parse_fft_payload(t);
    if (!r) {
      ASSERT_EQ(r.error().code(), ErrorCode::kParse) << t;
      continue;
    }
    const auto back = parse_fft_payload((*r)->payload_text());
    ASSERT_TRUE(back) << t << " -> " << (*r)->payload_text();
    ASSERT_TRUE((*back)->payload_equal(**r)) << t;
  }
}

TEST(FftOp, InferenceKeepsSymbolicBatchAxes) {
  ProgramBuilder b;
  const Extent sym = b.symbol("batch").value();
  Value x = b.input(ValueType{DType::kF32, {sym, Extent::exact(10)}}).value();
  Value y = emit_fft(b, spec(Kind::kR2C, Norm::kBackward, {1}), x).value();
  ValueType t = b.type(y).value();
  EXPECT_EQ(t.dtype, DType::kC64);
  EXPECT_FALSE(t.shape[0].is_exact());
  EXPECT_EQ(t.shape[1].exact_value(), 6);
  Value z = emit_fft(b, spec(Kind::kC2R, Norm::kBackward, {1}, 11), y).value();
  EXPECT_EQ(b.type(z).value().dtype, DType::kF32);
  EXPECT_EQ(b.type(z).value().shape[1].exact_value(), 11);
  // Errors name the stage and code.
  auto code = [&](const FftSpec& s, Value v) { return emit_fft(b, s, v).error().code(); };
  EXPECT_EQ(code(spec(Kind::kR2C, Norm::kBackward, {0}), x), ErrorCode::kUnsupported);  // symbolic transformed
  EXPECT_EQ(code(spec(Kind::kC2C, Norm::kBackward, {1}), x), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(code(spec(Kind::kC2C, Norm::kBackward, {2}), y), ErrorCode::kOutOfRange);
  EXPECT_EQ(code(spec(Kind::kC2R, Norm::kBackward, {1}, 12), y), ErrorCode::kShapeMismatch);
  EXPECT_EQ(emit_fft(b, spec(Kind::kC2C, Norm::kBackward, {1}), x).error().stage(), ErrorStage::kCompile);
}

TEST(FftOp, TextProgramsParseWithTheFamilyRegistered) {
  program::ExtensionRegistry reg;
  ASSERT_TRUE(register_fft_family(reg));
  EXPECT_FALSE(register_fft_family(reg));
  ProgramBuilder b;
  Value x = b.input(vt(DType::kF64, {3, 8})).value();
  Value y = emit_fft(b, spec(Kind::kR2C, Norm::kOrtho, {1}), x).value();
  const auto g = b.finish({y}).value();
  const std::string text = program::print_program(*g.program);
  const auto back = program::parse_program(text, &reg);
  ASSERT_TRUE(back) << back.error().to_string() << "\n" << text;
  EXPECT_EQ(program::print_program(*back->program), text);
}

// Note [FFT in StableHLO]: c2r is IFFTs then a one-axis IRFFT whose input has the
// imaginary parts of bins 0 and n/2 (even n only) cleared; r2c an RFFT then FFTs; the
// norm one multiplication. (Numbers: tests/xla, the lowered text evaluated with numpy.)
TEST(FftStableHlo, TransformsLowerToFftOpsWithTheNormsScale) {
  xla::StableHloLowerings lowerings;
  ASSERT_TRUE(register_stablehlo_lowering(lowerings));
  EXPECT_FALSE(register_stablehlo_lowering(lowerings));
  xla::StableHloOptions o;
  o.lowerings = &lowerings;
  auto lower = [&](Kind kind, Norm norm, std::vector<int64_t> axes, DType dtype, std::vector<int64_t> shape,
                   int64_t n = -1) {
    ProgramBuilder b;
    Value x = b.input(vt(dtype, shape)).value();
    fft::FftSpec sp = spec(kind, norm, std::move(axes));
    sp.last_length = n;
    Value y = emit_fft(b, sp, x).value();
    auto m = xla::lower_to_stablehlo(b.finish({y}).value(), o);
    EXPECT_TRUE(m) << m.error().to_string();
    return m ? m->text : std::string();
  };
  auto count = [](const std::string& text, const std::string& what) {
    int c = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++c;
    return c;
  };
  // c2r over axes 1, 0 with n = 6 (even): IFFT over axis 1, the edge bins of axis 0
  // (moved last) made real, IRFFT of length 6, no scale (backward).
  std::string t = lower(Kind::kC2R, Norm::kBackward, {1, 0}, DType::kC128, {4, 5}, 6);
  EXPECT_EQ(count(t, "fft_type IFFT>, fft_length = array<i64: 5>"), 1) << t;
  EXPECT_EQ(count(t, "fft_type IRFFT>, fft_length = array<i64: 6>"), 1) << t;
  EXPECT_EQ(count(t, "\"stablehlo.or\""), 1) << t;
  EXPECT_NE(t.find("value = dense<3> : tensor<4x5xi64>"), std::string::npos) << t;  // the Nyquist bin n/2
  EXPECT_EQ(count(t, "\"stablehlo.multiply\""), 0) << t;
  // Odd n: only bin 0 is cleared.
  t = lower(Kind::kC2R, Norm::kBackward, {0}, DType::kC64, {3, 2}, 5);
  EXPECT_EQ(count(t, "\"stablehlo.or\""), 0) << t;
  EXPECT_EQ(count(t, "\"stablehlo.select\""), 1) << t;
  // c2c over four axes: two FFTs (three axes, one axis); ortho: one scale of 1/sqrt(N).
  t = lower(Kind::kC2C, Norm::kOrtho, {0, 1, 2, 3}, DType::kC128, {2, 3, 4, 5});
  EXPECT_EQ(count(t, "fft_type FFT>"), 2) << t;
  EXPECT_NE(t.find("dense<(" + std::to_string(1.0 / std::sqrt(120.0)).substr(0, 8)), std::string::npos) << t;
  // r2c with the forward norm: RFFT, then 1/N.
  t = lower(Kind::kR2C, Norm::kForward, {1}, DType::kF64, {3, 8});
  EXPECT_EQ(count(t, "fft_type RFFT>, fft_length = array<i64: 8>"), 1) << t;
  EXPECT_NE(t.find("value = dense<(0.125, 0.0)> : tensor<3x5xcomplex<f64>>"), std::string::npos) << t;
}

std::shared_ptr<runtime::Runtime> cpu_runtime() {
  auto rt = runtime::Runtime::create().value();
  cpu::CpuEngineConfig cfg;
  cpu::CpuDomainConfig domain;
  domain.cpus = cpu::CpuTopology::discover().value().allowed_cpus;
  domain.threads = 2;
  cfg.domains = {domain};
  cfg.pin_workers = false;
  const auto id = cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value()).value();
  EXPECT_TRUE(rt->register_extension(id, cpu_fft_module()));
  return rt;
}

double max_diff(const Tensor& a, const Tensor& b) {
  const auto va = test_support::values(a), vb = test_support::values(b);
  EXPECT_EQ(va.size(), vb.size());
  double m = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

TEST(FftOp, InterpreterAndCpuModuleAgree) {
  auto rt = cpu_runtime();
  // rfft2 of a batch of images, a spectral filter, and back; plus a complex fft.
  ProgramBuilder b;
  Value x = b.input(vt(DType::kF64, {6, 32, 40}), "x").value();
  Value z = b.input(vt(DType::kC128, {4, 300}), "z").value();
  Value y = emit_fft(b, spec(Kind::kR2C, Norm::kBackward, {1, 2}), x).value();
  Value back = emit_fft(b, spec(Kind::kC2R, Norm::kBackward, {1, 2}, 40), y).value();
  Value zf = emit_fft(b, spec(Kind::kC2CInverse, Norm::kOrtho, {1}), z).value();
  const auto g = b.finish({y, back, zf}).value();
  const std::vector<Tensor> inputs = {Tensor::random_normal(DType::kF64, {6, 32, 40}, 1).value(),
                                      Tensor::random_normal(DType::kC128, {4, 300}, 2).value()};
  const auto want = program::interpret(g, inputs);
  ASSERT_TRUE(want) << want.error().to_string();
  auto plan = rt->prepare_for(g, runtime::signature_of(inputs));
  ASSERT_TRUE(plan) << plan.error().to_string();
  EXPECT_NE(rt->explain(**plan).find("cpu.fft"), std::string::npos) << rt->explain(**plan);
  // explain() shows the passes: rfft2 of column-major [6, 32, 40] transforms axis 2
  // (stride 192) through a buffer, axis 1 (stride 6) too.
  EXPECT_NE(rt->explain(**plan).find("pass 1: r2c axis 2"), std::string::npos) << rt->explain(**plan);
  EXPECT_NE(rt->explain(**plan).find("buffered"), std::string::npos) << rt->explain(**plan);
  for (int run = 0; run < 2; ++run) {  // the second run uses the nodes' cached plans
    const auto got = rt->execute_prepared(**plan, inputs);
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_EQ(got->size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_LT(max_diff((*want)[i], (*got)[i]), 1e-9) << "output " << i;
    EXPECT_LT(max_diff((*got)[1], inputs[0]), 1e-12) << "irfft2(rfft2(x)) = x";
  }
}

ad::AdContext context() {
  ad::AdContext c = ad::AdContext::with_standard_rules();
  EXPECT_TRUE(c.install(fft_rule()));
  return c;
}

using Body = std::function<std::vector<Value>(TraceContext&, Value)>;

void check(const std::string& name, const ValueType& in, const Body& body, uint64_t seed) {
  TraceContext tc;
  Value x = tc.input(in).value();
  auto g = tc.finish(body(tc, x));
  ASSERT_TRUE(g) << name << ": " << g.error().to_string();
  std::mt19937_64 rng(seed);
  Shape s;
  for (const Extent& e : in.shape) s.push_back(e.exact_value());
  std::vector<Tensor> xs{test_support::strided_random(rng, in.dtype, s, -1.0, 1.0)};
  test_support::check_derivatives(context(), g->graph(), xs, seed + 1, name);
}

Value transform(TraceContext& tc, const FftSpec& s, Value v) {
  return tc.extension(FftOp::make(s), std::vector<Value>{v}).value()[0];
}

TEST(FftRules, EveryKindAndNormMatchesDifferencesAndItsAdjoint) {
  uint64_t seed = 1;
  for (Norm norm : {Norm::kBackward, Norm::kOrtho, Norm::kForward}) {
    const std::string nn(fft::norm_name(norm));
    for (DType dt : {DType::kC128, DType::kC64}) {
      for (Kind k : {Kind::kC2C, Kind::kC2CInverse}) {
        check(
            std::string(fft::kind_name(k)) + " " + nn, vt(dt, {3, 5, 4}),
            [&](TraceContext& tc, Value x) {
              return std::vector<Value>{transform(tc, spec(k, norm, {2, 0}), x)};
            },
            seed++);
      }
    }
    // Even and odd halved lengths, one and two axes.
    for (int64_t n : {6, 7}) {
      check(
          "r2c " + nn + " n=" + std::to_string(n), vt(DType::kF64, {3, n}),
          [&](TraceContext& tc, Value x) { return std::vector<Value>{transform(tc, spec(Kind::kR2C, norm, {1}), x)}; },
          seed++);
      check(
          "r2c 2-d " + nn + " n=" + std::to_string(n), vt(DType::kF64, {n, 4, 3}),
          [&](TraceContext& tc, Value x) {
            return std::vector<Value>{transform(tc, spec(Kind::kR2C, norm, {1, 0}), x)};
          },
          seed++);
      check(
          "c2r " + nn + " n=" + std::to_string(n), vt(DType::kC128, {3, n / 2 + 1}),
          [&](TraceContext& tc, Value x) {
            return std::vector<Value>{transform(tc, spec(Kind::kC2R, norm, {1}, n), x)};
          },
          seed++);
      check(
          "c2r 2-d " + nn + " n=" + std::to_string(n), vt(DType::kC128, {n / 2 + 1, 5, 2}),
          [&](TraceContext& tc, Value x) {
            return std::vector<Value>{transform(tc, spec(Kind::kC2R, norm, {1, 0}, n), x)};
          },
          seed++);
    }
  }
}

TEST(FftRules, PowerSpectrumGradientMatchesDifferences) {
  // A real loss through the transforms: the power spectrum of rfft(x) and of a complex
  // signal's fft (nonlinear: |y|^2), and a round trip with a window.
  check(
      "power spectrum of rfft", vt(DType::kF64, {2, 9}),
      [](TraceContext& tc, Value x) {
        Value y = transform(tc, spec(Kind::kR2C, Norm::kOrtho, {1}), x);
        Value c = tc.op(OpCode::kConj, {y}).value();
        Value p = tc.op(OpCode::kMul, {y, c}).value();
        return std::vector<Value>{tc.op(OpCode::kReal, {p}).value()};
      },
      100);
  check(
      "irfft(rfft(x) * rfft(x))", vt(DType::kF64, {3, 8}),
      [](TraceContext& tc, Value x) {
        Value y = transform(tc, spec(Kind::kR2C, Norm::kBackward, {1}), x);
        Value sq = tc.op(OpCode::kMul, {y, y}).value();
        return std::vector<Value>{transform(tc, spec(Kind::kC2R, Norm::kBackward, {1}, 8), sq)};
      },
      101);
}

}  // namespace
}  // namespace tenferro::fft_ir
