// Tests of the AD transforms: every rule against central finite differences (JVP) and
// the adjoint identity <vjp(u), v> = <u, jvp(v)> (VJP), random programs, second
// derivatives, cache identity and typed errors. The reference interpreter evaluates
// every program.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "tenferro/ad/ad.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/test_support/ad_check.h"
#include "tenferro/test_support/index.h"
#include "tenferro/test_support/random_program.h"
#include "tenferro/test_support/strided.h"
#include "tenferro/test_support/test_extension.h"

namespace tenferro {
namespace {

using ad::AdContext;
using compiler::TraceContext;
using program::Attrs;
using program::CompareDirection;
using program::CompiledGraph;
using program::Extent;
using program::OpCode;
using program::ReduceKind;
using program::Value;
using program::ValueType;

using test_support::axpy;
using test_support::check_derivatives;
using test_support::inner;
using test_support::make;
using test_support::random_like;
using test_support::run;
using test_support::values;
using test_support::vt;

// ---- per-op programs ---------------------------------------------------------------------------------


Value splat(TraceContext& tc, DType d, double v, std::vector<int64_t> shape) {
  Tensor s = make(d, {}, {c128(v)});
  Value c = tc.constant(s).value();
  if (shape.empty()) return c;
  Attrs a;
  for (int64_t e : shape) a.shape.push_back(Extent::exact(e));
  return tc.op(OpCode::kBroadcastInDim, {c}, a).value();
}

struct Case {
  std::string name;
  std::vector<ValueType> inputs;
  std::function<std::vector<Value>(TraceContext&, std::vector<Value>)> body;
  double low = -1.0, high = 1.0;  // input value range
};

void run_case(const Case& c, uint64_t seed) {
  TraceContext tc;
  std::vector<Value> ins;
  for (const ValueType& t : c.inputs) ins.push_back(tc.input(t).value());
  std::vector<Value> outs = c.body(tc, ins);
  auto traced = tc.finish(outs);
  ASSERT_TRUE(traced) << c.name << ": " << traced.error().to_string();
  std::mt19937_64 rng(seed);
  std::vector<Tensor> xs;
  for (const ValueType& t : c.inputs) {
    Shape s;
    for (const Extent& e : t.shape) s.push_back(e.exact_value());
    if (is_inexact(t.dtype)) {
      xs.push_back(test_support::strided_random(rng, t.dtype, s, c.low, c.high));
    } else {
      xs.push_back(make(t.dtype, s, std::vector<c128>(static_cast<size_t>(element_count(s)), c128(1))));
    }
  }
  const AdContext ctx = AdContext::with_standard_rules();
  check_derivatives(ctx, traced->graph(), xs, seed + 7, c.name);
}

Case unary(OpCode op, DType d, double low = -1.0, double high = 1.0) {
  return Case{std::string(program::op_name(op)) + "/" + std::string(dtype_name(d)),
              {vt(d, {2, 3})},
              [op](TraceContext& tc, std::vector<Value> in) { return std::vector<Value>{tc.op(op, {in[0]}).value()}; },
              low, high};
}

Case binary(OpCode op, DType d, double low = -1.0, double high = 1.0) {
  return Case{std::string(program::op_name(op)) + "/" + std::string(dtype_name(d)),
              {vt(d, {3, 2}), vt(d, {3, 2})},
              [op](TraceContext& tc, std::vector<Value> in) {
                return std::vector<Value>{tc.op(op, {in[0], in[1]}).value()};
              },
              low, high};
}

TEST(AdRules, ElementwiseUnaryMatchFiniteDifferencesAndAdjoint) {
  const OpCode smooth[] = {OpCode::kNeg, OpCode::kExp, OpCode::kSin, OpCode::kCos, OpCode::kTanh, OpCode::kConj,
                           OpCode::kReal, OpCode::kImag, OpCode::kExpm1};
  const OpCode positive[] = {OpCode::kLog, OpCode::kSqrt, OpCode::kRsqrt, OpCode::kLog1p, OpCode::kAbs};
  uint64_t seed = 1;
  for (DType d : {DType::kF64, DType::kC128, DType::kF32, DType::kC64}) {
    for (OpCode op : smooth) run_case(unary(op, d), seed++);
    for (OpCode op : positive) run_case(unary(op, d, 0.5, 2.0), seed++);
  }
  run_case(unary(OpCode::kAbs, DType::kF64, -2.0, -0.5), seed++);
  run_case(unary(OpCode::kSign, DType::kF64), seed++);
}

TEST(AdRules, ElementwiseBinaryMatchFiniteDifferencesAndAdjoint) {
  uint64_t seed = 100;
  for (DType d : {DType::kF64, DType::kC128, DType::kF32}) {
    for (OpCode op : {OpCode::kAdd, OpCode::kSub, OpCode::kMul}) run_case(binary(op, d), seed++);
    run_case(binary(OpCode::kDiv, d, 0.5, 2.0), seed++);
    run_case(binary(OpCode::kPow, d, 0.5, 2.0), seed++);
  }
  run_case(binary(OpCode::kMax, DType::kF64), seed++);
  run_case(binary(OpCode::kMin, DType::kF64), seed++);
  for (DType d : {DType::kF64, DType::kF32}) {
    run_case(binary(OpCode::kAtan2, d), seed++);              // every quadrant
    run_case(binary(OpCode::kAtan2, d, -2.0, -0.5), seed++);  // the third quadrant
  }
  run_case(Case{"rem",
                {vt(DType::kF64, {4}), vt(DType::kF64, {4})},
                [](TraceContext& tc, std::vector<Value> in) {
                  // x in [5, 6], y in [2, 2.2]: trunc(x / y) == 2 everywhere (no jump).
                  Value x = tc.op(OpCode::kAdd, {in[0], splat(tc, DType::kF64, 5.5, {4})}).value();
                  Value y = tc.op(OpCode::kAdd, {tc.op(OpCode::kMul, {in[1], splat(tc, DType::kF64, 0.1, {4})}).value(),
                                                 splat(tc, DType::kF64, 2.1, {4})})
                                .value();
                  return std::vector<Value>{tc.op(OpCode::kRem, {x, y}).value()};
                },
                -0.5, 0.5},
           seed++);
}

TEST(AdRules, SelectClampCompareConvert) {
  uint64_t seed = 200;
  run_case(Case{"select",
                {vt(DType::kF64, {3, 2}), vt(DType::kF64, {3, 2}), vt(DType::kF64, {3, 2})},
                [](TraceContext& tc, std::vector<Value> in) {
                  Value p = tc.op(OpCode::kCompare, {in[0], in[1]}, Attrs{.direction = CompareDirection::kLt}).value();
                  return std::vector<Value>{tc.op(OpCode::kSelect, {p, in[1], in[2]}).value(), p};
                }},
           seed++);
  run_case(Case{"clamp",
                {vt(DType::kF64, {}), vt(DType::kF64, {6}), vt(DType::kF64, {})},
                [](TraceContext& tc, std::vector<Value> in) {
                  Value lo = tc.op(OpCode::kSub, {in[0], splat(tc, DType::kF64, 0.4, {})}).value();
                  Value hi = tc.op(OpCode::kAdd, {in[2], splat(tc, DType::kF64, 0.4, {})}).value();
                  return std::vector<Value>{tc.op(OpCode::kClamp, {lo, in[1], hi}).value()};
                },
                -1.0, 1.0},
           seed++);
  for (auto [from, to] : {std::pair{DType::kF64, DType::kC128}, std::pair{DType::kC128, DType::kF64},
                          std::pair{DType::kF64, DType::kF32}, std::pair{DType::kF64, DType::kI64}}) {
    run_case(Case{"convert " + std::string(dtype_name(from)) + "->" + std::string(dtype_name(to)),
                  {vt(from, {2, 2})},
                  [to](TraceContext& tc, std::vector<Value> in) {
                    Value c = tc.op(OpCode::kConvert, {in[0]}, Attrs{.dtype = to}).value();
                    return std::vector<Value>{c, in[0]};
                  },
                  -3.0, 3.0},
             seed++);
  }
}

TEST(AdRules, ShapeAndDataMovementOps) {
  uint64_t seed = 300;
  const DType d = DType::kF64;
  std::vector<Case> cases;
  cases.push_back({"broadcast_in_dim", {vt(d, {3, 1})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kBroadcastInDim, {in[0]},
                                                     Attrs{.dims = {0, 2}, .shape = {Extent::exact(3), Extent::exact(2),
                                                                                     Extent::exact(4)}})
                                                   .value()};
                   }});
  cases.push_back({"reshape", {vt(d, {2, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{
                         tc.op(OpCode::kReshape, {in[0]}, Attrs{.shape = {Extent::exact(3), Extent::exact(2)}}).value()};
                   }});
  cases.push_back({"transpose", {vt(d, {2, 3, 4})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kTranspose, {in[0]}, Attrs{.dims = {2, 0, 1}}).value()};
                   }});
  cases.push_back({"reverse", {vt(d, {2, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kReverse, {in[0]}, Attrs{.dims = {1}}).value()};
                   }});
  // A stride as large as int64 holds takes one element per axis (its transpose pads with
  // no interior there).
  cases.push_back(
      {"slice with an int64-max stride", {vt(d, {5, 4})}, [](TraceContext& tc, std::vector<Value> in) {
         constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
         return std::vector<Value>{
             tc.op(OpCode::kSlice, {in[0]}, Attrs{.start = {1, 0}, .limit = {5, 4}, .stride = {kMax, 2}}).value()};
       }});
  cases.push_back({"slice", {vt(d, {5, 4})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{
                         tc.op(OpCode::kSlice, {in[0]}, Attrs{.start = {1, 0}, .limit = {5, 3}, .stride = {2, 1}}).value()};
                   }});
  cases.push_back({"pad", {vt(d, {3, 4}), vt(d, {})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{
                         tc.op(OpCode::kPad, {in[0], in[1]}, Attrs{.low = {1, -1}, .high = {-1, 2}, .interior = {1, 0}})
                             .value()};
                   }});
  cases.push_back({"concatenate", {vt(d, {2, 3}), vt(d, {1, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kConcatenate, {in[0], in[1], in[0]}, Attrs{.axis = 0}).value()};
                   }});
  cases.push_back({"gather", {vt(d, {4, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     Value idx = tc.constant(Tensor::from_col_major<int64_t>({2, 2}, std::vector<int64_t>{0, 3, -2, 7}).value())
                                     .value();
                     return std::vector<Value>{tc.op(OpCode::kGather, {in[0], idx}, Attrs{.axis = 0}).value()};
                   }});
  cases.push_back({"scatter_add", {vt(d, {4, 3}), vt(d, {4, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     Value idx =
                         tc.constant(Tensor::from_col_major<int64_t>({3}, std::vector<int64_t>{1, -1, 1}).value()).value();
                     Value upd = tc.op(OpCode::kSlice, {in[1]}, Attrs{.start = {0, 0}, .limit = {4, 3}, .stride = {1, 1}})
                                     .value();
                     return std::vector<Value>{tc.op(OpCode::kScatterAdd, {in[0], idx, upd}, Attrs{.axis = 1}).value()};
                   }});
  cases.push_back({"dynamic_slice", {vt(d, {4, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     Value i0 = tc.constant(Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{1}).value()).value();
                     Value i1 = tc.constant(Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{5}).value()).value();
                     return std::vector<Value>{tc.op(OpCode::kDynamicSlice, {in[0], i0, i1}, Attrs{.sizes = {2, 2}}).value()};
                   }});
  cases.push_back({"dynamic_update_slice", {vt(d, {4, 3}), vt(d, {2, 2})}, [](TraceContext& tc, std::vector<Value> in) {
                     Value i0 = tc.constant(Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{3}).value()).value();
                     Value i1 = tc.constant(Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{0}).value()).value();
                     return std::vector<Value>{tc.op(OpCode::kDynamicUpdateSlice, {in[0], in[1], i0, i1}).value()};
                   }});
  for (ReduceKind k : {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kMax, ReduceKind::kMin}) {
    cases.push_back({"reduce " + std::string(program::reduce_kind_name(k)), {vt(d, {3, 4, 2})},
                     [k](TraceContext& tc, std::vector<Value> in) {
                       return std::vector<Value>{tc.op(OpCode::kReduce, {in[0]}, Attrs{.dims = {0, 2}, .reduce = k}).value()};
                     }});
  }
  cases.push_back({"dot_general", {vt(d, {2, 3, 4}), vt(d, {4, 2, 5})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kDotGeneral, {in[0], in[1]},
                                                     Attrs{.lhs_batch = {0}, .rhs_batch = {1}, .lhs_contract = {2}, .rhs_contract = {0}})
                                                   .value()};
                   }});
  cases.push_back({"extract_diag", {vt(d, {2, 3, 3})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kExtractDiag, {in[0]}, Attrs{.axis = 1}).value()};
                   }});
  cases.push_back({"embed_diag", {vt(d, {3, 2})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kEmbedDiag, {in[0]}, Attrs{.axis = 0}).value()};
                   }});
  cases.push_back({"tril triu", {vt(d, {3, 4})}, [](TraceContext& tc, std::vector<Value> in) {
                     return std::vector<Value>{tc.op(OpCode::kTril, {in[0]}, Attrs{.k = 1}).value(),
                                               tc.op(OpCode::kTriu, {in[0]}, Attrs{.k = -1}).value()};
                   }});
  for (const Case& c : cases) run_case(c, seed++);
  // Complex dot_general: the conjugation in the transpose.
  run_case({"dot_general/c128", {vt(DType::kC128, {3, 4}), vt(DType::kC128, {4, 2})}, [](TraceContext& tc, std::vector<Value> in) {
              return std::vector<Value>{
                  tc.op(OpCode::kDotGeneral, {in[0], in[1]}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value()};
            }},
           seed++);
}

TEST(AdRules, ReduceProdIsExactWithZeros) {
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {4})).value();
  auto g = tc.finish({tc.op(OpCode::kReduce, {x}, Attrs{.dims = {0}, .reduce = ReduceKind::kProd}).value()}).value();
  const AdContext ctx;
  for (auto xs : {std::vector<double>{2, 0, 3, 5}, std::vector<double>{0, 0, 3, 5}, std::vector<double>{2, 7, 3, 5}}) {
    auto r = run(ctx.vjp(g.graph()).value(), {Tensor::from_col_major<double>({4}, xs).value(),
                                              Tensor::from_col_major<double>({}, std::vector<double>{1.0}).value()});
    const std::vector<c128> gr = values(r[1]);
    for (size_t i = 0; i < 4; ++i) {
      double want = 1;
      for (size_t j = 0; j < 4; ++j) want *= j == i ? 1.0 : xs[j];
      EXPECT_EQ(gr[i].real(), want) << i;
    }
  }
}

TEST(AdRules, EinsumProductRuleAndTranspose) {
  uint64_t seed = 400;
  struct E {
    std::string sub;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<E> es = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"ii->", {{3, 3}}},
      {"ii->i", {{3, 3}}},
      {"iij,j->ij", {{2, 2, 3}, {3}}},
      {"ij,j->ij", {{3, 1}, {4}}},            // broadcast axis of extent 1
      {"ijk,k->i", {{2, 3, 4}, {4}}},         // j occurs in one operand only
      {"i,j->ij", {{2}, {3}}},
      {"...ij,...jk->...ik", {{2, 2, 3}, {2, 3, 2}}},
      {"ij,ij->", {{2, 3}, {2, 3}}},
      {"bij,bjk->bik", {{2, 1, 3}, {1, 3, 2}}},  // broadcast batch
      {"ij,jk", {{2, 3}, {3, 2}}},            // implicit output
  };
  for (DType d : {DType::kF64, DType::kC128}) {
    for (const E& e : es) {
      Case c{"einsum " + e.sub + "/" + std::string(dtype_name(d)), {}, nullptr};
      for (const auto& s : e.shapes) c.inputs.push_back(vt(d, s));
      const std::string sub = e.sub;
      c.body = [sub](TraceContext& tc, std::vector<Value> in) {
        auto op = einsum::EinsumOp::make(sub).value();
        return tc.extension(op, in).value();
      };
      run_case(c, seed++);
    }
  }
}

// ---- random programs -----------------------------------------------------------------------------------

using test_support::random_program;
using test_support::RandomProgram;

TEST(AdPrograms, ThreeHundredRandomProgramsMatchFiniteDifferencesAndAdjoint) {
  const AdContext ctx = AdContext::with_standard_rules();
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomProgram rp = random_program(seed);
    check_derivatives(ctx, rp.graph, rp.inputs, seed * 13, "seed " + std::to_string(seed));
    if (HasFailure()) break;
  }
}

// ---- compositions ----------------------------------------------------------------------------------------

// f(x, w) = sum(tanh(x w) * x w) + sum(einsum(ij,ij->, x, x)) (x: 3x4, w: 4x4)
CompiledGraph quadratic_loss() {
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {3, 4}), "x").value();
  Value w = tc.input(vt(DType::kF64, {4, 4}), "w").value();
  Value xw = tc.op(OpCode::kDotGeneral, {x, w}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  Value t = tc.op(OpCode::kMul, {tc.op(OpCode::kTanh, {xw}).value(), xw}).value();
  Value s = tc.op(OpCode::kReduce, {t}, Attrs{.dims = {0, 1}}).value();
  Value q = tc.extension(einsum::EinsumOp::make("ij,ij->").value(), std::vector<Value>{x, x}).value()[0];
  return tc.finish({tc.op(OpCode::kAdd, {s, q}).value()}).value().graph();
}

TEST(AdCompose, GradEqualsVjpWithUnitCotangent) {
  const AdContext ctx = AdContext::with_standard_rules();
  CompiledGraph f = quadratic_loss();
  std::mt19937_64 rng(5);
  std::vector<Tensor> xs = {random_like(rng, DType::kF64, {3, 4}), random_like(rng, DType::kF64, {4, 4})};
  auto g = run(ctx.grad(f).value(), xs);
  std::vector<Tensor> vargs = xs;
  vargs.push_back(Tensor::from_col_major<double>({}, std::vector<double>{1.0}).value());
  auto v = run(ctx.vjp(f).value(), vargs);
  ASSERT_EQ(g.size(), 3u);
  ASSERT_EQ(v.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto a = values(g[i]), b = values(v[i]);
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k].real(), b[k].real(), 1e-12);
  }
  // Only w active.
  auto gw = run(ctx.grad(f, 0, {false, true}).value(), xs);
  ASSERT_EQ(gw.size(), 2u);
  EXPECT_EQ(values(gw[1]), values(g[2]));
}

TEST(AdCompose, HvpMatchesFiniteDifferencesOfTheGradient) {
  const AdContext ctx = AdContext::with_standard_rules();
  CompiledGraph f = quadratic_loss();
  std::mt19937_64 rng(9);
  std::vector<Tensor> xs = {random_like(rng, DType::kF64, {3, 4}), random_like(rng, DType::kF64, {4, 4})};
  std::vector<Tensor> vs = {random_like(rng, DType::kF64, {3, 4}), random_like(rng, DType::kF64, {4, 4})};
  auto hvp = ctx.hvp(f);
  ASSERT_TRUE(hvp) << hvp.error().to_string();
  std::vector<Tensor> args = xs;
  args.insert(args.end(), vs.begin(), vs.end());
  auto h = run(*hvp, args);
  ASSERT_EQ(h.size(), 5u);  // f, two gradients, two Hessian-vector products
  auto grad = ctx.grad(f).value();
  const double eps = 1e-5;
  auto gp = run(grad, {axpy(xs[0], eps, vs[0]), axpy(xs[1], eps, vs[1])});
  auto gm = run(grad, {axpy(xs[0], -eps, vs[0]), axpy(xs[1], -eps, vs[1])});
  for (size_t i = 0; i < 2; ++i) {
    const auto hv = values(h[3 + i]), a = values(gp[1 + i]), b = values(gm[1 + i]);
    for (size_t k = 0; k < hv.size(); ++k) {
      EXPECT_NEAR(hv[k].real(), ((a[k] - b[k]) / (2 * eps)).real(), 1e-6 * (1 + std::abs(hv[k])));
    }
  }
}

TEST(AdCompose, TransformOfATransformCompilesAndRuns) {
  const AdContext ctx = AdContext::with_standard_rules();
  CompiledGraph f = quadratic_loss();
  auto v = ctx.vjp(f).value();
  // The VJP program is itself differentiable: check its derivatives.
  std::mt19937_64 rng(3);
  std::vector<Tensor> xs = {random_like(rng, DType::kF64, {3, 4}), random_like(rng, DType::kF64, {4, 4}),
                            random_like(rng, DType::kF64, {})};
  check_derivatives(ctx, v, xs, 17, "vjp of the loss");
  compiler::GraphCompiler gc;
  auto jv = ctx.jvp(v).value();
  EXPECT_TRUE(gc.compile(jv));
}

TEST(AdCompose, ExplicitTransposeOfALinearProgram) {
  // L(x, t) = A t + conj(t) ⊙ x  is linear in t.
  TraceContext tc;
  Value x = tc.input(vt(DType::kC128, {3}), "x").value();
  Value t = tc.input(vt(DType::kC128, {3}), "t").value();
  Value a = tc.input(vt(DType::kC128, {3, 3}), "a").value();
  Value at = tc.op(OpCode::kDotGeneral, {a, t}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  Value ct = tc.op(OpCode::kMul, {tc.op(OpCode::kConj, {t}).value(), x}).value();
  auto g = tc.finish({x, tc.op(OpCode::kAdd, {at, ct}).value()}).value().graph();
  const AdContext ctx;
  auto tr = ctx.transpose(g, {false, true, false}, {false, true});
  ASSERT_TRUE(tr) << tr.error().to_string();
  std::mt19937_64 rng(4);
  Tensor xv = random_like(rng, DType::kC128, {3}), tv = random_like(rng, DType::kC128, {3}),
         av = random_like(rng, DType::kC128, {3, 3}), uv = random_like(rng, DType::kC128, {3});
  auto fwd = run(g, {xv, tv, av});
  auto back = run(*tr, {xv, av, uv});
  ASSERT_EQ(back.size(), 2u);  // x, cotangent of t
  EXPECT_NEAR(inner(back[1], tv), inner(uv, fwd[1]), 1e-12);
  // Not linear: t * t.
  TraceContext tc2;
  Value t2 = tc2.input(vt(DType::kF64, {3})).value();
  auto g2 = tc2.finish({tc2.op(OpCode::kMul, {t2, t2}).value()}).value().graph();
  auto bad = ctx.transpose(g2, {true}, {true});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  // Affine: t + 1.
  TraceContext tc3;
  Value t3 = tc3.input(vt(DType::kF64, {3})).value();
  auto g3 = tc3.finish({tc3.op(OpCode::kAdd, {t3, splat(tc3, DType::kF64, 1.0, {3})}).value()}).value().graph();
  auto affine = ctx.transpose(g3, {true}, {true});
  ASSERT_FALSE(affine);
  EXPECT_NE(affine.error().message().find("affine"), std::string::npos) << affine.error().to_string();
}

// ---- context: cache, rules, errors ------------------------------------------------------------------------

TEST(AdContextTest, CacheServesEqualProgramsWithTheirOwnBindings) {
  const AdContext ctx = AdContext::with_standard_rules();
  auto build = [](double w) {
    TraceContext tc;
    Value x = tc.input(vt(DType::kF64, {2})).value();
    Value c = tc.capture(Tensor::from_col_major<double>({2}, std::vector<double>{w, 2 * w}).value()).value();
    Value m = tc.op(OpCode::kMul, {x, c}).value();
    return tc.finish({tc.op(OpCode::kReduce, {m}, Attrs{.dims = {0}}).value()}).value().graph();
  };
  CompiledGraph g1 = build(1.0), g2 = build(3.0);
  auto r1 = ctx.grad(g1).value();
  auto r2 = ctx.grad(g2).value();
  EXPECT_EQ(ctx.cache_stats().hits, 1);
  EXPECT_EQ(ctx.cache_stats().misses, 1);
  Tensor x = Tensor::from_col_major<double>({2}, std::vector<double>{5, 7}).value();
  EXPECT_EQ(values(run(r1, {x})[1]), (std::vector<c128>{1.0, 2.0}));
  EXPECT_EQ(values(run(r2, {x})[1]), (std::vector<c128>{3.0, 6.0}));
}

TEST(AdContextTest, ExtensionsNeedARuleOrTheExplicitLoweringFallback) {
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {3})).value();
  auto out = tc.extension(test_support::make_scale(2.5), std::vector<Value>{x}).value();
  auto g = tc.finish({tc.op(OpCode::kReduce, {out[0]}, Attrs{.dims = {0}}).value()}).value().graph();
  AdContext ctx = AdContext::with_standard_rules();
  auto no = ctx.grad(g);
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().code(), ErrorCode::kUnsupported);
  ctx.set_options({.differentiate_lowerings = true});
  auto yes = ctx.grad(g);
  ASSERT_TRUE(yes) << yes.error().to_string();
  auto r = run(*yes, {Tensor::from_col_major<double>({3}, std::vector<double>{1, 2, 3}).value()});
  EXPECT_EQ(values(r[1]), (std::vector<c128>{2.5, 2.5, 2.5}));
  // An effectful extension is never differentiated through its lowering.
  TraceContext tc2;
  Value x2 = tc2.input(vt(DType::kF64, {3})).value();
  auto eff = tc2.extension(test_support::make_scale(2.5, 1, true), std::vector<Value>{x2}).value();
  auto g2 = tc2.finish({tc2.op(OpCode::kReduce, {eff[0]}, Attrs{.dims = {0}}).value()}).value().graph();
  auto refused = ctx.grad(g2);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
  // Duplicate install.
  EXPECT_FALSE(ctx.install(ad::einsum_rule()));
  EXPECT_TRUE(ctx.install(ad::einsum_rule(), true));
}

TEST(AdContextTest, TypedErrors) {
  const AdContext ctx = AdContext::with_standard_rules();
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {3})).value();
  Value n = tc.input(vt(DType::kI64, {3})).value();
  Value s = tc.op(OpCode::kMul, {x, tc.op(OpCode::kConvert, {n}, Attrs{.dtype = DType::kF64}).value()}).value();
  auto g = tc.finish({s}).value().graph();
  auto wrong_len = ctx.jvp(g, {true});
  ASSERT_FALSE(wrong_len);
  EXPECT_EQ(wrong_len.error().code(), ErrorCode::kInvalidArgument);
  auto int_active = ctx.jvp(g, {true, true});
  ASSERT_FALSE(int_active);
  EXPECT_EQ(int_active.error().code(), ErrorCode::kDTypeMismatch);
  auto not_scalar = ctx.grad(g);
  ASSERT_FALSE(not_scalar);
  EXPECT_EQ(not_scalar.error().code(), ErrorCode::kShapeMismatch);
  auto out_of_range = ctx.grad(g, 3);
  ASSERT_FALSE(out_of_range);
  EXPECT_EQ(out_of_range.error().code(), ErrorCode::kOutOfRange);
  // Integer inputs are inactive by default: jvp has one tangent input.
  auto j = ctx.jvp(g).value();
  EXPECT_EQ(j.program->inputs().size(), 3u);
}

}  // namespace
}  // namespace tenferro
