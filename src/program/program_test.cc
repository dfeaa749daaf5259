#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "tenferro/program/interpreter.h"
#include "tenferro/program/program.h"
#include "tenferro/program/text.h"
#include "tenferro/test_support/order.h"
#include "tenferro/test_support/test_extension.h"

namespace tenferro::program {
namespace {

using test_support::make_scale;

ValueType vt(DType d, std::vector<int64_t> shape) {
  ValueType t{d, {}};
  for (int64_t e : shape) t.shape.push_back(Extent::exact(e));
  return t;
}

template <class T>
Literal lit(std::vector<int64_t> shape, std::initializer_list<T> values) {
  return Literal::from_values<T>(std::move(shape), std::span<const T>(values.begin(), values.size())).value();
}

Tensor tensor_f64(std::vector<int64_t> shape, std::vector<double> col_major) {
  return Tensor::from_col_major<double>(Dims(shape), std::move(col_major)).value();
}

template <class T>
std::vector<T> values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), kDTypeOf<T>);
  Tensor c = t.to_col_major().value();
  const auto* p = static_cast<const T*>(c.storage()->data()) + c.offset();
  return std::vector<T>(p, p + c.numel());
}
std::vector<double> values_f64(const Tensor& t) { return values<double>(t); }

// ---- builder contract ---------------------------------------------------------------------------

TEST(ProgramBuilder, ForeignAndStaleTokensAreTypedErrors) {
  ProgramBuilder a, b;
  Value x = a.input(vt(DType::kF64, {2})).value();
  Value y = b.input(vt(DType::kF64, {2})).value();
  auto r = a.op(OpCode::kAdd, {x, y});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("foreign value"), std::string::npos);
  auto n = a.op(OpCode::kNeg, {Value()});
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message().find("null value"), std::string::npos);
  // Extents of one builder's symbols are foreign to another.
  Extent sym = a.symbol("n").value();
  auto bad = b.input(ValueType{DType::kF64, {sym}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("another builder"), std::string::npos);
}

TEST(ProgramBuilder, FinishConsumesAndFailedFinishLeavesBuilderUsable) {
  ProgramBuilder b;
  Value x = b.input(vt(DType::kF64, {2})).value();
  auto none = b.finish(std::span<const Value>());
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("program_c2"), std::string::npos);
  Value y = b.op(OpCode::kNeg, {x}).value();  // still usable
  auto g = b.finish({y});
  ASSERT_TRUE(g) << g.error().to_string();
  auto again = b.op(OpCode::kNeg, {x});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message().find("finished"), std::string::npos);
}

// Builds x -> sum(exp(x) * w) with one captured binding; used by the atomicity tests.
void build_reference(ProgramBuilder& b, Value* out) {
  Value x = b.input(vt(DType::kF64, {3}), "x").value();
  Value w = b.capture(tensor_f64({3}, {1, 2, 3}), "w").value();
  Value e = b.op(OpCode::kExp, {x}).value();
  Value m = b.op(OpCode::kMul, {e, w}).value();
  *out = b.op(OpCode::kReduce, {m}, Attrs{.dims = {0}, .reduce = ReduceKind::kSum}).value();
}

TEST(ProgramBuilder, FinishIsAtomicUnderInjectedFailure) {
  ProgramBuilder ref;
  Value r;
  build_reference(ref, &r);
  const std::string want = print_program(*ref.finish({r}).value().program);
  for (int step = 0; step < 3; ++step) {
    ProgramBuilder b;
    Value out;
    build_reference(b, &out);
    ProgramBuilderTestHook::fail_at_step(b, step);
    auto failed = b.finish({out});
    ASSERT_FALSE(failed) << "step " << step;
    EXPECT_EQ(failed.error().code(), ErrorCode::kInternal);
    auto g = b.finish({out});  // unchanged: the same program, bindings included
    ASSERT_TRUE(g) << g.error().to_string();
    EXPECT_EQ(print_program(*g->program), want);
    ASSERT_EQ(g->bindings.tensors.size(), 1u);
    EXPECT_EQ(values_f64(g->bindings.tensors[0]), (std::vector<double>{1, 2, 3}));
  }
}

TEST(ProgramBuilder, ImportIsAtomicUnderInjectedFailure) {
  ProgramBuilder inner;
  Value r;
  build_reference(inner, &r);
  CompiledGraph lib = inner.finish({r}).value();
  // Reference: a builder that never imported.
  auto make_host = [](ProgramBuilder& b) {
    Value x = b.input(vt(DType::kF64, {3}), "x").value();
    return b.op(OpCode::kNeg, {x}).value();
  };
  ProgramBuilder plain;
  Value pv = make_host(plain);
  const std::string want = print_program(*plain.finish({pv}).value().program);
  int failures = 0;
  for (int step = 0; step < 16; ++step) {
    ProgramBuilder b;
    Value v = make_host(b);
    ProgramBuilderTestHook::fail_at_step(b, step);
    auto imported = b.import(lib, std::vector<Value>{v});
    if (imported) break;  // past the last step: the import succeeded
    ++failures;
    EXPECT_EQ(imported.error().code(), ErrorCode::kInternal);
    auto g = b.finish({v});
    ASSERT_TRUE(g) << g.error().to_string();
    EXPECT_EQ(print_program(*g->program), want) << "step " << step;
    EXPECT_TRUE(g->bindings.tensors.empty());
  }
  EXPECT_GE(failures, 5);  // inputs (2), ops (3) and the final step were all exercised
}

TEST(ProgramBuilder, ImportInlinesWithBindingsAndEvaluates) {
  ProgramBuilder inner;
  Value r;
  build_reference(inner, &r);
  CompiledGraph lib = inner.finish({r}).value();
  ProgramBuilder b;
  Value x = b.input(vt(DType::kF64, {3}), "x").value();
  Value y = b.import(lib, std::vector<Value>{x}).value()[0];
  Value z = b.import(lib, std::vector<Value>{x}).value()[0];
  Value s = b.op(OpCode::kAdd, {y, z}).value();
  CompiledGraph g = b.finish({s}).value();
  EXPECT_EQ(g.bindings.tensors.size(), 2u);
  auto out = interpret(g, std::vector<Tensor>{tensor_f64({3}, {0, 1, 2})}).value();
  const double want = 2 * (1 * std::exp(0.0) + 2 * std::exp(1.0) + 3 * std::exp(2.0));
  EXPECT_NEAR(values_f64(out[0])[0], want, 1e-12);
  // Argument type mismatch is import_c1 and leaves the builder unchanged.
  ProgramBuilder c;
  Value bad = c.input(vt(DType::kF64, {4})).value();
  auto e = c.import(lib, std::vector<Value>{bad});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("import_c1"), std::string::npos);
  EXPECT_TRUE(c.finish({bad}));
}

// ---- identity ------------------------------------------------------------------------------------

CompiledGraph small_program(double c, const std::string& input_name, const std::string& prov) {
  ProgramBuilder b;
  b.set_provenance(prov);
  Value x = b.input(vt(DType::kF64, {2, 2}), input_name).value();
  Value k = b.constant(lit<double>({}, {c})).value();
  Value kb = b.op(OpCode::kBroadcastInDim, {k}, Attrs{.shape = {Extent::exact(2), Extent::exact(2)}}).value();
  Value y = b.op(OpCode::kMul, {x, kb}).value();
  Value t = b.op(OpCode::kTranspose, {y}, Attrs{.dims = {1, 0}}).value();
  return b.finish({t}).value();
}

TEST(Fingerprint, IdenticalProgramsAgreeAndDifferentOnesDiffer) {
  auto a = small_program(2.0, "x", "");
  auto b = small_program(2.0, "renamed", "frontend.py:12");  // names and provenance are not semantic
  auto c = small_program(3.0, "x", "");
  EXPECT_EQ(a.program->fingerprint(), b.program->fingerprint());
  EXPECT_TRUE(a.program->structurally_equal(*b.program));
  EXPECT_NE(a.program->fingerprint(), c.program->fingerprint());
  EXPECT_FALSE(a.program->structurally_equal(*c.program));
  EXPECT_EQ(a.program->fingerprint().to_string().size(), 32u);
}

TEST(Fingerprint, BindingsAreExcludedButBindingRolesAreIncluded) {
  auto build = [](double w, bool as_binding) {
    ProgramBuilder b;
    Value x = b.input(vt(DType::kF64, {2})).value();
    Value v = as_binding ? b.capture(tensor_f64({2}, {w, w})).value() : b.input(vt(DType::kF64, {2})).value();
    return b.finish({b.op(OpCode::kAdd, {x, v}).value()}).value();
  };
  EXPECT_EQ(build(1, true).program->fingerprint(), build(5, true).program->fingerprint());
  EXPECT_NE(build(1, true).program->fingerprint(), build(1, false).program->fingerprint());
}

TEST(Fingerprint, ExtensionPayloadEffectsAndAliasesCount) {
  auto build = [](std::shared_ptr<const ExtensionOp> op) {
    ProgramBuilder b;
    Value x = b.input(vt(DType::kF64, {2})).value();
    return b.finish(b.extension(std::move(op), std::vector<Value>{x}).value()).value();
  };
  const auto base = build(make_scale(2.0)).program->fingerprint();
  EXPECT_EQ(base, build(make_scale(2.0)).program->fingerprint());
  EXPECT_NE(base, build(make_scale(2.5)).program->fingerprint());
  EXPECT_NE(base, build(make_scale(2.0, 1, true)).program->fingerprint());
  EXPECT_NE(base, build(make_scale(2.0, 2)).program->fingerprint());
}

// ---- text format ---------------------------------------------------------------------------------

// A program that uses every core op, symbols, guards, a binding, an extension and
// provenance.
CompiledGraph kitchen_sink() {
  ProgramBuilder b;
  Extent n = b.symbol("n", 64).value();
  Value x = b.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x").value();
  Value y = b.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "y").value();
  Value w = b.capture(tensor_f64({3, 2}, {1, 2, 3, 4, 5, 6}), "w").value();
  b.set_provenance("kitchen_sink:unary");
  std::vector<Value> vals;
  for (OpCode c : {OpCode::kNeg, OpCode::kAbs, OpCode::kSign, OpCode::kExp, OpCode::kLog, OpCode::kExpm1, OpCode::kLog1p,
                   OpCode::kSin, OpCode::kCos, OpCode::kTanh, OpCode::kSqrt, OpCode::kRsqrt, OpCode::kConj, OpCode::kReal,
                   OpCode::kImag}) {
    vals.push_back(b.op(c, {x}).value());
  }
  b.set_provenance("");
  for (OpCode c : {OpCode::kAdd, OpCode::kSub, OpCode::kMul, OpCode::kDiv, OpCode::kRem, OpCode::kPow, OpCode::kMax,
                   OpCode::kMin, OpCode::kAtan2}) {
    vals.push_back(b.op(c, {x, y}).value());
  }
  Value cmp = b.op(OpCode::kCompare, {x, y}, Attrs{.direction = CompareDirection::kLt}).value();
  Value sel = b.op(OpCode::kSelect, {cmp, x, y}).value();
  Value lo = b.constant(lit<double>({}, {-0.5})).value();
  Value hi = b.constant(lit<double>({}, {0.1234567890123456789})).value();
  Value cl = b.op(OpCode::kClamp, {lo, sel, hi}).value();
  Value cv = b.op(OpCode::kConvert, {cl}, Attrs{.dtype = DType::kC128}).value();
  Value cr = b.op(OpCode::kReal, {cv}).value();
  Value io = b.op(OpCode::kIota, {}, Attrs{.shape = {n, Extent::exact(3)}, .axis = 1, .dtype = DType::kF64}).value();
  Value s0 = b.op(OpCode::kAdd, {cr, io}).value();
  Value one = b.constant(lit<double>({1}, {1.0})).value();
  Value ob = b.op(OpCode::kBroadcastInDim, {one}, Attrs{.dims = {1}, .shape = {n, Extent::exact(3)}}).value();
  Value s1 = b.op(OpCode::kAdd, {s0, ob}).value();
  Value r1 = b.op(OpCode::kReshape, {s1}, Attrs{.shape = {Extent::exact(3) * n}}).value();
  Value r2 = b.op(OpCode::kReshape, {r1}, Attrs{.shape = {n, Extent::exact(3)}}).value();
  Value tr = b.op(OpCode::kTranspose, {r2}, Attrs{.dims = {1, 0}}).value();
  Value rv = b.op(OpCode::kReverse, {tr}, Attrs{.dims = {0}}).value();
  Value sl = b.op(OpCode::kSlice, {rv}, Attrs{.start = {0, 0}, .limit = {3, 1}, .stride = {2, 1}}).value();
  Value i0 = b.constant(lit<int64_t>({}, {1})).value();
  Value ds = b.op(OpCode::kDynamicSlice, {rv, i0, i0}, Attrs{.sizes = {2, 1}}).value();
  Value du = b.op(OpCode::kDynamicUpdateSlice, {sl, ds, i0, i0}).value();
  Value cc = b.op(OpCode::kConcatenate, {du, sl, ds}, Attrs{.axis = 0}).value();
  Value zero = b.constant(lit<double>({}, {0.0})).value();
  Value pd = b.op(OpCode::kPad, {cc, zero}, Attrs{.low = {1, 0}, .high = {-1, 2}, .interior = {1, 0}}).value();
  Value idx = b.constant(lit<int32_t>({2}, {2, 0})).value();
  Value ga = b.op(OpCode::kGather, {pd, idx}, Attrs{.axis = 1}).value();
  Value sc = b.op(OpCode::kScatterAdd, {pd, idx, ga}, Attrs{.axis = 1}).value();
  Value rd = b.op(OpCode::kReduce, {sc}, Attrs{.dims = {1}, .reduce = ReduceKind::kMax}).value();
  Value dg = b.op(OpCode::kDotGeneral, {x, w}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  Value em = b.op(OpCode::kEmbedDiag, {dg}, Attrs{.axis = 1}).value();
  Value ex = b.op(OpCode::kExtractDiag, {em}, Attrs{.axis = 1}).value();
  Value tl = b.op(OpCode::kTril, {em}, Attrs{.k = -1}).value();
  Value tu = b.op(OpCode::kTriu, {em}, Attrs{.k = 1}).value();
  Value as = b.op(OpCode::kArgsort, {x}, Attrs{.axis = 1}).value();
  b.set_provenance("ext \"quoted\"");
  auto ext = b.extension(make_scale(0.1, 2, true), std::vector<Value>{ex}).value();
  b.set_provenance("");
  Value b1 = b.constant(lit<bool>({2}, {true, false})).value();
  Value c1 = b.constant(lit<c64>({1}, {c64(1.5f, -2.25f)})).value();
  Value nn = b.constant(lit<float>({3}, {std::nanf(""), INFINITY, -INFINITY})).value();
  Value bi = b.constant(lit<int64_t>({1}, {INT64_MIN})).value();
  EXPECT_TRUE(b.guard(n, Extent::exact(2), false, "user_min"));  // n <= 2 is not decidable: kept
  std::vector<Value> outs = vals;
  for (Value v : {rd, tl, tu, as, ext[0], ext[1], b1, c1, nn, bi, s1}) outs.push_back(v);
  auto g = b.finish(outs);
  EXPECT_TRUE(g) << g.error().to_string();
  return std::move(g).value();
}

TEST(ProgramText, ExactRoundTripOfEveryOp) {
  CompiledGraph g = kitchen_sink();
  const std::string text = print_program(*g.program);
  for (int i = 0; i < kCoreOpCount; ++i) {
    EXPECT_NE(text.find(std::string(" = ").append(op_name(static_cast<OpCode>(i))).append("(")), std::string::npos)
        << op_name(static_cast<OpCode>(i));
  }
  const auto reg = test_support::test_registry();
  auto parsed = parse_program(text, &reg, g.bindings.tensors);
  ASSERT_TRUE(parsed) << parsed.error().to_string() << "\n" << text;
  EXPECT_EQ(print_program(*parsed->program), text);
  EXPECT_EQ(parsed->program->fingerprint(), g.program->fingerprint());
  EXPECT_TRUE(parsed->program->structurally_equal(*g.program));
  EXPECT_NE(text.find("symbol n <= 64"), std::string::npos);
  EXPECT_NE(text.find("effects=[write rng:gen0], aliases=[fresh, view_of(0)]"), std::string::npos);
  EXPECT_NE(text.find("loc(\"ext \\\"quoted\\\"\")"), std::string::npos);
  EXPECT_NE(text.find("guard n <= 2 \"user_min\""), std::string::npos);
  EXPECT_NE(text.find("f32[3]{nan, inf, -inf}"), std::string::npos);
  EXPECT_NE(text.find("0.12345678901234568"), std::string::npos);  // 17 significant digits
}

// Found by fuzz/fuzz_ir_text: text that ends where a value number is expected.
TEST(ProgramText, TextEndingInsideAValueNameIsAParseError) {
  for (const char* text : {"program {\n  %", "program {\n  %  ", "program {\n  %+", "program {\n  %0 = input \"x\" : f64[-"}) {
    auto r = parse_program(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code(), ErrorCode::kParse) << r.error().to_string();
  }
}

// Found by fuzz/fuzz_ir_text: a placeholder binding of 2.7 PB was allocated (and failed
// under the fuzzer's sanitizer). Placeholders are one zero broadcast to the declared shape.
TEST(ProgramText, PlaceholderBindingsOfAnySizeAllocateNothing) {
  const char* text =
      "program {\n  %0 = binding \"w\" : f64[333333333333334, 2]\n  %1 = binding \"v\" : c64[3]\n  output %0, %1\n}";
  auto r = parse_program(text, nullptr, {}, true);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->bindings.tensors.size(), 2u);
  const Tensor& w = r->bindings.tensors[0];
  EXPECT_EQ(w.dtype(), DType::kF64);
  EXPECT_EQ(std::vector<int64_t>(w.shape().begin(), w.shape().end()), (std::vector<int64_t>{333333333333334, 2}));
  for (int64_t s : w.strides()) EXPECT_EQ(s, 0);
  EXPECT_EQ(w.get<double>(Dims{333333333333333, 1}).value(), 0.0);
  const Tensor& v = r->bindings.tensors[1];
  EXPECT_EQ(v.dtype(), DType::kC64);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(v.get_as_c128(Dims{i}).value(), c128(0, 0));
  // The placeholder is read-only: nothing can write through the broadcast.
  Tensor w_copy = w;
  EXPECT_FALSE(w_copy.view_mut<double>());
  // Without placeholders the same text still needs its data.
  auto missing = parse_program(text);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("has no tensor"), std::string::npos);
}

TEST(ProgramText, ParseErrorsGiveLineAndColumn) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"program {\n  %0 = input \"x\" : f64[2]\n  %1 = frobnicate(%0) : f64[2]\n  output %1\n}", "line 3, column 8: unknown op 'frobnicate'"},
      {"program {\n  %0 = input \"x\" : f64[2]\n  %1 = neg(%7) : f64[2]\n  output %1\n}", "undefined value %7"},
      {"program {\n  %0 = input \"x\" : f64[2]\n  %1 = neg(%0) : f64[3]\n  output %1\n}", "declared type f64[3] but the op infers f64[2]"},
      {"program {\n  %0 = input \"x\" : f64[2]\n  %0 = neg(%0) : f64[2]\n  output %0\n}", "defined twice"},
      {"program {\n  %0 = input \"x\" : f64[m]\n  output %0\n}", "undeclared symbol 'm'"},
      {"program {\n  %0 = input \"x\" : f64[2]\n}", "missing output"},
      {"program {\n  %0 = input \"x\" : f99[2]\n  output %0\n}", "unknown dtype 'f99'"},
      {"program {\n  %0 = input \"x\" : f64[2]\n  %1 = transpose(%0) {perm=[0]} : f64[2]\n  output %1\n}", "has no attribute 'perm'"},
      {"program {\n  %0 = input \"x\" : f64[2]\n  %1 = extension \"nope\" \"\"(%0) : f64[2]\n  output %1\n}", "not in the registry"},
      {"program {\n  %0 = binding \"w\" : f64[2]\n  output %0\n}", "has no tensor"},
      {"program {\n  %0 = input \"x\" : f64[2]\n  output %0\n} trailing", "after the closing"},
      {"program {\n  %0 = constant() {value=f64[2]{1}} : f64[2]\n  output %0\n}", "literal shape"},
  };
  for (const Case& c : cases) {
    auto r = parse_program(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().to_string();
  }
  // Semantic errors carry the line and the constraint id.
  auto sem = parse_program("program {\n  %0 = input \"x\" : f64[2]\n  %1 = input \"y\" : f64[3]\n  %2 = add(%0, %1) : f64[2]\n  output %2\n}");
  ASSERT_FALSE(sem);
  EXPECT_EQ(sem.error().stage(), ErrorStage::kCompile);
  EXPECT_NE(sem.error().message().find("line 4: add_c2"), std::string::npos) << sem.error().to_string();
  // Extension declarations in the text must match the op's own.
  const auto reg = test_support::test_registry();
  auto lie = parse_program(
      "program {\n  %0 = input \"x\" : f64[2]\n  %1 = extension \"test.scale\" \"factor=2;outputs=1;effect=1;reference=0\"(%0) "
      "{effects=[], aliases=[fresh]} : f64[2]\n  output %1\n}",
      &reg);
  ASSERT_FALSE(lie);
  EXPECT_NE(lie.error().message().find("differ from the op's declaration"), std::string::npos);
}

// ---- symbolic shapes -----------------------------------------------------------------------------

TEST(SymbolicShapes, AlgebraProvesWhatItCanAndGuardsTheRest) {
  ProgramBuilder b;
  Extent n = b.symbol("n").value();
  Extent m = b.symbol("m", 8).value();
  EXPECT_EQ(n * Extent::exact(3), Extent::exact(3) * n);
  EXPECT_EQ(n + m - n, m);
  EXPECT_EQ((n + m) * (n + m), n * n + Extent::exact(2) * n * m + m * m);
  EXPECT_EQ((n * m + Extent::exact(1)).upper_bound(b.symbols()), std::nullopt);
  EXPECT_EQ((m * m + Extent::exact(1)).upper_bound(b.symbols()), 65);
  EXPECT_EQ((Extent::exact(2) * n * m - Extent::exact(1)).to_string(b.symbols()), "2*n*m - 1");
  Value x = b.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x").value();
  Value y = b.input(ValueType{DType::kF64, {m, Extent::exact(3)}}, "y").value();
  // reshape to [3n] and back is provable: no guard.
  Value r = b.op(OpCode::kReshape, {x}, Attrs{.shape = {Extent::exact(3) * n}}).value();
  EXPECT_EQ(b.type(r).value().shape[0], n * Extent::exact(3));
  // add of [n,3] and [m,3] needs n == m: a guard.
  Value s = b.op(OpCode::kAdd, {x, y}).value();
  Value c = b.op(OpCode::kConcatenate, {x, y}, Attrs{.axis = 0}).value();
  EXPECT_EQ(b.type(c).value().shape[0], n + m);
  // A refuted guard fails at once.
  auto bad = b.op(OpCode::kSlice, {x}, Attrs{.start = {0, 0}, .limit = {1, 4}, .stride = {1, 1}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("slice_c2"), std::string::npos);
  // A bound refutes a slice beyond it.
  auto beyond = b.op(OpCode::kSlice, {y}, Attrs{.start = {0, 0}, .limit = {9, 3}, .stride = {1, 1}});
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().message().find("exceeds the bound 8"), std::string::npos);
  CompiledGraph g = b.finish({s, c}).value();
  ASSERT_EQ(g.program->guards().size(), 1u);
  EXPECT_EQ(g.program->guards()[0].constraint, "add_c2");

  // n = m = 2: passes, and the interpreter evaluates with the bound sizes.
  Tensor x2 = tensor_f64({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y2 = tensor_f64({2, 3}, {10, 20, 30, 40, 50, 60});
  auto out = interpret(g, std::vector<Tensor>{x2, y2});
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(values_f64((*out)[0]), (std::vector<double>{11, 22, 33, 44, 55, 66}));
  EXPECT_EQ((*out)[1].shape(), Shape({4, 3}));
  EXPECT_EQ(values_f64((*out)[1]), (std::vector<double>{1, 2, 10, 20, 3, 4, 30, 40, 5, 6, 50, 60}));
  // n = 2, m = 3: the guard fails before any op runs.
  Tensor y3 = tensor_f64({3, 3}, std::vector<double>(9, 1.0));
  auto guard = interpret(g, std::vector<Tensor>{x2, y3});
  ASSERT_FALSE(guard);
  EXPECT_EQ(guard.error().stage(), ErrorStage::kPrepare);
  EXPECT_NE(guard.error().message().find("shape guard add_c2 failed"), std::string::npos);
  // m = 9 exceeds its bound.
  Tensor y9 = tensor_f64({9, 3}, std::vector<double>(27, 1.0));
  auto bound = interpret(g, std::vector<Tensor>{tensor_f64({9, 3}, std::vector<double>(27, 1.0)), y9});
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error().code(), ErrorCode::kOutOfRange);
}

TEST(SymbolicShapes, InteriorPadOfASymbolicExtentIsExactAtZero) {
  // pad of f64[n] {low 1, high 1, interior 1} has 2 + max(0, 2n - 1) elements: 2n + 1 for
  // n >= 1 and 2 (not 1) for n = 0. The max is a derived symbol, not a guard.
  ProgramBuilder b;
  Extent n = b.symbol("n", 5).value();
  Value x = b.input(ValueType{DType::kF64, {n}}, "x").value();
  Value v = b.input(ValueType{DType::kF64, {}}, "v").value();
  const Attrs at{.low = {1}, .high = {1}, .interior = {1}};
  Value p = b.op(OpCode::kPad, {x, v}, at).value();
  Value q = b.op(OpCode::kPad, {x, v}, at).value();  // same definition: same symbol
  Value sum = b.op(OpCode::kAdd, {p, q}).value();
  Value tight = b.op(OpCode::kPad, {x, v}, Attrs{.low = {0}, .high = {0}, .interior = {1}}).value();
  CompiledGraph g = b.finish({sum, tight}).value();
  const SemanticProgram& prog = *g.program;
  EXPECT_TRUE(prog.guards().empty());
  ASSERT_EQ(prog.symbols().size(), 2u);
  ASSERT_TRUE(prog.symbols()[1].max0_of.has_value());
  EXPECT_EQ(prog.symbols()[1].max0_of->to_string(prog.symbols()), "2*n - 1");
  // Bound of the positive part 2n at n = 5: valid (9 is reached at most), not tight.
  EXPECT_EQ(prog.symbols()[1].upper_bound, std::optional<int64_t>(10));
  EXPECT_EQ(print_type(prog.type(prog.outputs()[0]), prog.symbols()), "f64[_z0 + 2]");
  EXPECT_EQ(print_type(prog.type(prog.outputs()[1]), prog.symbols()), "f64[_z0]");
  Tensor nine = tensor_f64({}, {9});
  auto run = [&](std::vector<double> xs) {
    const auto len = static_cast<int64_t>(xs.size());
    auto r = interpret(g, std::vector<Tensor>{tensor_f64({len}, xs), nine});
    EXPECT_TRUE(r) << r.error().to_string();
    return r ? std::make_pair(values_f64((*r)[0]), values_f64((*r)[1])) : std::make_pair(std::vector<double>{}, std::vector<double>{});
  };
  EXPECT_EQ(run({1, 2, 3}), std::make_pair(std::vector<double>{18, 2, 18, 4, 18, 6, 18}, std::vector<double>{1, 9, 2, 9, 3}));
  EXPECT_EQ(run({5}), std::make_pair(std::vector<double>{18, 10, 18}, std::vector<double>{5}));
  EXPECT_EQ(run({}), std::make_pair(std::vector<double>{18, 18}, std::vector<double>{}));
  // Text round trip keeps the definition and the identity.
  const std::string text = print_program(prog);
  EXPECT_NE(text.find("symbol _z0 = max(0, 2*n - 1)"), std::string::npos) << text;
  auto parsed = parse_program(text);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ(print_program(*parsed->program), text);
  EXPECT_EQ(parsed->program->fingerprint(), prog.fingerprint());
  // Import re-derives the symbol from the importer's extents.
  ProgramBuilder outer;
  Extent m = outer.symbol("m").value();
  Value ox = outer.input(ValueType{DType::kF64, {m}}).value();
  Value ov = outer.input(ValueType{DType::kF64, {}}).value();
  auto outs = outer.import(g, std::vector<Value>{ox, ov});
  ASSERT_TRUE(outs) << outs.error().to_string();
  CompiledGraph og = outer.finish(*outs).value();
  auto zero = interpret(og, std::vector<Tensor>{tensor_f64({0}, {}), nine});
  ASSERT_TRUE(zero) << zero.error().to_string();
  EXPECT_EQ(values_f64((*zero)[0]), (std::vector<double>{18, 18}));
}

TEST(SymbolicShapes, DerivedSymbolsAreNotInputExtentsAndCroppingIsGuarded) {
  ProgramBuilder b;
  Extent n = b.symbol("n").value();
  Value x = b.input(ValueType{DType::kF64, {n}}).value();
  Value v = b.input(ValueType{DType::kF64, {}}).value();
  // low -2: 2*max(0, 3n - 2) ... extent -2 + max(0, 3n - 2) needs a pad_c4 guard.
  Value p = b.op(OpCode::kPad, {x, v}, Attrs{.low = {-2}, .high = {0}, .interior = {2}}).value();
  const Extent z = b.type(p).value().shape[0] + Extent::exact(2);
  ASSERT_TRUE(z.as_symbol().has_value());
  auto bad = b.input(ValueType{DType::kF64, {z}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("input_c1"), std::string::npos) << bad.error().to_string();
  CompiledGraph g = b.finish({p}).value();
  ASSERT_EQ(g.program->guards().size(), 1u);
  EXPECT_EQ(g.program->guards()[0].constraint, "pad_c4");
  Tensor nine = tensor_f64({}, {9});
  auto two = interpret(g, std::vector<Tensor>{tensor_f64({2}, {1, 2}), nine});  // 1 9 9 2 cropped by 2
  ASSERT_TRUE(two) << two.error().to_string();
  EXPECT_EQ(values_f64((*two)[0]), (std::vector<double>{9, 2}));
  auto empty = interpret(g, std::vector<Tensor>{tensor_f64({0}, {}), nine});  // -2 elements
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(empty.error().message().find("pad_c4"), std::string::npos) << empty.error().to_string();
}

// Padding is user input: one side beyond +-(2^62 - 1) is a kOverflow error before any
// arithmetic on it (so low + high and the interpreter's index - low stay in int64); the
// extremes inside the limit pad and crop exactly.
TEST(SymbolicShapes, PaddingBeyondTwoToTheSixtyTwoIsAnOverflowError) {
  constexpr int64_t kLimit = int64_t{1} << 62, kMin = std::numeric_limits<int64_t>::min(),
                    kMax = std::numeric_limits<int64_t>::max();
  const std::vector<std::array<int64_t, 3>> bad = {{kLimit, 0, 0},       {0, kLimit, 0}, {-kLimit, 0, 0},
                                                   {kMin + 10, kMax, 0}, {0, 0, kLimit}, {kMax, kMax, 0}};
  for (const auto& [low, high, interior] : bad) {
    ProgramBuilder b;
    Value x = b.input(vt(DType::kF64, {4})).value();
    Value v = b.input(vt(DType::kF64, {})).value();
    auto p = b.op(OpCode::kPad, {x, v}, Attrs{.low = {low}, .high = {high}, .interior = {interior}});
    ASSERT_FALSE(p) << low << " " << high << " " << interior;
    EXPECT_EQ(p.error().code(), ErrorCode::kOverflow) << p.error().to_string();
  }
  ProgramBuilder b;
  Value x = b.input(vt(DType::kF64, {4})).value();
  Value v = b.input(vt(DType::kF64, {})).value();
  // Cropped by 2^62 - 1 in front (all of x and most of the back padding), padded by
  // 2^62 - 2 at the back: three elements, all padding.
  Value p = b.op(OpCode::kPad, {x, v}, Attrs{.low = {-(kLimit - 1)}, .high = {kLimit - 2}, .interior = {0}}).value();
  EXPECT_EQ(b.type(p).value().shape[0], Extent::exact(3));
  CompiledGraph g = b.finish({p}).value();
  auto out = interpret(g, std::vector<Tensor>{tensor_f64({4}, {1, 2, 3, 4}), tensor_f64({}, {9})});
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(values_f64((*out)[0]), (std::vector<double>{9, 9, 9}));
}

// Shape polynomials are size-capped: a product that would expand past the cap is an
// overflowed extent (builders reject it), computed in bounded time.
TEST(SymbolicShapes, PolynomialSizeIsCapped) {
  ProgramBuilder b;
  Extent sum = Extent::exact(0);
  for (int i = 0; i < 12; ++i) {
    std::string name("s");
    name.append(std::to_string(i));
    sum = sum + b.symbol(name).value();
  }
  Extent p = sum;
  for (int i = 0; i < 13; ++i) p = p * sum;
  EXPECT_TRUE(p.overflowed());
  EXPECT_FALSE((sum * sum).overflowed());  // 78 terms: within the cap
  Value x = b.input(ValueType{DType::kF64, {sum}}).value_or(Value());
  (void)x;
  auto g = b.guard(p, Extent::exact(1), true);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code(), ErrorCode::kOverflow);
}

// A program whose values cannot be held is a typed allocation failure, not an abort.
TEST(Interpreter, ValuesTooLargeForMemoryAreTypedErrors) {
  ProgramBuilder b;
  Value big = b.op(OpCode::kIota, {}, Attrs{.shape = {Extent::exact(int64_t{1} << 62)}, .axis = 0, .dtype = DType::kF32}).value();
  auto r = interpret(b.finish({big}).value(), std::vector<Tensor>{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kAllocationFailed);
}

TEST(SymbolicShapes, EverySymbolMustBeBoundByAnInput) {
  ProgramBuilder b;
  Extent n = b.symbol("n").value();
  Extent k = b.symbol("k").value();
  Value x = b.input(ValueType{DType::kF64, {n}}).value();
  Value io = b.op(OpCode::kIota, {}, Attrs{.shape = {k}, .axis = 0}).value();
  auto g = b.finish({x, io});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message().find("program_c1: symbol k"), std::string::npos);
}

// ---- constraint ids: one negative test each ------------------------------------------------------

struct NegCase {
  std::string id;
  std::function<Result<void>(ProgramBuilder&)> run;
};

Result<void> as_void(const Result<Value>& r) {
  if (r) return {};
  return r.error();
}

std::vector<NegCase> negative_cases() {
  std::vector<NegCase> cs;
  auto in = [](ProgramBuilder& b, DType d, std::vector<int64_t> shape) { return b.input(vt(d, std::move(shape))).value(); };
  auto add = [&](std::string id, std::function<Result<Value>(ProgramBuilder&)> f) {
    cs.push_back({std::move(id), [f](ProgramBuilder& b) { return as_void(f(b)); }});
  };
  for (int i = 0; i <= static_cast<int>(OpCode::kImag); ++i) {
    const auto c = static_cast<OpCode>(i);
    const std::string name(op_name(c));
    add(name + "_c0", [=](ProgramBuilder& b) { Value x = in(b, DType::kF64, {2}); return b.op(c, {x, x}); });
    if (c == OpCode::kConj || c == OpCode::kReal || c == OpCode::kImag) continue;  // every dtype: no c1
    const bool numeric_only = c == OpCode::kNeg || c == OpCode::kSign || c == OpCode::kAbs;
    add(name + "_c1", [=](ProgramBuilder& b) { return b.op(c, {in(b, numeric_only ? DType::kBool : DType::kI32, {2})}); });
  }
  for (int i = static_cast<int>(OpCode::kAdd); is_elementwise_binary(static_cast<OpCode>(i)); ++i) {
    const auto c = static_cast<OpCode>(i);
    const std::string name(op_name(c));
    const bool real_only = c == OpCode::kRem || c == OpCode::kMax || c == OpCode::kMin || c == OpCode::kAtan2;
    add(name + "_c0", [=](ProgramBuilder& b) { return b.op(c, {in(b, DType::kF64, {2})}); });
    add(name + "_c1", [=](ProgramBuilder& b) { return b.op(c, {in(b, DType::kF64, {2}), in(b, DType::kF32, {2})}); });
    add(name + "_c2", [=](ProgramBuilder& b) { return b.op(c, {in(b, DType::kF64, {2}), in(b, DType::kF64, {3})}); });
    add(name + "_c3", [=](ProgramBuilder& b) {
      const DType d = real_only ? DType::kC64 : DType::kBool;
      return b.op(c, {in(b, d, {2}), in(b, d, {2})});
    });
  }
  using O = OpCode;
  add("compare_c0", [&](ProgramBuilder& b) { return b.op(O::kCompare, {in(b, DType::kF64, {2})}); });
  add("compare_c1", [&](ProgramBuilder& b) { return b.op(O::kCompare, {in(b, DType::kF64, {2}), in(b, DType::kI64, {2})}); });
  add("compare_c2", [&](ProgramBuilder& b) { return b.op(O::kCompare, {in(b, DType::kF64, {2}), in(b, DType::kF64, {1})}); });
  add("compare_c3", [&](ProgramBuilder& b) {
    return b.op(O::kCompare, {in(b, DType::kC128, {2}), in(b, DType::kC128, {2})}, Attrs{.direction = CompareDirection::kLt});
  });
  add("select_c0", [&](ProgramBuilder& b) { return b.op(O::kSelect, {in(b, DType::kBool, {2})}); });
  add("select_c1", [&](ProgramBuilder& b) { Value x = in(b, DType::kF64, {2}); return b.op(O::kSelect, {x, x, x}); });
  add("select_c2", [&](ProgramBuilder& b) { return b.op(O::kSelect, {in(b, DType::kBool, {2}), in(b, DType::kF64, {2}), in(b, DType::kF32, {2})}); });
  add("select_c3", [&](ProgramBuilder& b) { Value x = in(b, DType::kF64, {2}); return b.op(O::kSelect, {in(b, DType::kBool, {3}), x, x}); });
  add("clamp_c0", [&](ProgramBuilder& b) { return b.op(O::kClamp, {in(b, DType::kF64, {2})}); });
  add("clamp_c1", [&](ProgramBuilder& b) { Value x = in(b, DType::kF64, {2}); return b.op(O::kClamp, {in(b, DType::kF32, {}), x, x}); });
  add("clamp_c2", [&](ProgramBuilder& b) { Value x = in(b, DType::kF64, {2}); return b.op(O::kClamp, {in(b, DType::kF64, {3}), x, x}); });
  add("clamp_c3", [&](ProgramBuilder& b) { Value x = in(b, DType::kC64, {2}); return b.op(O::kClamp, {x, x, x}); });
  add("convert_c0", [&](ProgramBuilder& b) { Value x = in(b, DType::kF64, {2}); return b.op(O::kConvert, {x, x}); });
  add("constant_c0", [&](ProgramBuilder& b) { return b.op(O::kConstant, {in(b, DType::kF64, {2})}, Attrs{.literal = lit<double>({}, {1})}); });
  add("constant_c1", [&](ProgramBuilder& b) { return b.op(O::kConstant, std::span<const Value>(), Attrs{}); });
  add("constant_c2", [&](ProgramBuilder& b) {
    Literal big;
    big.dtype = DType::kF64;
    big.shape = {kMaxLiteralElements + 1};
    big.bytes.resize(static_cast<size_t>(kMaxLiteralElements + 1) * 8);
    return b.constant(big);
  });
  add("iota_c0", [&](ProgramBuilder& b) { return b.op(O::kIota, {in(b, DType::kF64, {2})}, Attrs{.shape = {Extent::exact(2)}}); });
  add("iota_c1", [&](ProgramBuilder& b) { return b.op(O::kIota, std::span<const Value>(), Attrs{.shape = {Extent::exact(3)}, .axis = 1}); });
  add("iota_c2", [&](ProgramBuilder& b) { return b.op(O::kIota, std::span<const Value>(), Attrs{.shape = {Extent::exact(3)}, .dtype = DType::kBool}); });
  add("iota_c9", [&](ProgramBuilder& b) { return b.op(O::kIota, std::span<const Value>(), Attrs{.shape = {Extent::exact(-3)}}); });
  add("broadcast_in_dim_c0", [&](ProgramBuilder& b) { return b.op(O::kBroadcastInDim, std::span<const Value>(), Attrs{}); });
  add("broadcast_in_dim_c1", [&](ProgramBuilder& b) { return b.op(O::kBroadcastInDim, {in(b, DType::kF64, {2})}, Attrs{.shape = {Extent::exact(2)}}); });
  add("broadcast_in_dim_c2", [&](ProgramBuilder& b) { return b.op(O::kBroadcastInDim, {in(b, DType::kF64, {2})}, Attrs{.dims = {1}, .shape = {Extent::exact(2)}}); });
  add("broadcast_in_dim_c3", [&](ProgramBuilder& b) {
    return b.op(O::kBroadcastInDim, {in(b, DType::kF64, {2, 2})}, Attrs{.dims = {1, 0}, .shape = {Extent::exact(2), Extent::exact(2)}});
  });
  add("broadcast_in_dim_c4", [&](ProgramBuilder& b) { return b.op(O::kBroadcastInDim, {in(b, DType::kF64, {2})}, Attrs{.dims = {0}, .shape = {Extent::exact(3)}}); });
  add("broadcast_in_dim_c9", [&](ProgramBuilder& b) { return b.op(O::kBroadcastInDim, {in(b, DType::kF64, {})}, Attrs{.shape = {Extent::exact(-2)}}); });
  add("reshape_c0", [&](ProgramBuilder& b) { return b.op(O::kReshape, std::span<const Value>(), Attrs{}); });
  add("reshape_c1", [&](ProgramBuilder& b) { return b.op(O::kReshape, {in(b, DType::kF64, {2, 3})}, Attrs{.shape = {Extent::exact(5)}}); });
  add("reshape_c2", [&](ProgramBuilder& b) { return b.op(O::kReshape, {in(b, DType::kF64, {0})}, Attrs{.shape = {Extent::exact(-1), Extent::exact(0)}}); });
  add("transpose_c0", [&](ProgramBuilder& b) { return b.op(O::kTranspose, std::span<const Value>(), Attrs{}); });
  add("transpose_c1", [&](ProgramBuilder& b) { return b.op(O::kTranspose, {in(b, DType::kF64, {2, 3})}, Attrs{.dims = {0, 0}}); });
  add("reverse_c0", [&](ProgramBuilder& b) { return b.op(O::kReverse, std::span<const Value>(), Attrs{}); });
  add("reverse_c1", [&](ProgramBuilder& b) { return b.op(O::kReverse, {in(b, DType::kF64, {2})}, Attrs{.dims = {1}}); });
  add("slice_c0", [&](ProgramBuilder& b) { return b.op(O::kSlice, std::span<const Value>(), Attrs{}); });
  add("slice_c1", [&](ProgramBuilder& b) { return b.op(O::kSlice, {in(b, DType::kF64, {4})}, Attrs{.start = {0}, .limit = {1, 1}, .stride = {1}}); });
  add("slice_c2", [&](ProgramBuilder& b) { return b.op(O::kSlice, {in(b, DType::kF64, {4})}, Attrs{.start = {3}, .limit = {2}, .stride = {1}}); });
  add("slice_c3", [&](ProgramBuilder& b) { return b.op(O::kSlice, {in(b, DType::kF64, {4})}, Attrs{.start = {0}, .limit = {2}, .stride = {0}}); });
  add("dynamic_slice_c0", [&](ProgramBuilder& b) { return b.op(O::kDynamicSlice, std::span<const Value>(), Attrs{}); });
  add("dynamic_slice_c1", [&](ProgramBuilder& b) { return b.op(O::kDynamicSlice, {in(b, DType::kF64, {4})}, Attrs{.sizes = {2}}); });
  add("dynamic_slice_c2", [&](ProgramBuilder& b) { return b.op(O::kDynamicSlice, {in(b, DType::kF64, {4}), in(b, DType::kF64, {})}, Attrs{.sizes = {2}}); });
  add("dynamic_slice_c3", [&](ProgramBuilder& b) { return b.op(O::kDynamicSlice, {in(b, DType::kF64, {4}), in(b, DType::kI64, {})}, Attrs{.sizes = {5}}); });
  add("dynamic_update_slice_c0", [&](ProgramBuilder& b) { return b.op(O::kDynamicUpdateSlice, {in(b, DType::kF64, {4})}); });
  add("dynamic_update_slice_c1", [&](ProgramBuilder& b) { return b.op(O::kDynamicUpdateSlice, {in(b, DType::kF64, {4}), in(b, DType::kF32, {2}), in(b, DType::kI64, {})}); });
  add("dynamic_update_slice_c2", [&](ProgramBuilder& b) { return b.op(O::kDynamicUpdateSlice, {in(b, DType::kF64, {4}), in(b, DType::kF64, {2})}); });
  add("dynamic_update_slice_c3", [&](ProgramBuilder& b) { return b.op(O::kDynamicUpdateSlice, {in(b, DType::kF64, {4}), in(b, DType::kF64, {2}), in(b, DType::kF32, {})}); });
  add("dynamic_update_slice_c4", [&](ProgramBuilder& b) { return b.op(O::kDynamicUpdateSlice, {in(b, DType::kF64, {4}), in(b, DType::kF64, {5}), in(b, DType::kI32, {})}); });
  add("concatenate_c0", [&](ProgramBuilder& b) { return b.op(O::kConcatenate, std::span<const Value>(), Attrs{}); });
  add("concatenate_c1", [&](ProgramBuilder& b) { return b.op(O::kConcatenate, {in(b, DType::kF64, {4})}, Attrs{.axis = 1}); });
  add("concatenate_c2", [&](ProgramBuilder& b) { return b.op(O::kConcatenate, {in(b, DType::kF64, {4}), in(b, DType::kF32, {4})}); });
  add("concatenate_c3", [&](ProgramBuilder& b) { return b.op(O::kConcatenate, {in(b, DType::kF64, {4, 2}), in(b, DType::kF64, {4, 3})}); });
  add("pad_c0", [&](ProgramBuilder& b) { return b.op(O::kPad, {in(b, DType::kF64, {4})}); });
  add("pad_c1", [&](ProgramBuilder& b) { return b.op(O::kPad, {in(b, DType::kF64, {4}), in(b, DType::kF64, {1})}, Attrs{.low = {0}, .high = {0}, .interior = {0}}); });
  add("pad_c2", [&](ProgramBuilder& b) { return b.op(O::kPad, {in(b, DType::kF64, {4}), in(b, DType::kF64, {})}, Attrs{.low = {0}}); });
  add("pad_c3", [&](ProgramBuilder& b) { return b.op(O::kPad, {in(b, DType::kF64, {4}), in(b, DType::kF64, {})}, Attrs{.low = {0}, .high = {0}, .interior = {-1}}); });
  add("pad_c4", [&](ProgramBuilder& b) { return b.op(O::kPad, {in(b, DType::kF64, {4}), in(b, DType::kF64, {})}, Attrs{.low = {-3}, .high = {-3}, .interior = {0}}); });
  add("gather_c0", [&](ProgramBuilder& b) { return b.op(O::kGather, {in(b, DType::kF64, {4})}); });
  add("gather_c1", [&](ProgramBuilder& b) { return b.op(O::kGather, {in(b, DType::kF64, {4}), in(b, DType::kI64, {2})}, Attrs{.axis = 1}); });
  add("gather_c2", [&](ProgramBuilder& b) { return b.op(O::kGather, {in(b, DType::kF64, {4}), in(b, DType::kF64, {2})}); });
  add("scatter_add_c0", [&](ProgramBuilder& b) { return b.op(O::kScatterAdd, {in(b, DType::kF64, {4})}); });
  add("scatter_add_c1", [&](ProgramBuilder& b) { return b.op(O::kScatterAdd, {in(b, DType::kF64, {4}), in(b, DType::kI64, {2}), in(b, DType::kF64, {2})}, Attrs{.axis = 2}); });
  add("scatter_add_c2", [&](ProgramBuilder& b) { return b.op(O::kScatterAdd, {in(b, DType::kF64, {4}), in(b, DType::kBool, {2}), in(b, DType::kF64, {2})}); });
  add("scatter_add_c3", [&](ProgramBuilder& b) { return b.op(O::kScatterAdd, {in(b, DType::kF64, {4}), in(b, DType::kI64, {2}), in(b, DType::kF32, {2})}); });
  add("scatter_add_c4", [&](ProgramBuilder& b) { return b.op(O::kScatterAdd, {in(b, DType::kF64, {4}), in(b, DType::kI64, {2}), in(b, DType::kF64, {3})}); });
  add("reduce_c0", [&](ProgramBuilder& b) { return b.op(O::kReduce, std::span<const Value>(), Attrs{}); });
  add("reduce_c1", [&](ProgramBuilder& b) { return b.op(O::kReduce, {in(b, DType::kF64, {4})}, Attrs{.dims = {1}}); });
  add("reduce_c2", [&](ProgramBuilder& b) { return b.op(O::kReduce, {in(b, DType::kBool, {4})}, Attrs{.dims = {0}}); });
  add("dot_general_c0", [&](ProgramBuilder& b) { return b.op(O::kDotGeneral, {in(b, DType::kF64, {4})}); });
  add("dot_general_c1", [&](ProgramBuilder& b) { return b.op(O::kDotGeneral, {in(b, DType::kF64, {4}), in(b, DType::kF32, {4})}); });
  add("dot_general_c2", [&](ProgramBuilder& b) { return b.op(O::kDotGeneral, {in(b, DType::kF64, {4}), in(b, DType::kF64, {4})}, Attrs{.lhs_contract = {0}}); });
  add("dot_general_c3", [&](ProgramBuilder& b) {
    return b.op(O::kDotGeneral, {in(b, DType::kF64, {4}), in(b, DType::kF64, {4})}, Attrs{.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contract = {0}, .rhs_contract = {0}});
  });
  add("dot_general_c4", [&](ProgramBuilder& b) { return b.op(O::kDotGeneral, {in(b, DType::kF64, {4}), in(b, DType::kF64, {5})}, Attrs{.lhs_batch = {0}, .rhs_batch = {0}}); });
  add("dot_general_c5", [&](ProgramBuilder& b) { return b.op(O::kDotGeneral, {in(b, DType::kF64, {4}), in(b, DType::kF64, {5})}, Attrs{.lhs_contract = {0}, .rhs_contract = {0}}); });
  add("extract_diag_c0", [&](ProgramBuilder& b) { return b.op(O::kExtractDiag, std::span<const Value>(), Attrs{}); });
  add("extract_diag_c1", [&](ProgramBuilder& b) { return b.op(O::kExtractDiag, {in(b, DType::kF64, {4, 4})}, Attrs{.axis = 1}); });
  add("extract_diag_c2", [&](ProgramBuilder& b) { return b.op(O::kExtractDiag, {in(b, DType::kF64, {4, 3})}); });
  add("embed_diag_c0", [&](ProgramBuilder& b) { return b.op(O::kEmbedDiag, std::span<const Value>(), Attrs{}); });
  add("embed_diag_c1", [&](ProgramBuilder& b) { return b.op(O::kEmbedDiag, {in(b, DType::kF64, {4})}, Attrs{.axis = 1}); });
  add("argsort_c0", [&](ProgramBuilder& b) { return b.op(O::kArgsort, std::span<const Value>(), Attrs{}); });
  add("argsort_c1", [&](ProgramBuilder& b) { return b.op(O::kArgsort, {in(b, DType::kF64, {4})}, Attrs{.axis = 1}); });
  for (O c : {O::kTril, O::kTriu}) {
    const std::string name(op_name(c));
    add(name + "_c0", [=](ProgramBuilder& b) { return b.op(c, std::span<const Value>(), Attrs{}); });
    add(name + "_c1", [=](ProgramBuilder& b) { return b.op(c, {in(b, DType::kF64, {4})}); });
  }
  add("input_c1", [&](ProgramBuilder& b) {
    Extent n = b.symbol("n").value();
    return b.input(ValueType{DType::kF64, {Extent::exact(2) * n}});
  });
  cs.push_back({"program_c1", [](ProgramBuilder& b) -> Result<void> {
                  (void)b.symbol("k").value();
                  Value x = b.input(vt(DType::kF64, {2})).value();
                  auto r = b.finish({x});
                  if (r) return {};
                  return r.error();
                }});
  cs.push_back({"program_c2", [](ProgramBuilder& b) -> Result<void> {
                  auto r = b.finish(std::span<const Value>());
                  if (r) return {};
                  return r.error();
                }});
  // Extension declarations.
  struct BadExt final : ExtensionOp {
    std::string fam = "test.bad";
    int n_aliases = 1;
    Alias alias{};
    Effect effect{"rng", "g", EffectAccess::kWrite};
    int64_t extent = 2;
    std::string_view family_id() const override { return fam; }
    uint64_t payload_hash() const override { return 1; }
    bool payload_equal(const ExtensionOp&) const override { return true; }
    std::string payload_text() const override { return ""; }
    std::vector<Effect> effects() const override { return {effect}; }
    std::vector<Alias> aliases() const override { return std::vector<Alias>(static_cast<size_t>(n_aliases), alias); }
    Result<std::vector<ValueType>> infer(std::span<const ValueType>, std::span<const SymbolInfo>, std::vector<PendingGuard>&) const override {
      return std::vector<ValueType>{vt(DType::kF64, {extent})};
    }
  };
  auto ext_case = [&](std::string id, std::function<void(BadExt&)> mutate) {
    cs.push_back({std::move(id), [mutate](ProgramBuilder& b) -> Result<void> {
                    auto op = std::make_shared<BadExt>();
                    mutate(*op);
                    Value x = b.input(vt(DType::kF64, {2})).value();
                    auto r = b.extension(op, std::vector<Value>{x});
                    if (r) return {};
                    return r.error();
                  }});
  };
  ext_case("extension_c1", [](BadExt& e) { e.fam = ""; });
  ext_case("extension_c2", [](BadExt& e) { e.n_aliases = 2; });
  ext_case("extension_c3", [](BadExt& e) { e.alias = Alias{AliasKind::kViewOf, 3, {}}; });
  ext_case("extension_c4", [](BadExt& e) { e.effect.name = ""; });
  ext_case("extension_c5", [](BadExt& e) { e.extent = -1; });
  cs.push_back({"import_c1", [](ProgramBuilder& b) -> Result<void> {
                  ProgramBuilder inner;
                  Value x = inner.input(vt(DType::kF64, {3})).value();
                  CompiledGraph g = inner.finish({x}).value();
                  Value a = b.input(vt(DType::kF64, {4})).value();
                  auto r = b.import(g, std::vector<Value>{a});
                  if (r) return {};
                  return r.error();
                }});
  cs.push_back({"import_c2", [](ProgramBuilder& b) -> Result<void> {
                  ProgramBuilder inner;
                  Extent k = inner.symbol("k", 4).value();
                  Value x = inner.input(ValueType{DType::kF64, {k}}).value();
                  CompiledGraph g = inner.finish({x}).value();
                  Value a = b.input(vt(DType::kF64, {5})).value();
                  auto r = b.import(g, std::vector<Value>{a});
                  if (r) return {};
                  return r.error();
                }});
  return cs;
}

TEST(ConstraintIds, EveryIdHasAFailingNegativeTest) {
  std::set<std::string> covered;
  for (const NegCase& c : negative_cases()) {
    ProgramBuilder b;
    Result<void> r = c.run(b);
    ASSERT_FALSE(r) << c.id << " did not fail";
    EXPECT_EQ(r.error().message().rfind(c.id + ":", 0) == 0 || r.error().message().find(c.id) != std::string::npos, true)
        << c.id << " got: " << r.error().to_string();
    covered.insert(c.id);
  }
  for (const std::string& id : constraint_ids()) EXPECT_TRUE(covered.count(id)) << "no negative test for " << id;
  for (const std::string& id : covered) {
    EXPECT_NE(std::find(constraint_ids().begin(), constraint_ids().end(), id), constraint_ids().end()) << "undeclared id " << id;
  }
}

// ---- extensions and the interpreter ----------------------------------------------------------------

TEST(Extension, InterpreterUsesReferenceOrLowering) {
  for (bool reference : {false, true}) {
    ProgramBuilder b;
    Value x = b.input(vt(DType::kF64, {2, 2})).value();
    auto outs = b.extension(make_scale(2.5, 2, false, reference), std::vector<Value>{x}).value();
    CompiledGraph g = b.finish(outs).value();
    auto r = interpret(g, std::vector<Tensor>{tensor_f64({2, 2}, {1, 2, 3, 4})});
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(values_f64((*r)[0]), (std::vector<double>{2.5, 5, 7.5, 10}));
    EXPECT_EQ(values_f64((*r)[1]), (std::vector<double>{1, 2, 3, 4}));
  }
  // The interpreter lowers on the concrete input types, so a lowering that needs exact
  // shapes still evaluates a symbolic program ...
  ProgramBuilder b;
  Extent n = b.symbol("n").value();
  Value x = b.input(ValueType{DType::kF64, {n}}).value();
  CompiledGraph g = b.finish(b.extension(make_scale(2.0), std::vector<Value>{x}).value()).value();
  auto r = interpret(g, std::vector<Tensor>{tensor_f64({2}, {1, 2})});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(values_f64((*r)[0]), (std::vector<double>{2, 4}));
  // ... while lowering the symbolic op itself answers NeedsSpecialization.
  ProgramBuilder sym;
  Extent m = sym.symbol("m").value();
  Value xs = sym.input(ValueType{DType::kF64, {m}}).value();
  auto lo = make_scale(2.0)->lower_to_core(sym, std::vector<Value>{xs});
  ASSERT_TRUE(lo);
  EXPECT_EQ(lo->kind, LoweringOutcome::Kind::kNeedsSpecialization);
  // Lowering emits core ops only.
  ProgramBuilder lowering;
  lowering.set_core_only(true);
  Value y = lowering.input(vt(DType::kF64, {2})).value();
  auto no = lowering.extension(make_scale(1.0), std::vector<Value>{y});
  ASSERT_FALSE(no);
  EXPECT_NE(no.error().message().find("core ops only"), std::string::npos);
}

// Runs a one-op program on the given inputs.
std::vector<Tensor> run1(OpCode code, std::vector<Tensor> inputs, Attrs attrs = {}) {
  ProgramBuilder b;
  std::vector<Value> vals;
  for (const Tensor& t : inputs) {
    ValueType type{t.dtype(), {}};
    for (int64_t e : t.shape()) type.shape.push_back(Extent::exact(e));
    vals.push_back(b.input(type).value());
  }
  Value r = b.op(code, vals, std::move(attrs)).value();
  CompiledGraph g = b.finish({r}).value();
  auto out = interpret(g, inputs);
  EXPECT_TRUE(out) << out.error().to_string();
  return out.value();
}

TEST(Interpreter, MatchesHandComputedResults) {
  // 2x3 matrix, column-major: a(i,j) = 10*i + j.
  Tensor a = tensor_f64({2, 3}, {0, 10, 1, 11, 2, 12});
  // transpose: (j, i)
  EXPECT_EQ(values_f64(run1(OpCode::kTranspose, {a}, Attrs{.dims = {1, 0}})[0]), (std::vector<double>{0, 1, 2, 10, 11, 12}));
  // reverse axis 1
  EXPECT_EQ(values_f64(run1(OpCode::kReverse, {a}, Attrs{.dims = {1}})[0]), (std::vector<double>{2, 12, 1, 11, 0, 10}));
  // slice rows 1.., columns 0,2
  EXPECT_EQ(values_f64(run1(OpCode::kSlice, {a}, Attrs{.start = {1, 0}, .limit = {2, 3}, .stride = {1, 2}})[0]),
            (std::vector<double>{10, 12}));
  // reduce sum over rows -> per column sums, max over columns -> per row
  EXPECT_EQ(values_f64(run1(OpCode::kReduce, {a}, Attrs{.dims = {0}})[0]), (std::vector<double>{10, 12, 14}));
  EXPECT_EQ(values_f64(run1(OpCode::kReduce, {a}, Attrs{.dims = {1}, .reduce = ReduceKind::kMax})[0]), (std::vector<double>{2, 12}));
  // reshape keeps column-major order
  auto r = run1(OpCode::kReshape, {a}, Attrs{.shape = {Extent::exact(3), Extent::exact(2)}})[0];
  EXPECT_EQ(r.shape(), Shape({3, 2}));
  EXPECT_EQ(values_f64(r), (std::vector<double>{0, 10, 1, 11, 2, 12}));
  // dot_general: a (2x3) . b (3x2) with b(k, j) = k + 1 + j
  Tensor bm = tensor_f64({3, 2}, {1, 2, 3, 2, 3, 4});
  auto d = run1(OpCode::kDotGeneral, {a, bm}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}})[0];
  std::vector<double> want(4);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += (10.0 * i + k) * (k + 1 + j);
      want[static_cast<size_t>(i + 2 * j)] = acc;
    }
  }
  EXPECT_EQ(values_f64(d), want);
  // batched dot_general: batch axis 0 of both
  Tensor l = tensor_f64({2, 2}, {1, 2, 3, 4});  // l(b, k)
  Tensor rr = tensor_f64({2, 2}, {5, 6, 7, 8});  // r(b, k)
  EXPECT_EQ(values_f64(run1(OpCode::kDotGeneral, {l, rr}, Attrs{.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contract = {1}, .rhs_contract = {1}})[0]),
            (std::vector<double>{1 * 5 + 3 * 7, 2 * 6 + 4 * 8}));
  // pad [1,2,3] low 1, high -1, interior 1 with 9: [9, 1, 9, 2, 9] then crop last -> [9,1,9,2,9,3] minus 1 = 
  Tensor v = tensor_f64({3}, {1, 2, 3});
  Tensor nine = tensor_f64({}, {9});
  EXPECT_EQ(values_f64(run1(OpCode::kPad, {v, nine}, Attrs{.low = {1}, .high = {-1}, .interior = {1}})[0]),
            (std::vector<double>{9, 1, 9, 2, 9}));
  // broadcast_in_dim [1,2,3] to 2x3 along axis 1
  EXPECT_EQ(values_f64(run1(OpCode::kBroadcastInDim, {v}, Attrs{.dims = {1}, .shape = {Extent::exact(2), Extent::exact(3)}})[0]),
            (std::vector<double>{1, 1, 2, 2, 3, 3}));
  // concatenate
  EXPECT_EQ(values_f64(run1(OpCode::kConcatenate, {v, v}, Attrs{.axis = 0})[0]), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  // gather (take) with clamping and scatter_add with skipping
  Tensor idx = Tensor::from_col_major<int64_t>({3}, std::vector<int64_t>{2, 0, 7}).value();
  EXPECT_EQ(values_f64(run1(OpCode::kGather, {v, idx})[0]), (std::vector<double>{3, 1, 3}));
  Tensor upd = tensor_f64({3}, {10, 20, 30});
  EXPECT_EQ(values_f64(run1(OpCode::kScatterAdd, {v, idx, upd})[0]), (std::vector<double>{21, 2, 13}));
  // embed/extract diag and tril/triu
  auto e = run1(OpCode::kEmbedDiag, {v})[0];
  EXPECT_EQ(values_f64(e), (std::vector<double>{1, 0, 0, 0, 2, 0, 0, 0, 3}));
  EXPECT_EQ(values_f64(run1(OpCode::kExtractDiag, {e})[0]), (std::vector<double>{1, 2, 3}));
  Tensor m = tensor_f64({2, 2}, {1, 2, 3, 4});  // [[1,3],[2,4]]
  EXPECT_EQ(values_f64(run1(OpCode::kTril, {m})[0]), (std::vector<double>{1, 2, 0, 4}));
  EXPECT_EQ(values_f64(run1(OpCode::kTriu, {m}, Attrs{.k = 1})[0]), (std::vector<double>{0, 0, 3, 0}));
  // dynamic slice clamps the start
  Tensor big = Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{5}).value();
  EXPECT_EQ(values_f64(run1(OpCode::kDynamicSlice, {v, big}, Attrs{.sizes = {2}})[0]), (std::vector<double>{2, 3}));
  Tensor one = Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{1}).value();
  EXPECT_EQ(values_f64(run1(OpCode::kDynamicUpdateSlice, {v, tensor_f64({1}, {7}), one})[0]), (std::vector<double>{1, 7, 3}));
  // iota along axis 1 of 2x2
  ProgramBuilder ib;
  Value io = ib.op(OpCode::kIota, {}, Attrs{.shape = {Extent::exact(2), Extent::exact(2)}, .axis = 1, .dtype = DType::kF64}).value();
  Value dummy = ib.input(vt(DType::kF64, {})).value();
  (void)dummy;
  auto iota = interpret(ib.finish({io}).value(), std::vector<Tensor>{tensor_f64({}, {0})}).value();
  EXPECT_EQ(values_f64(iota[0]), (std::vector<double>{0, 0, 1, 1}));
}

TEST(Interpreter, ArgsortIsNumpysStableOrder) {
  // Ties, NaN, -0 and 0 along each axis of a 3-D tensor, and the integer and bool dtypes.
  std::vector<double> v = {2, NAN, -0.0, 1, 0, 2, -1, NAN, 0, 2, -1, 1, 3, -0.0, 2, 1, 0, NAN, 1, -1, 2, 0, 1, 2};
  const Tensor x = tensor_f64({2, 3, 4}, v);
  for (int64_t axis = 0; axis < 3; ++axis) {
    const Tensor order = run1(OpCode::kArgsort, {x}, Attrs{.axis = axis})[0];
    EXPECT_EQ(test_support::check_argsort(x, order, axis), "") << "axis " << axis;
  }
  EXPECT_EQ(values<int64_t>(run1(OpCode::kArgsort, {tensor_f64({5}, {3, NAN, -1, 3, -0.0})})[0]),
            (std::vector<int64_t>{2, 4, 0, 3, 1}));
  const Tensor b = Tensor::from_col_major<bool>({5}, std::vector<bool>{true, false, true, false, false}).value();
  EXPECT_EQ(values<int64_t>(run1(OpCode::kArgsort, {b})[0]), (std::vector<int64_t>{1, 3, 4, 0, 2}));
  const Tensor i = Tensor::from_col_major<int32_t>({2, 3}, std::vector<int32_t>{5, -7, 5, 2, -7, 9}).value();
  const Tensor io = run1(OpCode::kArgsort, {i}, Attrs{.axis = 1})[0];
  EXPECT_EQ(values<int64_t>(io), (std::vector<int64_t>{2, 0, 0, 1, 1, 2}));  // rows [5, 5, -7], [-7, 2, 9]
}

TEST(Interpreter, ScalarSemanticsPerDType) {
  auto i32 = [](std::vector<int32_t> v) {
    const auto n = static_cast<int64_t>(v.size());
    return Tensor::from_col_major<int32_t>({n}, std::move(v)).value();
  };
  auto ints = [](const Tensor& t) { return values<int32_t>(t); };
  // Integer division truncates toward zero; rem takes the dividend's sign; wraps.
  EXPECT_EQ(ints(run1(OpCode::kDiv, {i32({7, -7, INT32_MIN}), i32({2, 2, -1})})[0]), (std::vector<int32_t>{3, -3, INT32_MIN}));
  EXPECT_EQ(ints(run1(OpCode::kRem, {i32({7, -7, 5}), i32({2, 2, -1})})[0]), (std::vector<int32_t>{1, -1, 0}));
  EXPECT_EQ(ints(run1(OpCode::kPow, {i32({3, -2, 2}), i32({4, 3, 31})})[0]), (std::vector<int32_t>{81, -8, INT32_MIN}));
  EXPECT_EQ(ints(run1(OpCode::kNeg, {i32({INT32_MIN, 5})})[0]), (std::vector<int32_t>{INT32_MIN, -5}));
  // Division by zero is a runtime error, not UB.
  ProgramBuilder b;
  Value x = b.input(vt(DType::kI32, {1})).value();
  Value y = b.input(vt(DType::kI32, {1})).value();
  auto g = b.finish({b.op(OpCode::kDiv, {x, y}).value()}).value();
  auto e = interpret(g, std::vector<Tensor>{i32({1}), i32({0})});
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().stage(), ErrorStage::kCompletion);
  // max/min propagate NaN; convert float -> int truncates and saturates, NaN -> 0.
  Tensor f = tensor_f64({3}, {std::nan(""), 1.0, -2.0});
  Tensor h = tensor_f64({3}, {0.0, std::nan(""), 3.0});
  auto mx = values_f64(run1(OpCode::kMax, {f, h})[0]);
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3.0);
  Tensor conv = tensor_f64({4}, {2.9, -2.9, 1e30, std::nan("")});
  EXPECT_EQ(ints(run1(OpCode::kConvert, {conv}, Attrs{.dtype = DType::kI32})[0]), (std::vector<int32_t>{2, -2, INT32_MAX, 0}));
  // complex: abs is real, sign is z/|z|, compare eq.
  Tensor z = Tensor::from_col_major<c128>({2}, std::vector<c128>{c128(3, 4), c128(0, 0)}).value();
  EXPECT_EQ(values_f64(run1(OpCode::kAbs, {z})[0]), (std::vector<double>{5, 0}));
  auto sg = values<c128>(run1(OpCode::kSign, {z})[0]);
  EXPECT_EQ(sg[0], c128(0.6, 0.8));
  EXPECT_EQ(sg[1], c128(0, 0));
  auto im = values_f64(run1(OpCode::kImag, {z})[0]);
  EXPECT_EQ(im, (std::vector<double>{4, 0}));
}

// gather along an axis of extent 0: non-empty indices have nothing to take (numpy's take
// raises, StableHLO rejects): a typed out_of_range, never zeros; empty indices give an
// empty result.
TEST(Interpreter, GatherFromAnEmptyAxisIsATypedError) {
  auto build = [](int64_t count) {
    ProgramBuilder b;
    Value x = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(0)}}).value();
    Value i = b.input(ValueType{DType::kI64, {Extent::exact(count)}}).value();
    return b.finish({b.op(OpCode::kGather, {x, i}, Attrs{.axis = 1}).value()}).value();
  };
  const Tensor x = tensor_f64({3, 0}, {});
  auto bad = interpret(build(2), std::vector<Tensor>{x, Tensor::from_col_major<int64_t>({2}, std::vector<int64_t>{0, 1}).value()});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(bad.error().message().find("extent 0"), std::string::npos) << bad.error().to_string();
  auto empty = interpret(build(0), std::vector<Tensor>{x, Tensor::from_col_major<int64_t>({0}, std::vector<int64_t>{}).value()});
  ASSERT_TRUE(empty) << empty.error().to_string();
  EXPECT_EQ((*empty)[0].shape(), (Shape{3, 0}));
}

TEST(Interpreter, ComplexExpm1AndLog1pAreAccurateNearZero) {
  ProgramBuilder b;
  Value x = b.input(ValueType{DType::kC128, {Extent::exact(1)}}).value();
  Value e = b.op(OpCode::kExpm1, {x}).value();
  Value l = b.op(OpCode::kLog1p, {x}).value();
  CompiledGraph g = b.finish({e, l}).value();
  Tensor in = Tensor::from_col_major<c128>({1}, {c128(1e-10, 1e-10)}).value();
  std::vector<Tensor> out = interpret(g, std::vector<Tensor>{in}).value();
  const c128 ev = out[0].get<c128>({0}).value(), lv = out[1].get<c128>({0}).value();
  EXPECT_NEAR(ev.real(), 1e-10, 1e-24);
  EXPECT_NEAR(ev.imag(), 1e-10 + 1e-20, 1e-24);
  EXPECT_NEAR(lv.real(), 1e-10, 1e-24);
  EXPECT_NEAR(lv.imag(), 1e-10 - 1e-20, 1e-24);
}

}  // namespace
}  // namespace tenferro::program
