#include "tenferro/cpu/dot_general.h"

#include <algorithm>
#include <atomic>
#include <array>

#include <emmintrin.h>
#include <string>

#include "dot_plan.h"
#include "gemm.h"
#include "map_kernel.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

namespace {

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
        // SSE2 non-temporal stores (every x86-64 CPU: the library's baseline), four per
        // iteration (a whole line) with the bound in a local: vector stores may alias
        // anything, so a bound read through `g` was reloaded after every store, and a
        // loop of one 16-byte store per iteration ran at the front end's pace, 20 %
        // slower or faster with the loop's placement in the binary (4096^2 outer
        // product, Zen 5, 2026-12-03).
        const int64_t m = g.m;
        if constexpr (std::is_same_v<T, double>) {
          if (stream) {
            for (; i < m && (reinterpret_cast<uintptr_t>(c + i) % 16) != 0; ++i) c[i] = a[i] * bj;
            const __m128d vb = _mm_set1_pd(bj);
            for (; i + 8 <= m; i += 8) {
              _mm_stream_pd(c + i, _mm_mul_pd(_mm_loadu_pd(a + i), vb));
              _mm_stream_pd(c + i + 2, _mm_mul_pd(_mm_loadu_pd(a + i + 2), vb));
              _mm_stream_pd(c + i + 4, _mm_mul_pd(_mm_loadu_pd(a + i + 4), vb));
              _mm_stream_pd(c + i + 6, _mm_mul_pd(_mm_loadu_pd(a + i + 6), vb));
            }
            for (; i + 2 <= m; i += 2) _mm_stream_pd(c + i, _mm_mul_pd(_mm_loadu_pd(a + i), vb));
          }
        } else if constexpr (std::is_same_v<T, float>) {
          if (stream) {
            for (; i < m && (reinterpret_cast<uintptr_t>(c + i) % 16) != 0; ++i) c[i] = a[i] * bj;
            const __m128 vb = _mm_set1_ps(bj);
            for (; i + 16 <= m; i += 16) {
              _mm_stream_ps(c + i, _mm_mul_ps(_mm_loadu_ps(a + i), vb));
              _mm_stream_ps(c + i + 4, _mm_mul_ps(_mm_loadu_ps(a + i + 4), vb));
              _mm_stream_ps(c + i + 8, _mm_mul_ps(_mm_loadu_ps(a + i + 8), vb));
              _mm_stream_ps(c + i + 12, _mm_mul_ps(_mm_loadu_ps(a + i + 12), vb));
            }
            for (; i + 4 <= m; i += 4) _mm_stream_ps(c + i, _mm_mul_ps(_mm_loadu_ps(a + i), vb));
          }
        }
        if (zero_beta) {
          for (; i < m; ++i) c[i] = a[i] * bj;
        } else {
          for (; i < m; ++i) c[i] = a[i] * bj + g.beta * c[i];
        }
      } else {
        for (int64_t i = 0; i < g.m; ++i) {
          T& ci = c[i * g.rsc];
          const T v = conj_if(a[i * g.rsa], g.conj_a) * bj;
          ci = zero_beta ? v : v + g.beta * ci;
        }
      }
    }
    if (stream) _mm_sfence();  // streaming stores are weakly ordered
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

// Note [Split-K products]: a product with a small output (M x N at most 1024) and a
// long contraction has no row or column split worth making (tensor-train steps of
// 19 x 19 x 2300). Its contraction is split instead: part 0 computes alpha * A0 B0 +
// beta * C in place, each other part alpha * Ap Bp into a buffer on the caller's stack,
// and the parts are added into C afterwards (a different summation order than one
// call, within rounding). The BLIS route and the matrix-vector kernel both use it.
using detail::kSplitKMaxOutput;
using detail::kSplitKMaxParts;

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

// `gemm(part)` on `parts` parts of g's contraction (g.m * g.n <= kSplitKMaxOutput).
template <class T, class F>
void split_k(const CpuExecutionContext& ctx, const detail::GemmArgs<T>& g, int parts, const F& gemm) {
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
      gemm(part);
    }
  });
  add_partials<T>(partial, parts, g.m, g.n, g.c, g.rsc, g.csc);
}

// Runs `gemm(part, lane)` on `pieces` pieces of g's columns (`cols`) or rows, as the
// route says (DotRoute::split_columns): piece p covers [len p / pieces, len (p + 1) /
// pieces), fixed by the piece count whichever worker runs it. The context's workers run min(pieces, threads) lanes,
// each taking pieces in turn until none is left; a lane runs on one worker at a time, so
// `lane` indexes per-worker workspace.
template <class T, class F>
void on_pieces(const CpuExecutionContext& ctx, const detail::GemmArgs<T>& g, int64_t pieces, bool cols, const F& gemm) {
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
    detail::short_sides_f64(kernel_isa(ctx.caps()), m, n, g.alpha, a, rsa, b, k, g.beta, g.c, rsc, csc);
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
        detail::short_sides_f64(kernel_isa(ctx.caps()), m, n, g.alpha, ap, rsa, bp, piece, g.beta, g.c, rsc, csc);
      } else {
        detail::short_sides_f64(kernel_isa(ctx.caps()), m, n, g.alpha, ap, rsa, bp, piece, 0.0, partial[static_cast<size_t>(p - 1)].data(), 1, m);
      }
    }
  });
  add_partials<T>(partial, parts, m, n, g.c, rsc, csc);
}

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
// `b_rows`: when not null, the narrow operand is first packed there as rows (Note
// [Streamed row-major products] in gemm_streamed.cc), once for all pieces.
void streamed(const CpuExecutionContext& ctx, const detail::GemmArgs<double>& g, bool transposed, int threads,
              double* b_rows) {
  using T = double;
  detail::GemmArgs<T> t = transposed ? detail::transposed(g) : g;
  if (b_rows != nullptr) t = detail::pack_b_rows(t, b_rows);
  if (threads <= 1) {
    detail::streamed_f64(kernel_isa(ctx.caps()), t);
    return;
  }
  const int64_t S = detail::stream_slice_rows(kernel_isa(ctx.caps()));
  const int64_t slices = (t.m + S - 1) / S;
  ctx.parallel_for(slices, std::min(kStreamPieceRows / S, (slices + threads - 1) / threads), [&](int64_t s0, int64_t s1) {
    detail::GemmArgs<T> part = t;
    part.m = std::min(t.m, S * s1) - S * s0;
    part.a = t.a + S * s0 * t.rsa;
    part.c = t.c + S * s0 * t.rsc;
    detail::streamed_f64(kernel_isa(ctx.caps()), part);
  });
}

// A matrix-vector product (Note [Matrix-vector products] in gemm_matvec.cc), A = the rhs
// when `transposed`. kPieces: A's rows in pieces of whole kMatVecUnit blocks (whole cache
// lines of a column-contiguous A and of a unit-stride y); kSplitK: the contraction in
// parts (Note [Split-K products]).
constexpr int64_t kMatVecUnit = 64;
template <class T>
constexpr bool kMatVecType =
    std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, c128> || std::is_same_v<T, c64>;
// Note [Matrix-vector contraction levels]: a contraction that does not merge (numpy's
// 'abc,ac->b' on a C-order A: a and c contracted around the free b) is walked as its
// nested loops (`levels`, innermost first, Note [Short-side products with a strided
// contraction]): the kernel runs the innermost loop for every index of the outer ones,
// the first call with beta and the others adding to C (beta = 1), so A is still read
// once and nothing is packed. Before, A was packed and handed to a GEMM call, which
// packed it again. Short rows beyond the caches stay one at a time (Note [Matrix-vector
// products]): four side by side made 'abcd,bd->ac' on 64^4 11 -> 13 ms and 'ac,abc->b'
// on 256 x 128 x 256 2.7 -> 6.0 ms (one thread, Zen 4, 2026-12-04).
template <class T>
void matvec(const CpuExecutionContext& ctx, IsaLevel isa, const detail::GemmArgs<T>& g, bool transposed, DotSplit split,
            int64_t pieces, bool one_run, const detail::KLevels* levels) {
  const detail::GemmArgs<T> t = transposed ? detail::transposed(g) : g;
  auto kernel = [&](const detail::GemmArgs<T>& part) {
    if (levels == nullptr || levels->count <= 1) {
      detail::matvec<T>(isa, part, one_run);
      return;
    }
    // A's strides are the lhs's (sa) unless transposed.
    const int64_t* sa = transposed ? levels->sb : levels->sa;
    const int64_t* sx = transposed ? levels->sa : levels->sb;
    detail::GemmArgs<T> call = part;
    call.k = levels->extent[0];
    call.csa = sa[0];
    call.rsb = sx[0];
    std::array<int64_t, detail::kMaxKLevels> idx{};
    for (;;) {
      detail::matvec<T>(isa, call, one_run);
      call.beta = T{1};
      int l = 1;
      for (; l < levels->count; ++l) {  // odometer over the outer loops
        call.a += sa[l];
        call.b += sx[l];
        if (++idx[static_cast<size_t>(l)] < levels->extent[l]) break;
        call.a -= levels->extent[l] * sa[l];
        call.b -= levels->extent[l] * sx[l];
        idx[static_cast<size_t>(l)] = 0;
      }
      if (l == levels->count) return;
    }
  };
  if (split == DotSplit::kSplitK && pieces > 1 && t.m * t.n <= kSplitKMaxOutput) {
    split_k<T>(ctx, t, static_cast<int>(std::min<int64_t>(pieces, kSplitKMaxParts)), kernel);
    return;
  }
  const int64_t units = (t.m + kMatVecUnit - 1) / kMatVecUnit;
  if (split != DotSplit::kPieces || pieces <= 1 || units <= 1) {
    kernel(t);
    return;
  }
  ctx.parallel_for(units, (units + pieces - 1) / pieces, [&](int64_t u0, int64_t u1) {
    detail::GemmArgs<T> part = t;
    part.m = std::min(t.m, kMatVecUnit * u1) - kMatVecUnit * u0;
    part.a = t.a + kMatVecUnit * u0 * t.rsa;
    part.c = t.c + kMatVecUnit * u0 * t.rsc;
    kernel(part);
  });
}

// The real type the blocked kernel computes a T product in: T itself for f64 and f32,
// the component type for c128 and c64, void for the others.
template <class T>
using BlockedReal = std::conditional_t<
    std::is_same_v<T, double> || std::is_same_v<T, float>, T,
    std::conditional_t<std::is_same_v<T, c128>, double, std::conditional_t<std::is_same_v<T, c64>, float, void>>>;

// A real product on the blocked kernel, in `pieces` pieces over the workers (Note
// [Blocked pieces]), each lane with its own panels (`lane_stride` elements apart).
// Where the kernel cannot run (a level below AVX-512), one-thread OpenBLAS calls.
template <class R>
void blocked_real(const CpuExecutionContext& ctx, IsaLevel isa, const detail::GemmArgs<R>& g, int64_t pieces, bool cols,
                  R* work, int64_t lane_stride) {
  if (pieces > 1) {
    on_pieces<R>(ctx, g, pieces, cols, [&](const detail::GemmArgs<R>& part, int64_t lane) {
      if (!detail::gemm_blocked(isa, part, work + lane * lane_stride)) detail::gemm_openblas<R>(part, 1);
    });
  } else if (!detail::gemm_blocked(isa, g, work)) {
    detail::gemm_openblas<R>(g, 1);
  }
}

// Note [Complex products on the blocked kernel]: a complex product C = alpha A B + beta C
// runs as four real products on planar copies: A and B are split into real and
// imaginary planes (column-major; a conjugated operand's imaginary plane negated), then
// Tr = Ar Br - Ai Bi and Ti = Ar Bi + Ai Br on the blocked real kernel (the same
// multiply-adds as one complex product), and C = alpha (Tr + i Ti) + beta C is written
// back. The copies move O(MK + KN + MN) elements against 4 MNK multiply-adds.
template <class T>
void blocked_complex(const CpuExecutionContext& ctx, IsaLevel isa, const detail::GemmArgs<T>& g, int64_t pieces,
                     bool cols, BlockedReal<T>* planes, BlockedReal<T>* work, int64_t lane_stride) {
  using R = BlockedReal<T>;
  const int64_t m = g.m, n = g.n, k = g.k;
  R* ar = planes;
  R* ai = ar + m * k;
  R* br = ai + m * k;
  R* bi = br + k * n;
  R* tr = bi + k * n;
  R* ti = tr + m * n;
  const R sa = g.conj_a ? R(-1) : R(1), sb = g.conj_b ? R(-1) : R(1);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, std::max(m, k)));
  ctx.parallel_for(k, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t i = 0; i < m; ++i) {
        const T v = g.a[i * g.rsa + p * g.csa];
        ar[i + p * m] = v.real();
        ai[i + p * m] = sa * v.imag();
      }
  });
  ctx.parallel_for(n, grain, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t p = 0; p < k; ++p) {
        const T v = g.b[p * g.rsb + j * g.csb];
        br[p + j * k] = v.real();
        bi[p + j * k] = sb * v.imag();
      }
  });
  auto real = [&](const R* a, const R* b, R* c, R alpha, R beta) {
    const detail::GemmArgs<R> r{m, n, k, alpha, a, 1, m, false, b, 1, k, false, beta, c, 1, m};
    blocked_real<R>(ctx, isa, r, pieces, cols, work, lane_stride);
  };
  real(ar, br, tr, R(1), R(0));
  real(ai, bi, tr, R(-1), R(1));
  real(ar, bi, ti, R(1), R(0));
  real(ai, br, ti, R(1), R(1));
  const bool read_c = g.beta != T{};
  ctx.parallel_for(n, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, m)), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t i = 0; i < m; ++i) {
        T& c = g.c[i * g.rsc + j * g.csc];
        const T t(tr[i + j * m], ti[i + j * m]);
        c = read_c ? g.alpha * t + g.beta * c : g.alpha * t;
      }
  });
}

template <class T>
Result<void> run_dot(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims_in,
                     const DotOptions& opt, const detail::DotAxes& axes, Tensor& out,
                     const std::shared_ptr<HostBufferPool>& pool, DotScratch* dscratch) {
  TENFERRO_TRY(T alpha, scalar_to<T>(opt.alpha, "alpha"));
  TENFERRO_TRY(T beta, scalar_to<T>(opt.beta, "beta"));
  if (axes.batch * axes.m * axes.n == 0) return ok();
  detail::DotAnalysis an;
  detail::analyze_dot(lhs.dtype(), lhs.layout(), rhs.layout(), out.layout(), dims_in, axes, opt, &an);
  const DotSettings settings{effective_batch_settings(ctx, opt), ctx.threads()};
  TENFERRO_TRY(DotRoute route, plan_dot(an.problem, ctx.caps(), settings));  // Note [dot_general planner]
  const IsaLevel isa = kernel_isa(ctx.caps());  // Note [ISA kernels] in gemm_kernels.cc
  const DotDims& dims = an.dims;
  const DotProblem& pr = an.problem;
  const int64_t M = route.m, N = route.n, K = pr.k;

  const int64_t nb = static_cast<int64_t>(dims.lhs_batch.size());
  SmallVector<int64_t, 8> bext;
  for (int64_t i = 0; i < nb; ++i) bext.push_back(lhs.shape()[static_cast<size_t>(dims.lhs_batch[static_cast<size_t>(i)])]);

  if (route.kernel == DotKernel::kElementwise) {
    // Every dimension a batch dimension: the vectorized map kernel with both operands
    // viewed in the output's axes.
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
  DotGroup lm = pr.lm, lk = pr.lk, rk = pr.rk, rn = pr.rn, om = pr.om, on = pr.on;
  auto lbs = layout_strides(lhs.layout(), dims.lhs_batch.span());
  auto rbs = layout_strides(rhs.layout(), dims.rhs_batch.span());
  auto obs = layout_strides(out.layout(), an.out_batch.span());
  // A split free group's outer labels become batch dimensions (Note [Split free groups]).
  const size_t nb0 = bext.size();
  auto add_batch = [&](const detail::FreeSplit& sp, bool rhs_side) {
    for (size_t i = 0; i < sp.ext.size(); ++i) {
      bext.push_back(sp.ext[i]);
      lbs.push_back(rhs_side ? 0 : sp.op_st[i]);
      rbs.push_back(rhs_side ? sp.op_st[i] : 0);
      obs.push_back(sp.out_st[i]);
    }
  };
  if (route.split_rhs_free) {
    rn = an.rhs_split->op;
    on = an.rhs_split->out;
    add_batch(*an.rhs_split, true);
  }
  if (route.split_lhs_free) {
    lm = an.lhs_split->op;
    om = an.lhs_split->out;
    add_batch(*an.lhs_split, false);
  }
  if (route.kernel == DotKernel::kBatchLanes) {
    // Batch items as vector lanes (Note [Batch-lane products] in gemm_lanes.cc): the lane
    // run's pairs become the lanes, the other batch pairs are walked one item at a time.
    // A unit is one vector of lanes of one item, or one part of its rows (columns when
    // column blocks are outermost) when the planner split them (Note [Batch-lane
    // thresholds]); a worker takes consecutive units.
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
      SmallVector<int64_t, 8> iext = bext;
      for (size_t i = 0; i < nb0 && i < 64; ++i) {
        if ((an.lane_dims >> i & 1u) != 0) iext[i] = 1;
      }
      const BatchAxes items_ax = batch_axes(iext.span(), lbs.span(), rbs.span(), obs.span());
      const int64_t lanes = route.lanes, width = detail::lane_width<T>(isa);
      const int64_t blocks = (lanes + width - 1) / width, parts = route.lane_parts;
      const int64_t units = route.batch / lanes * blocks * parts;
      const int64_t side = route.columns_outer ? N : M;
      const int64_t part_len = (side + parts - 1) / parts;
      const detail::GemmArgs<T> base{M,
                                     N,
                                     K,
                                     alpha,
                                     static_cast<const T*>(lhs.storage()->data()) + lhs.offset(),
                                     lm.stride,
                                     lk.stride,
                                     false,
                                     static_cast<const T*>(rhs.storage()->data()) + rhs.offset(),
                                     rk.stride,
                                     rn.stride,
                                     false,
                                     beta,
                                     static_cast<T*>(out.storage()->data()) + out.offset(),
                                     om.stride,
                                     on.stride};
      auto run_units = [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t part = u % parts, vector = u / parts % blocks, item = u / parts / blocks;
          const int64_t s0 = part * part_len, s1 = std::min(side, s0 + part_len);
          if (s0 >= s1) continue;
          const BatchCursor cur(items_ax, item);
          detail::GemmArgs<T> g = base;
          g.a += cur.lo + vector * width;
          g.b += cur.ro + vector * width;
          g.c += cur.oo + vector * width;
          if (route.columns_outer) {
            g.n = s1 - s0;
            g.b += s0 * g.csb;
            g.c += s0 * g.csc;
          } else {
            g.m = s1 - s0;
            g.a += s0 * g.rsa;
            g.c += s0 * g.rsc;
          }
          detail::batch_lanes<T>(isa, g, std::min(width, lanes - vector * width), route.columns_outer);
        }
      };
      if (route.split == DotSplit::kPieces && route.threads > 1) {
        const int64_t per = 4 * int64_t{route.threads};
        ctx.parallel_for(units, (units + per - 1) / per, run_units);
      } else {
        run_units(0, units);
      }
      return ok();
    } else {
      return usage_error(ErrorCode::kUnsupported, "dot_general",
                         "the batch-lane kernel has no " + std::string(dtype_name(lhs.dtype())) + " form");
    }
  }
  if constexpr (!kMatVecType<T>) {
    if (route.kernel == DotKernel::kMatVec) {
      return usage_error(ErrorCode::kUnsupported, "dot_general",
                         "the matrix-vector kernel has no " + std::string(dtype_name(lhs.dtype())) + " form");
    }
  }
  // The short-side kernel's contraction levels and the broadcast operand's row offsets,
  // in C's row order (Note [Short-side products with a strided contraction]).
  detail::KLevels klev = an.klev;
  std::array<int64_t, detail::kShortSideMax> row_off{};
  if (route.kernel == DotKernel::kShortSides) {
    if (route.transposed) {
      for (int l = 0; l < klev.count; ++l) std::swap(klev.sa[l], klev.sb[l]);
    }
    const DotGroup& g = route.transposed ? rn : lm;
    const Layout& lay = route.transposed ? rhs.layout() : lhs.layout();
    const auto free = route.transposed ? axes.rhs_free.span() : axes.lhs_free.span();
    const int64_t rows = route.transposed ? N : M;
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
  }

  Tensor lhs_use = lhs, rhs_use = rhs;
  if (route.pack_lhs) {
    // Compact [free, contracting, batch] (M x K, unit row stride), or [contracting,
    // free, batch] (unit column stride).
    const bool t = route.lhs_k_first;
    const auto perm = t ? group_order(dims.lhs_contracting.span(), axes.lhs_free.span(), dims.lhs_batch.span())
                        : group_order(axes.lhs_free.span(), dims.lhs_contracting.span(), dims.lhs_batch.span());
    TENFERRO_TRY(lhs_use, packed_copy(ctx, lhs, Dims(perm.span()), dscratch ? &dscratch->lhs : nullptr, pool));
    lm = DotGroup{M, t ? K : 1, true};
    lk = DotGroup{K, t ? 1 : M, true};
    lbs = compact_batch_strides(bext.span().first(nb0), M * K);
    for (size_t i = nb0; i < bext.size(); ++i) lbs.push_back(0);  // split rhs free labels
  }
  if (route.pack_rhs) {
    const bool t = route.rhs_n_first;
    const auto perm = t ? group_order(axes.rhs_free.span(), dims.rhs_contracting.span(), dims.rhs_batch.span())
                        : group_order(dims.rhs_contracting.span(), axes.rhs_free.span(), dims.rhs_batch.span());
    TENFERRO_TRY(rhs_use, packed_copy(ctx, rhs, Dims(perm.span()), dscratch ? &dscratch->rhs : nullptr, pool));
    rk = DotGroup{K, t ? N : 1, true};
    rn = DotGroup{N, t ? 1 : K, true};
    rbs = compact_batch_strides(bext.span().first(nb0), K * N);
    for (size_t i = nb0; i < bext.size(); ++i) rbs.push_back(0);  // split lhs free labels
  }
  Tensor scratch;
  if (route.pack_out) {
    // Compute into a compact [M, N, batch] scratch; the destination is copied in first
    // only when beta != 0 (it is read), and back afterwards.
    const auto perm = group_order(an.out_m.span(), an.out_n.span(), an.out_batch.span());
    TENFERRO_TRY(Tensor out_view, out.permute(Dims(perm.span())));
    TENFERRO_TRY(scratch, take_scratch(out.dtype(), out_view.shape(), dscratch ? &dscratch->out : nullptr, pool));
    if (beta != T{}) {
      detail::copy_strided(ctx, out_view.storage()->data(), out_view.layout(), scratch.storage()->data(),
                           scratch.layout(), out.element_size());
    }
    om = DotGroup{M, 1, true};
    on = DotGroup{N, M, true};
    obs = compact_batch_strides(bext.span(), M * N);
  }
  Tensor& target = route.pack_out ? scratch : out;
  // The blocked kernel's packing workspace, one lane per worker, after the planar
  // copies of a complex product (DotScratch::work or the pool; Note [Blocked AVX-512
  // GEMM], Note [Complex products on the blocked kernel]).
  using R = BlockedReal<T>;
  R* blocked = nullptr;
  R* planes = nullptr;
  int64_t blocked_lane = 0;
  Tensor blocked_ws;
  if constexpr (!std::is_void_v<R>) {
    if (route.kernel == DotKernel::kBlocked) {
      constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(R));
      auto lines = [&](int64_t n) { return (n + kLine - 1) / kLine * kLine; };
      blocked_lane = lines(detail::blocked_work<R>(M, N, K));  // whole cache lines per lane
      const int64_t plane_elems = std::is_same_v<T, R> ? 0 : lines(2 * (M * K + K * N + M * N));
      TENFERRO_TRY(blocked_ws, take_scratch(std::is_same_v<R, double> ? DType::kF64 : DType::kF32,
                                            Shape{plane_elems + blocked_lane * route.threads + kLine},
                                            dscratch ? &dscratch->work : nullptr, pool));
      const auto addr = reinterpret_cast<uintptr_t>(blocked_ws.storage()->data());
      planes = reinterpret_cast<R*>((addr + 63) & ~uintptr_t{63});
      blocked = planes + plane_elems;
    }
  }
  const BatchAxes ax = batch_axes(bext.span(), lbs.span(), rbs.span(), obs.span());
  const auto* lbase = static_cast<const T*>(lhs_use.storage()->data()) + lhs_use.offset();
  const auto* rbase = static_cast<const T*>(rhs_use.storage()->data()) + rhs_use.offset();
  auto* obase = static_cast<T*>(target.storage()->data()) + target.offset();
  const detail::GemmArgs<T> shape{M, N, K, alpha, lbase, lm.stride, lk.stride, opt.conj_lhs,
                                  rbase, rk.stride, rn.stride, opt.conj_rhs, beta, obase, om.stride, on.stride};

  // The streamed kernel's narrow operand as rows (Note [Streamed row-major products] in
  // gemm_streamed.cc), packed once per product before its pieces, in DotScratch::work or
  // the pool. Not for outer-parallel items, which would share the buffer: they keep the
  // kernel's transposing form.
  T* b_rows = nullptr;
  Tensor rows_ws;
  if constexpr (std::is_same_v<T, double>) {
    const detail::GemmArgs<T> t = route.transposed ? detail::transposed(shape) : shape;
    if (route.kernel == DotKernel::kStreamed && route.split != DotSplit::kOuterBatch &&
        detail::streamed_wants_b_rows(isa, t)) {
      TENFERRO_TRY(rows_ws, take_scratch(DType::kF64, Shape{detail::b_rows_elems(t.k, t.n) + 8},
                                         dscratch ? &dscratch->work : nullptr, pool));
      const auto addr = reinterpret_cast<uintptr_t>(rows_ws.storage()->data());
      b_rows = reinterpret_cast<T*>((addr + 63) & ~uintptr_t{63});
    }
  }

  // One product, as the route says. `next`: the product this thread runs after this
  // one, if any (a prefetch hint, Note [Small-product prefetch] in gemm_kernels.cc).
  const int threads = route.threads;
  auto one = [&](const BatchCursor& cur, const BatchCursor* next) {
    detail::GemmArgs<T> g = shape;
    g.a += cur.lo;
    g.b += cur.ro;
    g.c += cur.oo;
    if (next != nullptr) {
      g.next_a = lbase + next->lo;
      g.next_b = rbase + next->ro;
      g.next_c = obase + next->oo;
    }
    const bool split = route.split == DotSplit::kPieces || route.split == DotSplit::kSplitK;
    switch (route.kernel) {
      case DotKernel::kScaleOutput:
        for (int64_t j = 0; j < N; ++j)
          for (int64_t i = 0; i < M; ++i) {
            T& c = g.c[i * g.rsc + j * g.csc];
            c = beta == T{} ? T{} : beta * c;
          }
        return;
      case DotKernel::kOuter:
        if constexpr (!std::is_same_v<T, bool>) outer_product<T>(ctx, g, threads);  // Note [Outer products]
        return;
      case DotKernel::kBlocked:
        if constexpr (std::is_same_v<T, R>) {
          blocked_real<T>(ctx, isa, g, split ? route.pieces : 1, route.split_columns, blocked, blocked_lane);
        } else if constexpr (!std::is_void_v<R>) {
          blocked_complex<T>(ctx, isa, g, split ? route.pieces : 1, route.split_columns, planes, blocked, blocked_lane);
        }
        return;
      case DotKernel::kOpenBlas:
        if (route.split == DotSplit::kPieces) {
          // One-thread OpenBLAS calls on pieces of the longer side (Note [OpenBLAS pieces]).
          on_pieces<T>(ctx, g, route.pieces, route.split_columns,
                       [](const detail::GemmArgs<T>& part, int64_t) { detail::gemm_openblas<T>(part, 1); });
        } else {
          detail::gemm_openblas<T>(g, route.split == DotSplit::kProviderThreads ? threads : 1);
        }
        return;
      case DotKernel::kBlis:
        if (route.split == DotSplit::kPieces) {
          on_pieces<T>(ctx, g, route.pieces, route.split_columns,
                       [](const detail::GemmArgs<T>& part, int64_t) { detail::gemm_blis<T>(part); });
        } else if (route.split == DotSplit::kSplitK) {
          split_k<T>(ctx, g, static_cast<int>(route.pieces),  // Note [Split-K products]
                     [](const detail::GemmArgs<T>& part) { detail::gemm_blis<T>(part); });
        } else {
          detail::gemm_blis<T>(g);
        }
        return;
      case DotKernel::kShortSides:
        if constexpr (std::is_same_v<T, double>) short_sides<T>(ctx, g, klev, row_off.data(), route.transposed, threads);
        return;
      case DotKernel::kStreamed:
        if constexpr (std::is_same_v<T, double>) streamed(ctx, g, route.transposed, threads, b_rows);
        return;
      case DotKernel::kMatVec:
        if constexpr (kMatVecType<T>)
          matvec<T>(ctx, isa, g, route.transposed, route.split, route.pieces, route.one_run,
                    route.k_walk ? &an.klev : nullptr);
        return;
      case DotKernel::kComplexShort:
        if constexpr (std::is_same_v<T, c128> || std::is_same_v<T, c64>) {
          const detail::GemmArgs<T> w = route.transposed ? detail::transposed(g) : g;  // C^T = B^T A^T
          if (route.split == DotSplit::kPieces) {
            on_pieces<T>(ctx, w, route.pieces, route.split_columns,
                         [&](const detail::GemmArgs<T>& part, int64_t) { detail::complex_short<T>(isa, part); });
          } else {
            detail::complex_short<T>(isa, w);
          }
        }
        return;
      case DotKernel::kNarrow:
        if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
          const detail::GemmArgs<T> w = route.transposed ? detail::transposed(g) : g;  // C^T = B^T A^T
          if (route.split == DotSplit::kPieces) {
            on_pieces<T>(ctx, w, route.pieces, route.split_columns,
                         [&](const detail::GemmArgs<T>& part, int64_t) { detail::narrow<T>(isa, part); });
          } else {
            detail::narrow<T>(isa, w);
          }
        }
        return;
      case DotKernel::kStreamedOutput:
        if constexpr (std::is_same_v<T, double>) {
          // A stays in cache: column blocks outermost, pieces of whole column blocks;
          // otherwise pieces of whole row tiles (Note [Streamed-output products]), about
          // four per worker (Note [Streamed pieces]).
          const bool cols = route.columns_outer;
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
            detail::streamed_out_f64(isa, part, cols);
          });
        }
        return;
      case DotKernel::kWide: {
        const detail::GemmArgs<T> w = route.transposed ? detail::transposed(g) : g;  // C^T = B^T A^T
        if (split) {
          // Pieces of whole column blocks, about four per worker (Note [Short-contraction
          // products], Note [Streamed pieces]).
          const int64_t blocks = (w.n + detail::kSmallCols - 1) / detail::kSmallCols;
          ctx.parallel_for(blocks, (blocks + 4 * threads - 1) / (4 * threads), [&](int64_t q0, int64_t q1) {
            detail::GemmArgs<T> part = w;
            part.n = std::min(w.n, detail::kSmallCols * q1) - detail::kSmallCols * q0;
            part.b = w.b + detail::kSmallCols * q0 * w.csb;
            part.c = w.c + detail::kSmallCols * q0 * w.csc;
            detail::gemm_naive<T>(isa, part);
          });
          return;
        }
        detail::gemm_naive<T>(isa, w);
        return;
      }
      case DotKernel::kThin:
        if (split) {
          ctx.parallel_for((M + 3) / 4, (M + 4 * threads - 1) / (4 * threads), [&](int64_t q0, int64_t q1) {
            detail::GemmArgs<T> part = g;
            part.m = std::min(M, 4 * q1) - 4 * q0;
            part.a = g.a + 4 * q0 * g.rsa;
            part.c = g.c + 4 * q0 * g.rsc;
            detail::gemm_naive<T>(isa, part);
          });
          return;
        }
        detail::gemm_naive<T>(isa, g);
        return;
      default:  // kSmall, kPlainLoops
        detail::gemm_naive<T>(isa, g);
        return;
    }
  };
  if (route.kernel == DotKernel::kVendorBatch && K > 0) {
    // Item pointers are data of the call, not metadata: B entries each.
    const int64_t B = route.batch;
    std::vector<const T*> pa(static_cast<size_t>(B)), pb(static_cast<size_t>(B));
    std::vector<T*> pc(static_cast<size_t>(B));
    BatchCursor cur(ax, 0);
    for (size_t b = 0; b < pa.size(); ++b, cur.advance()) {
      pa[b] = lbase + cur.lo;
      pb[b] = rbase + cur.ro;
      pc[b] = obase + cur.oo;
    }
    detail::gemm_batch_fortran<T>(shape, B, pa.data(), pb.data(), pc.data());
  } else if (route.split == DotSplit::kOuterBatch) {
    ctx.parallel_for(route.batch, 1, [&](int64_t b0, int64_t b1) {
      BatchCursor cur(ax, b0), next(ax, b0 + 1);
      for (int64_t b = b0; b < b1; ++b, cur.advance(), next.advance()) one(cur, b + 1 < b1 ? &next : nullptr);
    });
  } else {
    BatchCursor cur(ax, 0), next(ax, 1);
    for (int64_t b = 0; b < route.batch; ++b, cur.advance(), next.advance()) one(cur, b + 1 < route.batch ? &next : nullptr);
  }
  if (route.pack_out) {
    SmallVector<int64_t, 16> inv(static_cast<size_t>(out.rank()), 0);
    const auto perm = group_order(an.out_m.span(), an.out_n.span(), an.out_batch.span());
    for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    TENFERRO_TRY(Tensor back, scratch.permute(Dims(inv.span())));
    detail::copy_strided(ctx, back.storage()->data(), back.layout(), out.storage()->data(), out.layout(),
                         out.element_size());
  }
  if (dscratch != nullptr) {
    // Packed operands live in lhs_use/rhs_use only when they were packed.
    if (route.pack_lhs) give_back(lhs_use, &dscratch->lhs);
    if (route.pack_rhs) give_back(rhs_use, &dscratch->rhs);
    if (route.pack_out) give_back(scratch, &dscratch->out);
    if (blocked_ws.defined()) give_back(blocked_ws, &dscratch->work);
    if (rows_ws.defined()) give_back(rows_ws, &dscratch->work);
  }
  return ok();
}


}  // namespace

BatchSettings effective_batch_settings(const CpuExecutionContext& ctx, const DotOptions& options) {
  BatchSettings b = ctx.batch();
  if (options.batch_policy) b.policy = *options.batch_policy;
  if (options.provider != GemmProvider::kAuto) b.provider = options.provider;
  if (options.tiny_flops) b.tiny_flops = *options.tiny_flops;
  if (options.shortcut_flops) b.shortcut_flops = *options.shortcut_flops;
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
  TENFERRO_TRY(detail::DotAxes p, detail::dot_axes(lhs, rhs, dims));
  Shape out;
  for (int64_t a : dims.lhs_batch) out.push_back(lhs[static_cast<size_t>(a)]);
  for (int64_t a : p.lhs_free) out.push_back(lhs[static_cast<size_t>(a)]);
  for (int64_t a : p.rhs_free) out.push_back(rhs[static_cast<size_t>(a)]);
  return out;
}


namespace {

// Note [Tiny matrix shortcut]: a plain matrix product lhs[m, k] x rhs[k, n] (no batch,
// lhs axis 1 against rhs axis 0, default options) with at most `shortcut_flops`
// multiply-adds is computed by a direct loop before any planning: for small products
// the plan (axis grouping, layout analysis, route choice; about 0.8 us) costs more than
// the arithmetic. Each element sums over k in ascending order from zero. When the
// destination's and lhs's columns are contiguous (column-major, the library's own
// result) the loop runs down columns (C[:, j] += A[:, l] B[l, j]), when the
// destination's and rhs's rows are (numpy's C order) along rows, so the innermost loop
// is unit-stride and vectorizes; otherwise element by element. The threshold: eager
// matmul of n x n matrices (one thread, Zen 5, 2026-12-04, two alternating rounds, per
// call, shortcut against the planned route): f64 column-major n = 8 0.32-0.35 against
// 1.07-1.08 us, 12 0.68-0.71 / 1.08-1.11, 14 0.94-0.98 / 1.10-1.15, 16 1.32-1.36 /
// 1.14-1.16; f64 transposed views (the element loop) n = 14 1.18-1.22 / 1.56-1.59, 16
// 1.67-1.68 / 1.64-1.65; c128 n = 12 2.29-2.30 / 3.17-3.20, 14 3.12-3.13 / 3.08-3.14, 16
// 4.49-4.58 / 2.63-2.68. So up to 14^3 = 2744 multiply-adds (of the dtype). The loop
// costs per run more than per multiply-add: a short side against a long one makes many
// short runs (`tenferro bench kernels --only shortcut`, 256 calls into a column-major
// destination, one thread, Zen 5, 2026-12-05, two rounds, shortcut against planned: 2 x
// 512 x 2 1.28-1.42 against 0.19-0.28 ms, 3 x 256 x 3 0.88-0.94 / 0.17-0.26, 4 x 128 x 4
// 0.56-0.60 / 0.15-0.22; 3 x 64 x 3 0.22-0.24 / 0.13-0.21, 14^3 0.22-0.35 / 0.16-0.22;
// 10^3 0.09-0.15 / 0.15-0.21, 2 x 32 x 2 0.08-0.10 / 0.20-0.30), so the shortcut also
// needs k times the longer side within kShortcutMaxRuns (14^2: every square product it
// took before keeps it).
// dot_general_into takes it too when beta is 0, writing through the destination's
// strides after the destination checks.

// `outer` unit-stride runs of `len` elements of C (run o at c + o * c_step), each the sum
// over l < k of coef(o, l) times the unit-stride run l of `src` (at src + l * src_step),
// from zero in ascending l: the unit-stride orders of tiny_matmul.
template <class T>
void tiny_runs(int64_t outer, int64_t len, int64_t k, T* c, int64_t c_step, const T* src, int64_t src_step,
               const T* coef, int64_t coef_outer, int64_t coef_l) {
  for (int64_t o = 0; o < outer; ++o) {
    T* co = c + o * c_step;
    for (int64_t i = 0; i < len; ++i) co[i] = T{};
    for (int64_t l = 0; l < k; ++l) {
      const T* sl = src + l * src_step;
      const T w = coef[o * coef_outer + l * coef_l];
      for (int64_t i = 0; i < len; ++i) co[i] += sl[i] * w;
    }
  }
}

template <class T>
void tiny_matmul(const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  const int64_t m = lhs.shape()[0], k = lhs.shape()[1], n = rhs.shape()[1];
  const T* a = static_cast<const T*>(lhs.storage()->data()) + lhs.offset();
  const T* b = static_cast<const T*>(rhs.storage()->data()) + rhs.offset();
  T* c = static_cast<T*>(out.storage()->data()) + out.offset();
  const int64_t as0 = lhs.strides()[0], as1 = lhs.strides()[1], bs0 = rhs.strides()[0], bs1 = rhs.strides()[1];
  const int64_t cs0 = out.strides()[0], cs1 = out.strides()[1];
  if (cs0 == 1 && as0 == 1) {
    tiny_runs(n, m, k, c, cs1, a, as1, b, bs1, bs0);  // C[:, j] = sum_l A[:, l] B[l, j]
    return;
  }
  if (cs1 == 1 && bs1 == 1) {
    tiny_runs(m, n, k, c, cs0, b, bs0, a, as0, as1);  // C[i, :] = sum_l B[l, :] A[i, l]
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      T acc{};
      for (int64_t l = 0; l < k; ++l) acc += a[i * as0 + l * as1] * b[l * bs0 + j * bs1];
      c[i * cs0 + j * cs1] = acc;
    }
  }
}

// tiny_matmul for the dtypes the shortcut admits.
void tiny_matmul_any(const Tensor& lhs, const Tensor& rhs, Tensor& out) {
  visit_dtype(lhs.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, c64> ||
                  std::is_same_v<T, c128>) {
      tiny_matmul<T>(lhs, rhs, out);
    }
  });
}


}  // namespace

Result<void> dot_general_into(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                              const DotOptions& options, Tensor& out, const std::shared_ptr<HostBufferPool>& pool,
                              DotScratch* scratch) {
  if (options.beta == c128{} && detail::tiny_matmul_shortcut(ctx, lhs, rhs, dims, options) && out.defined() &&
      out.dtype() == lhs.dtype() && out.rank() == 2 && out.shape()[0] == lhs.shape()[0] &&
      out.shape()[1] == rhs.shape()[1]) {
    // Note [Tiny matrix shortcut].
    TENFERRO_TRY_VOID(tenferro::detail::check_mutable(out.storage(), out.layout(), "dot_general"));
    tiny_matmul_any(lhs, rhs, out);
    return ok();
  }
  TENFERRO_TRY(detail::DotAxes axes, detail::validate_dot(lhs, rhs, dims));
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
    return run_dot<T>(ctx, lhs, rhs, dims, options, axes, out, pool, scratch);
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


Result<Tensor> dot_general(const CpuExecutionContext& ctx, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                           const DotOptions& options, const std::shared_ptr<HostBufferPool>& pool) {
  if (detail::tiny_matmul_shortcut(ctx, lhs, rhs, dims, options)) {
    TENFERRO_TRY(Tensor out, Tensor::uninitialized(lhs.dtype(), {lhs.shape()[0], rhs.shape()[1]}, pool));
    tiny_matmul_any(lhs, rhs, out);
    return out;
  }
  TENFERRO_TRY(detail::DotAxes axes, detail::validate_dot(lhs, rhs, dims));
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape(), rhs.shape(), dims));
  DotOptions o = options;
  o.beta = 0.0;
  const Layout layout = detail::own_result_layout(ctx, lhs.dtype(), lhs.layout(), rhs.layout(), dims, o, axes, shape);
  TENFERRO_TRY(Tensor buffer, Tensor::uninitialized(lhs.dtype(), {element_count(shape)}, pool));
  TENFERRO_TRY(Tensor out, Tensor::from_storage(lhs.dtype(), buffer.storage(), layout));
  buffer = Tensor();
  // The result is this call's own, of the validated dtype and shape: straight to the
  // route (dot_general_into would validate operands and destination again).
  TENFERRO_TRY_VOID(visit_dtype(lhs.dtype(), [&]<class T>() -> Result<void> {
    return run_dot<T>(ctx, lhs, rhs, dims, o, axes, out, pool, nullptr);
  }));
  return out;
}

}  // namespace tenferro::cpu
