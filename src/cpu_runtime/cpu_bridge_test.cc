// The CPU engine through the runtime against the reference interpreter: random programs
// over every core op and dtype, prepared once and run repeatedly at 1 and 2 threads.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"

namespace tenferro {
namespace {

using program::Attrs;
using program::CompareDirection;
using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::ReduceKind;
using program::Value;
using program::ValueType;

std::vector<Extent> ext_of(const std::vector<int64_t>& s) {
  std::vector<Extent> e;
  for (int64_t v : s) e.push_back(Extent::exact(v));
  return e;
}

// Random values of any dtype: floats normal, integers in [-4, 4], bool 0/1.
Tensor random_tensor(DType d, const std::vector<int64_t>& shape, std::mt19937_64& rng) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::uniform_int_distribution<int64_t> small(-4, 4);
  std::normal_distribution<double> normal;
  switch (d) {
    case DType::kBool: {
      std::vector<bool> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(rng() % 2 == 0);
      std::vector<uint8_t> bytes(v.begin(), v.end());
      Tensor t = Tensor::zeros(DType::kBool, Dims(shape)).value();
      if (n > 0) std::memcpy(t.storage()->data(), bytes.data(), bytes.size());
      return t;
    }
    case DType::kI32: {
      std::vector<int32_t> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<int32_t>(small(rng)));
      return Tensor::from_col_major<int32_t>(Dims(shape), v).value();
    }
    case DType::kI64: {
      std::vector<int64_t> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(small(rng));
      return Tensor::from_col_major<int64_t>(Dims(shape), v).value();
    }
    default:
      return Tensor::random_normal(d, Dims(shape), rng()).value();
  }
}

struct Case {
  program::CompiledGraph graph;
  std::vector<Tensor> inputs;
  std::string text;
};

// Builds a random program: values of random dtypes and shapes, then ops drawn from the
// whole core vocabulary with random operands; an op the builder rejects is skipped.
Case random_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const DType dtypes[] = {DType::kF64, DType::kF64, DType::kC128, DType::kF32, DType::kI64, DType::kI32, DType::kBool};
  ProgramBuilder b;
  Case c;
  std::vector<Value> pool;
  // Odd seeds: half of the input axes get symbolic extents, one symbol per extent value
  // (declared when first used, so every symbol is bound by an input).
  const bool symbolic = seed % 2 == 1;
  std::vector<int64_t> symbol_values;
  std::map<int64_t, Extent> symbol_of;
  // Derived symbols (interior pads) follow their definitions (Note [Derived symbols]).
  auto sync_symbols = [&] {
    const auto syms = b.symbols();
    while (symbol_values.size() < syms.size()) {
      const auto& def = syms[symbol_values.size()].max0_of;
      symbol_values.push_back(std::max<int64_t>(0, def->evaluate(symbol_values).value()));
    }
  };
  auto shape_of = [&](Value v) {
    sync_symbols();
    const ValueType t = b.type(v).value();
    std::vector<int64_t> s;
    for (const Extent& e : t.shape) s.push_back(e.evaluate(symbol_values).value());
    return s;
  };
  auto dtype_of = [&](Value v) { return b.type(v).value().dtype; };
  auto random_shape = [&]() {
    std::vector<int64_t> s;
    const size_t rank = pick(4);
    for (size_t i = 0; i < rank; ++i) s.push_back(1 + static_cast<int64_t>(pick(4)));
    return s;
  };
  auto add_input = [&](DType d, std::vector<int64_t> s) {
    std::vector<Extent> ext = ext_of(s);
    for (size_t i = 0; symbolic && i < s.size(); ++i) {
      if (rng() % 2) continue;
      auto it = symbol_of.find(s[i]);
      if (it == symbol_of.end()) {
        sync_symbols();
        std::string name("n");
        name.append(std::to_string(s[i]));
        it = symbol_of.emplace(s[i], b.symbol(name).value()).first;
        symbol_values.push_back(s[i]);
      }
      ext[i] = it->second;
    }
    Value v = b.input(ValueType{d, ext}).value();
    c.inputs.push_back(random_tensor(d, s, rng));
    pool.push_back(v);
    return v;
  };
  const int n_inputs = 2 + static_cast<int>(pick(2));
  for (int i = 0; i < n_inputs; ++i) add_input(dtypes[pick(7)], random_shape());
  // A partner of the same type: another pool value, or a fresh input.
  auto partner = [&](Value v) {
    std::vector<Value> same;
    const ValueType tv = b.type(v).value();
    for (Value w : pool) {
      const ValueType tw = b.type(w).value();
      if (tw == tv) same.push_back(w);
    }
    if (same.size() > 1 && rng() % 2) return same[pick(same.size())];
    return add_input(dtype_of(v), shape_of(v));
  };
  auto int_scalar = [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> one{lo + static_cast<int64_t>(pick(static_cast<size_t>(hi - lo + 1)))};
    return b.constant(program::Literal::from_values<int64_t>({}, std::span<const int64_t>(one)).value()).value();
  };
  const int n_ops = 6 + static_cast<int>(pick(10));
  for (int k = 0; k < n_ops * 3 && k < 200; ++k) {
    if (static_cast<int>(pool.size()) >= n_inputs + n_ops) break;
    Value x = pool[pick(pool.size())];
    const auto s = shape_of(x);
    const auto r = static_cast<int64_t>(s.size());
    Result<Value> y = usage_error(ErrorCode::kInvalidArgument, "gen", "skip");
    const size_t kind = pick(28);
    if (kind < 3) {
      y = b.op(static_cast<OpCode>(pick(15)), {x});
    } else if (kind < 6) {
      y = b.op(static_cast<OpCode>(static_cast<size_t>(OpCode::kAdd) + pick(9)), {x, partner(x)});  // add ... atan2
    } else {
      switch (kind) {
        case 6: y = b.op(OpCode::kCompare, {x, partner(x)}, Attrs{.direction = static_cast<CompareDirection>(pick(6))}); break;
        case 7: {
          Value p = add_input(DType::kBool, s);
          y = b.op(OpCode::kSelect, {p, x, partner(x)});
          break;
        }
        case 8: y = b.op(OpCode::kClamp, {partner(x), x, partner(x)}); break;
        case 9: y = b.op(OpCode::kConvert, {x}, Attrs{.dtype = dtypes[pick(7)]}); break;
        case 10: {
          std::vector<int64_t> sh = random_shape();
          y = b.op(OpCode::kIota, {}, Attrs{.shape = ext_of(sh), .axis = sh.empty() ? 0 : static_cast<int64_t>(pick(sh.size())), .dtype = dtypes[pick(7)]});
          break;
        }
        case 11: {  // broadcast_in_dim into one more leading and trailing axis
          Attrs a;
          std::vector<int64_t> out{2};
          for (int64_t i = 0; i < r; ++i) {
            a.dims.push_back(i + 1);
            out.push_back(s[static_cast<size_t>(i)] == 1 && rng() % 2 ? 3 : s[static_cast<size_t>(i)]);
          }
          out.push_back(2);
          a.shape = ext_of(out);
          y = b.op(OpCode::kBroadcastInDim, {x}, a);
          break;
        }
        case 12: {
          int64_t n = 1;
          for (int64_t e : s) n *= e;
          std::vector<int64_t> out = rng() % 2 ? std::vector<int64_t>{n} : std::vector<int64_t>{1, n, 1};
          // Reshape a transposed (non-mergeable) view sometimes: the bridge must copy.
          Value src = x;
          if (r == 2 && rng() % 2) src = b.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
          y = b.op(OpCode::kReshape, {src}, Attrs{.shape = ext_of(out)});
          break;
        }
        case 13: {
          std::vector<int64_t> perm(static_cast<size_t>(r));
          for (int64_t i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = i;
          std::shuffle(perm.begin(), perm.end(), rng);
          y = b.op(OpCode::kTranspose, {x}, Attrs{.dims = perm});
          break;
        }
        case 14: y = r ? b.op(OpCode::kReverse, {x}, Attrs{.dims = {static_cast<int64_t>(pick(static_cast<size_t>(r)))}}) : y; break;
        case 15: {
          Attrs a;
          for (int64_t e : s) {
            const int64_t st = static_cast<int64_t>(pick(static_cast<size_t>(e)));
            a.start.push_back(st);
            a.limit.push_back(st + static_cast<int64_t>(pick(static_cast<size_t>(e - st + 1))));
            a.stride.push_back(1 + static_cast<int64_t>(pick(2)));
          }
          y = b.op(OpCode::kSlice, {x}, a);
          break;
        }
        case 16: {
          std::vector<Value> ops{x};
          Attrs a;
          for (int64_t e : s) {
            ops.push_back(int_scalar(-2, e + 2));
            a.sizes.push_back(1 + static_cast<int64_t>(pick(static_cast<size_t>(e))));
          }
          y = b.op(OpCode::kDynamicSlice, ops, a);
          break;
        }
        case 17: {
          std::vector<int64_t> us;
          for (int64_t e : s) us.push_back(1 + static_cast<int64_t>(pick(static_cast<size_t>(e))));
          std::vector<Value> ops{x, add_input(dtype_of(x), us)};
          for (int64_t e : s) ops.push_back(int_scalar(-2, e + 2));
          y = b.op(OpCode::kDynamicUpdateSlice, ops);
          break;
        }
        case 18: {
          if (r == 0) break;
          const int64_t axis = static_cast<int64_t>(pick(static_cast<size_t>(r)));
          std::vector<int64_t> s2 = s;
          s2[static_cast<size_t>(axis)] = 1 + static_cast<int64_t>(pick(3));
          y = b.op(OpCode::kConcatenate, {x, add_input(dtype_of(x), s2), x}, Attrs{.axis = axis});
          break;
        }
        case 19: {
          Attrs a;
          for (int64_t e : s) {
            a.low.push_back(static_cast<int64_t>(pick(4)) - 1);
            a.high.push_back(static_cast<int64_t>(pick(4)) - 1);
            a.interior.push_back(e > 1 ? static_cast<int64_t>(pick(2)) : 0);
          }
          y = b.op(OpCode::kPad, {x, add_input(dtype_of(x), {})}, a);
          break;
        }
        case 20:
        case 21: {
          if (r == 0) break;
          const int64_t axis = static_cast<int64_t>(pick(static_cast<size_t>(r)));
          std::vector<int64_t> ish{1 + static_cast<int64_t>(pick(3))};
          if (rng() % 2) ish.push_back(2);
          const DType it = rng() % 2 ? DType::kI64 : DType::kI32;
          Value idx = add_input(it, ish);  // values in [-4, 4]: some out of range
          if (kind == 20) {
            y = b.op(OpCode::kGather, {x, idx}, Attrs{.axis = axis});
          } else {
            std::vector<int64_t> us(s.begin(), s.begin() + axis);
            us.insert(us.end(), ish.begin(), ish.end());
            us.insert(us.end(), s.begin() + axis + 1, s.end());
            y = b.op(OpCode::kScatterAdd, {x, idx, add_input(dtype_of(x), us)}, Attrs{.axis = axis});
          }
          break;
        }
        case 22: {
          Attrs a{.reduce = static_cast<ReduceKind>(pick(4))};
          for (int64_t i = 0; i < r; ++i) {
            if (rng() % 2) a.dims.push_back(i);
          }
          y = b.op(OpCode::kReduce, {x}, a);
          break;
        }
        case 23: {
          if (r == 0) break;
          // Contract x's axis c with a new operand [e, m] (or batch over axis 0 too).
          const auto cax = static_cast<int64_t>(pick(static_cast<size_t>(r)));
          std::vector<int64_t> rs{s[static_cast<size_t>(cax)], 1 + static_cast<int64_t>(pick(5))};
          Attrs a{.lhs_contract = {cax}, .rhs_contract = {0}};
          if (r >= 2 && cax != 0 && rng() % 2) {
            rs.push_back(s[0]);
            a.lhs_batch = {0};
            a.rhs_batch = {2};
          }
          y = b.op(OpCode::kDotGeneral, {x, add_input(dtype_of(x), rs)}, a);
          break;
        }
        case 24: {
          if (r == 0) break;
          const int64_t axis = static_cast<int64_t>(pick(static_cast<size_t>(r)));
          if (rng() % 2 && axis + 1 < r && s[static_cast<size_t>(axis)] == s[static_cast<size_t>(axis) + 1]) {
            y = b.op(OpCode::kExtractDiag, {x}, Attrs{.axis = axis});
          } else {
            y = b.op(OpCode::kEmbedDiag, {x}, Attrs{.axis = axis});
          }
          break;
        }
        case 25:
          y = b.op(rng() % 2 ? OpCode::kTril : OpCode::kTriu, {x}, Attrs{.k = static_cast<int64_t>(pick(5)) - 2});
          break;
        case 27:  // complex operands are refused (skipped)
          if (r > 0) y = b.op(OpCode::kArgsort, {x}, Attrs{.axis = static_cast<int64_t>(pick(static_cast<size_t>(r)))});
          break;
        case 26: {
          // An einsum extension op over x and possibly a pool value of its dtype: axes of
          // equal extent may share a label (a contraction, batch or diagonal).
          std::vector<Value> ops{x};
          for (Value w : pool) {
            if (dtype_of(w) == dtype_of(x) && rng() % 3 == 0) {
              ops.push_back(w);
              break;
            }
          }
          std::string subs, used;
          std::map<char, int64_t> extent_of;
          for (size_t o = 0; o < ops.size(); ++o) {
            if (o) subs += ",";
            for (int64_t e : shape_of(ops[o])) {
              char l = 0;
              for (const auto& [label, ex] : extent_of) {
                if (ex == e && rng() % 2) l = label;
              }
              if (l == 0) {
                l = static_cast<char>('a' + extent_of.size());
                extent_of[l] = e;
                used += l;
              }
              subs += l;
            }
          }
          std::shuffle(used.begin(), used.end(), rng);
          subs.append("->").append(used, 0, pick(used.size() + 1));
          y = einsum::emit_einsum(b, subs, ops, static_cast<einsum::PathAlgorithm>(pick(2)));
          break;
        }
      }
    }
    if (y) pool.push_back(*y);
  }
  std::vector<Value> outs{pool.back()};
  outs.push_back(pool[pick(pool.size())]);
  if (rng() % 2) outs.push_back(pool[static_cast<size_t>(n_inputs) + pick(pool.size() - static_cast<size_t>(n_inputs))]);
  c.graph = b.finish(outs).value();
  c.text = program::print_program(*c.graph.program);
  return c;
}

// Elementwise agreement: exact for integers and bool; floating values to a relative
// tolerance (both NaN, or equal infinities, count as equal).
std::string mismatch(const Tensor& want, const Tensor& got) {
  if (want.dtype() != got.dtype()) return "dtype " + std::string(dtype_name(got.dtype()));
  if (want.shape() != got.shape()) return "shape " + format_dims(got.shape()) + " vs " + format_dims(want.shape());
  const double tol = (want.dtype() == DType::kF32 || want.dtype() == DType::kC64) ? 1e-4 : 1e-10;
  const Tensor w = want.to_col_major().value(), g = got.to_col_major().value();
  SmallVector<int64_t, 8> idx(static_cast<size_t>(w.rank()), 0);
  for (int64_t i = 0; i < w.numel(); ++i) {
    int64_t rem = i;
    for (size_t a = 0; a < idx.size(); ++a) {
      idx[a] = rem % w.shape()[a];
      rem /= w.shape()[a];
    }
    const c128 x = w.get_as_c128(idx).value(), y = g.get_as_c128(idx).value();
    const auto close = [&](double p, double q) {
      if (std::isnan(p) || std::isnan(q)) return std::isnan(p) && std::isnan(q);
      if (std::isinf(p) || std::isinf(q)) return p == q || std::abs(p) > 1e300 || std::abs(q) > 1e300;
      return std::abs(p - q) <= tol * (1.0 + std::abs(p) + std::abs(q));
    };
    if (!close(x.real(), y.real()) || !close(x.imag(), y.imag())) {
      return "element " + std::to_string(i) + ": " + std::to_string(y.real()) + "+" + std::to_string(y.imag()) +
             "i, want " + std::to_string(x.real()) + "+" + std::to_string(x.imag()) + "i";
    }
  }
  return {};
}

TEST(CpuBridge, RandomProgramsMatchTheInterpreter) {
  std::vector<std::shared_ptr<runtime::Runtime>> runtimes;
  for (int threads : {1, 2}) {
    cpu::CpuEngineConfig cfg;
    cpu::CpuDomainConfig domain;
    domain.cpus = cpu::CpuTopology::discover().value().allowed_cpus;
    domain.threads = threads;
    cfg.domains = {domain};
    cfg.pin_workers = false;
    auto rt = runtime::Runtime::create().value();
    ASSERT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value()));
    runtimes.push_back(rt);
  }
  int compared = 0, failing = 0, with_einsum = 0, with_symbols = 0, guarded = 0;
  std::vector<bool> seen(program::kCoreOpCount, false);
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    const Case c = random_case(seed);
    for (const program::Operation& op : c.graph.program->ops()) {
      if (op.code() == OpCode::kExtension) {
        ++with_einsum;
      } else {
        seen[static_cast<size_t>(op.code())] = true;
      }
    }
    with_symbols += c.graph.program->symbols().empty() ? 0 : 1;
    const auto want = program::interpret(c.graph, c.inputs);
    for (auto& rt : runtimes) {
      auto plan = rt->prepare_for(c.graph, runtime::signature_of(c.inputs));
      if (!plan && !want && want.error().stage() == ErrorStage::kPrepare) {
        // A shape guard of a symbolic program fails for these inputs: both reject them.
        EXPECT_EQ(plan.error().code(), want.error().code()) << plan.error().to_string() << "\n" << c.text;
        ++guarded;
        continue;
      }
      ASSERT_TRUE(plan) << plan.error().to_string() << "\n" << c.text;
      std::vector<Tensor> first;
      for (int rep = 0; rep < 2; ++rep) {
        const auto got = rt->execute_prepared(**plan, c.inputs);
        if (got && rep == 0) first = *got;
        if (!want) {
          // The interpreter's completion errors (integer division by zero, negative
          // integer exponent) are errors here too.
          EXPECT_FALSE(got) << "seed " << seed << ": interpreter failed with " << want.error().to_string() << "\n" << c.text;
          ++failing;
          continue;
        }
        ASSERT_TRUE(got) << "seed " << seed << ": " << got.error().to_string() << "\n" << c.text;
        ASSERT_EQ(got->size(), want->size());
        for (size_t i = 0; i < want->size(); ++i) {
          const std::string m = mismatch((*want)[i], (*got)[i]);
          ASSERT_TRUE(m.empty()) << "seed " << seed << " output " << i << ": " << m << "\n" << c.text << "\n"
                                 << rt->explain(**plan);
        }
        ++compared;
      }
      // Outputs never live in workspace buffers: the second execution left the first
      // one's outputs intact.
      for (size_t i = 0; want && i < first.size(); ++i) {
        const std::string m = mismatch((*want)[i], first[i]);
        ASSERT_TRUE(m.empty()) << "seed " << seed << " output " << i << " changed by a later execution: " << m;
      }
    }
  }
  for (int i = 0; i < program::kCoreOpCount; ++i) {
    EXPECT_TRUE(seen[static_cast<size_t>(i)]) << "no random program used " << program::op_name(static_cast<OpCode>(i));
  }
  EXPECT_GT(with_einsum, 100);
  EXPECT_GT(with_symbols, 300);
  EXPECT_LT(guarded, with_symbols / 4);
  EXPECT_GT(compared, 3000);
  EXPECT_LT(failing, compared / 4);
}

// Random einsums (1-4 operands, repeated labels, broadcast extents of 1, ellipses,
// implicit and explicit outputs, every path algorithm, five dtypes): the CPU's native
// einsum module, the core lowering on the same engine, and the reference interpreter
// (which evaluates the lowering) agree.
// pad of f64[n] {low 1, high 2, interior 2}: 3 + max(0, 3n - 2) elements (a derived
// symbol), checked against hand-written numpy/StableHLO results for n = 0, 1, 3, with a
// following op so the runtime's buffer plan sees the derived extent too.
TEST(CpuBridge, InteriorPadOfAnEmptySymbolicAxis) {
  ProgramBuilder b;
  const Extent n = b.symbol("n").value();
  const Value x = b.input(ValueType{DType::kF64, {n}}).value();
  const Value v = b.input(ValueType{DType::kF64, {}}).value();
  const Value p = b.op(OpCode::kPad, {x, v}, Attrs{.low = {1}, .high = {2}, .interior = {2}}).value();
  const Value y = b.op(OpCode::kAdd, {p, p}).value();
  const auto graph = b.finish({y}).value();
  auto rt = runtime::Runtime::create().value();
  ASSERT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cpu::CpuEngineConfig{}).value()));
  const Tensor seven = Tensor::from_col_major<double>(Dims{}, std::vector<double>{7}).value();
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{}, {14, 14, 14}},
      {{1}, {14, 2, 14, 14}},
      {{1, 2, 3}, {14, 2, 14, 14, 4, 14, 14, 6, 14, 14}},
  };
  for (const auto& [xs, want] : cases) {
    const auto len = static_cast<int64_t>(xs.size());
    const std::vector<Tensor> in = {Tensor::from_col_major<double>(Dims{len}, xs).value(), seven};
    auto got = rt->run(graph, in);
    ASSERT_TRUE(got) << "n = " << len << ": " << got.error().to_string();
    ASSERT_EQ((*got)[0].numel(), static_cast<int64_t>(want.size())) << "n = " << len;
    ASSERT_EQ((*got)[0].rank(), 1);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*got)[0].get_as_c128(Dims{static_cast<int64_t>(i)}).value().real(), want[i]) << "n = " << len << " element " << i;
    }
  }
}

// Attributes at the int64 limits (slice strides, triangle offsets, pads that crop
// nearly 2^62 of their own padding, with and without interior padding): the runtime
// computes what the reference interpreter does, without intermediates larger than the
// result (Note [Pad by placement] in src/cpu/indexing.cc).
TEST(CpuBridge, AttributesAtTheInt64LimitsMatchTheInterpreter) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kBig = (int64_t{1} << 62) - 1;
  ProgramBuilder b;
  const Value x = b.input(ValueType{DType::kF64, {Extent::exact(3), Extent::exact(4)}}).value();
  const Value v = b.input(ValueType{DType::kF64, {}}).value();
  std::vector<Value> outs;
  outs.push_back(b.op(OpCode::kSlice, {x}, Attrs{.start = {1, 0}, .limit = {3, 4}, .stride = {kMax, 3}}).value());
  outs.push_back(b.op(OpCode::kTril, {x}, Attrs{.k = kMin}).value());
  outs.push_back(b.op(OpCode::kTriu, {x}, Attrs{.k = kMin}).value());
  outs.push_back(b.op(OpCode::kTril, {x}, Attrs{.k = kMax}).value());
  outs.push_back(
      b.op(OpCode::kPad, {x, v}, Attrs{.low = {-kBig, 1}, .high = {kBig - 1, 0}, .interior = {0, 2}}).value());
  outs.push_back(
      b.op(OpCode::kPad, {x, v}, Attrs{.low = {kBig - 3, -2}, .high = {-kBig, -1}, .interior = {1, 0}}).value());
  outs.push_back(b.op(OpCode::kPad, {x, v}, Attrs{.low = {-3, -5}, .high = {2, 4}, .interior = {1, 1}}).value());
  const auto graph = b.finish(outs).value();
  std::vector<double> xs(12);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i) + 1;
  const std::vector<Tensor> in = {Tensor::from_col_major<double>(Dims{3, 4}, xs).value(),
                                  Tensor::from_col_major<double>(Dims{}, std::vector<double>{-7}).value()};
  const auto want = program::interpret(graph, in);
  ASSERT_TRUE(want) << want.error().to_string();
  auto rt = runtime::Runtime::create().value();
  ASSERT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cpu::CpuEngineConfig{}).value()));
  const auto got = rt->run(graph, in);
  ASSERT_TRUE(got) << got.error().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const std::string m = mismatch((*want)[i], (*got)[i]);
    EXPECT_TRUE(m.empty()) << "output " << i << ": " << m;
  }
  // The slice takes row 1, columns 0 and 3; the first pad is one row of padding.
  EXPECT_EQ((*want)[0].get_as_c128(Dims{0, 1}).value(), c128(11, 0));
  EXPECT_EQ((*want)[4].shape(), (Shape{2, 11}));
  EXPECT_EQ((*want)[4].get_as_c128(Dims{1, 1}).value(), c128(-7, 0));
}

// The runtime agrees with the documented gather semantics on an empty axis: a typed
// out_of_range for non-empty indices, an empty result for empty ones.
TEST(CpuBridge, GatherFromAnEmptyAxis) {
  auto rt = runtime::Runtime::create().value();
  ASSERT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cpu::CpuEngineConfig{}).value()));
  const Tensor x = Tensor::zeros(DType::kF64, Dims{0, 4}).value();
  for (const int64_t count : {int64_t{3}, int64_t{0}}) {
    ProgramBuilder b;
    const Value xv = b.input(ValueType{DType::kF64, {Extent::exact(0), Extent::exact(4)}}).value();
    const Value iv = b.input(ValueType{DType::kI32, {Extent::exact(count)}}).value();
    const auto graph = b.finish({b.op(OpCode::kGather, {xv, iv}, Attrs{.axis = 0}).value()}).value();
    const Tensor idx = Tensor::zeros(DType::kI32, Dims{count}).value();
    auto got = rt->run(graph, std::vector<Tensor>{x, idx});
    if (count > 0) {
      ASSERT_FALSE(got);
      EXPECT_EQ(got.error().code(), ErrorCode::kOutOfRange) << got.error().to_string();
    } else {
      ASSERT_TRUE(got) << got.error().to_string();
      EXPECT_EQ((*got)[0].numel(), 0);
      EXPECT_EQ((*got)[0].rank(), 2);
    }
  }
}

TEST(CpuBridge, EinsumNativeLoweredAndInterpreterAgree) {
  auto make = [](bool module) {
    auto rt = runtime::Runtime::create().value();
    cpu::CpuEngineConfig cfg;
    cpu::CpuDomainConfig domain;
    domain.cpus = cpu::CpuTopology::discover().value().allowed_cpus;
    domain.threads = 2;
    cfg.domains = {domain};
    cfg.pin_workers = false;
    EXPECT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value(),
                                                 cpu_runtime::CpuRegistration{.einsum_module = module}));
    return rt;
  };
  auto native = make(true), lowered = make(false);
  std::mt19937_64 rng(2026);
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const DType dtypes[] = {DType::kF64, DType::kC128, DType::kF32, DType::kI64, DType::kBool};
  const einsum::PathAlgorithm algorithms[] = {einsum::PathAlgorithm::kGreedy, einsum::PathAlgorithm::kOptimal,
                        einsum::PathAlgorithm::kLeftToRight};
  int checked = 0, with_ellipsis = 0, with_repeat = 0, with_repeated_output = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n_ops = 1 + pick(4);
    int64_t ext[6];
    for (int64_t& e : ext) e = 1 + static_cast<int64_t>(pick(4));
    const bool ellipsis = pick(5) == 0;
    const int64_t ell_rank = ellipsis ? static_cast<int64_t>(pick(3)) : 0;
    std::vector<int64_t> ell_shape;
    for (int64_t k = 0; k < ell_rank; ++k) ell_shape.push_back(2 + static_cast<int64_t>(pick(2)));
    std::string subs;
    std::vector<std::vector<int64_t>> shapes;
    std::string used;
    for (size_t i = 0; i < n_ops; ++i) {
      if (i) subs += ",";
      std::vector<int64_t> shape;
      std::string term;
      const size_t rank = pick(4);
      for (size_t a = 0; a < rank; ++a) {
        const size_t l = pick(6);
        term += static_cast<char>('a' + l);
        if (used.find(static_cast<char>('a' + l)) == std::string::npos) used += static_cast<char>('a' + l);
        shape.push_back(pick(8) == 0 ? 1 : ext[l]);  // sometimes a broadcast extent of 1
      }
      for (size_t x = 0; x < term.size(); ++x) {
        for (size_t y = x + 1; y < term.size(); ++y) {
          if (term[x] == term[y]) {
            shape[y] = shape[x] = ext[term[x] - 'a'];  // diagonals take equal extents
            ++with_repeat;
          }
        }
      }
      if (ellipsis) {
        // The ellipsis covers the trailing batch axes of this operand (right-aligned).
        const int64_t k = static_cast<int64_t>(pick(static_cast<size_t>(ell_rank) + 1));
        term = "..." + term;
        std::vector<int64_t> full(ell_shape.end() - k, ell_shape.end());
        full.insert(full.end(), shape.begin(), shape.end());
        shape = full;
      }
      subs += term;
      shapes.push_back(shape);
    }
    bool repeated_output = false;
    if (pick(3) != 0) {
      std::string out = ellipsis && pick(2) ? "..." : "";
      std::string pool = used;
      std::shuffle(pool.begin(), pool.end(), rng);
      std::string labels = pool.substr(0, pick(pool.size() + 1));
      // Sometimes the output repeats a label (an embedded diagonal).
      if (!labels.empty() && pick(5) == 0) {
        labels.insert(pick(labels.size() + 1), 1, labels[pick(labels.size())]);
        repeated_output = true;
      }
      out += labels;
      subs += "->" + out;
    }
    with_ellipsis += ellipsis ? 1 : 0;
    const DType d = dtypes[pick(5)];
    ProgramBuilder b;
    std::vector<Value> vals;
    std::vector<Tensor> inputs;
    for (const auto& sh : shapes) {
      vals.push_back(b.input(ValueType{d, ext_of(sh)}).value());
      inputs.push_back(random_tensor(d, sh, rng));
    }
    auto y = einsum::emit_einsum(b, subs, vals, algorithms[pick(3)]);
    if (!y) continue;  // e.g. an explicit output naming a label twice
    const auto graph = b.finish({*y}).value();
    const auto want = program::interpret(graph, inputs);
    ASSERT_TRUE(want) << subs << ": " << want.error().to_string();
    for (auto* rt : {native.get(), lowered.get()}) {
      auto plan = rt->prepare_for(graph, runtime::signature_of(inputs));
      ASSERT_TRUE(plan) << subs << ": " << plan.error().to_string();
      const std::string how = rt->explain(**plan);
      EXPECT_EQ(how.find("cpu.einsum") != std::string::npos, rt == native.get()) << how;
      const auto got = rt->execute_prepared(**plan, inputs);
      ASSERT_TRUE(got) << subs << ": " << got.error().to_string();
      const std::string m = mismatch((*want)[0], (*got)[0]);
      ASSERT_TRUE(m.empty()) << subs << " " << dtype_name(d) << ": " << m << "\n" << how;
      ++checked;
    }
    with_repeated_output += repeated_output ? 1 : 0;  // checked on both paths
  }
  EXPECT_GE(checked, 600);
  EXPECT_GT(with_ellipsis, 20);
  EXPECT_GT(with_repeat, 20);
  EXPECT_GT(with_repeated_output, 10);
}

// Note [CPU einsum module]: a prepared einsum node takes its inputs in either memory
// order (C-ordered ones run its row-major plan); the values match the interpreter's for
// both, run after run, on one prepared plan.
TEST(CpuBridge, EinsumNodeTakesEitherMemoryOrder) {
  auto rt = runtime::Runtime::create().value();
  ASSERT_TRUE(cpu_runtime::register_cpu_engine(*rt, cpu::CpuEngine::create(cpu::CpuEngineConfig{}).value(),
                                               cpu_runtime::CpuRegistration{.einsum_module = true}));
  std::mt19937_64 rng(77);
  const std::vector<std::vector<int64_t>> shapes{{30, 20, 12}, {12, 10}, {10, 9}};
  for (const DType d : {DType::kF64, DType::kC128}) {
    ProgramBuilder b;
    std::vector<Value> vals;
    std::vector<Tensor> col, row;
    for (const auto& sh : shapes) {
      vals.push_back(b.input(ValueType{d, ext_of(sh)}).value());
      col.push_back(random_tensor(d, sh, rng));
      // The same values in C order.
      Shape perm;
      for (int64_t a = static_cast<int64_t>(sh.size()) - 1; a >= 0; --a) perm.push_back(a);
      Tensor reversed_compact = col.back().permute(Dims(perm.span())).value().contiguous().value();
      row.push_back(reversed_compact.permute(Dims(perm.span())).value());
    }
    const auto graph = b.finish({einsum::emit_einsum(b, "abc,cd,de->aeb", vals).value()}).value();
    const auto want = program::interpret(graph, col);
    ASSERT_TRUE(want) << want.error().to_string();
    auto plan = rt->prepare_for(graph, runtime::signature_of(col));
    ASSERT_TRUE(plan) << plan.error().to_string();
    ASSERT_NE(rt->explain(**plan).find("cpu.einsum"), std::string::npos) << rt->explain(**plan);
    for (int rep = 0; rep < 2; ++rep) {
      for (const auto* inputs : {&col, &row}) {
        const auto got = rt->execute_prepared(**plan, *inputs);
        ASSERT_TRUE(got) << got.error().to_string();
        const std::string m = mismatch((*want)[0], (*got)[0]);
        EXPECT_TRUE(m.empty()) << dtype_name(d) << (inputs == &row ? " C order: " : " Fortran order: ") << m;
      }
    }
  }
}

}  // namespace
}  // namespace tenferro

namespace tenferro::cpu_runtime {
namespace {

// Runtime::explain shows each dot_general node's planned route, decided with the
// engine's capabilities (Note [dot_general planner]): here capabilities written by hand,
// so the answer is the same on every machine; the values come from this machine's run.
TEST(CpuBridge, ExplainShowsTheDotGeneralRoute) {
  using program::Attrs;
  using program::OpCode;
  using program::ProgramBuilder;
  using program::ValueType;
  ProgramBuilder b;
  const auto x = b.input(ValueType{DType::kF64, ext_of({16, 12})}).value();
  const auto w = b.input(ValueType{DType::kF64, ext_of({12, 16})}).value();
  const auto y = b.op(OpCode::kDotGeneral, {x, w}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
  const auto graph = b.finish({y}).value();
  for (const cpu::IsaLevel isa : {cpu::IsaLevel::kScalar, cpu::IsaLevel::kAvx2}) {
    cpu::CpuCaps caps;
    caps.detected_isa = isa;
    caps.built_isa = cpu::IsaLevel::kAvx512;
    caps.blis_tuned = caps.openblas_tuned = true;
    cpu::CpuEngineConfig cfg;
    cfg.caps = caps;
    cfg.max_isa = cpu::IsaLevel::kAvx512;  // no cap: independent of TENFERRO_MAX_ISA
    auto rt = runtime::Runtime::create().value();
    ASSERT_TRUE(register_cpu_engine(*rt, cpu::CpuEngine::create(cfg).value()));
    const std::vector<Tensor> in = {Tensor::random_normal(DType::kF64, {16, 12}, 1).value(),
                                    Tensor::random_normal(DType::kF64, {12, 16}, 2).value()};
    auto plan = rt->prepare_for(graph, runtime::signature_of(in));
    ASSERT_TRUE(plan) << plan.error().to_string();
    const std::string how = rt->explain(**plan);
    const char* want = isa == cpu::IsaLevel::kScalar ? "planned: kernel openblas" : "planned: kernel small";
    EXPECT_NE(how.find(want), std::string::npos) << how;
    auto got = rt->execute_prepared(**plan, in);
    ASSERT_TRUE(got) << got.error().to_string();
    for (int64_t i = 0; i < 16; i += 5)
      for (int64_t j = 0; j < 16; j += 3) {
        double acc = 0;
        for (int64_t k = 0; k < 12; ++k) acc += in[0].get<double>({i, k}).value() * in[1].get<double>({k, j}).value();
        EXPECT_NEAR((*got)[0].get<double>({i, j}).value(), acc, 1e-12);
      }
  }
}

}  // namespace
}  // namespace tenferro::cpu_runtime
