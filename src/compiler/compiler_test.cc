#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "tenferro/compiler/compiler.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/test_support/test_extension.h"

namespace tenferro::compiler {
namespace {

using program::Attrs;
using program::Literal;
using program::OpCode;
using program::ProgramBuilder;
using test_support::make_scale;

ValueType vt(DType d, std::vector<int64_t> shape) {
  ValueType t{d, {}};
  for (int64_t e : shape) t.shape.push_back(Extent::exact(e));
  return t;
}

Value splat(TraceContext& tc, double v, const std::vector<int64_t>& shape) {
  Literal l = Literal::from_values<double>({}, std::span<const double>(&v, 1)).value();
  Value c = tc.constant(Tensor::from_col_major<double>({}, std::vector<double>{v}).value()).value();
  (void)l;
  Attrs a;
  for (size_t i = 0; i < shape.size(); ++i) a.shape.push_back(Extent::exact(shape[i]));
  return tc.op(OpCode::kBroadcastInDim, {c}, a).value();
}

// ---- pass fixtures ---------------------------------------------------------------------------------

struct Fixture {
  std::string pass, before, after;
};

Fixture read_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  Fixture f;
  const auto p = text.find("# pass: ");
  const auto b = text.find("# before\n");
  const auto a = text.find("# after\n");
  EXPECT_TRUE(p != std::string::npos && b != std::string::npos && a != std::string::npos) << path;
  f.pass = text.substr(p + 8, text.find('\n', p) - p - 8);
  f.before = text.substr(b + 9, a - b - 9);
  f.after = text.substr(a + 8);
  return f;
}

TEST(PassFixtures, EachPassMatchesItsBeforeAfterText) {
  const auto reg = test_support::test_registry();
  std::set<std::string> passes_seen;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TENFERRO_COMPILER_TESTDATA)) {
    if (entry.path().extension() != ".txt") continue;
    ++files;
    const Fixture f = read_fixture(entry.path());
    std::optional<PassId> pass;
    for (int i = 0; i < kPassCount; ++i) {
      if (pass_name(static_cast<PassId>(i)) == f.pass) pass = static_cast<PassId>(i);
    }
    ASSERT_TRUE(pass) << entry.path() << ": unknown pass " << f.pass;
    passes_seen.insert(f.pass);
    auto before = program::parse_program(f.before, &reg);
    ASSERT_TRUE(before) << entry.path() << ": " << before.error().to_string();
    auto r = run_pass(*pass, *before);
    ASSERT_TRUE(r) << entry.path() << ": " << r.error().to_string();
    const std::string got = program::print_program(*r->graph.program);
    if (std::getenv("TENFERRO_UPDATE_FIXTURES")) {
      std::ofstream out(entry.path());
      out << "# pass: " << f.pass << "\n# before\n" << f.before << "# after\n" << got;
      continue;
    }
    EXPECT_EQ(got, f.after) << entry.path();
    // The after text is itself a valid program, and the pass results evaluate the same.
    EXPECT_TRUE(program::parse_program(f.after, &reg)) << entry.path();
  }
  EXPECT_GE(files, kPassCount);
  EXPECT_EQ(passes_seen.size(), static_cast<size_t>(kPassCount));
}

// ---- random programs: interpreter results before == after compilation ----------------------------

// Bitwise equality of two tensors (NaN payloads included).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  Tensor x = a.to_col_major().value(), y = b.to_col_major().value();
  const auto n = static_cast<size_t>(x.numel() * x.element_size());
  return n == 0 || std::memcmp(static_cast<const uint8_t*>(x.storage()->data()) + x.offset() * x.element_size(),
                               static_cast<const uint8_t*>(y.storage()->data()) + y.offset() * y.element_size(), n) == 0;
}

struct RandomProgram {
  TracedGraph graph;
  std::vector<Tensor> inputs;
};

// Builds a random f64 program over a few shapes with many simplification opportunities:
// identity and double transposes/reverses, reshape chains, x*1, x-0, double negation,
// duplicate subexpressions, dead ops, and test extensions (some effectful, some with an
// unused second output).
RandomProgram random_program(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  TraceContext tc;
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {3, 2}, {6}, {2, 3}};
  std::vector<Value> pool;
  std::vector<Tensor> inputs;
  const int n_inputs = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < n_inputs; ++i) {
    const auto& sh = shapes[pick(shapes.size())];
    pool.push_back(tc.input(vt(DType::kF64, sh), "in" + std::to_string(i)).value());
    inputs.push_back(Tensor::random_normal(DType::kF64, Dims(sh), seed * 31 + static_cast<uint64_t>(i)).value());
  }
  auto type_of = [&](Value v) { return tc.type(v).value(); };
  auto dims_of = [&](Value v) {
    std::vector<int64_t> d;
    for (const auto& e : type_of(v).shape) d.push_back(e.exact_value());
    return d;
  };
  auto same_shape_partner = [&](Value v) -> Value {
    std::vector<Value> c;
    for (Value w : pool) {
      if (type_of(w) == type_of(v)) c.push_back(w);
    }
    if (rng() % 4 == 0) return splat(tc, static_cast<double>(pick(3)) - 1.0, dims_of(v));
    return c[pick(c.size())];
  };
  const int n_ops = 4 + static_cast<int>(pick(14));
  for (int k = 0; k < n_ops; ++k) {
    Value x = pool[pick(pool.size())];
    const auto d = dims_of(x);
    Value y;
    switch (pick(22)) {
      case 0: y = tc.op(OpCode::kNeg, {tc.op(OpCode::kNeg, {x}).value()}).value(); break;
      case 1: {
        const OpCode u[] = {OpCode::kExp, OpCode::kAbs, OpCode::kSin, OpCode::kTanh, OpCode::kConj, OpCode::kReal, OpCode::kSqrt};
        y = tc.op(u[pick(7)], {x}).value();
        break;
      }
      case 2:
      case 3: {
        const OpCode bops[] = {OpCode::kAdd, OpCode::kSub, OpCode::kMul, OpCode::kDiv, OpCode::kMax, OpCode::kMin};
        y = tc.op(bops[pick(6)], {x, same_shape_partner(x)}).value();
        break;
      }
      case 4: y = tc.op(OpCode::kMul, {x, splat(tc, 1.0, d)}).value(); break;
      case 5: y = tc.op(OpCode::kSub, {x, splat(tc, 0.0, d)}).value(); break;
      case 6:
        if (d.size() == 2) {
          Value t = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
          y = rng() % 2 ? tc.op(OpCode::kTranspose, {t}, Attrs{.dims = {1, 0}}).value() : t;
        } else {
          y = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {0}}).value();
        }
        break;
      case 7: {
        int64_t n = 1;
        for (int64_t e : d) n *= e;
        Value r = tc.op(OpCode::kReshape, {x}, Attrs{.shape = {Extent::exact(n)}}).value();
        std::vector<std::vector<int64_t>> fits = {{n}, d};
        for (const auto& sh : shapes) {
          if (sh.size() == 2 ? sh[0] * sh[1] == n : sh[0] == n) fits.push_back(sh);
        }
        const auto& back = fits[pick(fits.size())];
        Attrs a;
        for (int64_t e : back) a.shape.push_back(Extent::exact(e));
        y = tc.op(OpCode::kReshape, {r}, a).value();
        break;
      }
      case 8: {
        Attrs a{.dims = {0}};
        Value r = tc.op(OpCode::kReverse, {x}, a).value();
        y = rng() % 2 ? tc.op(OpCode::kReverse, {r}, a).value() : r;
        break;
      }
      case 9: {
        Value p = tc.op(OpCode::kCompare, {x, same_shape_partner(x)}, Attrs{.direction = program::CompareDirection::kGt}).value();
        Value other = same_shape_partner(x);
        y = tc.op(OpCode::kSelect, {p, x, rng() % 3 == 0 ? x : other}).value();
        break;
      }
      case 10: {
        Attrs a;
        for (int64_t e : d) {
          a.start.push_back(0);
          a.limit.push_back(e);
          a.stride.push_back(1);
        }
        if (rng() % 2) a.limit[0] = 1;
        y = tc.op(OpCode::kSlice, {x}, a).value();
        break;
      }
      case 11:
        if (d.size() == 2) {
          // x (a, b) contracted with any (b, c) value or its transpose.
          Value t = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
          y = tc.op(OpCode::kDotGeneral, {x, t}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
        } else {
          // Sum to a scalar (or over no axes) and broadcast back: values keep rank >= 1.
          const bool all = rng() % 2;
          Value r = tc.op(OpCode::kReduce, {x}, Attrs{.dims = all ? std::vector<int64_t>{0} : std::vector<int64_t>{}}).value();
          Attrs a;
          if (!all) a.dims = {0};
          for (int64_t e : d) a.shape.push_back(Extent::exact(e));
          y = tc.op(OpCode::kBroadcastInDim, {r}, a).value();
        }
        break;
      case 12: {  // a duplicate of an existing pure op
        Value a1 = tc.op(OpCode::kCos, {x}).value();
        Value a2 = tc.op(OpCode::kCos, {x}).value();
        y = tc.op(OpCode::kAdd, {a1, a2}).value();
        break;
      }
      case 13: {
        auto outs = tc.extension(make_scale(0.5 + static_cast<double>(pick(3)), rng() % 2 ? 2 : 1, rng() % 3 == 0, rng() % 2 == 0),
                                 std::vector<Value>{x})
                        .value();
        y = outs[0];
        break;
      }
      case 14: (void)tc.op(OpCode::kLog, {x}).value(); y = x; break;  // dead op
      case 15: {  // pad (sometimes a no-op) then slice back to the same shape
        Value z = splat(tc, 0.0, {});
        Attrs a;
        const bool noop = rng() % 2;
        for (int64_t e : d) {
          a.low.push_back(noop ? 0 : 1);
          a.high.push_back(0);
          a.interior.push_back(0);
          (void)e;
        }
        Value pd = tc.op(OpCode::kPad, {x, z}, a).value();
        Attrs sl;
        for (int64_t e : d) {
          sl.start.push_back(noop ? 0 : 1);
          sl.limit.push_back(noop ? e : e + 1);
          sl.stride.push_back(1);
        }
        y = tc.op(OpCode::kSlice, {pd}, sl).value();
        break;
      }
      case 16: {  // gather along axis 0 with in-range and clamped indices, then scatter_add back
        const int64_t n0 = d[0];
        Tensor idx_t = Tensor::from_col_major<int64_t>({n0}, [&] {
                         std::vector<int64_t> v;
                         for (int64_t i = 0; i < n0; ++i) v.push_back(static_cast<int64_t>(pick(static_cast<size_t>(n0) + 2)) - 1);
                         return v;
                       }())
                           .value();
        Value idx = tc.constant(idx_t).value();
        Value gth = tc.op(OpCode::kGather, {x, idx}, Attrs{.axis = 0}).value();
        y = tc.op(OpCode::kScatterAdd, {x, idx, gth}, Attrs{.axis = 0}).value();
        break;
      }
      case 17:
        if (d.size() == 2 && d[0] == d[1]) {
          y = tc.op(OpCode::kExtractDiag, {x}).value();
        } else if (d.size() == 1) {
          Value e = tc.op(OpCode::kEmbedDiag, {x}).value();
          Value t = tc.op(rng() % 2 ? OpCode::kTril : OpCode::kTriu, {e}, Attrs{.k = static_cast<int64_t>(pick(3)) - 1}).value();
          y = tc.op(OpCode::kExtractDiag, {t}).value();
        } else {
          y = tc.op(OpCode::kConcatenate, {x}, Attrs{.axis = 0}).value();
        }
        break;
      case 18: {  // iota + convert round trip through i64
        Attrs a{.axis = 0, .dtype = DType::kF64};
        for (int64_t e : d) a.shape.push_back(Extent::exact(e));
        Value io = tc.op(OpCode::kIota, {}, a).value();
        Value ci = tc.op(OpCode::kConvert, {tc.op(OpCode::kConvert, {x}, Attrs{.dtype = DType::kI64}).value()}, Attrs{.dtype = DType::kF64}).value();
        y = tc.op(OpCode::kAdd, {io, ci}).value();
        break;
      }
      case 19: {  // concatenate with itself and slice the second half
        Value cc = tc.op(OpCode::kConcatenate, {x, same_shape_partner(x)}, Attrs{.axis = 0}).value();
        Attrs sl;
        for (size_t i = 0; i < d.size(); ++i) {
          sl.start.push_back(i == 0 ? d[0] : 0);
          sl.limit.push_back(i == 0 ? 2 * d[0] : d[i]);
          sl.stride.push_back(1);
        }
        y = tc.op(OpCode::kSlice, {cc}, sl).value();
        break;
      }
      case 20: {  // dynamic_slice / dynamic_update_slice with clamped starts
        Value st = tc.constant(Tensor::from_col_major<int64_t>({}, std::vector<int64_t>{static_cast<int64_t>(pick(3))}).value()).value();
        std::vector<Value> ops{x};
        Attrs a;
        for (int64_t e : d) {
          ops.push_back(st);
          a.sizes.push_back(e > 1 ? e - 1 : e);
        }
        Value ds = tc.op(OpCode::kDynamicSlice, ops, a).value();
        std::vector<Value> up{x, ds};
        for (size_t i = 0; i < d.size(); ++i) up.push_back(st);
        y = tc.op(OpCode::kDynamicUpdateSlice, up).value();
        break;
      }
      default: y = tc.op(OpCode::kAdd, {same_shape_partner(x), x}).value(); break;
    }
    pool.push_back(y);
  }
  std::vector<Value> outs;
  const size_t n_out = 1 + pick(3);
  for (size_t i = 0; i < n_out; ++i) outs.push_back(pool[pool.size() - 1 - pick(std::min<size_t>(pool.size(), 4))]);
  return RandomProgram{tc.finish(outs).value(), std::move(inputs)};
}

TEST(Compiler, ThousandRandomProgramsEvaluateIdenticallyAfterCompilation) {
  GraphCompiler compiler;
  int64_t ops_before = 0, ops_after = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    RandomProgram rp = random_program(seed);
    auto compiled = compiler.compile(rp.graph);
    ASSERT_TRUE(compiled) << "seed " << seed << ": " << compiled.error().to_string() << "\n"
                          << program::print_program(rp.graph.program());
    auto want = program::interpret(rp.graph.graph(), rp.inputs);
    auto got = program::interpret(*compiled, rp.inputs);
    ASSERT_TRUE(want) << want.error().to_string();
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_EQ(want->size(), got->size());
    for (size_t i = 0; i < want->size(); ++i) {
      ASSERT_TRUE(same_bits((*want)[i], (*got)[i])) << "seed " << seed << " output " << i << "\nbefore:\n"
                                                    << program::print_program(rp.graph.program()) << "after:\n"
                                                    << program::print_program(*compiled->program);
    }
    ops_before += static_cast<int64_t>(rp.graph.program().ops().size());
    ops_after += static_cast<int64_t>(compiled->program->ops().size());
    // Deterministic: a second compilation without the cache gives the same program.
    auto again = compiler.explain(rp.graph);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->graph.program->fingerprint(), compiled->program->fingerprint());
  }
  EXPECT_LT(ops_after, ops_before * 3 / 4) << "the pipeline should remove a good share of these ops";
  RecordProperty("ops_before", std::to_string(ops_before));
  RecordProperty("ops_after", std::to_string(ops_after));
}

// ---- effects ---------------------------------------------------------------------------------------

TEST(Compiler, EffectfulExtensionsAreNeverRemovedOrMerged) {
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {2})).value();
  (void)tc.extension(make_scale(2.0, 1, true), std::vector<Value>{x}).value();  // unused, effectful
  (void)tc.extension(make_scale(2.0, 1, true), std::vector<Value>{x}).value();  // identical, effectful
  (void)tc.extension(make_scale(3.0), std::vector<Value>{x}).value();           // unused, pure
  Value p1 = tc.extension(make_scale(4.0), std::vector<Value>{x}).value()[0];
  Value p2 = tc.extension(make_scale(4.0), std::vector<Value>{x}).value()[0];  // duplicate, pure
  TracedGraph g = tc.finish({p1, p2}).value();
  GraphCompiler c;
  auto r = c.compile(g);
  ASSERT_TRUE(r) << r.error().to_string();
  int effectful = 0, pure = 0;
  for (const auto& op : r->program->ops()) {
    if (!op.extension()) continue;
    (op.extension()->effects().empty() ? pure : effectful)++;
  }
  EXPECT_EQ(effectful, 2);
  EXPECT_EQ(pure, 1);
}

// Compilation rebuilds the program pass by pass; a derived symbol (interior pad of a
// symbolic axis) must survive with its definition, so n = 0 still gives low + high.
TEST(Compiler, DerivedSymbolsSurviveCompilation) {
  TraceContext tc;
  const Extent n = tc.symbol("n").value();
  Value x = tc.input(ValueType{DType::kF64, {n}}).value();
  Value v = tc.input(vt(DType::kF64, {})).value();
  Value p = tc.op(OpCode::kPad, {x, v}, Attrs{.low = {2}, .high = {0}, .interior = {1}}).value();
  Value q = tc.op(OpCode::kNeg, {tc.op(OpCode::kNeg, {p}).value()}).value();  // folded away
  GraphCompiler c;
  auto r = c.compile(tc.finish({q}).value());
  ASSERT_TRUE(r) << r.error().to_string();
  const auto& syms = r->program->symbols();
  ASSERT_EQ(syms.size(), 2u);
  ASSERT_TRUE(syms[1].max0_of.has_value());
  EXPECT_EQ(syms[1].max0_of->to_string(syms), "2*n - 1");
  const Tensor three = Tensor::from_col_major<double>(Dims{}, std::vector<double>{3}).value();
  for (int64_t len : {0, 2}) {
    std::vector<double> xs(static_cast<size_t>(len), 1.0);
    auto out = program::interpret(*r, std::vector<Tensor>{Tensor::from_col_major<double>(Dims{len}, xs).value(), three});
    ASSERT_TRUE(out) << out.error().to_string();
    EXPECT_EQ((*out)[0].numel(), len == 0 ? 2 : 5);  // 2 + max(0, 2n - 1)
  }
}

struct InPlaceOp final : ExtensionOp {
  std::string_view family_id() const override { return "test.inplace"; }
  uint64_t payload_hash() const override { return 7; }
  bool payload_equal(const ExtensionOp&) const override { return true; }
  std::string payload_text() const override { return ""; }
  std::vector<program::Effect> effects() const override { return {}; }
  std::vector<program::Alias> aliases() const override { return {program::Alias{program::AliasKind::kMustAlias, 0, {}}}; }
  Result<std::vector<ValueType>> infer(std::span<const ValueType> in, std::span<const program::SymbolInfo>,
                                       std::vector<program::PendingGuard>&) const override {
    return std::vector<ValueType>{in[0]};
  }
};

TEST(Compiler, InPlaceUpdateOfAValueUsedLaterIsRejected) {
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {2})).value();
  Value y = tc.extension(std::make_shared<InPlaceOp>(), std::vector<Value>{x}).value()[0];
  Value z = tc.op(OpCode::kAdd, {x, y}).value();  // reads x after its in-place update
  GraphCompiler c;
  auto r = c.compile(tc.finish({z}).value());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("effects_c1"), std::string::npos) << r.error().to_string();
  // Without a later use it compiles and the op is pinned even when its result is unused.
  TraceContext ok;
  Value a = ok.input(vt(DType::kF64, {2})).value();
  (void)ok.extension(std::make_shared<InPlaceOp>(), std::vector<Value>{a}).value();
  Value b = ok.input(vt(DType::kF64, {2})).value();
  auto r2 = c.compile(ok.finish({b}).value());
  ASSERT_TRUE(r2) << r2.error().to_string();
  EXPECT_EQ(r2->program->ops().size(), 1u);
}

// ---- cache, options, transforms ------------------------------------------------------------------

TracedGraph chain(int n_neg, double factor) {
  TraceContext tc;
  Value x = tc.input(vt(DType::kF64, {2}), "x").value();
  for (int i = 0; i < n_neg; ++i) x = tc.op(OpCode::kNeg, {x}).value();
  Value s = splat(tc, factor, {2});
  return tc.finish({tc.op(OpCode::kMul, {x, s}).value()}).value();
}

TEST(CompileCache, HitsMissesEvictionsAndClear) {
  GraphCompiler c(2);
  auto a = chain(1, 2.0), a2 = chain(1, 2.0), b = chain(2, 2.0), d = chain(3, 2.0);
  ASSERT_TRUE(c.compile(a));
  ASSERT_TRUE(c.compile(a2));  // structurally equal: a hit
  EXPECT_EQ(c.stats().hits, 1);
  EXPECT_EQ(c.stats().misses, 1);
  CompilerOptions no_cse;
  no_cse.cse = false;
  ASSERT_TRUE(c.compile(a, no_cse));  // options are part of the key
  EXPECT_EQ(c.stats().misses, 2);
  ASSERT_TRUE(c.compile(b));
  ASSERT_TRUE(c.compile(d));
  const auto st = c.stats();
  EXPECT_EQ(st.entries, 2);
  EXPECT_EQ(st.evictions, 2);
  EXPECT_GT(st.retained_bytes, 0);
  EXPECT_EQ(st.capacity, 2u);
  c.clear();
  EXPECT_EQ(c.stats().entries, 0);
  EXPECT_EQ(c.stats().retained_bytes, 0);
  ASSERT_TRUE(c.compile(a));
  EXPECT_EQ(c.stats().misses, 5);
}

TEST(CompileCache, ForcedFingerprintCollisionResolvesByExactEquality) {
  GraphCompiler c;
  CompilerTestHook::force_fingerprint(c, program::Fingerprint{1, 2});
  auto a = chain(1, 2.0), b = chain(1, 3.0);  // differ only in a constant
  auto ra = c.compile(a);
  auto rb = c.compile(b);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(c.stats().misses, 2);  // same forced fingerprint, yet not confused
  EXPECT_FALSE(ra->program->structurally_equal(*rb->program));
  const Tensor x = Tensor::from_col_major<double>({2}, std::vector<double>{1, 2}).value();
  auto ya = program::interpret(*rb, std::vector<Tensor>{x}).value();
  const auto* p = static_cast<const double*>(ya[0].storage()->data());
  EXPECT_EQ(p[0], -3.0);
  EXPECT_EQ(p[1], -6.0);
  ASSERT_TRUE(c.compile(chain(1, 3.0)));
  EXPECT_EQ(c.stats().hits, 1);
}

struct DoubleOutputs final : SemanticTransform {
  bool break_signature = false;
  std::string_view id() const override { return "test.double_outputs"; }
  uint64_t config_hash() const override { return break_signature ? 1 : 0; }
  Result<CompiledGraph> apply(const CompiledGraph& in) const override {
    // Rebuilds the program by import and multiplies every output by 2 (by x + x).
    ProgramBuilder b;
    std::vector<Value> args;
    for (const auto& input : in.program->inputs()) {
      if (input.binding) continue;
      TENFERRO_TRY(Value v, b.input(in.program->type(input.value), input.name));
      args.push_back(v);
    }
    TENFERRO_TRY(auto outs, b.import(in, args));
    std::vector<Value> doubled;
    for (Value v : outs) {
      TENFERRO_TRY(Value d, b.op(OpCode::kAdd, {v, v}));
      doubled.push_back(d);
    }
    if (break_signature) doubled.push_back(doubled[0]);
    return b.finish(doubled);
  }
};

TEST(Compiler, CustomTransformsRunAndAreValidatedAndKeyed) {
  GraphCompiler c;
  auto g = chain(1, 2.0);
  CompilerOptions opts;
  opts.transforms.push_back(std::make_shared<DoubleOutputs>());
  auto r = c.compile(g, opts);
  ASSERT_TRUE(r) << r.error().to_string();
  const Tensor x = Tensor::from_col_major<double>({2}, std::vector<double>{1, 2}).value();
  auto y = program::interpret(*r, std::vector<Tensor>{x}).value();
  EXPECT_EQ(static_cast<const double*>(y[0].storage()->data())[1], -8.0);
  ASSERT_TRUE(c.compile(g));
  EXPECT_EQ(c.stats().misses, 2);  // with and without the transform are different keys
  auto bad = std::make_shared<DoubleOutputs>();
  bad->break_signature = true;
  CompilerOptions bad_opts;
  bad_opts.transforms.push_back(bad);
  auto e = c.compile(g, bad_opts);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("changed the program signature"), std::string::npos);
}

TEST(Compiler, ExplainListsPassChangesAndProvenance) {
  TraceContext tc;
  tc.set_provenance("model.py:3");
  Value x = tc.input(vt(DType::kF64, {2, 2}), "x").value();
  Value t = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
  Value tt = tc.op(OpCode::kTranspose, {t}, Attrs{.dims = {1, 0}}).value();
  tc.set_provenance("model.py:4");
  Value y = tc.op(OpCode::kExp, {tt}).value();
  GraphCompiler c;
  auto rep = c.explain(tc.finish({y}).value());
  ASSERT_TRUE(rep) << rep.error().to_string();
  EXPECT_NE(rep->text.find("pass canonicalize:"), std::string::npos) << rep->text;
  EXPECT_NE(rep->text.find("transpose of a transpose cancels"), std::string::npos) << rep->text;
  EXPECT_NE(rep->text.find("pass dce:"), std::string::npos);
  EXPECT_NE(rep->text.find("loc(\"model.py:4\")"), std::string::npos);
  EXPECT_EQ(rep->graph.program->ops().size(), 1u);
}

TEST(TraceContext, ConstantPolicyAndExtensionHook) {
  TraceContext tc;
  auto big = tc.constant(Tensor::zeros(DType::kF64, {300}).value());
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("capture()"), std::string::npos);
  Value x = tc.input(vt(DType::kF64, {2})).value();
  int calls = 0;
  tc.set_extension_hook([&](const ExtensionOp& op, std::span<const ValueType> in) -> Result<void> {
    ++calls;
    if (static_cast<const test_support::ScaleOp&>(op).factor < 0) {
      return Error(ErrorStage::kCompile, ErrorCode::kInvalidArgument, "hook", "negative factor rejected");
    }
    EXPECT_EQ(in.size(), 1u);
    return {};
  });
  EXPECT_TRUE(tc.extension(make_scale(1.0), std::vector<Value>{x}));
  EXPECT_FALSE(tc.extension(make_scale(-1.0), std::vector<Value>{x}));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace tenferro::compiler

namespace tenferro::compiler {
namespace {

// Symbolic shapes through the whole pipeline: folding and simplification keep the
// symbolic types, the guards survive compilation, and the compiled program evaluates
// like the traced one for several concrete sizes.
TEST(Compiler, SymbolicProgramsCompileAndKeepTheirGuards) {
  TraceContext tc;
  Extent n = tc.symbol("n", 16).value();
  Extent m = tc.symbol("m").value();
  Value x = tc.input(ValueType{DType::kF64, {n, Extent::exact(3)}}, "x").value();
  Value y = tc.input(ValueType{DType::kF64, {m, Extent::exact(3)}}, "y").value();
  Value t = tc.op(OpCode::kTranspose, {tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value()}, Attrs{.dims = {1, 0}}).value();
  Value r = tc.op(OpCode::kReshape, {tc.op(OpCode::kReshape, {t}, Attrs{.shape = {Extent::exact(3) * n}}).value()},
                  Attrs{.shape = {n, Extent::exact(3)}})
                .value();
  Value one = tc.constant(Tensor::from_col_major<double>({}, std::vector<double>{1.0}).value()).value();
  Value ones = tc.op(OpCode::kBroadcastInDim, {one}, Attrs{.shape = {n, Extent::exact(3)}}).value();
  Value s = tc.op(OpCode::kMul, {r, ones}).value();       // x * 1
  Value sum = tc.op(OpCode::kAdd, {s, y}).value();         // needs n == m: a guard
  Value cat = tc.op(OpCode::kConcatenate, {sum, x}, Attrs{.axis = 0}).value();  // [n + n, 3]
  Value red = tc.op(OpCode::kReduce, {cat}, Attrs{.dims = {1}}).value();
  TracedGraph g = tc.finish({red, s}).value();
  GraphCompiler c;
  auto compiled = c.compile(g);
  ASSERT_TRUE(compiled) << compiled.error().to_string();
  const auto& p = *compiled->program;
  for (const auto& op : p.ops()) {
    EXPECT_NE(op.code(), OpCode::kTranspose);
    EXPECT_NE(op.code(), OpCode::kMul);
  }
  EXPECT_EQ(program::print_type(p.type(p.outputs()[0]), p.symbols()), "f64[2*n]");
  ASSERT_EQ(p.guards().size(), 1u);
  EXPECT_EQ(p.guards()[0].constraint, "add_c2");
  for (int64_t rows : {1, 2, 5}) {
    std::vector<Tensor> in{Tensor::random_normal(DType::kF64, {rows, 3}, 7).value(),
                           Tensor::random_normal(DType::kF64, {rows, 3}, 8).value()};
    auto want = program::interpret(g.graph(), in).value();
    auto got = program::interpret(*compiled, in).value();
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_bits(want[i], got[i])) << rows;
  }
  // The guard still rejects n != m, and the bound n <= 16, before anything runs.
  std::vector<Tensor> bad{Tensor::zeros(DType::kF64, {2, 3}).value(), Tensor::zeros(DType::kF64, {3, 3}).value()};
  auto e = program::interpret(*compiled, bad);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("add_c2"), std::string::npos);
  std::vector<Tensor> big{Tensor::zeros(DType::kF64, {17, 3}).value(), Tensor::zeros(DType::kF64, {17, 3}).value()};
  EXPECT_EQ(program::interpret(*compiled, big).error().code(), ErrorCode::kOutOfRange);
}

}  // namespace
}  // namespace tenferro::compiler

namespace tenferro::compiler {
namespace {

// Random programs over values of symbolic shape [n, 3], [3, n], [n] or [3n]: the
// compiled program evaluates bit-identically to the traced one at several sizes.
TEST(Compiler, RandomSymbolicProgramsEvaluateIdenticallyAfterCompilation) {
  GraphCompiler compiler;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    auto pick = [&](size_t k) { return static_cast<size_t>(rng() % k); };
    TraceContext tc;
    const Extent n = tc.symbol("n", 8).value();
    const Extent three = Extent::exact(3);
    std::vector<Value> pool{tc.input(ValueType{DType::kF64, {n, three}}, "x").value(),
                            tc.input(ValueType{DType::kF64, {n, three}}, "y").value()};
    auto type_of = [&](Value v) { return tc.type(v).value(); };
    auto partner = [&](Value v) {
      std::vector<Value> c;
      for (Value w : pool) {
        if (type_of(w) == type_of(v)) c.push_back(w);
      }
      if (rng() % 4 == 0) {
        const double k = static_cast<double>(pick(3)) - 1.0;
        Value s = tc.constant(Tensor::from_col_major<double>({}, std::vector<double>{k}).value()).value();
        return tc.op(OpCode::kBroadcastInDim, {s}, Attrs{.shape = type_of(v).shape}).value();
      }
      return c[pick(c.size())];
    };
    const int n_ops = 3 + static_cast<int>(pick(12));
    for (int k = 0; k < n_ops; ++k) {
      Value x = pool[pick(pool.size())];
      const ValueType t = type_of(x);
      Value y;
      switch (pick(10)) {
        case 0: y = tc.op(OpCode::kNeg, {tc.op(OpCode::kNeg, {x}).value()}).value(); break;
        case 1: {
          const OpCode u[] = {OpCode::kExp, OpCode::kSin, OpCode::kTanh, OpCode::kAbs};
          y = tc.op(u[pick(4)], {x}).value();
          break;
        }
        case 2: {
          const OpCode b[] = {OpCode::kAdd, OpCode::kSub, OpCode::kMul, OpCode::kMax};
          y = tc.op(b[pick(4)], {x, partner(x)}).value();
          break;
        }
        case 3:
          if (t.rank() == 2) {
            Value tr = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
            y = rng() % 2 ? tc.op(OpCode::kTranspose, {tr}, Attrs{.dims = {1, 0}}).value() : tr;
          } else {
            y = tc.op(OpCode::kReverse, {tc.op(OpCode::kReverse, {x}, Attrs{.dims = {0}}).value()}, Attrs{.dims = {0}}).value();
          }
          break;
        case 4: {
          Value flat = tc.op(OpCode::kReshape, {x}, Attrs{.shape = {product(t.shape)}}).value();
          y = rng() % 2 ? tc.op(OpCode::kReshape, {flat}, Attrs{.shape = t.shape}).value() : flat;
          break;
        }
        case 5: {
          Value p = tc.op(OpCode::kCompare, {x, partner(x)}, Attrs{.direction = program::CompareDirection::kLt}).value();
          y = tc.op(OpCode::kSelect, {p, x, rng() % 2 ? x : partner(x)}).value();
          break;
        }
        case 6: {  // reduce all axes, broadcast back
          std::vector<int64_t> all;
          for (int64_t a = 0; a < t.rank(); ++a) all.push_back(a);
          Value r = tc.op(OpCode::kReduce, {x}, Attrs{.dims = all}).value();
          y = tc.op(OpCode::kBroadcastInDim, {r}, Attrs{.shape = t.shape}).value();
          break;
        }
        case 7:
          if (t.rank() == 2) {  // x x^T or x^T x
            Value tr = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
            y = tc.op(OpCode::kDotGeneral, {x, tr}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
          } else {
            y = tc.op(OpCode::kConcatenate, {x, x}, Attrs{.axis = 0}).value();
          }
          break;
        case 8: {
          auto outs = tc.extension(make_scale(2.0, rng() % 2 ? 2 : 1, rng() % 3 == 0), std::vector<Value>{x}).value();
          y = outs[0];
          break;
        }
        default: y = tc.op(OpCode::kMul, {x, partner(x)}).value(); break;
      }
      pool.push_back(y);
    }
    std::vector<Value> outs{pool.back(), pool[pool.size() - 1 - pick(std::min<size_t>(pool.size(), 3))]};
    TracedGraph g = tc.finish(outs).value();
    auto compiled = compiler.compile(g);
    ASSERT_TRUE(compiled) << "seed " << seed << ": " << compiled.error().to_string() << "\n" << program::print_program(g.program());
    for (int64_t rows : {1, 3, 8}) {
      std::vector<Tensor> in{Tensor::random_normal(DType::kF64, {rows, 3}, seed).value(),
                             Tensor::random_normal(DType::kF64, {rows, 3}, seed + 1).value()};
      auto want = program::interpret(g.graph(), in);
      auto got = program::interpret(*compiled, in);
      ASSERT_TRUE(want && got) << "seed " << seed;
      for (size_t i = 0; i < want->size(); ++i) {
        ASSERT_TRUE(same_bits((*want)[i], (*got)[i])) << "seed " << seed << " rows " << rows << "\n"
                                                      << program::print_program(g.program()) << "after:\n"
                                                      << program::print_program(*compiled->program);
      }
    }
  }
}

}  // namespace
}  // namespace tenferro::compiler
