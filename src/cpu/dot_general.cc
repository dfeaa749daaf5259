#include "tenferro/cpu/dot_general.h"

#include <algorithm>
#include <atomic>
#include <array>

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <string>

#include "gemm.h"
#include "map_kernel.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

// Note [dot_general routes]: each operand is viewed as a strided batch of matrices
// (lhs: batch x M x K, rhs: batch x K x N, out: batch x M x N) by merging its batch,
// free and contracting dimensions into one stride each. An operand whose dimensions do
// not merge, or whose strides the chosen provider cannot take, is packed alone into a
// compact canonical copy; the others are passed as they are (no copy). A destination
// that cannot be addressed is computed in a compact scratch and copied back once.
//
// Note [Default GEMM provider]: kAuto uses plain loops for tiny products (Note [Tiny
// products]) and integer dtypes; OpenBLAS for single products and provider-item
// batches (f64 on AVX-512 builds: the blocked kernel, Note [Blocked AVX-512 GEMM]);
// BLIS (one thread per call) for sequential, outer-parallel and whole-batch vendor
// batches, where BLIS runs tuned kernels (Note [Untuned BLIS]). Figures:
// docs/benchmarks.md ("GEMM providers").
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
    const bool bad_bool = std::is_same_v<T, bool> && v.real() != 0.0 && v.real() != 1.0;
    if (v.imag() != 0.0 || (std::is_integral_v<T> && v.real() != std::trunc(v.real())) || bad_bool) {
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

// Note [Batch items]: batch dimensions never need to merge. Each operand keeps one
// stride per batch dimension; extent-1 dimensions are dropped and neighbours that are
// contiguous in all three operands are merged, and a BatchCursor walks the items in
// order, updating the three offsets incrementally (no division per item, no metadata
// allocation). Only the row and column groups of an operand must merge into one stride
// each; an operand whose groups do not merge is packed.
struct BatchAxes {
  SmallVector<int64_t, 8> extent, ls, rs, os;
};

BatchAxes batch_axes(std::span<const int64_t> extent, std::span<const int64_t> ls, std::span<const int64_t> rs,
                     std::span<const int64_t> os) {
  BatchAxes ax;
  for (size_t i = 0; i < extent.size(); ++i) {
    if (extent[i] == 1) continue;
    if (!ax.extent.empty()) {
      const size_t j = ax.extent.size() - 1;
      const int64_t e = ax.extent[j];
      if (ls[i] == ax.ls[j] * e && rs[i] == ax.rs[j] * e && os[i] == ax.os[j] * e) {
        ax.extent[j] *= extent[i];
        continue;
      }
    }
    ax.extent.push_back(extent[i]);
    ax.ls.push_back(ls[i]);
    ax.rs.push_back(rs[i]);
    ax.os.push_back(os[i]);
  }
  return ax;
}

struct BatchCursor {
  BatchCursor(const BatchAxes& axes, int64_t start) : ax(axes), idx(axes.extent.size(), 0) {
    for (size_t i = 0; i < ax.extent.size(); ++i) {
      idx[i] = start % ax.extent[i];
      start /= ax.extent[i];
      lo += idx[i] * ax.ls[i];
      ro += idx[i] * ax.rs[i];
      oo += idx[i] * ax.os[i];
    }
  }
  void advance() {
    for (size_t i = 0; i < ax.extent.size(); ++i) {
      lo += ax.ls[i];
      ro += ax.rs[i];
      oo += ax.os[i];
      if (++idx[i] < ax.extent[i]) return;
      lo -= ax.ls[i] * ax.extent[i];
      ro -= ax.rs[i] * ax.extent[i];
      oo -= ax.os[i] * ax.extent[i];
      idx[i] = 0;
    }
  }
  const BatchAxes& ax;
  SmallVector<int64_t, 8> idx;
  int64_t lo = 0, ro = 0, oo = 0;
};

// Strides of the batch dimensions of a compact array whose batch block starts at
// element stride `base` (packed operands and scratch destinations).
SmallVector<int64_t, 8> compact_batch_strides(std::span<const int64_t> extent, int64_t base) {
  SmallVector<int64_t, 8> st;
  for (int64_t e : extent) {
    st.push_back(base);
    base *= e;
  }
  return st;
}

SmallVector<int64_t, 8> layout_strides(const Layout& layout, std::span<const int64_t> axes) {
  SmallVector<int64_t, 8> st;
  for (int64_t a : axes) st.push_back(layout.strides[static_cast<size_t>(a)]);
  return st;
}

// Note [Batch policies]: the effective policy and provider are resolved before any
// write. kAuto: outer-parallel (BLIS, one thread per product) when the context has
// several threads, the batch several products and each product fewer than
// outer_parallel_flops multiply-adds; otherwise provider items (OpenBLAS with the
// context's threads). kSequential and kOuterParallel run every product on one thread
// (BLIS by default; OpenBLAS is set to one thread through its global control).
// kWholeBatchVendor makes one BLIS ?gemm_batch_ call (floating dtypes only). Typed
// errors: OpenBLAS under an outer-parallel batch (two fan-out levels); the vendor batch
// with OpenBLAS (0.3.21 has no batch entry point), plain loops or integer dtypes.
// Products below tiny_flops (OpenBLAS) or tiny_flops_blis (BLIS) use plain loops
// unless a provider is forced (Note [Tiny products]).
//
// Note [Tiny products]: `tenferro bench kernels --only tiny` times 512 products of
// n x n x n, one thread each, through each provider against the plain-loop route
// (Note [Plain-loop GEMM]). 2026-11-29, 1 thread: OpenBLAS is slower than plain loops up
// to 216 multiply-adds (ratio 0.93) and faster from 512 (1.10); a BLIS call costs about
// 2 us (0.2 us for OpenBLAS), so BLIS loses up to 13824 (0.95). Defaults: tiny_flops 256,
// tiny_flops_blis 16384 (docs/benchmarks.md). Matrix-vector shaped products (a side of
// 1) use plain loops up to 16x the threshold. With A and C column-major (after packing),
// f64 products up to kSmallMaxFlops multiply-adds and contractions up to kSmallMaxK use
// the register-blocked small kernel. With its 8 x 6 blocks (2026-11-30) the same bench
// has plain loops 2.0x faster than OpenBLAS at n = 24, 2.9x at 32, 2.0x at 48 and 1.5x
// at 64; one thread, hot, per call: 12 x 12 x 144 1.6 us (OpenBLAS 3.9, BLIS 3.8),
// 8 x 8 x 256 1.3 us (3.6, 3.4), 16 x 16 x 128 2.1 us (3.1, 3.2).
struct Route {
  BatchPolicy policy;
  GemmProvider provider;
};

Result<Route> resolve_route(const CpuExecutionContext& ctx, const DotOptions& opt, bool integral, int64_t batch,
                            int64_t m, int64_t n, int64_t flops) {
  const BatchSettings bs = effective_batch_settings(ctx, opt);
  Route r{bs.policy, opt.provider};
  if (r.policy == BatchPolicy::kAuto) {
    r.policy = (batch > 1 && ctx.threads() > 1 && flops < bs.outer_parallel_flops && r.provider != GemmProvider::kOpenBlas)
                   ? BatchPolicy::kOuterParallel
                   : BatchPolicy::kProviderItems;
  }
  if (r.policy == BatchPolicy::kWholeBatchVendor) {
    if (integral || (r.provider != GemmProvider::kAuto && r.provider != GemmProvider::kBlis)) {
      return usage_error(ErrorCode::kUnsupported, "dot_general",
                         "batch policy whole-batch-vendor needs a vendor batch entry point (BLIS ?gemm_batch_, "
                         "floating dtypes); provider " + std::string(gemm_provider_name(r.provider)) +
                             (integral ? " with an integer dtype" : "") + " has none");
    }
    r.provider = GemmProvider::kBlis;
    return r;
  }
  // Integer dtypes have no BLAS: plain loops whatever the provider.
  if (integral) r.provider = GemmProvider::kNaive;
  if (r.provider == GemmProvider::kOpenBlas && r.policy == BatchPolicy::kOuterParallel && batch > 1 &&
      ctx.threads() > 1) {
    return usage_error(ErrorCode::kUnsupported, "dot_general",
                       "provider openblas (its own worker threads, global thread control) cannot run under an "
                       "outer-parallel batch of " + s(batch) + " products: that would be two fan-out levels");
  }
  if (r.provider == GemmProvider::kAuto) {
    // Note [Untuned BLIS]: every automatic BLIS route below requires caps.blis_tuned
    // (Note [CPU capabilities] in caps.cc). BLIS 0.9 picks its 'generic' sub-configuration
    // on CPUs it does not know (AMD family 0x1A, Zen 5, 2026-11-30): `tenferro bench
    // kernels`, one thread, dot_general f64 n = 2048 forced to blis 16.1 GFLOP/s against
    // cblas_dgemm (OpenBLAS) 51.0. There the batches BLIS would run (outer-parallel,
    // sequential) make one-thread OpenBLAS calls instead, and single products stay with
    // OpenBLAS (no column split, no thin BLIS products). A product forced to provider
    // blis still runs BLIS.
    // Note [Untuned OpenBLAS]: the mirror case. OpenBLAS 0.3.21 runs SSE3 'Prescott'
    // kernels on some CPUs it does not know (a Sapphire Rapids class Xeon, 2026-12-01:
    // cblas_dgemm 2048 at 1 thread 10 GFLOP/s against 29 with its Haswell kernels; c128
    // n = 512 8.4 against 28 through BLIS). When OpenBLAS is untuned and BLIS tuned, the
    // products OpenBLAS would run as provider items go to BLIS instead.
    const CpuCaps& caps = ctx.caps();
    const bool blis_items = caps.blis_tuned && !caps.openblas_tuned;
    r.provider = (r.policy == BatchPolicy::kProviderItems && !blis_items) || !caps.blis_tuned ? GemmProvider::kOpenBlas
                                                                                               : GemmProvider::kBlis;
    // Matrix-vector shaped products (a side of 1) pay a GEMM call's setup for little
    // work: plain loops up to 16x the threshold (Note [Tiny products]).
    const int64_t tiny = r.provider == GemmProvider::kOpenBlas ? bs.tiny_flops : bs.tiny_flops_blis;
    if (flops < tiny || (std::min(m, n) == 1 && flops < 16 * tiny)) r.provider = GemmProvider::kNaive;
  }
  return r;
}

// Whether the route's provider can address an r x c operand with strides (rs, cs).
bool operand_ok(const Route& r, bool output, bool conj_complex, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  int64_t ld = 0;
  if (r.policy == BatchPolicy::kWholeBatchVendor) {
    if (output) return detail::blas_form(rows, cols, rs, cs, false, &ld);
    return (!conj_complex && detail::blas_form(rows, cols, rs, cs, false, &ld)) ||
           detail::blas_form(rows, cols, rs, cs, true, &ld);
  }
  switch (r.provider) {
    case GemmProvider::kOpenBlas:
      return detail::blas_form(rows, cols, rs, cs, false, &ld) || detail::blas_form(rows, cols, rs, cs, true, &ld);
    case GemmProvider::kBlis:
      // Positive strides on non-trivial dimensions.
      return (rows <= 1 || rs > 0) && (cols <= 1 || cs > 0);
    default:
      return true;
  }
}

template <class T>
T conj_if(T v, bool c) {
  if constexpr (tenferro::detail::ComplexScalar<T>) {
    return c ? std::conj(v) : v;
  } else {
    (void)c;
    return v;
  }
}

// Note [Outer products]: a product with K = 1 (nothing contracted) is an outer product
// c[i, j] = alpha a[i] b[j] (+ beta c[i, j]): all stores and no reuse, which GEMM
// libraries run far below bandwidth. With the default provider it is written here one
// contiguous column at a time (vectorized), with streaming stores when the output is
// large and not read (beta = 0), split over the context's workers by columns.
template <class T>
void outer_product(const CpuExecutionContext& ctx, detail::GemmArgs<T> g, int threads) {
  if (g.rsc != 1 && g.csc == 1) {
    // Row-major output: c^T[j, i] = b[j] a[i], the same product with roles swapped.
    std::swap(g.m, g.n);
    std::swap(g.a, g.b);
    std::swap(g.conj_a, g.conj_b);
    const int64_t ra = g.rsa;
    g.rsa = g.csb;
    g.csb = ra;
    std::swap(g.rsc, g.csc);
  }
  const bool zero_beta = g.beta == T{};
  const bool stream = zero_beta && g.rsc == 1 && g.m * g.n * static_cast<int64_t>(sizeof(T)) >= (int64_t{8} << 20);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(g.m, 1));
  auto columns = [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const T bj = g.alpha * conj_if(g.b[j * g.csb], g.conj_b);
      T* c = g.c + j * g.csc;
      const T* a = g.a;
      if (g.rsc == 1 && g.rsa == 1 && !(tenferro::detail::ComplexScalar<T> && g.conj_a)) {
        int64_t i = 0;
#if defined(__AVX2__)
        if constexpr (std::is_same_v<T, double>) {
          if (stream) {
            for (; i < g.m && (reinterpret_cast<uintptr_t>(c + i) % 32) != 0; ++i) c[i] = a[i] * bj;
            const __m256d vb = _mm256_set1_pd(bj);
            for (; i + 4 <= g.m; i += 4) _mm256_stream_pd(c + i, _mm256_mul_pd(_mm256_loadu_pd(a + i), vb));
          }
        } else if constexpr (std::is_same_v<T, float>) {
          if (stream) {
            for (; i < g.m && (reinterpret_cast<uintptr_t>(c + i) % 32) != 0; ++i) c[i] = a[i] * bj;
            const __m256 vb = _mm256_set1_ps(bj);
            for (; i + 8 <= g.m; i += 8) _mm256_stream_ps(c + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), vb));
          }
        }
#endif
        if (zero_beta) {
          for (; i < g.m; ++i) c[i] = a[i] * bj;
        } else {
          for (; i < g.m; ++i) c[i] = a[i] * bj + g.beta * c[i];
        }
      } else {
        for (int64_t i = 0; i < g.m; ++i) {
          T& ci = c[i * g.rsc];
          const T v = conj_if(a[i * g.rsa], g.conj_a) * bj;
          ci = zero_beta ? v : v + g.beta * ci;
        }
      }
    }
#if defined(__AVX2__)
    if (stream) _mm_sfence();  // streaming stores are weakly ordered
#endif
  };
  if (threads > 1) {
    ctx.parallel_for(g.n, grain, columns);
  } else {
    columns(0, g.n);  // already inside an outer-parallel batch: one fan-out level
  }
}

// Note [Dot scratch]: a packed operand or output scratch is a compact column-major tensor
// in a buffer taken from the caller's DotScratch slot when that buffer is large enough
// and held by nobody else (the slot is emptied while the tensor lives, so the tensor's
// storage is exclusive and writable), else from the pool. After the products the
// buffers go back into the slots, so a caller repeating the same shapes allocates
// nothing once warm.
Result<Tensor> take_scratch(DType dt, const Shape& shape, std::shared_ptr<Storage>* slot,
                            const std::shared_ptr<HostBufferPool>& pool) {
  const int64_t bytes = element_count(shape) * dtype_size(dt);
  if (slot != nullptr && *slot && slot->use_count() == 1 && (*slot)->byte_size() >= bytes) {
    return Tensor::from_storage(dt, std::move(*slot), Layout::col_major(shape));
  }
  return Tensor::uninitialized(dt, shape, pool);
}

// Hands the buffer of `t` back to `slot` (when given) and clears `t`.
void give_back(Tensor& t, std::shared_ptr<Storage>* slot) {
  if (slot != nullptr && t.defined()) *slot = t.storage();
  t = Tensor();
}

// A compact copy of `src` viewed through `perm`, in a scratch buffer.
Result<Tensor> packed_copy(const CpuExecutionContext& ctx, const Tensor& src, Dims perm, std::shared_ptr<Storage>* slot,
                           const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY(Tensor view, src.permute(perm));
  TENFERRO_TRY(Tensor dst, take_scratch(src.dtype(), view.shape(), slot, pool));
  detail::copy_strided(ctx, view.storage()->data(), view.layout(), dst.storage()->data(), dst.layout(),
                       view.element_size());
  return dst;
}

// Positions 0..n-1 of `axes` ordered by |stride| in `l`, ties in list order (an insertion
// sort: stable, and no temporary buffer, which std::stable_sort would allocate).
SmallVector<size_t, 8> order_by_stride(const Layout& l, std::span<const int64_t> axes) {
  SmallVector<size_t, 8> order;
  for (size_t i = 0; i < axes.size(); ++i) order.push_back(i);
  auto stride = [&](size_t i) { return std::llabs(l.strides[static_cast<size_t>(axes[i])]); };
  for (size_t t = 1; t < order.size(); ++t)
    for (size_t u = t; u > 0 && stride(order[u]) < stride(order[u - 1]); --u) std::swap(order[u], order[u - 1]);
  return order;
}

// Note [Contraction order]: the contracting pairs may be listed in any order (the sum
// does not depend on it), but a group merges into one stride only when its axes come in
// ascending stride order. The pairs are ordered by the strides of the larger operand,
// so that it is never packed when it could be walked in place. When even that order
// does not merge it, it keeps that order if the other operand is at most 1/8 of its size
// (packing both then costs little more, and the large pack walks its memory in order:
// ordering by a 1024-element partner made lm brackets' [4, 1996, 4, 4, 4] pack scatter
// its writes, 4 ms against 1.9 ms); with a partner of similar size the pairs follow the
// partner's strides when that merges it, so only one operand is packed (MPS: two
// [19, k, 19] tensors). Example: lhs [12 x 144] (k strides 12, 144)
// with rhs [144 x 13200] whose matching k strides are 144, 12: ordering by the rhs packs
// the 1728-element lhs instead of the 1.9M-element rhs.
DotDims contraction_order(const Layout& l, const Layout& r, const DotDims& dims) {
  DotDims d = dims;
  const size_t nk = d.lhs_contracting.size();
  if (nk < 2) return d;
  const bool lhs_big = element_count(l.shape) >= element_count(r.shape);
  auto sort_by = [&](const Layout& by, bool by_lhs) {
    const auto order = order_by_stride(by, by_lhs ? dims.lhs_contracting.span() : dims.rhs_contracting.span());
    for (size_t t = 0; t < nk; ++t) {
      d.lhs_contracting[t] = dims.lhs_contracting[order[t]];
      d.rhs_contracting[t] = dims.rhs_contracting[order[t]];
    }
  };
  sort_by(lhs_big ? l : r, lhs_big);
  const Layout& big = lhs_big ? l : r;
  const Layout& small = lhs_big ? r : l;
  if (merge_group(big, lhs_big ? d.lhs_contracting.span() : d.rhs_contracting.span()).mergeable) return d;
  // The larger operand is packed whatever the order. A much smaller partner is packed
  // too (cheap) so that the large pack walks its memory in order; a partner of similar
  // size keeps its own order when that merges it, so only one operand is packed.
  if (8 * element_count(small.shape) <= element_count(big.shape)) return d;
  const DotDims by_big = d;
  sort_by(small, !lhs_big);
  if (!merge_group(small, lhs_big ? d.rhs_contracting.span() : d.lhs_contracting.span()).mergeable) return by_big;
  return d;
}

// Note [Split free groups]: an operand whose free labels do not merge into one stride
// (say rhs [n1, k, n2] with the contracted labels between two free ones) would be
// packed whole, a full read and write of what is often the largest tensor of the step.
// Instead the free labels, ordered by the operand's strides, split into an inner run
// that merges in the operand and in the destination, and outer labels that become extra
// batch dimensions (stride 0 in the other operand): the product runs as a batch of
// M x N_inner x K products on the operand in place. The batch runs below the peak rate
// of one large product, so this pays only where the pack is a large part of the step:
// the pack moves 16 bytes per element of the operand, the product does 2 M flops per
// element, so with DRAM at ~7.6 GB/s and dgemm at ~37 GFLOP/s (this machine) the pack
// costs about 38 / M of the product: the split is used when the other side M is at most
// 64. Each product also re-packs the other operand inside the BLAS call, so it must stay
// in cache (at most 65536 elements) or all its re-packs move less than one pack of this
// operand; and the operand holds at least 32768 elements, the inner run at least 8 and
// each product at least 16384 multiply-adds (smaller cases pack: a pack is cheap there,
// tiny products are not). MERA closed: a 40 x 198288 x 171 step whose 271 MB operand was
// packed runs as 3672 products of 40 x 54 x 171 instead (2 threads: 220 ms -> 94-102 ms);
// with M = 136 or 399 splitting was slower than packing (34 -> 48 ms, 453 -> 841 ms).
struct FreeSplit {
  Group op, out;                               // the inner run in the operand and the destination
  SmallVector<int64_t, 8> ext, op_st, out_st;  // the outer labels: extents and strides
  int64_t items = 1;
};

std::optional<FreeSplit> split_free(const Layout& op, const Layout& out, std::span<const int64_t> op_axes,
                                    std::span<const int64_t> out_axes) {
  const size_t n = op_axes.size();
  if (n < 2 || n > 8) return std::nullopt;
  const auto order = order_by_stride(op, op_axes);
  for (size_t len = n - 1; len >= 1; --len) {
    SmallVector<int64_t, 8> in_op, in_out;
    for (size_t t = 0; t < len; ++t) {
      in_op.push_back(op_axes[order[t]]);
      in_out.push_back(out_axes[order[t]]);
    }
    const Group g_op = merge_group(op, in_op.span()), g_out = merge_group(out, in_out.span());
    if (!g_op.mergeable || !g_out.mergeable) continue;
    FreeSplit s{g_op, g_out, {}, {}, {}, 1};
    for (size_t t = len; t < n; ++t) {
      const auto a = static_cast<size_t>(op_axes[order[t]]);
      const auto b = static_cast<size_t>(out_axes[order[t]]);
      if (op.shape[a] == 1) continue;
      s.ext.push_back(op.shape[a]);
      s.op_st.push_back(op.strides[a]);
      s.out_st.push_back(out.strides[b]);
      s.items *= op.shape[a];
    }
    return s;
  }
  return std::nullopt;
}

// Note [Split-K products]: a product with a small output (M x N at most 1024) and a
// long contraction has no row or column split worth making (tensor-train steps of
// 19 x 19 x 2300). Its contraction is split instead: part 0 computes alpha * A0 B0 +
// beta * C in place, each other part alpha * Ap Bp into a buffer on the caller's stack,
// and the parts are added into C afterwards (a different summation order than one
// call, within rounding).
constexpr int64_t kSplitKMaxOutput = 1024;
constexpr int kSplitKMaxParts = 4;

template <class T>
using SplitKPartials = std::array<std::array<T, kSplitKMaxOutput>, kSplitKMaxParts - 1>;

// Adds parts 1 .. parts - 1 (column-major m x n each) into C.
template <class T>
void add_partials(const SplitKPartials<T>& partial, int parts, int64_t m, int64_t n, T* c, int64_t rsc, int64_t csc) {
  for (int p = 1; p < parts; ++p) {
    const T* src = partial[static_cast<size_t>(p - 1)].data();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) c[i * rsc + j * csc] += src[i + j * m];
  }
}

template <class T>
void split_k_blis(const CpuExecutionContext& ctx, const detail::GemmArgs<T>& g, int parts) {
  SplitKPartials<T> partial;
  ctx.parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t k0 = g.k * p / parts, k1 = g.k * (p + 1) / parts;
      detail::GemmArgs<T> part = g;
      part.k = k1 - k0;
      part.a = g.a + k0 * g.csa;
      part.b = g.b + k0 * g.rsb;
      if (p > 0) {
        part.c = partial[static_cast<size_t>(p - 1)].data();
        part.rsc = 1;
        part.csc = g.m;
        part.beta = T{};
      }
      detail::gemm_blis<T>(part);
    }
  });
  add_partials<T>(partial, parts, g.m, g.n, g.c, g.rsc, g.csc);
}

// Runs `gemm(part, lane)` on `pieces` pieces of g's longer side (columns when N >= M,
// else rows): piece p covers [len p / pieces, len (p + 1) / pieces), fixed by the piece
// count whichever worker runs it. The context's workers run min(pieces, threads) lanes,
// each taking pieces in turn until none is left; a lane runs on one worker at a time, so
// `lane` indexes per-worker workspace.
template <class T, class F>
void on_pieces(const CpuExecutionContext& ctx, const detail::GemmArgs<T>& g, int64_t pieces, const F& gemm) {
  const bool cols = g.n >= g.m;
  const int64_t len = cols ? g.n : g.m;
  const int64_t lanes = std::min<int64_t>(pieces, ctx.threads());
  std::atomic<int64_t> next{0};
  ctx.parallel_for(lanes, 1, [&](int64_t l0, int64_t l1) {
    for (int64_t lane = l0; lane < l1; ++lane) {
      for (int64_t p = next.fetch_add(1); p < pieces; p = next.fetch_add(1)) {
        const int64_t x0 = len * p / pieces, x1 = len * (p + 1) / pieces;
        detail::GemmArgs<T> part = g;
        if (cols) {
          part.n = x1 - x0;
          part.b = g.b + x0 * g.csb;
          part.c = g.c + x0 * g.csc;
        } else {
          part.m = x1 - x0;
          part.a = g.a + x0 * g.rsa;
          part.c = g.c + x0 * g.rsc;
        }
        gemm(part, lane);
      }
    }
  });
}

// The short-side kernel on g's operands with the contraction `k` and the broadcast
// operand's row offsets `rsa` (gemm.cc, Note [Short-side products with a strided
// contraction]); `transposed` computes C^T = B^T A^T (k's strides already swapped).
// With several threads the outermost contraction loop is split as in Note [Split-K
// products].
template <class T>
void short_sides(const CpuExecutionContext& ctx, const detail::GemmArgs<T>& g, const detail::KLevels& k,
                 const int64_t* rsa, bool transposed, int threads) {
  const int64_t m = transposed ? g.n : g.m, n = transposed ? g.m : g.n;
  const T* a = transposed ? g.b : g.a;
  const T* b = transposed ? g.a : g.b;
  const int64_t rsc = transposed ? g.csc : g.rsc, csc = transposed ? g.rsc : g.csc;
  const int outer = k.count - 1;
  int64_t total = 1;
  for (int l = 0; l < k.count; ++l) total *= k.extent[l];
  const int parts = threads > 1 && total >= 256 * threads
                        ? static_cast<int>(std::min<int64_t>({threads, kSplitKMaxParts, k.extent[outer]}))
                        : 1;
  if (parts <= 1) {
    detail::short_sides_f64(m, n, g.alpha, a, rsa, b, k, g.beta, g.c, rsc, csc);
    return;
  }
  SplitKPartials<T> partial;
  ctx.parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t e = k.extent[outer], x0 = e * p / parts, x1 = e * (p + 1) / parts;
      detail::KLevels piece = k;
      piece.extent[outer] = x1 - x0;
      const T* ap = a + x0 * k.sa[outer];
      const T* bp = b + x0 * k.sb[outer];
      if (p == 0) {
        detail::short_sides_f64(m, n, g.alpha, ap, rsa, bp, piece, g.beta, g.c, rsc, csc);
      } else {
        detail::short_sides_f64(m, n, g.alpha, ap, rsa, bp, piece, 0.0, partial[static_cast<size_t>(p - 1)].data(), 1, m);
      }
    }
  });
  add_partials<T>(partial, parts, m, n, g.c, rsc, csc);
}

// Note [Pack order]: an operand that must be packed is copied into one of two compact
// forms, both BLAS matrices: [free, contracting] (the default) or [contracting, free].
// The default makes the copy a transpose whenever the operand's smallest stride is a
// contracted label, and the transpose works in tiles whose first side is the leading
// free axis: when that axis is short (< 16) the tiles are tiny, and if the contracted
// labels hold a unit-stride run of at least 16 elements the other form is used (the copy
// then moves those runs, contiguous on both sides). lm brackets' [4, 1996, 4, 4, 4]
// operand (a contracted run of 16, leading free axis 4) packed in 1.9 ms in the default
// form and 0.7-0.9 ms in the other; MPS site tensors [19, k, 19] (leading free axis 19)
// in 80 us in the default form and 136 us in the other; a rank-24 operand of extent-2
// axes (runs of 2) in 123 ms in the other form, where the default transposes its many
// tiny axes as one matrix. Symmetrically for the rhs, except for a wide rhs with a
// short contraction: with N at least kRowMajorRhsMaxN and K from kRowMajorRhsMinK to
// kRowMajorRhsMaxK the GEMM itself is much slower on an N-fastest B (2 threads,
// 2026-11-30, column-major B against N-fastest, BLIS: 189 x 15390 x 114 13.1 against
// 20.4 ms, 189 x 15390 x 500 56 against 70, 540 x 58320 x 136 136 against 227, 189 x
// 4096 x 114 3.8 against 6.9; OpenBLAS: 2000 x 8000 x 64 34 against 54; 189 x 2000 x
// 114 and 256 x 1996 x 16 even), more than the copy saves (MERA closed's 189 x 15390 x
// 114 step: the transposing copy 3.8 ms, the run-wise one 6.6; in the step profile 44
// -> 15 ms). With a long contraction the N-fastest form was as fast or faster
// (OpenBLAS 399 x 4320 x 7290: 393 against 615 ms column-major), so MERA closed's
// 252 MB operand of that step keeps its run-wise copy.
constexpr int64_t kRowMajorRhsMaxN = 4096, kRowMajorRhsMinK = 32, kRowMajorRhsMaxK = 512;

int64_t first_extent(const Layout& l, std::span<const int64_t> group) {
  for (int64_t a : group) {
    if (l.shape[static_cast<size_t>(a)] > 1) return l.shape[static_cast<size_t>(a)];
  }
  return 1;
}

// Elements of the longest unit-stride run formed by axes of `group` (the group's axes
// that continue each other contiguously from stride 1); 1 when none has stride 1.
int64_t unit_run(const Layout& l, std::span<const int64_t> group) {
  int64_t run = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (int64_t a : group) {
      const auto i = static_cast<size_t>(a);
      if (l.shape[i] > 1 && l.strides[i] == run) {
        run *= l.shape[i];
        grew = true;
      }
    }
  }
  return run;
}

// The contraction as nested loops, innermost first (Note [Short-side products with a
// strided contraction] in gemm.cc): contracted pairs ordered by the lhs stride, and
// neighbours that continue each other in both operands merged. False when more than
// kMaxKLevels loops remain.
bool k_levels(const Layout& l, const Layout& r, const DotDims& dims, detail::KLevels* out) {
  struct Pair {
    int64_t extent, sa, sb;
  };
  SmallVector<Pair, 8> pairs;
  for (size_t i = 0; i < dims.lhs_contracting.size(); ++i) {
    const auto la = static_cast<size_t>(dims.lhs_contracting[i]), ra = static_cast<size_t>(dims.rhs_contracting[i]);
    if (l.shape[la] == 1) continue;
    const Pair p{l.shape[la], l.strides[la], r.strides[ra]};
    size_t at = pairs.size();  // insertion sort by |lhs stride| (no allocation)
    pairs.push_back(p);
    while (at > 0 && std::llabs(pairs[at - 1].sa) > std::llabs(p.sa)) {
      pairs[at] = pairs[at - 1];
      --at;
    }
    pairs[at] = p;
  }
  *out = detail::KLevels{};
  for (const Pair& p : pairs) {
    if (out->count > 0) {
      const int c = out->count - 1;
      if (p.sa == out->sa[c] * out->extent[c] && p.sb == out->sb[c] * out->extent[c]) {
        out->extent[c] *= p.extent;
        continue;
      }
    }
    if (out->count == detail::kMaxKLevels) return false;
    out->extent[out->count] = p.extent;
    out->sa[out->count] = p.sa;
    out->sb[out->count] = p.sb;
    ++out->count;
  }
  // Innermost: the loop with the smallest stride in either operand (it walks that
  // operand in memory order; the other loops move whole runs).
  auto step = [&](int v) { return std::min(std::llabs(out->sa[v]), std::llabs(out->sb[v])); };
  int best = 0;
  for (int v = 1; v < out->count; ++v)
    if (step(v) < step(best)) best = v;
  std::swap(out->extent[0], out->extent[best]);
  std::swap(out->sa[0], out->sa[best]);
  std::swap(out->sb[0], out->sb[best]);
  return out->count > 0;
}

// The short-side kernel replaces packing an operand of at least this many elements
// (Note [Short-side products with a strided contraction] in gemm.cc): below it the pack
// is cheap and, across a batch, shared, and BLIS's per-product speed won (lm
// sentence_3's 1100 products of 12 x 12 x 144 against a packed 1728-element lhs: 5.2 ms
// packed with BLIS, 6.7 ms in the kernel's tile mode).
constexpr int64_t kShortSideMinPacked = 4096;

// Note [Short-contraction products]: C (M x N, column-major) = A B with K <= kWideMaxK,
// N >= kWideMinN and A at most kWideMaxA elements: the small kernel with its column
// blocks outermost (Note [Small-kernel loop order] in gemm.cc) keeps A in L2, B's block
// in L1 and writes C once, in address order. OpenBLAS first zeroes C in a separate pass
// (beta = 0) and then reads and writes it again. Per-step medians of 5 interleaved runs,
// 1 thread (2026-11-30), OpenBLAS -> this route: lm sentence_3 1584 x 1100 x 11 (a 14 MB
// C) 3.4-3.9 -> 2.3-2.4 ms, 144 x 1728 x 12 0.70 -> 0.52 ms; lm sentence_4 176 x 1900 x
// 11 0.80-0.84 -> 0.55-0.58 ms, 256 x 1900 x 16 1.31-1.35 -> 0.92-0.99 ms.
constexpr int64_t kWideMaxK = 32;
// Products up to this many multiply-adds with A and C column-major (after packing) use
// the small kernel (Note [Tiny products]).
constexpr int64_t kSmallMaxFlops = 262144;
constexpr int64_t kWideMinN = 16;
// Note [Streamed-output products] (gemm.cc): C of at least kOutMinC elements (32 MB),
// kOutMinK <= K <= kOutMaxK, A or B at most kOutCachedOperand elements (512 KB, L2),
// several threads. 2026-11-30, per-step medians of 3 interleaved runs at 2 threads,
// previous route -> this one: MERA open 177147 x 243 x 50 115 -> 101 ms, 39600 x 252 x
// 56 37 -> 28 ms (whole run inside dot_general 705 -> 603 ms); MERA closed 1026 x 33048
// x 40 96 -> 86 ms. At one thread these steps are compute-bound and OpenBLAS's kernel
// won (MERA closed 1026 x 33048 x 40: 120 ms against 159; standalone, without the
// instance's other traffic, this kernel had won 113 to 126). With K = 11 (196830 x 45
// x 11) it lost (20 ms against 16, one thread): too little arithmetic per stored
// element to hide the tile copies.
constexpr int64_t kOutMinC = int64_t{1} << 22;
constexpr int64_t kOutMinK = 32;
constexpr int64_t kOutCachedOperand = 65536;
constexpr int64_t kWideMaxA = 32768;

// Note [Streamed tall products] (gemm.cc): the shapes dot_general sends there. Below
// k = 64 the small and thin kernels or OpenBLAS serve; a short side below 8 stays on
// OpenBLAS (Note [Short-side products]).
constexpr int64_t kStreamMinK = 64;
constexpr int64_t kStreamMinLong = 64;
constexpr int64_t kStreamMinShort = 8;

// The streamed kernel on the tall side's rows (C^T = B^T A^T when `transposed`), split
// over the workers in pieces of whole slices (detail::kStreamSliceRows), at most
// kStreamPieceRows rows each.
//
// Note [Streamed pieces]: a streamed product takes 50-500 us and a worker may join the
// loop tens of microseconds late; with one piece per worker the caller then waits for
// the late half. Pieces of at most 48 rows (taken dynamically by whoever is free) let
// the caller absorb a late start (or a worker slowed by the host). Matrix chain at 2
// threads, median of 15 runs, seven interleaved rounds (2026-11-30): one piece per
// worker 12.5-17.2 ms, 48-row pieces 9.5-15.0 ms, better in every round (96- and 24-row
// pieces: mixed); whole instance, six interleaved runs: 10.9 -> 10.2 ms. The
// streamed-output and short-contraction splits likewise hand out about four pieces per
// worker (each piece costs nothing extra there); MERA and lm at 2 threads were unchanged
// within the spread by that.
constexpr int64_t kStreamPieceRows = 48;
template <class T>
void streamed(const CpuExecutionContext& ctx, const detail::GemmArgs<T>& g, bool transposed, int threads) {
  const detail::GemmArgs<T> t = transposed ? detail::transposed(g) : g;
  if (threads <= 1) {
    detail::streamed_f64(t);
    return;
  }
  constexpr int64_t S = detail::kStreamSliceRows;
  const int64_t slices = (t.m + S - 1) / S;
  ctx.parallel_for(slices, std::min(kStreamPieceRows / S, (slices + threads - 1) / threads), [&](int64_t s0, int64_t s1) {
    detail::GemmArgs<T> part = t;
    part.m = std::min(t.m, S * s1) - S * s0;
    part.a = t.a + S * s0 * t.rsa;
    part.c = t.c + S * s0 * t.rsc;
    detail::streamed_f64(part);
  });
}

template <class T>
Result<void> run_dot(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims_in,
                     const DotOptions& opt, const Plan& plan, Tensor& out, const std::shared_ptr<HostBufferPool>& pool,
                     DotScratch* dscratch) {
  const DotDims dims = contraction_order(lhs.layout(), rhs.layout(), dims_in);  // Note [Contraction order]
  TENFERRO_TRY(T alpha, scalar_to<T>(opt.alpha, "alpha"));
  TENFERRO_TRY(T beta, scalar_to<T>(opt.beta, "beta"));
  // B, M and N change when a free group is split (Note [Split free groups]).
  int64_t B = plan.batch, M = plan.m, N = plan.n;
  const int64_t K = plan.k;
  if (B * M * N == 0) return ok();
  int64_t flops = M * N * std::max<int64_t>(K, 1);
  constexpr bool kComplex = tenferro::detail::ComplexScalar<T>;
  TENFERRO_TRY(Route route, resolve_route(ctx, opt, std::is_integral_v<T>, B, M, N, flops));
  const int64_t bs_min_parallel = effective_batch_settings(ctx, opt).parallel_min_flops;

  const int64_t nb = static_cast<int64_t>(dims.lhs_batch.size());
  SmallVector<int64_t, 8> out_batch, out_m, out_n, bext;
  for (int64_t i = 0; i < nb; ++i) {
    out_batch.push_back(i);
    bext.push_back(lhs.shape()[static_cast<size_t>(dims.lhs_batch[static_cast<size_t>(i)])]);
  }
  for (size_t i = 0; i < plan.lhs_free.size(); ++i) out_m.push_back(nb + static_cast<int64_t>(i));
  for (size_t i = 0; i < plan.rhs_free.size(); ++i)
    out_n.push_back(nb + static_cast<int64_t>(plan.lhs_free.size() + i));

  // Every dimension a batch dimension: an elementwise product (Note [Batch policies]),
  // through the vectorized map kernel with both operands viewed in the output's axes.
  if (M == 1 && N == 1 && K == 1) {
    Layout lv{out.shape(), Strides(static_cast<size_t>(out.rank()), 0), lhs.offset()};
    Layout rv{out.shape(), Strides(static_cast<size_t>(out.rank()), 0), rhs.offset()};
    for (int64_t i = 0; i < nb; ++i) {
      lv.strides[static_cast<size_t>(i)] = lhs.strides()[static_cast<size_t>(dims.lhs_batch[static_cast<size_t>(i)])];
      rv.strides[static_cast<size_t>(i)] = rhs.strides()[static_cast<size_t>(dims.rhs_batch[static_cast<size_t>(i)])];
    }
    const bool plain = alpha == T{1} && !opt.conj_lhs && !opt.conj_rhs;
    const std::array<const Layout*, 2> lay{&lv, &rv};
    const std::array<const void*, 2> in{lhs.storage()->data(), rhs.storage()->data()};
    void* obase = out.storage()->data();
    if (beta == T{}) {
      if (plain) {
        detail::map_kernel<T, T, T>(ctx, obase, out.layout(), in, lay, [](T x, T y) { return x * y; });
      } else {
        detail::map_kernel<T, T, T>(ctx, obase, out.layout(), in, lay, [&](T x, T y) {
          return alpha * (conj_if(x, opt.conj_lhs) * conj_if(y, opt.conj_rhs));
        });
      }
    } else {
      // The destination is also read: each element depends on itself only.
      const std::array<const Layout*, 3> lay3{&lv, &rv, &out.layout()};
      const std::array<const void*, 3> in3{lhs.storage()->data(), rhs.storage()->data(), obase};
      detail::map_kernel<T, T, T, T>(ctx, obase, out.layout(), in3, lay3, [&](T x, T y, T c) {
        return alpha * (conj_if(x, opt.conj_lhs) * conj_if(y, opt.conj_rhs)) + beta * c;
      });
    }
    return ok();
  }

  // Row/column groups (Note [dot_general routes]); batch strides per dimension.
  const bool cl = kComplex && opt.conj_lhs, cr = kComplex && opt.conj_rhs;
  const bool vendor = route.policy == BatchPolicy::kWholeBatchVendor;
  Group lm = merge_group(lhs.layout(), plan.lhs_free.span()), lk = merge_group(lhs.layout(), dims.lhs_contracting.span());
  Group rk = merge_group(rhs.layout(), dims.rhs_contracting.span()), rn = merge_group(rhs.layout(), plan.rhs_free.span());
  Group om = merge_group(out.layout(), out_m.span()), on = merge_group(out.layout(), out_n.span());
  auto lbs = layout_strides(lhs.layout(), dims.lhs_batch.span());
  auto rbs = layout_strides(rhs.layout(), dims.rhs_batch.span());
  auto obs = layout_strides(out.layout(), out_batch.span());
  // Free groups that do not merge become inner runs plus batch dims (Note [Split free groups]).
  const size_t nb0 = bext.size();
  if constexpr (!std::is_integral_v<T>) {
    if (!vendor && route.provider != GemmProvider::kNaive) {
      auto both_take = [&](bool output, bool conj, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
        return operand_ok(Route{BatchPolicy::kProviderItems, GemmProvider::kOpenBlas}, output, conj, rows, cols, rs, cs) &&
               operand_ok(Route{BatchPolicy::kSequential, GemmProvider::kBlis}, output, conj, rows, cols, rs, cs);
      };
      auto add_batch = [&](const FreeSplit& sp, bool rhs_side) {
        for (size_t i = 0; i < sp.ext.size(); ++i) {
          bext.push_back(sp.ext[i]);
          lbs.push_back(rhs_side ? 0 : sp.op_st[i]);
          rbs.push_back(rhs_side ? sp.op_st[i] : 0);
          obs.push_back(sp.out_st[i]);
        }
        B *= sp.items;
      };
      // Each product of the batch packs the other operand again (BLAS does): fine while it
      // stays in cache, or while all those packs move less than packing this operand.
      auto repack_ok = [](int64_t other, int64_t items, int64_t self) {
        return other <= 65536 || items * other <= self;
      };
      bool split_any = false;
      if (!rn.mergeable && rk.mergeable && om.mergeable && rhs.numel() >= 32768) {
        if (auto sp = split_free(rhs.layout(), out.layout(), plan.rhs_free.span(), out_n.span())) {
          const int64_t n_in = sp->op.extent;
          if (n_in >= 8 && M <= 64 && M * n_in * K >= 16384 && repack_ok(M * K, sp->items, rhs.numel()) && both_take(false, cr, K, n_in, rk.stride, sp->op.stride) &&
              both_take(true, false, M, n_in, om.stride, sp->out.stride)) {
            rn = sp->op;
            on = sp->out;
            N = n_in;
            add_batch(*sp, true);
            split_any = true;
          }
        }
      }
      if (!lm.mergeable && lk.mergeable && on.mergeable && lhs.numel() >= 32768) {
        if (auto sp = split_free(lhs.layout(), out.layout(), plan.lhs_free.span(), out_m.span())) {
          const int64_t m_in = sp->op.extent;
          if (m_in >= 8 && N <= 64 && m_in * N * K >= 16384 && repack_ok(N * K, sp->items, lhs.numel()) && both_take(false, cl, m_in, K, sp->op.stride, lk.stride) &&
              both_take(true, false, m_in, N, sp->out.stride, on.stride)) {
            lm = sp->op;
            om = sp->out;
            M = m_in;
            add_batch(*sp, false);
            split_any = true;
          }
        }
      }
      if (split_any) {
        flops = M * N * std::max<int64_t>(K, 1);
        TENFERRO_TRY(route, resolve_route(ctx, opt, false, B, M, N, flops));
      }
    }
  }
  // Pack forms of operands that do not merge (Note [Pack order]).
  const bool lhs_k_first = first_extent(lhs.layout(), plan.lhs_free.span()) < 16 &&
                           unit_run(lhs.layout(), dims.lhs_contracting.span()) >= 16;
  const bool rhs_n_first = first_extent(rhs.layout(), dims.rhs_contracting.span()) < 16 &&
                           unit_run(rhs.layout(), plan.rhs_free.span()) >= 16 &&
                           (N < kRowMajorRhsMaxN || K < kRowMajorRhsMinK || K > kRowMajorRhsMaxK);
  // Note [Short-side products]: with a short side (M or N <= 32) and a long contraction,
  // OpenBLAS spends its time packing the long operand, and a plain-loop dot-product form
  // re-reads the long operand once per pair of short-side columns. BLIS with its general
  // strides ran these shapes fastest (2026-11-29, one thread, f64, long operand cold:
  // 453 x 21 x 503: BLIS 17-18 GFLOP/s, OpenBLAS 14-15, dot form 9-12; 19 x 19 x 2300:
  // 15 / 11 / 11; 12 x 1000 x 144: 28 / 19 / 11), and it takes any positive strides, so
  // fewer operands are packed. With a short contraction (K < 64) that holds with several
  // threads, where BLIS splits the long side over the workers and OpenBLAS's own threads
  // lost (MPS 2318 x 19 x 19: 0.1 ms on one thread, 0.2 ms on two); on one thread those
  // stay on OpenBLAS (lm sentence_4 ran 25-36 ms with OpenBLAS, 40-44 ms with BLIS).
  // A short side below 8 stays on OpenBLAS too (8192 x 4 x 256: BLIS 4.9 ms, OpenBLAS
  // 2.0 ms; its 4 x 8 kernel fits four rows exactly).
  // Small products with A and C column-major go to the register-blocked small kernel,
  // which beat OpenBLAS up to 262144 multiply-adds (Note [Tiny products]).
  bool thin_form = false, wide_form = false, out_form = false, short_form = false, short_transposed = false, stream_form = false, stream_transposed = false;
  bool small_pack_lhs = false;  // the small kernel's lhs packed [free, contracting]
  detail::KLevels klev;
  std::array<int64_t, detail::kShortSideMax> row_off{};
  // Both sides short, one operand contiguous along its free side, and an operand that
  // would be packed: the short-side kernel walks the contraction in place and takes the
  // other operand's rows at any offsets (Note [Short-side products with a strided
  // contraction] in gemm.cc).
  auto short_route = [&](int64_t m, int64_t n, int64_t k) {
    if (!detail::short_sides_available() || m > detail::kShortSideMax || n > detail::kShortSideMax || m < 4 ||
        n < 4 || k < 8 || !om.mergeable || !on.mergeable) {
      return false;
    }
    const int64_t packed = (lm.mergeable && lk.mergeable ? 0 : lhs.numel()) + (rk.mergeable && rn.mergeable ? 0 : rhs.numel());
    const bool rhs_vec = rn.mergeable && rn.stride == 1, lhs_vec = lm.mergeable && lm.stride == 1;
    if (packed < kShortSideMinPacked || !(rhs_vec || lhs_vec) || !k_levels(lhs.layout(), rhs.layout(), dims, &klev)) {
      return false;
    }
    // C^T = B^T A^T when only the lhs is contiguous along its free side.
    short_transposed = !rhs_vec;
    if (short_transposed) {
      for (int l = 0; l < klev.count; ++l) std::swap(klev.sa[l], klev.sb[l]);
    }
    // Row offsets of the broadcast operand, in C's row order (its free axes, first fastest).
    const Group& g = short_transposed ? rn : lm;
    const Layout& lay = short_transposed ? rhs.layout() : lhs.layout();
    const auto free = short_transposed ? plan.rhs_free.span() : plan.lhs_free.span();
    const int64_t rows = short_transposed ? n : m;
    if (g.mergeable) {
      for (int64_t i = 0; i < rows; ++i) row_off[static_cast<size_t>(i)] = i * g.stride;
    } else {
      // Not mergeable means no free-group split on this side: its free axes are all there.
      for (int64_t i = 0; i < rows; ++i) {
        int64_t rem = i, off = 0;
        for (int64_t ax : free) {
          const auto u = static_cast<size_t>(ax);
          off += (rem % lay.shape[u]) * lay.strides[u];
          rem /= lay.shape[u];
        }
        row_off[static_cast<size_t>(i)] = off;
      }
    }
    return true;
  };
  if constexpr (std::is_same_v<T, double>) {
    if (opt.provider == GemmProvider::kAuto && route.policy != BatchPolicy::kWholeBatchVendor &&
        route.provider != GemmProvider::kNaive) {
      // Strides after packing (Note [Pack order]).
      const int64_t lms = lm.mergeable && lk.mergeable ? lm.stride : lhs_k_first ? K : 1;
      const int64_t oms = om.mergeable && on.mergeable ? om.stride : 1;
      // The short-side kernel first: the small and thin kernels below assume packing.
      short_form = short_route(M, N, K);
      // The small kernel takes C^T = B^T A^T when C is row-major and B's rows contiguous
      // (numpy's row-major batched matmul 'bij,bjk->bik').
      const int64_t rns = rk.mergeable && rn.mergeable ? rn.stride : rhs_n_first ? 1 : K;
      const int64_t ons = om.mergeable && on.mergeable ? on.stride : M;
      // An lhs without a unit stride (batch-fastest operands, Note [Batch-fastest
      // operands]) is packed [free, contracting] for the small kernel, as any provider
      // but BLIS would pack it, and so is such a rhs (each of its elements on its own
      // cache line otherwise).
      const bool lhs_packed = !(lm.mergeable && lk.mergeable) || (lm.stride != 1 && lk.stride != 1);
      const bool small_form =
          !short_form && flops <= kSmallMaxFlops && K <= detail::kSmallMaxK &&
          ((M >= 4 && (lms == 1 || lhs_packed) && oms == 1) || (N >= 4 && rns == 1 && ons == 1 && oms != 1));
      small_pack_lhs = small_form && oms == 1 && lms != 1;
      // A tall operand (column- or row-major) against a narrow one with a long
      // contraction, C column-major, no operand packed: streamed in memory order (Note
      // [Streamed tall products] in gemm.cc); C^T = B^T A^T when the tall side is the
      // rhs (C row-major).
      const bool merged = lm.mergeable && lk.mergeable && rk.mergeable && rn.mergeable && om.mergeable && on.mergeable;
      if (!short_form && !small_form && merged && K >= kStreamMinK && detail::short_sides_available()) {
        if (M >= kStreamMinLong && N >= kStreamMinShort && N <= detail::kStreamMaxN && (lm.stride == 1 || lk.stride == 1) &&
            om.stride == 1) {
          stream_form = true;
        } else if (N >= kStreamMinLong && M >= kStreamMinShort && M <= detail::kStreamMaxN &&
                   (rn.stride == 1 || rk.stride == 1) && on.stride == 1) {
          stream_form = stream_transposed = true;
        }
      }
      // A long side against a short contraction and a narrow B, A's contraction
      // contiguous and C column-major: the thin kernel (Note [Thin transposed products]
      // in gemm.cc), one piece of the long side per worker.
      thin_form = !small_form && !short_form && !stream_form && M >= 64 && N <= 32 && K <= 32 && lm.mergeable && lk.mergeable && lk.stride == 1 &&
                  om.mergeable && on.mergeable && om.stride == 1 && rk.mergeable && rn.mergeable;
      // A short contraction against many columns, with an A that fits in L2 (packed
      // column-major when it is not): the small kernel with column blocks outermost
      // (Note [Short-contraction products]).
      wide_form = !small_form && !short_form && !stream_form && !thin_form && K <= kWideMaxK && M >= 8 &&
                  N >= kWideMinN && M * K <= kWideMaxA && om.mergeable && on.mergeable && om.stride == 1 &&
                  rk.mergeable && rn.mergeable;
      // A C far larger than the caches from a short contraction, with A or B small
      // enough to stay in L2: written once with non-temporal stores (Note
      // [Streamed-output products] in gemm.cc). A is packed column-major and B compact
      // when they do not merge (both are small next to C). Only on several workers,
      // which share the memory bandwidth: one thread is compute-bound there and
      // OpenBLAS's kernel won.
      out_form = !small_form && !short_form && !stream_form && !thin_form && !wide_form && beta == 0.0 &&
                 ctx.threads() > 1 && flops >= bs_min_parallel &&
                 K >= kOutMinK && K <= detail::kOutMaxK && M * N >= kOutMinC &&
                 (M * K <= kOutCachedOperand || K * N <= kOutCachedOperand) && om.mergeable && on.mergeable &&
                 om.stride == 1;
      if (small_form || thin_form || short_form || stream_form || wide_form || out_form) {
        route.provider = GemmProvider::kNaive;
      } else if (std::min(M, N) <= 32 && std::min(M, N) >= 8 && (K >= 64 || ctx.threads() > 1) &&
                 ctx.caps().blis_tuned) {
        route.provider = GemmProvider::kBlis;
      }
    } else if (opt.provider == GemmProvider::kAuto && route.policy != BatchPolicy::kWholeBatchVendor) {
      short_form = short_route(M, N, K);  // products the plain loops would take after packing
    }
  }
  // Note [Column-split products]: with several threads, a product at most four times
  // taller than wide (M <= 4N) runs as one sequential BLIS call per worker on its own
  // piece of the longer side (the engine's workers, no second thread pool) instead of
  // OpenBLAS with its own threads: OpenBLAS's threads synchronize per block and wait
  // in sched_yield loops, and with beta = 0 it first zeroes C in a separate pass (for
  // MERA's 540 x 58320 outputs a 252 MB write). Much taller products stay with
  // OpenBLAS, which ran them faster (MERA 4320 x 594 x 399: 35 ms against 39 ms;
  // 177147 x 243 x 50: 122 against 138 ms). 2 threads, per-step minima over 3
  // interleaved runs (2026-11-30): MERA closed 1040 -> 953 ms in sum (540 x 58320 x
  // 136: 177 -> 152 ms; 399 x 4320 x 7290: 490 -> 457 ms); the matrix chain's last
  // step 424 x 371 x 24: 0.47 -> 0.25 ms. Only when the longer side is at least four
  // times the contraction: square products lost (2 threads, `bench kernels`, against
  // cblas_dgemm: n = 256 0.83-0.87, 1024 0.70-0.88, 2048 0.76-0.82 with the split;
  // 0.95-1.19 without; bin_matmul_256 0.58-0.69 -> 0.52-0.57 ms), BLIS's kernel being
  // slower than OpenBLAS's on this machine (28 against 36 GFLOP/s on one thread).
  if constexpr (!std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (opt.provider == GemmProvider::kAuto && route.policy == BatchPolicy::kProviderItems &&
        route.provider == GemmProvider::kOpenBlas && ctx.caps().blis_tuned && ctx.threads() > 1 &&
        flops >= bs_min_parallel && M <= 4 * N &&
        std::max(M, N) >= 32 * ctx.threads() && std::max(M, N) >= 4 * K) {
      route.provider = GemmProvider::kBlis;
    }
  }
  // Note [OpenBLAS pieces]: with several threads an automatic OpenBLAS product runs as
// one-thread OpenBLAS calls on pieces of its longer side, taken by the engine's workers,
// instead of one call on OpenBLAS's own threads. After each threaded call OpenBLAS's
// workers keep polling (sched_yield) for a while, so the engine's workers then share two
// cores with a third busy thread: MERA open at 2 threads ran 0.91x / 0.95x (medians /
// minima of 4 interleaved runs) with OPENBLAS_THREAD_TIMEOUT=4 (polling cut short), and
// MERA closed 0.93x / 0.92x; with these pieces MERA open 0.91 / 0.78, MERA closed 0.98
// / 1.04 and 0.94 / 0.87 in two sets (2026-11-30). In isolation the pieces match
// OpenBLAS's threads (399 x 4320 x 7290: 355-370 against 393-453 ms; 990 x 2187 x 4620,
// 4320 x 594 x 399, 480 x 4620 x 243, 810 x 12474 x 154 within the spread). Each piece
// packs the whole other operand again (OpenBLAS's threads share their packed panels),
// which costs about 17 / width of the product on this machine, so pieces are at least
// kOpenBlasPiece wide unless that leaves fewer than one per worker, and at most four
// per worker (a worker that starts late then hands its pieces to the others; 8 pieces
// of 990 x 2187 x 4620 took 1.15-1.3x as long as 2). The pieces are fixed by the thread
// count, so the result does not depend on which worker runs which piece. A product
// forced to provider openblas keeps OpenBLAS's own threads (the provider's contract).
constexpr int64_t kOpenBlasPiece = 512;
// Note [Blocked pieces]: the blocked GEMM's pieces (Note [Blocked AVX-512 GEMM]) are
// narrower than OpenBLAS's: each packs the other operand again, but a second worker
// that wakes late still finds pieces to take. At 2 threads with pieces of 512 a 256^3
// or 512^3 product ran entirely on the first worker (it had taken both pieces before
// the second woke): 0.44 / 3.0 ms, the one-thread times.
constexpr int64_t kBlockedPiece = 128;

// Note [Batch-fastest operands]: BLIS takes any strides, but an operand whose unit
  // stride is a batch dimension gives each product rows and columns that are both
  // strided, which BLIS gathers element by element; packing the whole batch once (one
  // vectorized copy) is faster there (bin_batched_matmul, batch label fastest, 2
  // threads: 0.89 ms -> 0.42-0.47 ms side by side; tensornetwork, lm and gm_queen
  // unchanged within the spread).
  auto batch_fastest = [&](std::span<const int64_t> st) {
    for (size_t i = 0; i < st.size(); ++i)
      if (bext[i] > 1 && std::llabs(st[i]) == 1) return true;
    return false;
  };
  auto strided_both = [](int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    int64_t ld = 0;
    return !detail::blas_form(rows, cols, rs, cs, false, &ld) && !detail::blas_form(rows, cols, rs, cs, true, &ld);
  };
  const bool blis = route.provider == GemmProvider::kBlis;
  const bool lhs_ok = short_form || (lm.mergeable && lk.mergeable && operand_ok(route, false, cl, M, K, lm.stride, lk.stride) &&
                                     !((wide_form || out_form || small_pack_lhs) && lm.stride != 1) &&
                                     !(blis && batch_fastest(lbs.span()) && strided_both(M, K, lm.stride, lk.stride)));
  const bool rhs_ok = short_form || (rk.mergeable && rn.mergeable && operand_ok(route, false, cr, K, N, rk.stride, rn.stride) &&
                                     !(small_pack_lhs && rk.stride != 1 && rn.stride != 1) &&
                                     !(blis && batch_fastest(rbs.span()) && strided_both(K, N, rk.stride, rn.stride)));
  const bool out_ok = om.mergeable && on.mergeable && operand_ok(route, true, false, M, N, om.stride, on.stride) &&
                      !(blis && batch_fastest(obs.span()) && strided_both(M, N, om.stride, on.stride));

  Tensor lhs_use = lhs, rhs_use = rhs;
  if (!lhs_ok) {
    // Compact [free, contracting, batch] (M x K, unit row stride), or [contracting,
    // free, batch] (unit column stride) when a Fortran call must conjugate it.
    const bool t = !wide_form && !out_form && !small_pack_lhs && ((vendor && cl) || lhs_k_first);
    const auto perm = t ? group_order(dims.lhs_contracting.span(), plan.lhs_free.span(), dims.lhs_batch.span())
                        : group_order(plan.lhs_free.span(), dims.lhs_contracting.span(), dims.lhs_batch.span());
    TENFERRO_TRY(lhs_use, packed_copy(ctx, lhs, Dims(perm.span()), dscratch ? &dscratch->lhs : nullptr, pool));
    lm = Group{M, t ? K : 1, true};
    lk = Group{K, t ? 1 : M, true};
    lbs = compact_batch_strides(bext.span().first(nb0), M * K);
    for (size_t i = nb0; i < bext.size(); ++i) lbs.push_back(0);  // split rhs free labels
  }
  if (!rhs_ok) {
    const bool t = (vendor && cr) || rhs_n_first;
    const auto perm = t ? group_order(plan.rhs_free.span(), dims.rhs_contracting.span(), dims.rhs_batch.span())
                        : group_order(dims.rhs_contracting.span(), plan.rhs_free.span(), dims.rhs_batch.span());
    TENFERRO_TRY(rhs_use, packed_copy(ctx, rhs, Dims(perm.span()), dscratch ? &dscratch->rhs : nullptr, pool));
    rk = Group{K, t ? N : 1, true};
    rn = Group{N, t ? 1 : K, true};
    rbs = compact_batch_strides(bext.span().first(nb0), K * N);
    for (size_t i = nb0; i < bext.size(); ++i) rbs.push_back(0);  // split lhs free labels
  }
  Tensor scratch;
  if (!out_ok) {
    // Compute into a compact [M, N, batch] scratch; the destination is copied in first
    // only when beta != 0 (it is read), and back afterwards.
    const auto perm = group_order(out_m.span(), out_n.span(), out_batch.span());
    TENFERRO_TRY(Tensor out_view, out.permute(Dims(perm.span())));
    TENFERRO_TRY(scratch, take_scratch(out.dtype(), out_view.shape(), dscratch ? &dscratch->out : nullptr, pool));
    if (beta != T{}) {
      detail::copy_strided(ctx, out_view.storage()->data(), out_view.layout(), scratch.storage()->data(),
                           scratch.layout(), out.element_size());
    }
    om = Group{M, 1, true};
    on = Group{N, M, true};
    obs = compact_batch_strides(bext.span(), M * N);
  }
  Tensor& target = out_ok ? out : scratch;
  // Note [Blocked AVX-512 GEMM] (gemm.cc): automatic f64 products that would make
  // OpenBLAS calls run the blocked kernel where the build has AVX-512, with one packing
  // workspace per worker (DotScratch::work or the pool). Outer-parallel items stay with
  // OpenBLAS (their workers share no lane index).
  double* blocked = nullptr;
  int64_t blocked_lane = 0;
  Tensor blocked_ws;
  if constexpr (std::is_same_v<T, double>) {
    if (opt.provider == GemmProvider::kAuto && route.provider == GemmProvider::kOpenBlas && !vendor &&
        route.policy != BatchPolicy::kOuterParallel && detail::blocked_available()) {
      const int64_t lanes = route.policy == BatchPolicy::kProviderItems && flops >= bs_min_parallel ? ctx.threads() : 1;
      blocked_lane = (detail::blocked_work(M, N, K) + 7) / 8 * 8;  // whole cache lines per lane
      TENFERRO_TRY(blocked_ws, take_scratch(DType::kF64, Shape{blocked_lane * lanes + 8},
                                            dscratch ? &dscratch->work : nullptr, pool));
      const auto addr = reinterpret_cast<uintptr_t>(blocked_ws.storage()->data());
      blocked = reinterpret_cast<double*>((addr + 63) & ~uintptr_t{63});
    }
  }
  const BatchAxes ax = batch_axes(bext.span(), lbs.span(), rbs.span(), obs.span());
  const auto* lbase = static_cast<const T*>(lhs_use.storage()->data()) + lhs_use.offset();
  const auto* rbase = static_cast<const T*>(rhs_use.storage()->data()) + rhs_use.offset();
  auto* obase = static_cast<T*>(target.storage()->data()) + target.offset();
  const detail::GemmArgs<T> shape{M, N, K, alpha, lbase, lm.stride, lk.stride, opt.conj_lhs,
                                  rbase, rk.stride, rn.stride, opt.conj_rhs, beta, obase, om.stride, on.stride};

  // `next`: the product this thread runs after this one, if any (a prefetch hint, Note
  // [Small-product prefetch] in gemm.cc).
  auto one = [&](const BatchCursor& cur, int threads, const BatchCursor* next) {
    detail::GemmArgs<T> g = shape;
    g.a += cur.lo;
    g.b += cur.ro;
    g.c += cur.oo;
    if (next != nullptr) {
      g.next_a = lbase + next->lo;
      g.next_b = rbase + next->ro;
      g.next_c = obase + next->oo;
    }
    if (K == 0) {
      // Empty contraction: out = beta * out.
      for (int64_t j = 0; j < N; ++j)
        for (int64_t i = 0; i < M; ++i) {
          T& c = g.c[i * g.rsc + j * g.csc];
          c = beta == T{} ? T{} : beta * c;
        }
      return;
    }
    if constexpr (!std::is_same_v<T, bool>) {
      if (K == 1 && opt.provider == GemmProvider::kAuto) {
        outer_product<T>(ctx, g, threads);  // Note [Outer products]
        return;
      }
    }
    switch (route.provider) {
      case GemmProvider::kOpenBlas:
        if constexpr (std::is_same_v<T, double>) {
          if (blocked != nullptr) {
            if (threads > 1) {
              // Pieces of at least kBlockedPiece (Note [Blocked pieces]), each lane its own panels.
              const int64_t pieces = std::clamp<int64_t>(std::max(M, N) / kBlockedPiece, threads, 4 * int64_t{threads});
              on_pieces<T>(ctx, g, pieces, [&](const detail::GemmArgs<T>& part, int64_t lane) {
                if (!detail::gemm_blocked_f64(part, blocked + lane * blocked_lane)) detail::gemm_openblas<T>(part, 1);
              });
            } else if (!detail::gemm_blocked_f64(g, blocked)) {
              detail::gemm_openblas<T>(g, 1);
            }
            return;
          }
        }
        if (threads > 1 && opt.provider == GemmProvider::kAuto) {
          // One-thread OpenBLAS calls on pieces of the longer side, run by the engine's
          // workers (Note [OpenBLAS pieces]).
          const int64_t len = std::max(M, N);
          const int64_t pieces = std::clamp<int64_t>(len / kOpenBlasPiece, threads, 4 * int64_t{threads});
          on_pieces<T>(ctx, g, pieces, [](const detail::GemmArgs<T>& part, int64_t) { detail::gemm_openblas<T>(part, 1); });
          return;
        }
        detail::gemm_openblas<T>(g, threads);
        return;
      case GemmProvider::kBlis:
        if (threads > 1 && std::max(M, N) >= 32 * threads) {
          // Split the longer side over the engine's workers, one piece each (every BLIS
          // call packs the other operand again; each reads its share of the long operand
          // once); each call is sequential. Shorter sides run as one call.
          on_pieces<T>(ctx, g, threads, [](const detail::GemmArgs<T>& part, int64_t) { detail::gemm_blis<T>(part); });
        } else if (threads > 1 && M * N <= kSplitKMaxOutput && K >= 256 * threads) {
          split_k_blis<T>(ctx, g, std::min(threads, kSplitKMaxParts));  // Note [Split-K products]
        } else {
          detail::gemm_blis<T>(g);
        }
        return;
      default:
        if constexpr (std::is_same_v<T, double>) {
          if (short_form) {
            short_sides<T>(ctx, g, klev, row_off.data(), short_transposed, threads);
            return;
          }
          if (stream_form) {
            streamed<T>(ctx, g, stream_transposed, threads);
            return;
          }
        }
        if constexpr (std::is_same_v<T, double>) {
          if (out_form) {
            // A stays in cache: column blocks outermost, pieces of whole column blocks;
            // otherwise pieces of whole row tiles (Note [Streamed-output products]), about
            // four per worker (Note [Streamed pieces]).
            const bool cols = M * K <= kOutCachedOperand;
            const int64_t unit = cols ? detail::kSmallCols : detail::kOutTileRows;
            const int64_t units = ((cols ? N : M) + unit - 1) / unit;
            ctx.parallel_for(units, (units + 4 * threads - 1) / (4 * threads), [&](int64_t u0, int64_t u1) {
              detail::GemmArgs<T> part = g;
              if (cols) {
                part.n = std::min(N, unit * u1) - unit * u0;
                part.b = g.b + unit * u0 * g.csb;
                part.c = g.c + unit * u0 * g.csc;
              } else {
                part.m = std::min(M, unit * u1) - unit * u0;
                part.a = g.a + unit * u0;
                part.c = g.c + unit * u0;
              }
              detail::streamed_out_f64(part, cols);
            });
            return;
          }
        }
        if (wide_form && threads > 1) {
          // Pieces of whole column blocks, about four per worker (Note [Short-contraction
          // products], Note [Streamed pieces]).
          const int64_t blocks = (N + detail::kSmallCols - 1) / detail::kSmallCols;
          ctx.parallel_for(blocks, (blocks + 4 * threads - 1) / (4 * threads), [&](int64_t q0, int64_t q1) {
            detail::GemmArgs<T> part = g;
            part.n = std::min(N, detail::kSmallCols * q1) - detail::kSmallCols * q0;
            part.b = g.b + detail::kSmallCols * q0 * g.csb;
            part.c = g.c + detail::kSmallCols * q0 * g.csc;
            detail::gemm_naive<T>(part);
          });
          return;
        }
        if (thin_form && threads > 1) {
          ctx.parallel_for((M + 3) / 4, (M + 4 * threads - 1) / (4 * threads), [&](int64_t q0, int64_t q1) {
            detail::GemmArgs<T> part = g;
            part.m = std::min(M, 4 * q1) - 4 * q0;
            part.a = g.a + 4 * q0 * g.rsa;
            part.c = g.c + 4 * q0 * g.rsc;
            detail::gemm_naive<T>(part);
          });
          return;
        }
        detail::gemm_naive<T>(g);
    }
  };
  if (vendor && K > 0) {
    // Item pointers are data of the call, not metadata: B entries each.
    std::vector<const T*> pa(static_cast<size_t>(B)), pb(static_cast<size_t>(B));
    std::vector<T*> pc(static_cast<size_t>(B));
    BatchCursor cur(ax, 0);
    for (size_t b = 0; b < pa.size(); ++b, cur.advance()) {
      pa[b] = lbase + cur.lo;
      pb[b] = rbase + cur.ro;
      pc[b] = obase + cur.oo;
    }
    detail::gemm_batch_fortran<T>(shape, B, pa.data(), pb.data(), pc.data());
  } else if (route.policy == BatchPolicy::kOuterParallel && B > 1) {
    ctx.parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
      BatchCursor cur(ax, b0), next(ax, b0 + 1);
      for (int64_t b = b0; b < b1; ++b, cur.advance(), next.advance()) one(cur, 1, b + 1 < b1 ? &next : nullptr);
    });
  } else {
    // A product below parallel_min_flops runs on one thread even with provider items:
    // waking and joining the other threads costs more than it saves (Note [Tiny products]).
    const int threads = route.policy == BatchPolicy::kProviderItems && flops >= bs_min_parallel ? ctx.threads() : 1;
    BatchCursor cur(ax, 0), next(ax, 1);
    for (int64_t b = 0; b < B; ++b, cur.advance(), next.advance()) one(cur, threads, b + 1 < B ? &next : nullptr);
  }
  if (!out_ok) {
    SmallVector<int64_t, 16> inv(static_cast<size_t>(out.rank()), 0);
    const auto perm = group_order(out_m.span(), out_n.span(), out_batch.span());
    for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    TENFERRO_TRY(Tensor back, scratch.permute(Dims(inv.span())));
    detail::copy_strided(ctx, back.storage()->data(), back.layout(), out.storage()->data(), out.layout(),
                         out.element_size());
  }
  if (dscratch != nullptr) {
    // Packed operands live in lhs_use/rhs_use only when they were packed.
    if (!lhs_ok) give_back(lhs_use, &dscratch->lhs);
    if (!rhs_ok) give_back(rhs_use, &dscratch->rhs);
    if (!out_ok) give_back(scratch, &dscratch->out);
    if (blocked_ws.defined()) give_back(blocked_ws, &dscratch->work);
  }
  return ok();
}

}  // namespace

BatchSettings effective_batch_settings(const CpuExecutionContext& ctx, const DotOptions& options) {
  BatchSettings b = ctx.batch();
  if (options.batch_policy) b.policy = *options.batch_policy;
  if (options.tiny_flops) b.tiny_flops = *options.tiny_flops;
  if (options.outer_parallel_flops) b.outer_parallel_flops = *options.outer_parallel_flops;
  if (options.tiny_flops_blis) b.tiny_flops_blis = *options.tiny_flops_blis;
  if (options.parallel_min_flops) b.parallel_min_flops = *options.parallel_min_flops;
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
  return plan_dims(lhs.shape(), rhs.shape(), dims);
}
}  // namespace

Result<void> dot_general_into(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                              const DotOptions& options, Tensor& out, const std::shared_ptr<HostBufferPool>& pool,
                              DotScratch* scratch) {
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
    return run_dot<T>(ctx, lhs, rhs, dims, options, plan, out, pool, scratch);
  });
}

Layout dot_general_result_layout(const Shape& shape, size_t batch_dims) {
  // Memory order [lhs free, rhs free, batch] (column-major), viewed in logical order
  // [batch, lhs free, rhs free].
  const size_t r = shape.size(), nb = batch_dims;
  Layout out;
  out.shape = shape;
  out.strides = Strides(r, 0);
  int64_t stride = 1;
  for (size_t i = nb; i < r; ++i) {
    out.strides[i] = stride;
    stride *= shape[i];
  }
  for (size_t i = 0; i < nb; ++i) {
    out.strides[i] = stride;
    stride *= shape[i];
  }
  out.offset = 0;
  return out;
}

namespace {

// Note [Tiny matrix shortcut]: a plain matrix product lhs[m, k] x rhs[k, n] (no batch,
// lhs axis 1 against rhs axis 0, default options) with at most `tiny_flops` multiply-adds
// is computed by a direct strided loop before any planning: for 2x2 products the plan
// (axis grouping, layout analysis, route choice) costs several times the arithmetic.
// The loop sums over k in ascending order.
template <class T>
void tiny_matmul(const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  const int64_t m = lhs.shape()[0], k = lhs.shape()[1], n = rhs.shape()[1];
  const T* a = static_cast<const T*>(lhs.storage()->data()) + lhs.offset();
  const T* b = static_cast<const T*>(rhs.storage()->data()) + rhs.offset();
  T* c = static_cast<T*>(out.storage()->data());
  const int64_t as0 = lhs.strides()[0], as1 = lhs.strides()[1], bs0 = rhs.strides()[0], bs1 = rhs.strides()[1];
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      T acc{};
      for (int64_t l = 0; l < k; ++l) acc += a[i * as0 + l * as1] * b[l * bs0 + j * bs1];
      c[i + j * m] = acc;
    }
  }
}

bool is_tiny_matmul(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                    const DotOptions& options) {
  if (!lhs.defined() || !rhs.defined() || lhs.rank() != 2 || rhs.rank() != 2 || lhs.dtype() != rhs.dtype()) {
    return false;
  }
  if (!dims.lhs_batch.empty() || !dims.rhs_batch.empty() || dims.lhs_contracting.size() != 1 ||
      dims.rhs_contracting.size() != 1 || dims.lhs_contracting[0] != 1 || dims.rhs_contracting[0] != 0) {
    return false;
  }
  const DotOptions defaults;
  if (options.provider != defaults.provider || options.conj_lhs || options.conj_rhs || options.alpha != defaults.alpha) {
    return false;
  }
  const DType d = lhs.dtype();
  if (d != DType::kF32 && d != DType::kF64 && d != DType::kC64 && d != DType::kC128) return false;
  const int64_t m = lhs.shape()[0], k = lhs.shape()[1], n = rhs.shape()[1];
  return k == rhs.shape()[0] && m * n > 0 && m * n * k <= options.tiny_flops.value_or(ctx.batch().tiny_flops);
}

}  // namespace

Result<Tensor> dot_general(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                           const DotOptions& options, const std::shared_ptr<HostBufferPool>& pool) {
  if (is_tiny_matmul(ctx, lhs, rhs, dims, options)) {
    TENFERRO_TRY(Tensor out, Tensor::uninitialized(lhs.dtype(), {lhs.shape()[0], rhs.shape()[1]}, pool));
    visit_dtype(lhs.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, c64> ||
                    std::is_same_v<T, c128>) {
        tiny_matmul<T>(lhs, rhs, out);
      }
    });
    return out;
  }
  TENFERRO_TRY(Plan plan, validate(lhs, rhs, dims));
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape(), rhs.shape(), dims));
  const Layout layout = dot_general_result_layout(shape, dims.lhs_batch.size());
  TENFERRO_TRY(Tensor buffer, Tensor::uninitialized(lhs.dtype(), {element_count(shape)}, pool));
  TENFERRO_TRY(Tensor out, Tensor::from_storage(lhs.dtype(), buffer.storage(), layout));
  buffer = Tensor();
  DotOptions o = options;
  o.beta = 0.0;
  TENFERRO_TRY_VOID(dot_general_into(ctx, lhs, rhs, dims, o, out, pool));
  return out;
}

}  // namespace tenferro::cpu
