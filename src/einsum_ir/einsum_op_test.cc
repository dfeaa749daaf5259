// The einsum extension op: payload and text form, inference with symbolic extents and
// guards, typed errors, and the lowering against independent loops.

#include <gtest/gtest.h>

#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"

namespace tenferro::einsum {
namespace {

using program::Extent;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;

TEST(EinsumOp, PayloadAndTextRoundTrip) {
  ProgramBuilder b;
  const Extent n = b.symbol("n").value();
  Value x = b.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x").value();
  Value w = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(4)}}, "w").value();
  Value y = emit_einsum(b, "ij,jk->ik", std::vector<Value>{x, w}, PathAlgorithm::kOptimal).value();
  const auto g = b.finish({y}).value();
  const std::string text = program::print_program(*g.program);
  EXPECT_NE(text.find("extension \"einsum\" \"ij,jk->ik;optimal\""), std::string::npos) << text;
  program::ExtensionRegistry registry;
  ASSERT_TRUE(register_einsum_family(registry));
  EXPECT_FALSE(register_einsum_family(registry));
  auto back = program::parse_program(text, &registry);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_TRUE(back->program->structurally_equal(*g.program));
  EXPECT_EQ(back->program->fingerprint(), g.program->fingerprint());

  EXPECT_EQ(parse_einsum_payload("ij,jk->ik").error().code(), ErrorCode::kParse);
  EXPECT_EQ(parse_einsum_payload("ij,jk->ik;treesa").error().code(), ErrorCode::kParse);
  EXPECT_EQ(parse_einsum_payload("ij,jk->ik;left_to_right").value()->algorithm(), PathAlgorithm::kLeftToRight);
  EXPECT_EQ(EinsumOp::make("ij", PathAlgorithm::kTreeSA).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(EinsumOp::make("i...j...->i").error().code(), ErrorCode::kParse);
}

// An explicit path in the payload: text round trip, identity (hash and equality), typed
// errors for trees that do not fit and for malformed text, and the lowering follows it.
TEST(EinsumOp, ExplicitPathPayload) {
  const ContractionTree right_first{3, {{1, 2}, {0, 3}}};
  const auto op = EinsumOp::make_explicit("ij,jk,kl->il", right_first).value();
  EXPECT_EQ(op->algorithm(), PathAlgorithm::kExplicit);
  EXPECT_EQ(op->payload_text(), "ij,jk,kl->il;explicit:1-2,0-3");
  const auto back = parse_einsum_payload(op->payload_text()).value();
  EXPECT_TRUE(back->payload_equal(*op));
  EXPECT_EQ(back->payload_hash(), op->payload_hash());
  EXPECT_EQ(back->policy().explicit_tree.steps, right_first.steps);
  const auto left_first = EinsumOp::make_explicit("ij,jk,kl->il", ContractionTree{3, {{0, 1}, {2, 3}}}).value();
  EXPECT_FALSE(left_first->payload_equal(*op));
  EXPECT_FALSE(EinsumOp::make("ij,jk,kl->il", PathAlgorithm::kGreedy).value()->payload_equal(*op));
  EXPECT_EQ(parse_einsum_payload("ij->j;explicit:").value()->tree().steps.size(), 0u);
  for (const char* bad : {"ij,jk->ik;explicit:0-1,", "ij,jk->ik;explicit:0+1", "ij,jk->ik;explicit:-1",
                          "ij,jk->ik;explicit:0-", "ij,jk->ik;explicit:99999999999-1", "ij,jk->ik;explicit:0-1x"}) {
    const auto r = parse_einsum_payload(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kParse) << bad;
  }
  for (const char* bad : {"ij,jk->ik;explicit:0-0", "ij,jk->ik;explicit:0-2", "ij,jk->ik;explicit:0-1,0-2",
                          "ij,jk,kl->il;explicit:0-1"}) {
    const auto r = parse_einsum_payload(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
  // The lowering contracts in the tree's order: [3,4] x [4,5] first gives a [3,5]
  // intermediate, [4,5] x [5,2] first a [4,2]; both give the same values.
  const Tensor a = Tensor::random_normal(DType::kF64, {3, 4}, 1).value();
  const Tensor bt = Tensor::random_normal(DType::kF64, {4, 5}, 2).value();
  const Tensor c = Tensor::random_normal(DType::kF64, {5, 2}, 3).value();
  std::vector<Tensor> results;
  for (const auto& chosen : {op, left_first}) {
    ProgramBuilder b;
    std::vector<Value> in;
    for (const Tensor* t : {&a, &bt, &c}) {
      in.push_back(b.input(ValueType{DType::kF64, {Extent::exact(t->dim(0)), Extent::exact(t->dim(1))}}, "x").value());
    }
    b.set_core_only(true);
    const program::LoweringOutcome lowered = chosen->lower_to_core(b, in).value();
    ASSERT_EQ(lowered.values.size(), 1u);
    const auto g = b.finish({lowered.values[0]}).value();
    const std::string text = program::print_program(*g.program);
    const bool right = chosen == op;
    EXPECT_EQ(text.find("f64[4, 2]") != std::string::npos, right) << text;
    EXPECT_EQ(text.find("f64[3, 5]") != std::string::npos, !right) << text;
    results.push_back(program::interpret(g, std::vector<Tensor>{a, bt, c}).value()[0]);
  }
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t l = 0; l < 2; ++l) {
      EXPECT_NEAR(results[0].get<double>({i, l}).value(), results[1].get<double>({i, l}).value(), 1e-12);
    }
  }
}

TEST(EinsumOp, InferenceWithSymbolicExtentsAddsGuards) {
  ProgramBuilder b;
  const Extent n = b.symbol("n").value();
  const Extent m = b.symbol("m").value();
  Value x = b.input(ValueType{DType::kF64, {n, m}}, "x").value();
  Value v = b.input(ValueType{DType::kF64, {Extent::exact(5)}}, "v").value();
  // j is m in x and 5 in v: a guard m == 5 instead of an error.
  Value y = emit_einsum(b, "ij,j->i", std::vector<Value>{x, v}).value();
  EXPECT_EQ(b.type(y).value().shape, (std::vector<Extent>{n}));
  const auto g = b.finish({y}).value();
  ASSERT_EQ(g.program->guards().size(), 1u);
  EXPECT_EQ(g.program->guards()[0].constraint, "einsum_c1");
  const Tensor xs = Tensor::random_normal(DType::kF64, {2, 5}, 1).value();
  const Tensor vs = Tensor::random_normal(DType::kF64, {5}, 2).value();
  auto r = program::interpret(g, std::vector<Tensor>{xs, vs});
  ASSERT_TRUE(r) << r.error().to_string();
  for (int64_t i = 0; i < 2; ++i) {
    double want = 0;
    for (int64_t j = 0; j < 5; ++j) want += xs.get<double>({i, j}).value() * vs.get<double>({j}).value();
    EXPECT_NEAR(r->at(0).get<double>({i}).value(), want, 1e-12);
  }
  const Tensor bad = Tensor::random_normal(DType::kF64, {2, 4}, 1).value();
  EXPECT_EQ(program::interpret(g, std::vector<Tensor>{bad, vs}).error().code(), ErrorCode::kShapeMismatch);

  // Typed compile errors: mixed dtypes, exact extents that differ, wrong ranks.
  ProgramBuilder b2;
  v = b2.input(ValueType{DType::kF64, {Extent::exact(5)}}).value();
  Value f = b2.input(ValueType{DType::kF32, {Extent::exact(5)}}).value();
  EXPECT_EQ(emit_einsum(b2, "i,i->", std::vector<Value>{v, f}).error().code(), ErrorCode::kDTypeMismatch);
  Value u = b2.input(ValueType{DType::kF64, {Extent::exact(4)}}).value();
  auto mismatch = emit_einsum(b2, "i,i->i", std::vector<Value>{v, u});
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(mismatch.error().stage(), ErrorStage::kCompile);
  EXPECT_FALSE(emit_einsum(b2, "ij->i", std::vector<Value>{v}));
  EXPECT_FALSE(emit_einsum(b2, "i,j->k", std::vector<Value>{v, u}));
}

TEST(EinsumOp, LoweringMatchesLoops) {
  // Trace, batched product with a broadcast batch, diagonal output sum, bool OR of ANDs.
  ProgramBuilder b;
  Value a = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(3), Extent::exact(2)}}).value();
  Value c = b.input(ValueType{DType::kF64, {Extent::exact(1), Extent::exact(3), Extent::exact(4)}}).value();
  Value p = b.input(ValueType{DType::kBool, {Extent::exact(2), Extent::exact(3)}}).value();
  Value q = b.input(ValueType{DType::kBool, {Extent::exact(3), Extent::exact(2)}}).value();
  Value t = emit_einsum(b, "iib->b", std::vector<Value>{a}).value();
  Value bm = emit_einsum(b, "ijb,bjk->bik", std::vector<Value>{a, c}).value();  // c's b (1) broadcasts
  Value pq = emit_einsum(b, "ij,jk->ik", std::vector<Value>{p, q}).value();
  const auto g = b.finish({t, bm, pq}).value();
  const Tensor av = Tensor::random_normal(DType::kF64, {3, 3, 2}, 3).value();
  const Tensor cv = Tensor::random_normal(DType::kF64, {1, 3, 4}, 4).value();
  const Tensor pv = Tensor::from_col_major<bool>({2, 3}, {true, false, false, false, true, false}).value();
  const Tensor qv = Tensor::from_col_major<bool>({3, 2}, {false, false, true, true, false, false}).value();
  auto r = program::interpret(g, std::vector<Tensor>{av, cv, pv, qv});
  ASSERT_TRUE(r) << r.error().to_string();
  for (int64_t bb = 0; bb < 2; ++bb) {
    double want = 0;
    for (int64_t i = 0; i < 3; ++i) want += av.get<double>({i, i, bb}).value();
    EXPECT_NEAR(r->at(0).get<double>({bb}).value(), want, 1e-12);
  }
  EXPECT_EQ(r->at(1).shape(), (Shape{2, 3, 4}));
  for (int64_t bb = 0; bb < 2; ++bb) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t k = 0; k < 4; ++k) {
        double want = 0;
        for (int64_t j = 0; j < 3; ++j) want += av.get<double>({i, j, bb}).value() * cv.get<double>({0, j, k}).value();
        EXPECT_NEAR(r->at(1).get<double>({bb, i, k}).value(), want, 1e-12);
      }
    }
  }
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 2; ++k) {
      bool want = false;
      for (int64_t j = 0; j < 3; ++j) want = want || (pv.get<bool>({i, j}).value() && qv.get<bool>({j, k}).value());
      EXPECT_EQ(r->at(2).get<bool>({i, k}).value(), want) << i << "," << k;
    }
  }
}

// An output that repeats a label embeds a diagonal: zeros off it. The lowering (what the
// interpreter runs) against loops.
TEST(EinsumOp, RepeatedOutputLabelsLowerToEmbeddedDiagonals) {
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(2)}}).value();
  Value y = b.input(ValueType{DType::kF64, {Extent::exact(2), Extent::exact(4)}}).value();
  auto e1 = emit_einsum(b, "ij->iji", std::vector<Value>{x});
  ASSERT_TRUE(e1) << e1.error().to_string();
  auto e2 = emit_einsum(b, "ij,jk->kiik", std::vector<Value>{x, y});
  ASSERT_TRUE(e2) << e2.error().to_string();
  const auto g = b.finish({*e1, *e2}).value();
  const Tensor xv = Tensor::random_normal(DType::kF64, {3, 2}, 5).value();
  const Tensor yv = Tensor::random_normal(DType::kF64, {2, 4}, 6).value();
  auto r = program::interpret(g, std::vector<Tensor>{xv, yv});
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->at(0).shape(), (Shape{3, 2, 3}));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i2 = 0; i2 < 3; ++i2) {
        const double want = i == i2 ? xv.get<double>({i, j}).value() : 0.0;
        EXPECT_EQ(r->at(0).get<double>({i, j, i2}).value(), want);
      }
    }
  }
  ASSERT_EQ(r->at(1).shape(), (Shape{4, 3, 3, 4}));
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t i2 = 0; i2 < 3; ++i2) {
        for (int64_t k2 = 0; k2 < 4; ++k2) {
          double want = 0;
          if (i == i2 && k == k2) {
            for (int64_t j = 0; j < 2; ++j) want += xv.get<double>({i, j}).value() * yv.get<double>({j, k}).value();
          }
          EXPECT_NEAR(r->at(1).get<double>({k, i, i2, k2}).value(), want, 1e-12);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tenferro::einsum
