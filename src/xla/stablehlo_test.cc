// lower_to_stablehlo: exact text of small programs (written by hand from the StableHLO
// specification), literals, the lowerings that are not one-to-one, extensions, options
// and typed errors. Semantics and syntax are checked end to end by tests/xla (the
// lowered catalogue read back by mlir-opt and evaluated with numpy against the
// interpreter).

#include "tenferro/xla/stablehlo.h"

#include <gtest/gtest.h>

#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/text.h"

namespace tenferro::xla {
namespace {

program::CompiledGraph parse(const std::string& text, std::span<const Tensor> bindings = {}) {
  program::ExtensionRegistry reg;
  EXPECT_TRUE(einsum::register_einsum_family(reg));
  auto g = program::parse_program(text, &reg, bindings);
  EXPECT_TRUE(g) << g.error().to_string();
  return *g;
}

std::string lower(const std::string& text, StableHloOptions options = {}) {
  auto m = lower_to_stablehlo(parse(text), options);
  EXPECT_TRUE(m) << m.error().to_string();
  return m ? m->text : std::string();
}

TEST(StableHlo, SmallProgramExactText) {
  const std::string text = lower(R"(program {
  %0 = input "x" : f64[2, 3]
  %1 = input "w" : f64[3, 4]
  %2 = dot_general(%0, %1) {lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0]} : f64[2, 4]
  %3 = exp(%2) : f64[2, 4]
  output %3, %0
})");
  EXPECT_EQ(text,
            "module @tenferro {\n"
            "  func.func public @main(%arg0: tensor<2x3xf64>, %arg1: tensor<3x4xf64>) -> (tensor<2x4xf64>, "
            "tensor<2x3xf64>) {\n"
            "    %0 = \"stablehlo.dot_general\"(%arg0, %arg1) {dot_dimension_numbers = "
            "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : "
            "(tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>\n"
            "    %1 = \"stablehlo.exponential\"(%0) : (tensor<2x4xf64>) -> tensor<2x4xf64>\n"
            "    \"func.return\"(%1, %arg0) : (tensor<2x4xf64>, tensor<2x3xf64>) -> ()\n"
            "  }\n"
            "}\n");
}

TEST(StableHlo, ModuleAndFunctionNames) {
  StableHloOptions o;
  o.module_name = "jit_f";
  o.function_name = "forward";
  const std::string text = lower("program {\n %0 = input \"x\" : f32[]\n output %0\n}\n", o);
  EXPECT_NE(text.find("module @jit_f {"), std::string::npos) << text;
  EXPECT_NE(text.find("func.func public @forward(%arg0: tensor<f32>) -> (tensor<f32>)"), std::string::npos) << text;
  o.function_name = "a b";
  auto bad = lower_to_stablehlo(parse("program {\n %0 = input \"x\" : f32[]\n output %0\n}\n"), o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
}

TEST(StableHlo, LiteralsAreRowMajorAndExact) {
  // Column-major {1, 2, 3, 4, 5, 6} of shape [2, 3] is the matrix [[1, 3, 5], [2, 4, 6]].
  std::string text = lower(R"(program {
  %0 = constant() {value=f64[2, 3]{1, 2, 3, 4, 5, 6}} : f64[2, 3]
  output %0
})");
  EXPECT_NE(text.find("dense<[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]> : tensor<2x3xf64>"), std::string::npos) << text;
  text = lower(R"(program {
  %0 = constant() {value=f64[6]{0.1, 1e300, -0, inf, -inf, nan}} : f64[6]
  %1 = constant() {value=c128[2]{(1, -2.5), (0, inf)}} : c128[2]
  %2 = constant() {value=i64[2]{-9223372036854775808, 9223372036854775807}} : i64[2]
  %3 = constant() {value=bool[3]{true, false, true}} : bool[3]
  %4 = constant() {value=f32[2]{0.1, 3}} : f32[2]
  %5 = constant() {value=f64[2, 2]{7, 7, 7, 7}} : f64[2, 2]
  %6 = constant() {value=i32[0, 3]{}} : i32[0, 3]
  output %0, %1, %2, %3, %4, %5, %6
})");
  EXPECT_NE(text.find("dense<[0.1, 1.0e+300, -0.0, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000]>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dense<[(1.0, -2.5), (0.0, 0x7FF0000000000000)]> : tensor<2xcomplex<f64>>"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dense<[-9223372036854775808, 9223372036854775807]> : tensor<2xi64>"), std::string::npos) << text;
  EXPECT_NE(text.find("dense<[true, false, true]> : tensor<3xi1>"), std::string::npos) << text;
  EXPECT_NE(text.find("dense<[0.1, 3.0]> : tensor<2xf32>"), std::string::npos) << text;  // shortest f32 digits
  EXPECT_NE(text.find("dense<7.0> : tensor<2x2xf64>"), std::string::npos) << text;       // a splat
  EXPECT_NE(text.find("dense<> : tensor<0x3xi32>"), std::string::npos) << text;
}

TEST(StableHlo, ColumnMajorReshapeIsReversedRowMajor) {
  // [2, 3] -> [3, 2] keeps column-major order: transpose, reshape to [2, 3], transpose.
  std::string text = lower(R"(program {
  %0 = input "x" : f64[2, 3]
  %1 = reshape(%0) {shape=[3, 2]} : f64[3, 2]
  output %1
})");
  EXPECT_NE(text.find("%0 = \"stablehlo.transpose\"(%arg0) {permutation = array<i64: 1, 0>} : (tensor<2x3xf64>) -> "
                      "tensor<3x2xf64>\n    %1 = \"stablehlo.reshape\"(%0) : (tensor<3x2xf64>) -> tensor<2x3xf64>\n"
                      "    %2 = \"stablehlo.transpose\"(%1) {permutation = array<i64: 1, 0>} : (tensor<2x3xf64>) -> "
                      "tensor<3x2xf64>\n"),
            std::string::npos)
      << text;
  // Only unit axes added or removed: one reshape (the element orders agree).
  text = lower(R"(program {
  %0 = input "x" : f64[2, 1, 3]
  %1 = reshape(%0) {shape=[1, 2, 3, 1]} : f64[1, 2, 3, 1]
  output %1
})");
  EXPECT_EQ(text.find("transpose"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stablehlo.reshape\"(%arg0) : (tensor<2x1x3xf64>) -> tensor<1x2x3x1xf64>"), std::string::npos);
}

TEST(StableHlo, OpsWithoutAStableHloTwin) {
  const std::string text = lower(R"(program {
  %0 = input "z" : c64[3]
  %1 = conj(%0) : c64[3]
  %2 = input "x" : f64[3]
  %3 = imag(%2) : f64[3]
  %4 = conj(%2) : f64[3]
  %5 = convert(%0) {dtype=f64} : f64[3]
  %6 = convert(%2) {dtype=bool} : bool[3]
  output %1, %3, %4, %5, %6
})");
  EXPECT_NE(text.find("%0 = \"stablehlo.real\"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>\n"
                      "    %1 = \"stablehlo.imag\"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>\n"
                      "    %2 = \"stablehlo.negate\"(%1) : (tensor<3xf32>) -> tensor<3xf32>\n"
                      "    %3 = \"stablehlo.complex\"(%0, %2) : (tensor<3xf32>, tensor<3xf32>) -> "
                      "tensor<3xcomplex<f32>>\n"
                      "    %4 = \"stablehlo.constant\"() {value = dense<0.0> : tensor<3xf64>} : () -> tensor<3xf64>\n"
                      "    %5 = \"stablehlo.real\"(%arg0) : (tensor<3xcomplex<f32>>) -> tensor<3xf32>\n"
                      "    %6 = \"stablehlo.convert\"(%5) : (tensor<3xf32>) -> tensor<3xf64>\n"
                      "    %7 = \"stablehlo.constant\"() {value = dense<0.0> : tensor<3xf64>} : () -> tensor<3xf64>\n"
                      "    %8 = \"stablehlo.compare\"(%arg1, %7) {comparison_direction = "
                      "#stablehlo<comparison_direction NE>} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>\n"
                      "    \"func.return\"(%3, %4, %arg1, %6, %8)"),
            std::string::npos)
      << text;
}

// Triangle offsets are int64 attributes: the lowering's compare constant holds them
// exactly, at the limits too (never through a double).
TEST(StableHlo, TriangleOffsetsAreExactAtTheInt64Limits) {
  const std::string text = lower(R"(program {
  %0 = input "x" : f64[3, 4]
  %1 = tril(%0) {k=-9223372036854775808} : f64[3, 4]
  %2 = triu(%0) {k=9223372036854775807} : f64[3, 4]
  %3 = tril(%0) {k=9007199254740993} : f64[3, 4]
  output %1, %2, %3
})");
  for (const char* k : {"dense<-9223372036854775808> : tensor<3x4xi64>", "dense<9223372036854775807> : tensor<3x4xi64>",
                        "dense<9007199254740993> : tensor<3x4xi64>"}) {
    EXPECT_NE(text.find(k), std::string::npos) << k << "\n" << text;
  }
}

TEST(StableHlo, GatherScatterAndReduce) {
  const std::string text = lower(R"(program {
  %0 = input "x" : f64[4, 5, 6]
  %1 = input "i" : i32[2, 3]
  %2 = gather(%0, %1) {axis=1} : f64[4, 2, 3, 6]
  %3 = input "u" : f64[4, 2, 3, 6]
  %4 = scatter_add(%0, %1, %3) {axis=1} : f64[4, 5, 6]
  %5 = reduce(%0) {reduce=max, dims=[0, 2]} : f64[5]
  output %2, %4, %5
})");
  EXPECT_NE(text.find("%0 = \"stablehlo.gather\"(%arg0, %arg1) {dimension_numbers = #stablehlo.gather<offset_dims = "
                      "[0, 3], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 2>, "
                      "indices_are_sorted = false, slice_sizes = array<i64: 4, 1, 6>} : (tensor<4x5x6xf64>, "
                      "tensor<2x3xi32>) -> tensor<4x2x3x6xf64>\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%1 = \"stablehlo.scatter\"(%arg0, %arg1, %arg2) ({\n"
                      "    ^bb0(%2: tensor<f64>, %3: tensor<f64>):\n"
                      "      %4 = \"stablehlo.add\"(%2, %3) : (tensor<f64>, tensor<f64>) -> tensor<f64>\n"
                      "      \"stablehlo.return\"(%4) : (tensor<f64>) -> ()\n"
                      "    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 3], "
                      "inserted_window_dims = [1], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, "
                      "indices_are_sorted = false, unique_indices = false} : (tensor<4x5x6xf64>, tensor<2x3xi32>, "
                      "tensor<4x2x3x6xf64>) -> tensor<4x5x6xf64>\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%5 = \"stablehlo.constant\"() {value = dense<0xFFF0000000000000> : tensor<f64>} : () -> "
                      "tensor<f64>\n    %6 = \"stablehlo.reduce\"(%arg0, %5) ({\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"stablehlo.maximum\"(%7, %8)"), std::string::npos) << text;
  EXPECT_NE(text.find("}) {dimensions = array<i64: 0, 2>} : (tensor<4x5x6xf64>, tensor<f64>) -> tensor<5xf64>"),
            std::string::npos)
      << text;
}

TEST(StableHlo, SymbolicProgramsNeedInputShapes) {
  const std::string src = R"(program {
  symbol n <= 10
  %0 = input "x" : f64[n, 3]
  %1 = input "y" : f64[n, 3]
  %2 = add(%0, %1) : f64[n, 3]
  output %2
})";
  auto none = lower_to_stablehlo(parse(src));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(none.error().message().find("input shapes"), std::string::npos);
  StableHloOptions o;
  o.input_shapes = {Shape{4, 3}, Shape{4, 3}};
  EXPECT_NE(lower(src, o).find("(%arg0: tensor<4x3xf64>, %arg1: tensor<4x3xf64>) -> (tensor<4x3xf64>)"),
            std::string::npos);
  o.input_shapes = {Shape{4, 3}, Shape{5, 3}};  // n bound twice differently
  auto mismatch = lower_to_stablehlo(parse(src), o);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().code(), ErrorCode::kShapeMismatch);
  o.input_shapes = {Shape{11, 3}, Shape{11, 3}};  // above the bound
  auto bound = lower_to_stablehlo(parse(src), o);
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error().code(), ErrorCode::kOutOfRange);
}

TEST(StableHlo, BindingsAreArgumentsOrInlinedConstants) {
  const std::vector<double> w = {1, 2, 3, 4};
  auto wt = Tensor::from_col_major<double>({2, 2}, std::vector<double>(w)).value();
  const std::string src = R"(program {
  %0 = input "x" : f64[2, 2]
  %1 = binding "w" : f64[2, 2]
  %2 = mul(%0, %1) : f64[2, 2]
  output %2
})";
  const auto g = parse(src, std::span<const Tensor>(&wt, 1));
  auto as_args = lower_to_stablehlo(g);
  ASSERT_TRUE(as_args);
  EXPECT_EQ(as_args->argument_is_binding, (std::vector<bool>{false, true}));
  EXPECT_NE(as_args->text.find("@main(%arg0: tensor<2x2xf64>, %arg1: tensor<2x2xf64>)"), std::string::npos);
  StableHloOptions o;
  o.inline_bindings = true;
  auto inlined = lower_to_stablehlo(g, o);
  ASSERT_TRUE(inlined);
  EXPECT_EQ(inlined->argument_is_binding, (std::vector<bool>{false}));
  EXPECT_NE(inlined->text.find("value = dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf64>"), std::string::npos)
      << inlined->text;
  EXPECT_NE(inlined->text.find("@main(%arg0: tensor<2x2xf64>) -> (tensor<2x2xf64>)"), std::string::npos);
}

TEST(StableHlo, EinsumLowersThroughItsCoreLowering) {
  const std::string text = lower(R"(program {
  %0 = input "a" : f64[2, 3]
  %1 = input "b" : f64[3, 4]
  %2 = extension "einsum" "ij,jk->ki;greedy"(%0, %1) : f64[4, 2]
  output %2
})");
  EXPECT_NE(text.find("\"stablehlo.dot_general\""), std::string::npos) << text;
  EXPECT_EQ(text.find("einsum"), std::string::npos) << text;
}

// A family without a lowering: a typed kUnsupported naming the family and payload.
class Opaque final : public program::ExtensionOp {
 public:
  std::string_view family_id() const override { return "test.opaque"; }
  uint64_t payload_hash() const override { return 7; }
  bool payload_equal(const ExtensionOp&) const override { return true; }
  std::string payload_text() const override { return "p"; }
  std::vector<program::Effect> effects() const override { return {}; }
  std::vector<program::Alias> aliases() const override { return std::vector<program::Alias>(1); }
  Result<std::vector<program::ValueType>> infer(std::span<const program::ValueType> in,
                                                std::span<const program::SymbolInfo>,
                                                std::vector<program::PendingGuard>&) const override {
    return std::vector<program::ValueType>{in[0]};
  }
};

TEST(StableHlo, ExtensionsWithoutALoweringAreTypedErrors) {
  program::ProgramBuilder b;
  auto x = b.input(program::ValueType{DType::kF64, {program::Extent::exact(3)}}).value();
  auto y = b.extension(std::make_shared<Opaque>(), std::vector<program::Value>{x}).value();
  const auto g = b.finish({y[0]}).value();
  auto r = lower_to_stablehlo(g);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message().find("\"test.opaque\" \"p\""), std::string::npos) << r.error().to_string();

  // A family lowering is consulted first.
  StableHloLowerings lowerings;
  ASSERT_TRUE(lowerings.add("test.opaque",
                            [](Emitter& em, const program::ExtensionOp&, std::span<const HloValue> in,
                               std::span<const TensorType> out) -> Result<std::vector<HloValue>> {
                              return std::vector<HloValue>{em.op("negate", {in[0]}, "", out[0])};
                            }));
  EXPECT_FALSE(lowerings.add("test.opaque", {}));
  StableHloOptions o;
  o.lowerings = &lowerings;
  auto ok = lower_to_stablehlo(g, o);
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_NE(ok->text.find("\"stablehlo.negate\"(%arg0)"), std::string::npos) << ok->text;
}

}  // namespace
}  // namespace tenferro::xla
