// The linalg extension op: payload text, inference, the reference interpreter and the
// CPU engine's native module against each other and against identities.

#include "tenferro/linalg_ir/linalg_op.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tenferro/cpu/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::linalg_ir {
namespace {

using program::Extent;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

ValueType type(DType d, std::vector<int64_t> shape) {
  ValueType t{d, {}};
  for (int64_t e : shape) t.shape.push_back(Extent::exact(e));
  return t;
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const Tensor fa = a.reshape_copy({a.numel()}).value(), fb = b.reshape_copy({b.numel()}).value();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    m = std::max(m, std::abs(fa.get_as_c128({i}).value() - fb.get_as_c128({i}).value()));
  }
  return m;
}

TEST(LinalgOp, PayloadTextRoundTrips) {
  std::vector<Payload> ps;
  Payload p;
  p.kind = Kind::kSvd;
  p.svd_mode = linalg::SvdMode::kFull;
  p.gauge_fix = true;
  ps.push_back(p);
  p = Payload{};
  p.kind = Kind::kQr;
  p.qr_mode = linalg::QrMode::kR;
  ps.push_back(p);
  p = Payload{};
  p.kind = Kind::kEigh;
  p.uplo = linalg::Uplo::kUpper;
  p.vectors = false;
  ps.push_back(p);
  p = Payload{};
  p.kind = Kind::kTriangularSolve;
  p.triangular.left = false;
  p.triangular.unit_diagonal = true;
  p.triangular.transpose = linalg::Transpose::kConjTranspose;
  ps.push_back(p);
  p = Payload{};
  p.kind = Kind::kPinv;
  p.rtol = 1e-7;
  ps.push_back(p);
  for (linalg::MatrixNorm n : {linalg::MatrixNorm::kNuclear, linalg::MatrixNorm::kMinSingular,
                               linalg::MatrixNorm::kMinColumnSum, linalg::MatrixNorm::kMinRowSum}) {
    p = Payload{};
    p.kind = Kind::kMatrixNorm;
    p.norm = n;
    ps.push_back(p);
  }
  for (Kind k : {Kind::kEig, Kind::kCholesky, Kind::kLu, Kind::kSolve, Kind::kInv, Kind::kDet, Kind::kSlogdet,
                 Kind::kExpm, Kind::kExpmFrechet}) {
    p = Payload{};
    p.kind = k;
    ps.push_back(p);
  }
  for (const Payload& q : ps) {
    const auto op = LinalgOp::make(q);
    const auto back = parse_linalg_payload(op->payload_text());
    ASSERT_TRUE(back) << op->payload_text() << ": " << back.error().to_string();
    EXPECT_TRUE((*back)->payload_equal(*op)) << op->payload_text();
    EXPECT_EQ((*back)->payload_hash(), op->payload_hash());
  }
  EXPECT_EQ(parse_linalg_payload("svd;mode=wide").error().code(), ErrorCode::kParse);
  EXPECT_EQ(parse_linalg_payload("frobnicate").error().code(), ErrorCode::kParse);
  EXPECT_EQ(parse_linalg_payload("cholesky;uplo").error().code(), ErrorCode::kParse);
  EXPECT_EQ(parse_linalg_payload("pinv;rtol=-1").error().code(), ErrorCode::kParse);
  EXPECT_EQ(parse_linalg_payload("qr;uplo=lower").error().code(), ErrorCode::kParse);

  // A whole program through the text format.
  ProgramBuilder b;
  const Extent batch = b.symbol("b").value();
  Value x = b.input(ValueType{DType::kF64, {batch, Extent::exact(4), Extent::exact(3)}}, "x").value();
  Payload svd;
  svd.svd_mode = linalg::SvdMode::kFull;
  const auto outs = emit_linalg(b, svd, std::vector<Value>{x}).value();
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(b.type(outs[0]).value().shape, (std::vector<Extent>{batch, Extent::exact(4), Extent::exact(4)}));
  EXPECT_EQ(b.type(outs[1]).value().shape, (std::vector<Extent>{batch, Extent::exact(3)}));
  const auto g = b.finish({outs[1]}).value();
  const std::string text = program::print_program(*g.program);
  program::ExtensionRegistry registry;
  ASSERT_TRUE(register_linalg_family(registry));
  EXPECT_FALSE(register_linalg_family(registry));
  auto parsed = program::parse_program(text, &registry);
  ASSERT_TRUE(parsed) << parsed.error().to_string() << "\n" << text;
  EXPECT_TRUE(parsed->program->structurally_equal(*g.program));
}

TEST(LinalgOp, ExpmFrechetNeedsEOfAsTypeAndShape) {
  ProgramBuilder b;
  Value a = b.input(type(DType::kF64, {2, 3, 3})).value();
  Payload f;
  f.kind = Kind::kExpmFrechet;
  EXPECT_EQ(emit_linalg(b, f, std::vector<Value>{a}).error().code(), ErrorCode::kInvalidArgument);
  Value other = b.input(type(DType::kF64, {2, 3, 2})).value();
  EXPECT_EQ(emit_linalg(b, f, std::vector<Value>{a, other}).error().code(), ErrorCode::kShapeMismatch);
  Value c = b.input(type(DType::kC128, {2, 3, 3})).value();
  EXPECT_EQ(emit_linalg(b, f, std::vector<Value>{a, c}).error().code(), ErrorCode::kDTypeMismatch);
  Value e = b.input(type(DType::kF64, {1, 3, 3})).value();
  EXPECT_EQ(emit_linalg(b, f, std::vector<Value>{a, e}).error().code(), ErrorCode::kShapeMismatch);
  const auto ok = emit_linalg(b, f, std::vector<Value>{a, a});
  ASSERT_TRUE(ok);
  EXPECT_EQ(b.type((*ok)[0]).value().shape.size(), 3u);
}

TEST(LinalgOp, InferenceErrors) {
  ProgramBuilder b;
  const Extent n = b.symbol("n").value();
  Value rect = b.input(type(DType::kF64, {3, 4})).value();
  Value ints = b.input(type(DType::kI64, {3, 3})).value();
  Value sym = b.input(ValueType{DType::kF64, {n, n}}).value();
  Payload chol;
  chol.kind = Kind::kCholesky;
  EXPECT_EQ(emit_linalg(b, chol, std::vector<Value>{rect}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(emit_linalg(b, chol, std::vector<Value>{ints}).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(emit_linalg(b, chol, std::vector<Value>{sym}).error().code(), ErrorCode::kUnsupported);
  Payload solve;
  solve.kind = Kind::kSolve;
  EXPECT_EQ(emit_linalg(b, solve, std::vector<Value>{rect}).error().code(), ErrorCode::kInvalidArgument);
  Value sq = b.input(type(DType::kF64, {3, 3})).value();
  Value wrong = b.input(type(DType::kF64, {4, 2})).value();
  EXPECT_EQ(emit_linalg(b, solve, std::vector<Value>{sq, wrong}).error().code(), ErrorCode::kShapeMismatch);
}

std::shared_ptr<runtime::Runtime> cpu_runtime_with(bool module) {
  auto rt = runtime::Runtime::create().value();
  cpu::CpuEngineConfig cfg;
  cpu::CpuDomainConfig domain;
  domain.cpus = cpu::CpuTopology::discover().value().allowed_cpus;
  domain.threads = 2;
  cfg.domains = {domain};
  cfg.pin_workers = false;
  const auto id = cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value()).value();
  if (module) {
    EXPECT_TRUE(rt->register_extension(id, cpu_linalg_module()));
  }
  return rt;
}

TEST(LinalgOp, InterpreterAndCpuModuleAgree) {
  auto rt = cpu_runtime_with(true);
  // S = A A^T + 4 I (batched), then cholesky, solve, svd values, det and a norm of it.
  ProgramBuilder b;
  Value a = b.input(type(DType::kF64, {5, 4, 4}), "a").value();
  Value rhs = b.input(type(DType::kF64, {5, 4, 2}), "rhs").value();
  Payload chol, solve, svd, det, norm, eigh;
  chol.kind = Kind::kCholesky;
  solve.kind = Kind::kSolve;
  svd.svd_mode = linalg::SvdMode::kValuesOnly;
  det.kind = Kind::kDet;
  norm.kind = Kind::kMatrixNorm;
  norm.norm = linalg::MatrixNorm::kSpectral;
  eigh.kind = Kind::kEigh;
  const Value l = emit_linalg(b, chol, std::vector<Value>{a}).value()[0];
  const Value x = emit_linalg(b, solve, std::vector<Value>{a, rhs}).value()[0];
  const Value s = emit_linalg(b, svd, std::vector<Value>{a}).value()[0];
  const Value d = emit_linalg(b, det, std::vector<Value>{a}).value()[0];
  const Value nr = emit_linalg(b, norm, std::vector<Value>{a}).value()[0];
  const auto ev = emit_linalg(b, eigh, std::vector<Value>{a}).value();
  const auto g = b.finish({l, x, s, d, nr, ev[0], ev[1]}).value();
  std::vector<Tensor> inputs;
  {
    const Tensor r = Tensor::random_normal(DType::kF64, {5, 4, 4}, 1).value();
    std::vector<double> v(5 * 16);
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double acc = i == j ? 4.0 : 0.0;
          for (int64_t k = 0; k < 4; ++k) acc += r.get<double>({t, i, k}).value() * r.get<double>({t, j, k}).value();
          v[static_cast<size_t>((t * 4 + i) * 4 + j)] = acc;
        }
    inputs.push_back(Tensor::from_row_major<double>({5, 4, 4}, v).value());
    inputs.push_back(Tensor::random_normal(DType::kF64, {5, 4, 2}, 2).value());
  }
  const auto want = program::interpret(g, inputs);
  ASSERT_TRUE(want) << want.error().to_string();
  auto plan = rt->prepare_for(g, runtime::signature_of(inputs));
  ASSERT_TRUE(plan) << plan.error().to_string();
  EXPECT_NE(rt->explain(**plan).find("cpu.linalg"), std::string::npos) << rt->explain(**plan);
  const auto got = rt->execute_prepared(**plan, inputs);
  ASSERT_TRUE(got) << got.error().to_string();
  ASSERT_EQ(got->size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_LT(max_diff((*want)[i], (*got)[i]), 1e-10) << "output " << i;
  // Independent checks: L L^T = S, S X = rhs, det = prod(eigenvalues), ||S||_2 = max eig.
  for (int64_t t = 0; t < 5; ++t) {
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double llt = 0, sx = 0;
        for (int64_t k = 0; k < 4; ++k) {
          llt += (*got)[0].get<double>({t, i, k}).value() * (*got)[0].get<double>({t, j, k}).value();
        }
        EXPECT_NEAR(llt, inputs[0].get<double>({t, i, j}).value(), 1e-10);
        if (j < 2) {
          for (int64_t k = 0; k < 4; ++k) {
            sx += inputs[0].get<double>({t, i, k}).value() * (*got)[1].get<double>({t, k, j}).value();
          }
          EXPECT_NEAR(sx, inputs[1].get<double>({t, i, j}).value(), 1e-10);
        }
      }
    double prod = 1, top = 0;
    for (int64_t i = 0; i < 4; ++i) {
      prod *= (*got)[5].get<double>({t, i}).value();
      top = std::max(top, (*got)[5].get<double>({t, i}).value());
    }
    EXPECT_NEAR((*got)[3].get<double>({t}).value(), prod, 1e-9 * std::abs(prod));
    EXPECT_NEAR((*got)[4].get<double>({t}).value(), top, 1e-10 * top);
  }
}

// Note [Held workspace]: a prepared node keeps LAPACK's workspace between runs; repeated
// runs (LAPACK-sized items: the staged SVD, QR, eig) give the interpreter's results
// every time.
TEST(LinalgOp, PreparedNodesRunRepeatedlyWithTheirHeldWorkspace) {
  auto rt = cpu_runtime_with(true);
  ProgramBuilder b;
  Value a = b.input(type(DType::kF64, {2, 80, 70}), "a").value();
  Value sq = b.input(type(DType::kF64, {70, 70}), "sq").value();
  Payload svd, qr, eig;
  svd.kind = Kind::kSvd;
  svd.svd_mode = linalg::SvdMode::kThin;
  qr.kind = Kind::kQr;
  eig.kind = Kind::kEig;
  eig.vectors = false;
  const auto usv = emit_linalg(b, svd, std::vector<Value>{a}).value();
  const auto qrr = emit_linalg(b, qr, std::vector<Value>{a}).value();
  const auto w = emit_linalg(b, eig, std::vector<Value>{sq}).value();
  const auto g = b.finish({usv[0], usv[1], usv[2], qrr[0], qrr[1], w[0]}).value();
  const std::vector<Tensor> inputs{Tensor::random_normal(DType::kF64, {2, 80, 70}, 3).value(),
                                   Tensor::random_normal(DType::kF64, {70, 70}, 4).value()};
  const auto want = program::interpret(g, inputs);
  ASSERT_TRUE(want) << want.error().to_string();
  auto plan = rt->prepare_for(g, runtime::signature_of(inputs));
  ASSERT_TRUE(plan) << plan.error().to_string();
  for (int run = 0; run < 3; ++run) {
    const auto got = rt->execute_prepared(**plan, inputs);
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_EQ(got->size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_LT(max_diff((*want)[i], (*got)[i]), 1e-10) << "run " << run << " output " << i;
  }
}

TEST(LinalgOp, WithoutTheModuleTheRuntimeReportsUnsupported) {
  auto rt = cpu_runtime_with(false);
  ProgramBuilder b;
  Value a = b.input(type(DType::kF64, {3, 3})).value();
  Payload inv;
  inv.kind = Kind::kInv;
  const auto g = b.finish({emit_linalg(b, inv, std::vector<Value>{a}).value()[0]}).value();
  const std::vector<Tensor> in{Tensor::random_normal(DType::kF64, {3, 3}, 3).value()};
  const auto plan = rt->prepare_for(g, runtime::signature_of(in));
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().stage(), ErrorStage::kPrepare);
}

}  // namespace
}  // namespace tenferro::linalg_ir
