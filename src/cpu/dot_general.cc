#include "tenferro/cpu/dot_general.h"

#include <algorithm>
#include <string>

#include "gemm.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

// Note [dot_general routes]: each operand is viewed as a strided batch of matrices
// (lhs: batch x M x K, rhs: batch x K x N, out: batch x M x N) by merging its batch,
// free and contracting dimensions into one stride each. An operand whose dimensions do
// not merge, or whose strides the chosen provider cannot take, is packed alone into a
// compact canonical copy; the others are passed as they are (no copy). A destination
// that cannot be addressed is computed in a compact scratch and copied back once.
//
// Note [Default GEMM provider]: kAuto uses plain loops below DotOptions::tiny_flops
// multiply-adds and for integer dtypes; OpenBLAS for single products and sequential
// batches; BLIS (one thread per call) when batches run outer-parallel or when a product
// is split over the engine's workers. Figures: docs/benchmarks.md ("GEMM providers").
//
// Note [Batch policy thresholds]: kAuto runs batches outer-parallel when the context
// has more than one thread and each product is below DotOptions::outer_parallel_flops
// multiply-adds; otherwise sequentially, each product using the context's threads.

namespace {

std::string s(int64_t v) { return std::to_string(v); }

struct Group {
  int64_t extent = 1;
  int64_t stride = 0;
  bool mergeable = true;
};

// Merges `axes` of `layout` (in the given order) into one (extent, stride) if they are
// column-major contiguous among themselves; extent-1 axes are ignored.
Group merge_group(const Layout& layout, std::span<const int64_t> axes) {
  Group g;
  bool first = true;
  int64_t expect = 0;
  for (int64_t a : axes) {
    const int64_t e = layout.shape[static_cast<size_t>(a)];
    const int64_t st = layout.strides[static_cast<size_t>(a)];
    g.extent *= e;
    if (e == 1) continue;
    if (first) {
      g.stride = st;
      expect = st * e;
      first = false;
    } else {
      if (st != expect) g.mergeable = false;
      expect = st * e;
    }
  }
  if (g.extent <= 1) g.stride = 0;
  return g;
}

Result<void> check_axes(std::span<const int64_t> axes, int64_t rank, const char* which, SmallVector<bool, 64>& used) {
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) {
      return usage_error(ErrorCode::kOutOfRange, "dot_general",
                         std::string(which) + " axis " + s(a) + " is out of range for rank " + s(rank));
    }
    if (used[static_cast<size_t>(a)]) {
      return usage_error(ErrorCode::kInvalidArgument, "dot_general",
                         std::string(which) + " axis " + s(a) + " is used twice");
    }
    used[static_cast<size_t>(a)] = true;
  }
  return ok();
}

struct Plan {
  SmallVector<int64_t, 8> lhs_free, rhs_free;
  int64_t batch = 1, m = 1, n = 1, k = 1;
};

Result<Plan> plan_dims(const Shape& lhs, const Shape& rhs, const DotDims& d) {
  if (d.lhs_batch.size() != d.rhs_batch.size() || d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "dot_general",
                       "batch lists " + format_dims(d.lhs_batch.span()) + " / " + format_dims(d.rhs_batch.span()) +
                           " or contracting lists " + format_dims(d.lhs_contracting.span()) + " / " +
                           format_dims(d.rhs_contracting.span()) + " differ in length");
  }
  SmallVector<bool, 64> lu(lhs.size(), false), ru(rhs.size(), false);
  TENFERRO_TRY_VOID(check_axes(d.lhs_batch.span(), lhs.ssize(), "lhs batch", lu));
  TENFERRO_TRY_VOID(check_axes(d.lhs_contracting.span(), lhs.ssize(), "lhs contracting", lu));
  TENFERRO_TRY_VOID(check_axes(d.rhs_batch.span(), rhs.ssize(), "rhs batch", ru));
  TENFERRO_TRY_VOID(check_axes(d.rhs_contracting.span(), rhs.ssize(), "rhs contracting", ru));
  Plan p;
  for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
    const int64_t a = lhs[static_cast<size_t>(d.lhs_batch[i])], b = rhs[static_cast<size_t>(d.rhs_batch[i])];
    if (a != b) {
      return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                         "batch pair " + s(static_cast<int64_t>(i)) + " has extents " + s(a) + " (lhs axis " +
                             s(d.lhs_batch[i]) + ") and " + s(b) + " (rhs axis " + s(d.rhs_batch[i]) + ")");
    }
    p.batch *= a;
  }
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    const int64_t a = lhs[static_cast<size_t>(d.lhs_contracting[i])],
                  b = rhs[static_cast<size_t>(d.rhs_contracting[i])];
    if (a != b) {
      return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                         "contracting pair " + s(static_cast<int64_t>(i)) + " has extents " + s(a) + " (lhs axis " +
                             s(d.lhs_contracting[i]) + ") and " + s(b) + " (rhs axis " + s(d.rhs_contracting[i]) + ")");
    }
    p.k *= a;
  }
  for (size_t a = 0; a < lhs.size(); ++a) {
    if (!lu[a]) {
      p.lhs_free.push_back(static_cast<int64_t>(a));
      p.m *= lhs[a];
    }
  }
  for (size_t a = 0; a < rhs.size(); ++a) {
    if (!ru[a]) {
      p.rhs_free.push_back(static_cast<int64_t>(a));
      p.n *= rhs[a];
    }
  }
  return p;
}

template <class T>
Result<T> scalar_to(c128 v, const char* what) {
  if constexpr (tenferro::detail::ComplexScalar<T>) {
    using R = typename T::value_type;
    return T(static_cast<R>(v.real()), static_cast<R>(v.imag()));
  } else {
    if (v.imag() != 0.0 || (std::is_integral_v<T> && v.real() != std::trunc(v.real()))) {
      return usage_error(ErrorCode::kInvalidArgument, "dot_general",
                         std::string(what) + " (" + std::to_string(v.real()) + ", " + std::to_string(v.imag()) +
                             ") is not representable in the operand dtype");
    }
    return static_cast<T>(v.real());
  }
}

// The axes of the three groups, in order: the permutation that makes them a compact
// column-major [rows, cols, batch] array.
SmallVector<int64_t, 16> group_order(std::span<const int64_t> rows, std::span<const int64_t> cols,
                                     std::span<const int64_t> batch) {
  SmallVector<int64_t, 16> perm;
  for (auto group : {rows, cols, batch}) {
    for (int64_t a : group) perm.push_back(a);
  }
  return perm;
}

struct MatOperand {
  const char* base = nullptr;  // storage start + offset, in bytes
  int64_t rs = 0, cs = 0, bs = 0;
};

bool provider_accepts(GemmProvider p, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (p == GemmProvider::kNaive) return true;
  if (rows <= 1 && cols <= 1) return true;
  if (p == GemmProvider::kOpenBlas) {
    return (rs == 1 && (cs >= rows || cols == 1)) || (cs == 1 && (rs >= cols || rows == 1)) ||
           (rows == 1 && cs > 0) || (cols == 1 && rs > 0);
  }
  // BLIS: positive strides on non-trivial dimensions.
  return (rows <= 1 || rs > 0) && (cols <= 1 || cs > 0);
}

template <class T>
Result<void> run_dot(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                     const DotOptions& opt, const Plan& plan, Tensor& out) {
  TENFERRO_TRY(T alpha, scalar_to<T>(opt.alpha, "alpha"));
  TENFERRO_TRY(T beta, scalar_to<T>(opt.beta, "beta"));
  const int64_t B = plan.batch, M = plan.m, N = plan.n, K = plan.k;
  if (B * M * N == 0) return ok();
  const int64_t flops = M * N * std::max<int64_t>(K, 1);

  // Provider and batch policy.
  GemmProvider provider = opt.provider;
  const bool integral = std::is_integral_v<T>;
  if (integral) provider = GemmProvider::kNaive;
  const BatchSettings bs = effective_batch_settings(ctx, opt);
  BatchPolicy policy = bs.policy;
  if (policy == BatchPolicy::kAuto) {
    // A forced OpenBLAS provider brings its own workers: never outer-parallel under it.
    policy = (B > 1 && ctx.threads() > 1 && flops < bs.outer_parallel_flops && provider != GemmProvider::kOpenBlas)
                 ? BatchPolicy::kOuterParallel
                 : BatchPolicy::kSequential;
  }
  if (provider == GemmProvider::kOpenBlas && policy == BatchPolicy::kOuterParallel && B > 1 && ctx.threads() > 1) {
    return usage_error(ErrorCode::kUnsupported, "dot_general",
                       "provider openblas (its own worker threads, global thread control) cannot run under an "
                       "outer-parallel batch of " + s(B) + " products: that would be two fan-out levels");
  }
  if (provider == GemmProvider::kAuto) {
    if (flops < bs.tiny_flops) {
      provider = GemmProvider::kNaive;
    } else if (policy == BatchPolicy::kOuterParallel) {
      provider = GemmProvider::kBlis;
    } else {
      provider = GemmProvider::kOpenBlas;
    }
  }

  // Operand views (Note [dot_general routes]).
  SmallVector<int64_t, 8> out_batch, out_m, out_n;
  const int64_t nb = static_cast<int64_t>(dims.lhs_batch.size());
  for (int64_t i = 0; i < nb; ++i) out_batch.push_back(i);
  for (size_t i = 0; i < plan.lhs_free.size(); ++i) out_m.push_back(nb + static_cast<int64_t>(i));
  for (size_t i = 0; i < plan.rhs_free.size(); ++i)
    out_n.push_back(nb + static_cast<int64_t>(plan.lhs_free.size() + i));

  Tensor lhs_use = lhs, rhs_use = rhs;
  auto view_of = [](const Tensor& t, std::span<const int64_t> b, std::span<const int64_t> r, std::span<const int64_t> c,
                    Group* gb, Group* gr, Group* gc) {
    *gb = merge_group(t.layout(), b);
    *gr = merge_group(t.layout(), r);
    *gc = merge_group(t.layout(), c);
    return gb->mergeable && gr->mergeable && gc->mergeable;
  };
  Group lb, lm, lk, rb, rk, rn, ob, om, on;
  const bool lhs_ok = view_of(lhs, dims.lhs_batch.span(), plan.lhs_free.span(), dims.lhs_contracting.span(), &lb, &lm, &lk) &&
                      provider_accepts(provider, M, K, lm.stride, lk.stride);
  const bool rhs_ok = view_of(rhs, dims.rhs_batch.span(), dims.rhs_contracting.span(), plan.rhs_free.span(), &rb, &rk, &rn) &&
                      provider_accepts(provider, K, N, rk.stride, rn.stride);
  const bool out_ok = view_of(out, out_batch.span(), out_m.span(), out_n.span(), &ob, &om, &on) &&
                      provider_accepts(provider, M, N, om.stride, on.stride);
  if (!lhs_ok) {
    // Pack lhs as [free..., contracting..., batch...] column-major: M x K matrices.
    const auto perm = group_order(plan.lhs_free.span(), dims.lhs_contracting.span(), dims.lhs_batch.span());
    TENFERRO_TRY(lhs_use, permute_copy(ctx, lhs, Dims(perm.span())));
    lm = Group{M, 1, true};
    lk = Group{K, M, true};
    lb = Group{B, M * K, true};
  }
  if (!rhs_ok) {
    const auto perm = group_order(dims.rhs_contracting.span(), plan.rhs_free.span(), dims.rhs_batch.span());
    TENFERRO_TRY(rhs_use, permute_copy(ctx, rhs, Dims(perm.span())));
    rk = Group{K, 1, true};
    rn = Group{N, K, true};
    rb = Group{B, K * N, true};
  }
  Tensor scratch;
  if (!out_ok) {
    // Compute into a compact [M, N, batch] scratch; copy the destination in first when
    // beta != 0 (it is read), and back afterwards.
    const auto perm = group_order(out_m.span(), out_n.span(), out_batch.span());
    TENFERRO_TRY(Tensor out_view, out.permute(Dims(perm.span())));
    TENFERRO_TRY(scratch, materialize(ctx, out_view));
    om = Group{M, 1, true};
    on = Group{N, M, true};
    ob = Group{B, M * N, true};
  }
  Tensor& target = out_ok ? out : scratch;
  const auto* lbase = static_cast<const T*>(lhs_use.storage()->data()) + lhs_use.offset();
  const auto* rbase = static_cast<const T*>(rhs_use.storage()->data()) + rhs_use.offset();
  auto* obase = static_cast<T*>(target.storage()->data()) + target.offset();

  auto one = [&](int64_t b, int threads) {
    detail::GemmArgs<T> g{M,     N,       K,       alpha, lbase + b * lb.stride, lm.stride, lk.stride, opt.conj_lhs,
                          rbase + b * rb.stride, rk.stride, rn.stride, opt.conj_rhs, beta, obase + b * ob.stride,
                          om.stride, on.stride};
    if (K == 0) {
      // Empty contraction: out = beta * out.
      for (int64_t j = 0; j < N; ++j)
        for (int64_t i = 0; i < M; ++i) {
          T& c = g.c[i * g.rsc + j * g.csc];
          c = beta == T{} ? T{} : beta * c;
        }
      return;
    }
    bool done = false;
    if (provider == GemmProvider::kOpenBlas) done = detail::gemm_openblas<T>(g, threads);
    if (provider == GemmProvider::kBlis) {
      if (threads > 1 && N >= 2 * threads) {
        // Split the columns over the engine's workers; each BLIS call is sequential.
        ctx.parallel_for(N, std::max<int64_t>(1, N / (4 * threads)), [&](int64_t j0, int64_t j1) {
          detail::GemmArgs<T> part = g;
          part.n = j1 - j0;
          part.b = g.b + j0 * g.csb;
          part.c = g.c + j0 * g.csc;
          if (!detail::gemm_blis<T>(part)) detail::gemm_naive<T>(part);
        });
        done = true;
      } else {
        done = detail::gemm_blis<T>(g);
      }
    }
    if (!done) detail::gemm_naive<T>(g);
  };
  if (policy == BatchPolicy::kOuterParallel && B > 1) {
    ctx.parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) one(b, 1);
    });
  } else {
    for (int64_t b = 0; b < B; ++b) one(b, ctx.threads());
  }
  if (!out_ok) {
    SmallVector<int64_t, 16> inv(static_cast<size_t>(out.rank()), 0);
    const auto perm = group_order(out_m.span(), out_n.span(), out_batch.span());
    for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    TENFERRO_TRY(Tensor back, scratch.permute(Dims(inv.span())));
    detail::copy_strided(ctx, back.storage()->data(), back.layout(), out.storage()->data(), out.layout(),
                         out.element_size());
  }
  return ok();
}

}  // namespace

BatchSettings effective_batch_settings(const CpuExecutionContext& ctx, const DotOptions& options) {
  BatchSettings b = ctx.batch();
  if (options.batch_policy) b.policy = *options.batch_policy;
  if (options.tiny_flops) b.tiny_flops = *options.tiny_flops;
  if (options.outer_parallel_flops) b.outer_parallel_flops = *options.outer_parallel_flops;
  return b;
}

std::string_view gemm_provider_name(GemmProvider p) noexcept {
  switch (p) {
    case GemmProvider::kAuto: return "auto";
    case GemmProvider::kOpenBlas: return "openblas";
    case GemmProvider::kBlis: return "blis";
    case GemmProvider::kNaive: return "naive";
  }
  return "unknown";
}

Result<Shape> dot_general_shape(const Shape& lhs, const Shape& rhs, const DotDims& dims) {
  TENFERRO_TRY(Plan p, plan_dims(lhs, rhs, dims));
  Shape out;
  for (int64_t a : dims.lhs_batch) out.push_back(lhs[static_cast<size_t>(a)]);
  for (int64_t a : p.lhs_free) out.push_back(lhs[static_cast<size_t>(a)]);
  for (int64_t a : p.rhs_free) out.push_back(rhs[static_cast<size_t>(a)]);
  return out;
}

namespace {
Result<Plan> validate(const Tensor& lhs, const Tensor& rhs, const DotDims& dims) {
  if (!lhs.defined() || !rhs.defined()) {
    return usage_error(ErrorCode::kInvalidArgument, "dot_general", "tensor handle is null");
  }
  if (lhs.dtype() != rhs.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, "dot_general",
                       "operand dtypes " + std::string(dtype_name(lhs.dtype())) + " and " +
                           std::string(dtype_name(rhs.dtype())) + " differ");
  }
  if (lhs.dtype() == DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, "dot_general", "dot_general is not defined for dtype bool");
  }
  return plan_dims(lhs.shape(), rhs.shape(), dims);
}
}  // namespace

Result<void> dot_general_into(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                              const DotOptions& options, Tensor& out) {
  TENFERRO_TRY(Plan plan, validate(lhs, rhs, dims));
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape(), rhs.shape(), dims));
  if (!out.defined()) return usage_error(ErrorCode::kInvalidArgument, "dot_general", "destination handle is null");
  if (out.dtype() != lhs.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, "dot_general",
                       "destination dtype " + std::string(dtype_name(out.dtype())) + " differs from operand dtype " +
                           std::string(dtype_name(lhs.dtype())));
  }
  if (!(out.shape() == shape)) {
    return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                       "destination shape " + format_dims(out.shape()) + " differs from result shape " +
                           format_dims(shape));
  }
  TENFERRO_TRY_VOID(tenferro::detail::check_mutable(out.storage(), out.layout(), "dot_general"));
  return visit_dtype(lhs.dtype(), [&]<class T>() -> Result<void> {
    if constexpr (std::is_same_v<T, bool>) {
      return ok();
    } else {
      return run_dot<T>(ctx, lhs, rhs, dims, options, plan, out);
    }
  });
}

Result<Tensor> dot_general(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                           const DotOptions& options, const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY(Plan plan, validate(lhs, rhs, dims));
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape(), rhs.shape(), dims));
  // Memory order [lhs free, rhs free, batch] (column-major), viewed in logical order
  // [batch, lhs free, rhs free].
  const size_t nb = dims.lhs_batch.size();
  Shape mem;
  for (size_t i = nb; i < shape.size(); ++i) mem.push_back(shape[i]);
  for (size_t i = 0; i < nb; ++i) mem.push_back(shape[i]);
  TENFERRO_TRY(Tensor buffer, Tensor::zeros(lhs.dtype(), mem, pool));
  SmallVector<int64_t, 16> perm;
  for (size_t i = 0; i < nb; ++i) perm.push_back(static_cast<int64_t>(shape.size() - nb + i));
  for (size_t i = nb; i < shape.size(); ++i) perm.push_back(static_cast<int64_t>(i - nb));
  TENFERRO_TRY(Tensor out, buffer.permute(Dims(perm.span())));
  buffer = Tensor();
  DotOptions o = options;
  o.beta = 0.0;
  TENFERRO_TRY_VOID(dot_general_into(ctx, lhs, rhs, dims, o, out));
  return out;
}

}  // namespace tenferro::cpu
