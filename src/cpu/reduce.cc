#include "tenferro/cpu/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "strided_loop.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

// Note [Reduction order]: the output is viewed with the input's shape and stride 0 on
// reduced axes, and both go through Note [Strided loop plan]. The inner loop runs over
// the input's fastest axis: if that axis is reduced, each run is folded into one output
// element (pairwise for floating sums: leaves of 4096 summed with 8 independent
// accumulators, combined pairwise in one pass, Note [Pairwise sums in one pass]); otherwise the run is accumulated element-wise into a row
// of the output. Threads split only the kept (output) axes, so no two threads write one
// output element. A full reduction instead splits the input into fixed-size chunks
// (independent of the thread count) whose partials are combined in chunk order, so
// the result is the same for any number of threads.

namespace {

template <class T>
inline constexpr bool kIsComplex = tenferro::detail::ComplexScalar<T>;

template <class T>
struct Combine {
  ReduceOp op;
  T identity() const {
    switch (op) {
      case ReduceOp::kSum: return T(0);
      case ReduceOp::kProd: return T(1);
      case ReduceOp::kMax:
        if constexpr (std::is_same_v<T, bool>) {
          return false;
        } else if constexpr (!kIsComplex<T>) {
          return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::lowest();
        }
        break;
      case ReduceOp::kMin:
        if constexpr (std::is_same_v<T, bool>) {
          return true;
        } else if constexpr (!kIsComplex<T>) {
          return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::max();
        }
        break;
    }
    return T{};
  }
};

template <class T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
T mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <class T>
T max2(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a != a || a > b) ? a : b;  // NaN in a wins; NaN in b: a > NaN false -> b
  } else {
    return a > b ? a : b;
  }
}
template <class T>
T min2(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a != a || a < b) ? a : b;
  } else {
    return a < b ? a : b;
  }
}

template <class T, ReduceOp kOp>
T combine(T a, T b) {
  if constexpr (kOp == ReduceOp::kSum) return add(a, b);
  if constexpr (kOp == ReduceOp::kProd) return mul(a, b);
  if constexpr (kOp == ReduceOp::kMax) return max2(a, b);
  if constexpr (kOp == ReduceOp::kMin) return min2(a, b);
}

// Folds a run of n elements at byte stride `s` starting from `init`, with eight
// independent accumulators (vectorizable for unit stride).
template <class T, ReduceOp kOp>
T fold_flat(const char* p, int64_t n, int64_t s, T init) {
  T acc[8];
  for (T& a : acc) a = Combine<T>{kOp}.identity();
  int64_t i = 0;
  if (s == static_cast<int64_t>(sizeof(T))) {
    const T* q = reinterpret_cast<const T*>(p);
    for (; i + 8 <= n; i += 8) {
      for (int j = 0; j < 8; ++j) acc[j] = combine<T, kOp>(acc[j], q[i + j]);
    }
  }
  for (; i < n; ++i) acc[i & 7] = combine<T, kOp>(acc[i & 7], *reinterpret_cast<const T*>(p + i * s));
  T r = init;
  for (const T& a : acc) r = combine<T, kOp>(r, a);
  return r;
}

// Note [Pairwise sums in one pass]: floating sums fold leaves of kPairwiseLeaf elements
// (fold_flat) and combine the leaf sums pairwise, like a binary counter: after leaf k,
// the partial sums of complete subtrees sit on a small stack, and each trailing one bit
// of k merges two equal subtrees. The tree depends on n only (deterministic, independent
// of threads); the error grows with log2(n / leaf), not n. One pass over the run: the
// earlier recursive halving reached the same leaves through nested calls, and on a Zen 5
// VM that ran a 2^24-element sum at half the read-loop speed (the flat pass runs at it).
inline constexpr int64_t kPairwiseLeaf = 4096;

template <class T, ReduceOp kOp>
T fold_run(const char* p, int64_t n, int64_t s, T init) {
  constexpr bool kPairwise = kOp == ReduceOp::kSum && !std::is_integral_v<T>;
  if constexpr (kPairwise) {
    if (n > kPairwiseLeaf) {
      T stack[64];
      int depth = 0;
      int64_t leaves = 0;
      for (int64_t off = 0; off < n; off += kPairwiseLeaf) {
        T v = fold_flat<T, kOp>(p + off * s, std::min(kPairwiseLeaf, n - off), s, T(0));
        for (int64_t k = leaves; (k & 1) != 0; k >>= 1) v = add(stack[--depth], v);
        stack[depth++] = v;
        ++leaves;
      }
      T r = stack[--depth];
      while (depth > 0) r = add(stack[--depth], r);
      return add(init, r);
    }
  }
  return fold_flat<T, kOp>(p, n, s, init);
}

// Combines per-chunk partials, in chunk order (pairwise for floating sums, in place),
// into the single output element of a full reduction.
template <class T, ReduceOp kOp>
void fold_partials_into(std::span<T> partial, Tensor& out) {
  T* o = reinterpret_cast<T*>(static_cast<char*>(out.storage()->data()) + out.offset() * static_cast<int64_t>(sizeof(T)));
  T r = *o;
  if constexpr (kOp == ReduceOp::kSum && !std::is_integral_v<T>) {
    // Level by level: element i of the next level is the sum of elements 2i and 2i+1,
    // written over element i (already read, since 2i >= i).
    size_t len = partial.size();
    while (len > 1) {
      const size_t half = (len + 1) / 2;
      for (size_t i = 0; i < half; ++i) {
        partial[i] = 2 * i + 1 < len ? add(partial[2 * i], partial[2 * i + 1]) : partial[2 * i];
      }
      len = half;
    }
    r = add(r, partial[0]);
  } else {
    for (const T& v : partial) r = combine<T, kOp>(r, v);
  }
  *o = r;
}

// Per-chunk partials of a full reduction: inline up to kInlineChunks chunks (2^22
// elements at 2^16 per chunk), so moderate reductions allocate nothing.
constexpr size_t kInlineChunks = 64;

template <class T, ReduceOp kOp>
void reduce_typed(const CpuExecutionContext& ctx, const Tensor& x, const Layout& out_view, Tensor& out) {
  detail::StridedLoop<2> loop({&out_view, &x.layout()}, {static_cast<int64_t>(sizeof(T)), static_cast<int64_t>(sizeof(T))});
  if (loop.empty()) return;
  // Inner axis: the input's fastest. Then order the outer axes so that kept axes (output
  // stride != 0) are outermost: threads split only those.
  loop.move_axis(loop.fastest_axis(1), 0);
  size_t kept_begin = loop.rank();  // first outer axis that is kept, after sorting
  {
    // Stable partition of outer axes: reduced first, kept last.
    size_t w = 1;
    for (size_t k = 1; k < loop.rank(); ++k) {
      if (loop.axis(k).stride[0] == 0) loop.move_axis(k, w++);
    }
    kept_begin = w;
  }
  int64_t reduced_outer = 1;
  for (size_t k = 1; k < kept_begin; ++k) reduced_outer *= loop.axis(k).extent;
  int64_t kept_outer = 1;
  for (size_t k = kept_begin; k < loop.rank(); ++k) kept_outer *= loop.axis(k).extent;

  const int64_t n = loop.axis(0).extent;
  const int64_t so = loop.axis(0).stride[0];
  const int64_t sx = loop.axis(0).stride[1];
  std::array<char*, 2> bases{static_cast<char*>(out.storage()->data()),
                             const_cast<char*>(static_cast<const char*>(x.storage()->data()))};
  auto inner = [&](const std::array<char*, 2>& p) {
    if (so == 0) {
      T* o = reinterpret_cast<T*>(p[0]);
      *o = fold_run<T, kOp>(p[1], n, sx, *o);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        T* o = reinterpret_cast<T*>(p[0] + i * so);
        *o = combine<T, kOp>(*o, *reinterpret_cast<const T*>(p[1] + i * sx));
      }
    }
  };
  if (kept_outer > 1 || so != 0) {
    const int64_t work = n * reduced_outer;
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(work, 1));
    ctx.parallel_for(kept_outer, grain, [&](int64_t b, int64_t e) {
      loop.run_range(bases, 1, b * reduced_outer, e * reduced_outer, inner);
    });
    return;
  }
  // Full reduction to one element.
  if (loop.rank() == 1 && so == 0) {
    // One (merged) axis: split it into fixed chunks (independent of the thread count),
    // fold each, combine the partials in order.
    constexpr int64_t kChunk = int64_t{1} << 16;
    const int64_t nchunks = (n + kChunk - 1) / kChunk;
    if (nchunks > 1) {
      SmallVector<T, kInlineChunks> part;
      part.resize(static_cast<size_t>(nchunks), Combine<T>{kOp}.identity());
      const char* xb = bases[1] + x.offset() * static_cast<int64_t>(sizeof(T));
      ctx.parallel_for(nchunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          const int64_t len = std::min(kChunk, n - c * kChunk);
          part[static_cast<size_t>(c)] = fold_run<T, kOp>(xb + c * kChunk * sx, len, sx, Combine<T>{kOp}.identity());
        }
      });
      fold_partials_into<T, kOp>(part.mutable_span(), out);
      return;
    }
  }
  const int64_t total_outer = reduced_outer;
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(n, 1));
  const int64_t chunks = (total_outer + chunk - 1) / chunk;
  if (chunks <= 1) {
    loop.run_range(bases, 1, 0, total_outer, inner);
    return;
  }
  SmallVector<T, kInlineChunks> partial;
  partial.resize(static_cast<size_t>(chunks), Combine<T>{kOp}.identity());
  ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      T acc = Combine<T>{kOp}.identity();
      loop.run_range(bases, 1, c * chunk, std::min(total_outer, (c + 1) * chunk), [&](const std::array<char*, 2>& p) {
        acc = fold_run<T, kOp>(p[1], n, sx, acc);
      });
      partial[static_cast<size_t>(c)] = acc;
    }
  });
  fold_partials_into<T, kOp>(partial.mutable_span(), out);
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) noexcept {
  static constexpr std::string_view kNames[] = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"};
  return kNames[static_cast<size_t>(op)];
}

namespace {

// Validates op/dtype and axes; marks the reduced axes and gives the result shape.
Result<Shape> reduce_result_shape(ReduceOp op, const Tensor& x, Dims axes, bool keep_dims, SmallVector<bool, 64>& reduced) {
  const char* const name = reduce_op_name(op).data();  // a literal: NUL-terminated
  if (!x.defined()) return usage_error(ErrorCode::kInvalidArgument, name, "tensor handle is null");
  const DType d = x.dtype();
  const bool sum_like = op == ReduceOp::kSum || op == ReduceOp::kProd;
  if ((sum_like && d == DType::kBool) || (!sum_like && is_complex(d))) {
    return usage_error(ErrorCode::kDTypeMismatch, name,
                       std::string(name) + " is not defined for dtype " + std::string(dtype_name(d)));
  }
  reduced.resize(static_cast<size_t>(x.rank()), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= x.rank()) {
      return usage_error(ErrorCode::kOutOfRange, name,
                         "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(x.rank()));
    }
    if (reduced[static_cast<size_t>(a)]) {
      return usage_error(ErrorCode::kInvalidArgument, name, "axis " + std::to_string(a) + " is repeated in " + format_dims(axes));
    }
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape out_shape;
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (!reduced[static_cast<size_t>(k)]) {
      out_shape.push_back(x.dim(k));
    } else if (keep_dims) {
      out_shape.push_back(1);
    }
  }
  return out_shape;
}

// The reduction proper; arguments already validated.
void reduce_checked(const CpuExecutionContext& ctx, ReduceOp op, const Tensor& x, std::span<const bool> reduced,
                    bool keep_dims, Tensor& out) {
  // Output viewed with the input's shape: stride 0 on reduced axes.
  Layout out_view;
  out_view.offset = out.offset();
  size_t j = 0;
  for (int64_t k = 0; k < x.rank(); ++k) {
    out_view.shape.push_back(x.dim(k));
    if (reduced[static_cast<size_t>(k)]) {
      out_view.strides.push_back(0);
      if (keep_dims) ++j;
    } else {
      out_view.strides.push_back(out.strides()[j++]);
    }
  }
  visit_dtype(x.dtype(), [&]<class T>() {
    // Fill with the identity first (also the result of reducing an empty axis).
    const T id = Combine<T>{op}.identity();
    detail::fill_strided(ctx, &id, out.storage()->data(), out.layout(), static_cast<int64_t>(sizeof(T)));
    if constexpr (kIsComplex<T>) {
      if (op == ReduceOp::kSum) reduce_typed<T, ReduceOp::kSum>(ctx, x, out_view, out);
      if (op == ReduceOp::kProd) reduce_typed<T, ReduceOp::kProd>(ctx, x, out_view, out);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (op == ReduceOp::kMax) reduce_typed<T, ReduceOp::kMax>(ctx, x, out_view, out);
      if (op == ReduceOp::kMin) reduce_typed<T, ReduceOp::kMin>(ctx, x, out_view, out);
    } else {
      switch (op) {
        case ReduceOp::kSum: reduce_typed<T, ReduceOp::kSum>(ctx, x, out_view, out); break;
        case ReduceOp::kProd: reduce_typed<T, ReduceOp::kProd>(ctx, x, out_view, out); break;
        case ReduceOp::kMax: reduce_typed<T, ReduceOp::kMax>(ctx, x, out_view, out); break;
        case ReduceOp::kMin: reduce_typed<T, ReduceOp::kMin>(ctx, x, out_view, out); break;
      }
    }
  });
}

}  // namespace

Result<Tensor> reduce(const CpuExecutionContext& ctx, ReduceOp op, const Tensor& x, Dims axes, bool keep_dims,
                      const std::shared_ptr<HostBufferPool>& pool) {
  SmallVector<bool, 64> reduced;
  TENFERRO_TRY(Shape out_shape, reduce_result_shape(op, x, axes, keep_dims, reduced));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(x.dtype(), out_shape, pool));
  reduce_checked(ctx, op, x, reduced.span(), keep_dims, out);
  return out;
}

Result<void> reduce_into(const CpuExecutionContext& ctx, ReduceOp op, const Tensor& x, Dims axes, bool keep_dims,
                         Tensor& out) {
  SmallVector<bool, 64> reduced;
  TENFERRO_TRY(Shape out_shape, reduce_result_shape(op, x, axes, keep_dims, reduced));
  const char* const name = reduce_op_name(op).data();  // a literal: NUL-terminated
  if (!out.defined()) return usage_error(ErrorCode::kInvalidArgument, name, "destination handle is null");
  if (out.dtype() != x.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, name,
                       "destination dtype " + std::string(dtype_name(out.dtype())) + " differs from the input dtype " +
                           std::string(dtype_name(x.dtype())));
  }
  if (!(out.shape() == out_shape)) {
    return usage_error(ErrorCode::kShapeMismatch, name,
                       "destination shape " + format_dims(out.shape()) + " differs from the result shape " +
                           format_dims(out_shape));
  }
  TENFERRO_TRY_VOID(tenferro::detail::check_mutable(out.storage(), out.layout(), name));
  reduce_checked(ctx, op, x, reduced.span(), keep_dims, out);
  return ok();
}

}  // namespace tenferro::cpu
