// The linalg family's AD rules: JVP vs central differences and VJP vs JVP (adjoint
// identity) for every decomposition and solver, real and complex, batched; truncated
// SVD; nearly degenerate spectra.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "tenferro/ad/ad.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/linalg_ir/linalg_op.h"
#include "tenferro/test_support/ad_check.h"

namespace tenferro::linalg_ir {
namespace {

using compiler::TraceContext;
using program::Attrs;
using program::Extent;
using program::OpCode;
using program::Value;
using program::ValueType;
using test_support::check_derivatives;
using test_support::vt;

ad::AdContext context(double broadening = 1e-12) {
  ad::AdContext c = ad::AdContext::with_standard_rules();
  EXPECT_TRUE(c.install(linalg_rule({.broadening = broadening})));
  return c;
}


std::vector<Value> linalg(TraceContext& tc, Payload p, std::vector<Value> ins) {
  return tc.extension(LinalgOp::make(p), ins).value();
}

Value einsum(TraceContext& tc, const std::string& s, std::vector<Value> ins) {
  return tc.extension(einsum::EinsumOp::make(s).value(), ins).value()[0];
}

// x + c * I on the last two axes (x square [.., n, n]).
Value shift(TraceContext& tc, Value x, double c) {
  ValueType t = tc.type(x).value();
  const int64_t n = t.shape.back().exact_value();
  ValueType d = t;
  std::vector<c128> eye(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) eye[static_cast<size_t>(i * n + i)] = c;
  Value e = tc.constant(test_support::make(t.dtype, {n, n}, eye)).value();
  Attrs a{.dims = {t.rank() - 2, t.rank() - 1}, .shape = t.shape};
  Value eb = tc.op(OpCode::kBroadcastInDim, {e}, a).value();
  return tc.op(OpCode::kAdd, {x, eb}).value();
}

Value abs2(TraceContext& tc, Value x) {
  Value c = tc.op(OpCode::kConj, {x}).value();
  return tc.op(OpCode::kMul, {x, c}).value();
}

using Body = std::function<std::vector<Value>(TraceContext&, std::vector<Value>)>;

void check(const std::string& name, std::vector<ValueType> inputs, const Body& body, uint64_t seed,
           const ad::AdContext& ctx) {
  TraceContext tc;
  std::vector<Value> ins;
  for (const ValueType& t : inputs) ins.push_back(tc.input(t).value());
  auto g = tc.finish(body(tc, ins));
  ASSERT_TRUE(g) << name << ": " << g.error().to_string();
  std::mt19937_64 rng(seed);
  std::vector<Tensor> xs;
  for (const ValueType& t : inputs) {
    Shape s;
    for (const Extent& e : t.shape) s.push_back(e.exact_value());
    xs.push_back(test_support::strided_random(rng, t.dtype, s, -1.0, 1.0));
  }
  check_derivatives(ctx, g->graph(), xs, seed + 1, name);
}

TEST(LinalgRules, ExpmIsItsFrechetDerivative) {
  const auto ctx = context();
  uint64_t seed = 500;
  for (DType d : {DType::kF64, DType::kC128}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 4}, std::vector<int64_t>{2, 3, 3}}) {
      check(
          "expm " + std::string(dtype_name(d)), {vt(d, shape)},
          [](TraceContext& tc, std::vector<Value> in) { return linalg(tc, Payload{.kind = Kind::kExpm}, {in[0]}); },
          seed++, ctx);
    }
    // Scaled past the largest Padé degree's theta (squarings), through a nonlinear loss.
    check(
        "expm scaled " + std::string(dtype_name(d)), {vt(d, {3, 3})},
        [](TraceContext& tc, std::vector<Value> in) {
          Value big =
              tc.op(OpCode::kMul,
                    {in[0],
                     tc.op(OpCode::kBroadcastInDim,
                           {tc.constant(test_support::make(tc.type(in[0]).value().dtype, {}, {c128(6.0)})).value()},
                           Attrs{.shape = tc.type(in[0]).value().shape})
                         .value()})
                  .value();
          Value e = linalg(tc, Payload{.kind = Kind::kExpm}, {big})[0];
          return std::vector<Value>{abs2(tc, e)};
        },
        seed++, ctx);
  }
  // Second derivatives: the gradient program of sum(expm(A) * W) differentiated again
  // (expm_frechet's rule in A), against differences of the gradient and its adjoint.
  for (DType d : {DType::kF64, DType::kC128}) {
    for (double scale : {0.3, 4.0}) {
      TraceContext tc;
      Value a = tc.input(vt(d, {3, 3})).value();
      Value s = tc.op(OpCode::kMul, {a, tc.op(OpCode::kBroadcastInDim,
                                              {tc.constant(test_support::make(d, {}, {c128(scale)})).value()},
                                              Attrs{.shape = tc.type(a).value().shape})
                                            .value()})
                    .value();
      Value e = linalg(tc, Payload{.kind = Kind::kExpm}, {s})[0];
      Value w = tc.constant(test_support::make(d, {3, 3}, {0.3, -1.0, 0.5, 0.2, 0.7, -0.4, 1.1, 0.1, -0.6})).value();
      Value p = tc.op(OpCode::kReal, {tc.op(OpCode::kMul, {e, w}).value()}).value();
      if (d == DType::kF64) p = tc.op(OpCode::kMul, {e, w}).value();
      Value t = tc.op(OpCode::kReduce, {p}, Attrs{.dims = {0, 1}}).value();
      auto g = tc.finish({t}).value();
      auto grad = ctx.grad(g.graph());
      ASSERT_TRUE(grad) << grad.error().to_string();
      std::mt19937_64 rng(seed++);
      std::vector<Tensor> xs{test_support::strided_random(rng, d, Shape{3, 3}, -1.0, 1.0)};
      test_support::check_derivatives(ctx, *grad, xs, seed++,
                                      "second derivative of expm, scale " + std::to_string(scale));
    }
  }
}

TEST(LinalgRules, Svd) {
  const auto ctx = context();
  uint64_t seed = 1;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 3}, std::vector<int64_t>{2, 3, 5}}) {
    check("svd real", {vt(DType::kF64, shape)}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kSvd}, {in[0]});
    }, seed++, ctx);
    check("svd complex, phase-invariant outputs", {vt(DType::kC128, shape)}, [](TraceContext& tc, std::vector<Value> in) {
      auto o = linalg(tc, Payload{.kind = Kind::kSvd}, {in[0]});
      return std::vector<Value>{o[1], abs2(tc, o[0]), abs2(tc, o[2]), einsum(tc, "...ik,...kj->...ij", {o[0], o[2]})};
    }, seed++, ctx);
    check("svd complex gauge-fixed", {vt(DType::kC128, shape)}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kSvd, .gauge_fix = true}, {in[0]});
    }, seed++, ctx);
    check("svd values", {vt(DType::kC128, shape)}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kSvd, .svd_mode = linalg::SvdMode::kValuesOnly}, {in[0]});
    }, seed++, ctx);
  }
}

TEST(LinalgRules, TruncatedSvdReconstructionMatchesFiniteDifferences) {
  const auto ctx = context();
  for (DType d : {DType::kF64, DType::kC128}) {
    check("truncated svd " + std::string(dtype_name(d)), {vt(d, {5, 4})}, [](TraceContext& tc, std::vector<Value> in) {
      auto o = linalg(tc, Payload{.kind = Kind::kSvd}, {in[0]});
      Value u = tc.op(OpCode::kSlice, {o[0]}, Attrs{.start = {0, 0}, .limit = {5, 2}, .stride = {1, 1}}).value();
      Value s = tc.op(OpCode::kSlice, {o[1]}, Attrs{.start = {0}, .limit = {2}, .stride = {1}}).value();
      Value vh = tc.op(OpCode::kSlice, {o[2]}, Attrs{.start = {0, 0}, .limit = {2, 4}, .stride = {1, 1}}).value();
      Value sc = tc.op(OpCode::kConvert, {s}, Attrs{.dtype = tc.type(u).value().dtype}).value();
      return std::vector<Value>{einsum(tc, "ik,k,kj->ij", {u, sc, vh})};
    }, 40, ctx);
  }
}

TEST(LinalgRules, NearlyDegenerateSpectraStayFinite) {
  // A = Q diag(1, 1 + 1e-13, 0.5, 0) Qᵀ with Q orthogonal (exactly degenerate pairs, a
  // zero singular value); the gradient of a gauge-invariant loss stays finite.
  const auto ctx = context(1e-12);
  TraceContext tc;
  Value m = tc.input(vt(DType::kF64, {4, 4})).value();
  auto qr = linalg(tc, Payload{.kind = Kind::kQr}, {m});
  Tensor sv = Tensor::from_col_major<double>({4}, std::vector<double>{1.0, 1.0 + 1e-13, 0.5, 0.0}).value();
  Value s = tc.constant(sv).value();
  Value a = einsum(tc, "ik,k,jk->ij", {qr[0], s, qr[0]});
  auto svd = linalg(tc, Payload{.kind = Kind::kSvd}, {a});
  auto eig = linalg(tc, Payload{.kind = Kind::kEigh}, {a});
  Value loss1 = einsum(tc, "ij,ij->", {svd[0], svd[0]});
  Value loss2 = einsum(tc, "ij,ij->", {eig[1], a});
  Value l = tc.op(OpCode::kAdd, {loss1, loss2}).value();
  auto g = tc.finish({tc.op(OpCode::kAdd, {l, tc.op(OpCode::kReduce, {svd[1]}, Attrs{.dims = {0}}).value()}).value()}).value();
  auto grad = ctx.grad(g.graph());
  ASSERT_TRUE(grad) << grad.error().to_string();
  std::mt19937_64 rng(3);
  auto out = test_support::run(*grad, {test_support::strided_random(rng, DType::kF64, {4, 4}, -1, 1)});
  ASSERT_EQ(out.size(), 2u);
  for (const c128& z : test_support::values(out[1])) EXPECT_TRUE(std::isfinite(z.real())) << z;
}

TEST(LinalgRules, EighQrCholeskyLu) {
  const auto ctx = context();
  uint64_t seed = 100;
  for (DType d : {DType::kF64, DType::kC128}) {
    const std::string dn(dtype_name(d));
    for (linalg::Uplo uplo : {linalg::Uplo::kLower, linalg::Uplo::kUpper}) {
      check("eigh " + dn, {vt(d, {2, 4, 4})}, [uplo](TraceContext& tc, std::vector<Value> in) {
        auto o = linalg(tc, Payload{.kind = Kind::kEigh, .uplo = uplo}, {in[0]});
        return std::vector<Value>{o[0], abs2(tc, o[1])};
      }, seed++, ctx);
      check("cholesky " + dn, {vt(d, {3, 3})}, [uplo](TraceContext& tc, std::vector<Value> in) {
        Value a = shift(tc, einsum(tc, "ik,jk->ij", {in[0], tc.op(OpCode::kConj, {in[0]}).value()}), 3.0);
        return linalg(tc, Payload{.kind = Kind::kCholesky, .uplo = uplo}, {a});
      }, seed++, ctx);
    }
    check("eigvalsh " + dn, {vt(d, {3, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kEigh, .vectors = false}, {in[0]});
    }, seed++, ctx);
    check("qr " + dn, {vt(d, {5, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kQr}, {in[0]});
    }, seed++, ctx);
    check("qr r " + dn, {vt(d, {2, 4, 4})}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kQr, .qr_mode = linalg::QrMode::kR}, {in[0]});
    }, seed++, ctx);
    for (linalg::QrMode mode : {linalg::QrMode::kReduced, linalg::QrMode::kComplete, linalg::QrMode::kR}) {
      check("wide qr " + dn, {vt(d, {2, 3, 5})}, [mode](TraceContext& tc, std::vector<Value> in) {
        return linalg(tc, Payload{.kind = Kind::kQr, .qr_mode = mode}, {in[0]});
      }, seed++, ctx);
    }
    check("lu " + dn, {vt(d, {4, 4})}, [](TraceContext& tc, std::vector<Value> in) {
      auto o = linalg(tc, Payload{.kind = Kind::kLu}, {shift(tc, in[0], 3.0)});
      return std::vector<Value>{o[1], o[2]};
    }, seed++, ctx);
  }
}

TEST(LinalgRules, SolversInverseDeterminantsNorms) {
  const auto ctx = context();
  uint64_t seed = 200;
  for (DType d : {DType::kF64, DType::kC128}) {
    const std::string dn(dtype_name(d));
    check("solve " + dn, {vt(d, {2, 3, 3}), vt(d, {2, 3, 2})}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kSolve}, {shift(tc, in[0], 3.0), in[1]});
    }, seed++, ctx);
    for (bool left : {true, false}) {
      for (linalg::Transpose t : {linalg::Transpose::kNone, linalg::Transpose::kTranspose, linalg::Transpose::kConjTranspose}) {
        for (bool unit : {false, true}) {
          linalg::TriangularOptions o;
          o.left = left;
          o.transpose = t;
          o.unit_diagonal = unit;
          o.uplo = unit ? linalg::Uplo::kLower : linalg::Uplo::kUpper;
          check("triangular_solve " + dn, {vt(d, {3, 3}), vt(d, left ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3})},
                [o](TraceContext& tc, std::vector<Value> in) {
                  Payload p{.kind = Kind::kTriangularSolve};
                  p.triangular = o;
                  return linalg(tc, p, {shift(tc, in[0], 3.0), in[1]});
                },
                seed++, ctx);
        }
      }
    }
    check("inv det slogdet " + dn, {vt(d, {2, 3, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      Value a = shift(tc, in[0], 3.0);
      auto inv = linalg(tc, Payload{.kind = Kind::kInv}, {a});
      auto det = linalg(tc, Payload{.kind = Kind::kDet}, {a});
      auto sl = linalg(tc, Payload{.kind = Kind::kSlogdet}, {a});
      return std::vector<Value>{inv[0], det[0], sl[0], sl[1]};
    }, seed++, ctx);
    for (linalg::MatrixNorm n :
         {linalg::MatrixNorm::kFrobenius, linalg::MatrixNorm::kNuclear, linalg::MatrixNorm::kSpectral,
          linalg::MatrixNorm::kOne, linalg::MatrixNorm::kInf, linalg::MatrixNorm::kMinSingular,
          linalg::MatrixNorm::kMinColumnSum, linalg::MatrixNorm::kMinRowSum}) {
      check("matrix_norm " + dn, {vt(d, {2, 4, 3})}, [n](TraceContext& tc, std::vector<Value> in) {
        return linalg(tc, Payload{.kind = Kind::kMatrixNorm, .norm = n}, {in[0]});
      }, seed++, ctx);
    }
  }
  check("eigvals", {vt(DType::kF64, {3, 3})}, [](TraceContext& tc, std::vector<Value> in) {
    // Well separated real spectrum: M + diag(0, 3, 6).
    Tensor dg = Tensor::from_col_major<double>({3, 3}, std::vector<double>{0, 0, 0, 0, 3, 0, 0, 0, 6}).value();
    Value a = tc.op(OpCode::kAdd, {in[0], tc.constant(dg).value()}).value();
    return linalg(tc, Payload{.kind = Kind::kEig, .vectors = false}, {a});
  }, seed++, ctx);
}

// eig's vectors (Note [Linalg rules]): LAPACK fixes each column's norm and makes its
// largest entry real, leaving its sign free (it flips between nearby inputs), so the
// outputs checked are the eigenvalues and v ∘ v (sign-free, but not phase- or
// norm-free): real spectra, a real matrix with a complex pair, complex, batched.
TEST(LinalgRules, EigVectors) {
  const auto ctx = context();
  uint64_t seed = 260;
  auto with = [](std::vector<double> col_major) {
    return [col_major](TraceContext& tc, std::vector<Value> in) {
      ValueType t = tc.type(in[0]).value();
      Tensor c = test_support::make(t.dtype, {3, 3}, std::vector<c128>(col_major.begin(), col_major.end()));
      Value cv = tc.constant(c).value();
      Attrs a{.dims = {t.rank() - 2, t.rank() - 1}, .shape = t.shape};
      Value a_ = tc.op(OpCode::kAdd, {in[0], tc.op(OpCode::kBroadcastInDim, {cv}, a).value()}).value();
      auto o = linalg(tc, Payload{.kind = Kind::kEig}, {a_});
      return std::vector<Value>{o[0], tc.op(OpCode::kMul, {o[1], o[1]}).value()};
    };
  };
  const std::vector<double> real_spectrum{0, 0, 0, 0, 3, 0, 0, 0, 6};  // + diag(0, 3, 6)
  const std::vector<double> complex_pair{0, -3, 0, 3, 0, 0, 0, 0, 6};  // + [[0, 3], [-3, 0]] (+) 6
  for (DType d : {DType::kF64, DType::kC128}) {
    const std::string dn(dtype_name(d));
    check("eig real spectrum " + dn, {vt(d, {3, 3})}, with(real_spectrum), seed++, ctx);
    check("eig complex pair " + dn, {vt(d, {2, 3, 3})}, with(complex_pair), seed++, ctx);
  }
}

TEST(LinalgRules, Pinv) {
  const auto ctx = context();
  uint64_t seed = 300;
  for (DType d : {DType::kF64, DType::kC128}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 3}, std::vector<int64_t>{2, 3, 5}}) {
      check("pinv " + std::string(dtype_name(d)), {vt(d, shape)}, [](TraceContext& tc, std::vector<Value> in) {
        return linalg(tc, Payload{.kind = Kind::kPinv}, {in[0]});
      }, seed++, ctx);
    }
  }
}

// The rules in single precision (f32, c64): central differences with the single-
// precision tolerance of check_derivatives, on well-conditioned inputs.
TEST(LinalgRules, SinglePrecision) {
  const auto ctx = context();
  uint64_t seed = 300;
  for (DType d : {DType::kF32, DType::kC64}) {
    const std::string dn(dtype_name(d));
    check("svd " + dn, {vt(d, {4, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      auto o = linalg(tc, Payload{.kind = Kind::kSvd}, {in[0]});
      return std::vector<Value>{o[1], abs2(tc, o[0]), einsum(tc, "...ik,...kj->...ij", {o[0], o[2]})};
    }, seed++, ctx);
    check("eigh " + dn, {vt(d, {3, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      auto o = linalg(tc, Payload{.kind = Kind::kEigh}, {in[0]});
      return std::vector<Value>{o[0], abs2(tc, o[1])};
    }, seed++, ctx);
    check("qr " + dn, {vt(d, {4, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      return linalg(tc, Payload{.kind = Kind::kQr}, {in[0]});
    }, seed++, ctx);
    check("cholesky " + dn, {vt(d, {3, 3})}, [](TraceContext& tc, std::vector<Value> in) {
      Value a = shift(tc, einsum(tc, "ik,jk->ij", {in[0], tc.op(OpCode::kConj, {in[0]}).value()}), 3.0);
      return linalg(tc, Payload{.kind = Kind::kCholesky}, {a});
    }, seed++, ctx);
    check("solve inv det " + dn, {vt(d, {3, 3}), vt(d, {3, 2})}, [](TraceContext& tc, std::vector<Value> in) {
      Value a = shift(tc, in[0], 3.0);
      return std::vector<Value>{linalg(tc, Payload{.kind = Kind::kSolve}, {a, in[1]})[0],
                                linalg(tc, Payload{.kind = Kind::kInv}, {a})[0],
                                linalg(tc, Payload{.kind = Kind::kDet}, {a})[0]};
    }, seed++, ctx);
  }
}

TEST(LinalgRules, UnsupportedDerivativesAreTypedErrors) {
  const auto ctx = context();
  TraceContext tc2;
  Value tall = tc2.input(vt(DType::kF64, {4, 2})).value();
  auto complete = tc2.finish(linalg(tc2, Payload{.kind = Kind::kQr, .qr_mode = linalg::QrMode::kComplete}, {tall}));
  auto rc = ctx.jvp(complete.value().graph());
  ASSERT_FALSE(rc);
  EXPECT_EQ(rc.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(rc.error().message().find("complete QR"), std::string::npos) << rc.error().message();
}

}  // namespace
}  // namespace tenferro::linalg_ir
