#pragma once
// Test-only: random differentiable programs (f64 or c128) with smooth, bounded values,
// for the AD suites (not installed).

#include <random>
#include <string>
#include <vector>

#include "tenferro/compiler/compiler.h"
#include "tenferro/test_support/ad_check.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/test_support/strided.h"

namespace tenferro::test_support {

struct RandomProgram {
  program::CompiledGraph graph;
  std::vector<Tensor> inputs;
};

namespace random_program_detail {
inline program::Value splat(compiler::TraceContext& tc, DType d, double v, const std::vector<int64_t>& shape) {
  Tensor s = Tensor::full(d, {}, c128(v, 0.0)).value();
  program::Value c = tc.constant(s).value();
  if (shape.empty()) return c;
  program::Attrs a;
  for (int64_t e : shape) a.shape.push_back(program::Extent::exact(e));
  return tc.op(program::OpCode::kBroadcastInDim, {c}, a).value();
}
}  // namespace random_program_detail

// A random program over differentiable ops with smooth, bounded values (f64 or c128).
inline RandomProgram random_program(uint64_t seed) {
  using namespace random_program_detail;
  using compiler::TraceContext;
  using program::Attrs;
  using program::CompareDirection;
  using program::Extent;
  using program::OpCode;
  using program::ReduceKind;
  using program::Value;
  using program::ValueType;
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const DType d = seed % 4 == 0 ? DType::kC128 : DType::kF64;
  const bool cplx = is_complex(d);
  TraceContext tc;
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {3, 2}, {3}, {2, 3}};
  std::vector<Value> pool;
  std::vector<Tensor> inputs;
  const int n_inputs = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < n_inputs; ++i) {
    const auto& sh = shapes[pick(shapes.size())];
    pool.push_back(tc.input(vt(d, sh)).value());
    inputs.push_back(test_support::strided_random(rng, d, Shape(std::span<const int64_t>(sh)), -1.0, 1.0));
  }
  auto dims_of = [&](Value v) {
    std::vector<int64_t> out;
    const ValueType t = tc.type(v).value();
    for (const auto& e : t.shape) out.push_back(e.exact_value());
    return out;
  };
  auto partner = [&](Value v) -> Value {
    std::vector<Value> c;
    for (Value w : pool) {
      if (dims_of(w) == dims_of(v)) c.push_back(w);
    }
    if (rng() % 5 == 0) return splat(tc, d, 0.5 + static_cast<double>(pick(3)), dims_of(v));
    return c[pick(c.size())];
  };
  const int n_ops = 3 + static_cast<int>(pick(10));
  for (int k = 0; k < n_ops; ++k) {
    Value x = pool[pick(pool.size())];
    const auto s = dims_of(x);
    Value y;
    switch (pick(14)) {
      case 0: {
        const OpCode u[] = {OpCode::kSin, OpCode::kTanh, OpCode::kCos, OpCode::kNeg, OpCode::kConj};
        y = tc.op(u[pick(5)], {x}).value();
        break;
      }
      case 1: {  // exp of a bounded value
        y = tc.op(OpCode::kExp, {tc.op(OpCode::kTanh, {x}).value()}).value();
        break;
      }
      case 2:
      case 3: {
        const OpCode b[] = {OpCode::kAdd, OpCode::kSub, OpCode::kMul};
        y = tc.op(b[pick(3)], {x, partner(x)}).value();
        break;
      }
      case 4: {  // x / (2 + sin(z)^2): away from zero
        Value z = partner(x);
        Value s2 = tc.op(OpCode::kMul, {tc.op(OpCode::kSin, {z}).value(), tc.op(OpCode::kSin, {z}).value()}).value();
        Value den = tc.op(OpCode::kAdd, {s2, splat(tc, d, 2.0, s)}).value();
        y = tc.op(OpCode::kDiv, {x, den}).value();
        break;
      }
      case 5:
        if (s.size() == 2) {
          y = tc.op(OpCode::kTranspose, {x}, Attrs{.dims = {1, 0}}).value();
        } else {
          y = tc.op(OpCode::kReverse, {x}, Attrs{.dims = {0}}).value();
        }
        break;
      case 6: {  // reshape to another pool shape with the same size
        const int64_t n = s.size() == 2 ? s[0] * s[1] : s[0];
        Attrs a;
        if (n == 6 && rng() % 2) {
          a.shape = {Extent::exact(3), Extent::exact(2)};
        } else {
          a.shape = {Extent::exact(n)};
        }
        if (n == 3) a.shape = {Extent::exact(3)};
        y = tc.op(OpCode::kReshape, {x}, a).value();
        break;
      }
      case 7:
        if (s.size() == 2) {  // x (a, b) . any (b, c)
          Value t = tc.op(OpCode::kTranspose, {partner(x)}, Attrs{.dims = {1, 0}}).value();
          y = tc.op(OpCode::kDotGeneral, {x, t}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}).value();
        } else {
          Value r = tc.op(OpCode::kReduce, {x}, Attrs{.dims = {0}}).value();
          y = tc.op(OpCode::kBroadcastInDim, {r}, Attrs{.shape = {Extent::exact(s[0])}}).value();
        }
        break;
      case 8: {  // einsum with another value
        Value z = pool[pick(pool.size())];
        const auto t = dims_of(z);
        std::string lx = s.size() == 2 ? "ab" : "a", lz;
        if (t.size() == 2) {
          lz = t[0] == s[0] ? "ac" : (s.size() == 2 && t[0] == s[1]) ? "bc" : "cd";
        } else {
          lz = t[0] == s[0] ? "a" : (s.size() == 2 && t[0] == s[1]) ? "b" : "c";
        }
        std::string out = lx;
        auto op = einsum::EinsumOp::make(lx + "," + lz + "->" + out).value();
        y = tc.extension(op, std::vector<Value>{x, z}).value()[0];
        break;
      }
      case 9:
        if (!cplx) {  // select on a comparison, max
          Value z = partner(x);
          Value p = tc.op(OpCode::kCompare, {x, z}, Attrs{.direction = CompareDirection::kGt}).value();
          y = rng() % 2 ? tc.op(OpCode::kSelect, {p, x, z}).value() : tc.op(OpCode::kMax, {x, z}).value();
        } else {
          y = tc.op(OpCode::kMul, {x, tc.op(OpCode::kConj, {x}).value()}).value();
        }
        break;
      case 10: {  // pad then slice back
        Attrs a, sl;
        for (int64_t e : s) {
          a.low.push_back(1);
          a.high.push_back(0);
          a.interior.push_back(0);
          sl.start.push_back(1);
          sl.limit.push_back(e + 1);
          sl.stride.push_back(1);
        }
        Value pd = tc.op(OpCode::kPad, {x, splat(tc, d, 0.0, {})}, a).value();
        y = tc.op(OpCode::kSlice, {pd}, sl).value();
        break;
      }
      case 11: {  // concatenate and take the second half
        Value cc = tc.op(OpCode::kConcatenate, {partner(x), x}, Attrs{.axis = 0}).value();
        Attrs sl;
        for (size_t i = 0; i < s.size(); ++i) {
          sl.start.push_back(i == 0 ? s[0] : 0);
          sl.limit.push_back(i == 0 ? 2 * s[0] : s[i]);
          sl.stride.push_back(1);
        }
        y = tc.op(OpCode::kSlice, {cc}, sl).value();
        break;
      }
      case 13:
        if (!cplx) {  // sorted: the flattened x gathered at its argsort, reshaped back
          int64_t n = 1;
          Attrs back;
          for (int64_t e : s) {
            n *= e;
            back.shape.push_back(Extent::exact(e));
          }
          Value flat = tc.op(OpCode::kReshape, {x}, Attrs{.shape = {Extent::exact(n)}}).value();
          Value order = tc.op(OpCode::kArgsort, {flat}, Attrs{.axis = 0}).value();
          y = tc.op(OpCode::kReshape, {tc.op(OpCode::kGather, {flat, order}, Attrs{.axis = 0}).value()}, back).value();
        } else {
          y = tc.op(OpCode::kNeg, {x}).value();
        }
        break;
      default:
        if (!cplx) {
          Value r = tc.op(OpCode::kReduce, {x}, Attrs{.dims = {0}, .reduce = ReduceKind::kMax}).value();
          Attrs a{.dims = {}, .shape = {}};
          for (size_t i = 1; i < s.size(); ++i) a.dims.push_back(static_cast<int64_t>(i));
          for (int64_t e : s) a.shape.push_back(Extent::exact(e));
          y = tc.op(OpCode::kBroadcastInDim, {r}, a).value();
        } else {
          y = tc.op(OpCode::kReal, {x}).value();
          y = tc.op(OpCode::kConvert, {y}, Attrs{.dtype = d}).value();
        }
        break;
    }
    pool.push_back(y);
  }
  std::vector<Value> outs;
  const size_t n_out = 1 + pick(2);
  for (size_t i = 0; i < n_out; ++i) outs.push_back(pool[pool.size() - 1 - pick(std::min<size_t>(pool.size(), 3))]);
  return RandomProgram{tc.finish(outs).value().graph(), std::move(inputs)};
}

}  // namespace tenferro::test_support
