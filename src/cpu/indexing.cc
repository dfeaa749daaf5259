#include "tenferro/cpu/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "map_kernel.h"
#include "tenferro/core/order.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

Result<void> check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "tensor handle is null");
  return ok();
}

Result<void> check_len(Dims d, int64_t rank, const char* what, const char* op) {
  if (static_cast<int64_t>(d.size()) != rank) {
    return usage_error(ErrorCode::kInvalidShape, op,
                       std::string(what) + " " + format_dims(d) + " has " + s(static_cast<int64_t>(d.size())) +
                           " entries for a rank-" + s(rank) + " tensor");
  }
  return ok();
}

// Copies `src` (any layout) into the region `dst_view` of the exclusively owned `dst`.
void copy_region(const CpuExecutionContext& ctx, const Tensor& src, const Tensor& dst_view) {
  detail::copy_strided(ctx, src.storage()->data(), src.layout(), dst_view.storage()->data(), dst_view.layout(),
                       src.element_size());
}

Result<std::vector<int64_t>> read_indices(const Tensor& indices, int64_t extent, const char* op) {
  if (indices.dtype() != DType::kI32 && indices.dtype() != DType::kI64) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "indices have dtype " + std::string(dtype_name(indices.dtype())) + ", need i32 or i64");
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(indices.numel()));
  Tensor c = indices.contiguous().value();
  for (int64_t i = 0; i < c.numel(); ++i) {
    const int64_t v = c.dtype() == DType::kI32 ? static_cast<const int32_t*>(c.storage()->data())[c.offset() + i]
                                               : static_cast<const int64_t*>(c.storage()->data())[c.offset() + i];
    if (v < 0 || v >= extent) {
      return usage_error(ErrorCode::kOutOfRange, op,
                         "index " + s(v) + " at flat position " + s(i) + " is out of range for extent " + s(extent));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

Result<Tensor> slice(const CpuExecutionContext& ctx, const Tensor& x, Dims start, Dims limit, Dims strides) {
  TENFERRO_TRY_VOID(check_defined(x, "slice"));
  TENFERRO_TRY_VOID(check_len(start, x.rank(), "start", "slice"));
  TENFERRO_TRY_VOID(check_len(limit, x.rank(), "limit", "slice"));
  TENFERRO_TRY_VOID(check_len(strides, x.rank(), "strides", "slice"));
  Tensor v = x;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const auto kk = static_cast<size_t>(k);
    if (strides[kk] < 1) {
      return usage_error(ErrorCode::kInvalidArgument, "slice", "stride " + s(strides[kk]) + " of axis " + s(k) + " must be >= 1");
    }
    TENFERRO_TRY(v, v.slice(k, start[kk], limit[kk], strides[kk]));
  }
  return materialize(ctx, v);
}

Result<Tensor> dynamic_slice(const CpuExecutionContext& ctx, const Tensor& x, Dims start, Dims sizes) {
  TENFERRO_TRY_VOID(check_defined(x, "dynamic_slice"));
  TENFERRO_TRY_VOID(check_len(start, x.rank(), "start", "dynamic_slice"));
  TENFERRO_TRY_VOID(check_len(sizes, x.rank(), "sizes", "dynamic_slice"));
  Tensor v = x;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const auto kk = static_cast<size_t>(k);
    if (sizes[kk] < 0 || sizes[kk] > x.dim(k)) {
      return usage_error(ErrorCode::kOutOfRange, "dynamic_slice",
                         "size " + s(sizes[kk]) + " of axis " + s(k) + " exceeds extent " + s(x.dim(k)));
    }
    const int64_t st = std::clamp<int64_t>(start[kk], 0, x.dim(k) - sizes[kk]);
    TENFERRO_TRY(v, v.slice(k, st, st + sizes[kk], 1));
  }
  return materialize(ctx, v);
}

Result<Tensor> dynamic_update_slice(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& update, Dims start) {
  TENFERRO_TRY_VOID(check_defined(x, "dynamic_update_slice"));
  TENFERRO_TRY_VOID(check_defined(update, "dynamic_update_slice"));
  if (x.dtype() != update.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, "dynamic_update_slice", "update dtype differs from operand dtype");
  }
  TENFERRO_TRY_VOID(check_len(start, x.rank(), "start", "dynamic_update_slice"));
  if (update.rank() != x.rank()) {
    return usage_error(ErrorCode::kInvalidShape, "dynamic_update_slice",
                       "update rank " + s(update.rank()) + " differs from operand rank " + s(x.rank()));
  }
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (update.dim(k) > x.dim(k)) {
      return usage_error(ErrorCode::kOutOfRange, "dynamic_update_slice",
                         "update extent " + s(update.dim(k)) + " exceeds operand extent " + s(x.dim(k)) + " on axis " + s(k));
    }
  }
  TENFERRO_TRY(Tensor out, materialize(ctx, x));
  Tensor region = out;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const int64_t st = std::clamp<int64_t>(start[static_cast<size_t>(k)], 0, x.dim(k) - update.dim(k));
    TENFERRO_TRY(region, region.slice(k, st, st + update.dim(k), 1));
  }
  copy_region(ctx, update, region);
  return out;
}

Result<Tensor> gather(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& indices, int64_t axis) {
  TENFERRO_TRY_VOID(check_defined(x, "gather"));
  TENFERRO_TRY_VOID(check_defined(indices, "gather"));
  if (axis < 0 || axis >= x.rank()) {
    return usage_error(ErrorCode::kOutOfRange, "gather", "axis " + s(axis) + " is out of range for rank " + s(x.rank()));
  }
  TENFERRO_TRY(std::vector<int64_t> idx, read_indices(indices, x.dim(axis), "gather"));
  Shape shape;
  for (int64_t k = 0; k < axis; ++k) shape.push_back(x.dim(k));
  for (int64_t e : indices.shape()) shape.push_back(e);
  for (int64_t k = axis + 1; k < x.rank(); ++k) shape.push_back(x.dim(k));
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(x.dtype(), shape));
  // Result viewed as [pre, n_idx, post]; copy one hyperplane per index.
  const int64_t pre_rank = axis;
  const int64_t n_idx = static_cast<int64_t>(idx.size());
  Shape flat;
  for (int64_t k = 0; k < pre_rank; ++k) flat.push_back(x.dim(k));
  flat.push_back(n_idx);
  for (int64_t k = axis + 1; k < x.rank(); ++k) flat.push_back(x.dim(k));
  if (x.numel() == x.dim(axis)) {
    // Note [Element gathers]: hyperplanes of one element (a vector, or every other
    // extent 1: a flattened tensor's take_along_axis, a sort's values) are copied
    // element by element, not one view and one strided copy per index.
    const auto* src = static_cast<const char*>(x.storage()->data());
    auto* dst = static_cast<char*>(out.storage()->data()) + out.offset() * x.element_size();
    const int64_t es = x.element_size(), step = x.strides()[static_cast<size_t>(axis)];
    ctx.parallel_for(n_idx, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        std::memcpy(dst + j * es, src + (x.offset() + idx[static_cast<size_t>(j)] * step) * es,
                    static_cast<size_t>(es));
      }
    });
    return out;
  }
  TENFERRO_TRY(Tensor out_flat, out.reshape(flat));
  for (int64_t j = 0; j < n_idx; ++j) {
    TENFERRO_TRY(Tensor src, x.select(axis, idx[static_cast<size_t>(j)]));
    TENFERRO_TRY(Tensor dst, out_flat.select(pre_rank, j));
    copy_region(ctx, src, dst);
  }
  return out;
}

Result<Tensor> scatter_add(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& indices, const Tensor& updates,
                           int64_t axis) {
  TENFERRO_TRY_VOID(check_defined(x, "scatter_add"));
  TENFERRO_TRY_VOID(check_defined(indices, "scatter_add"));
  TENFERRO_TRY_VOID(check_defined(updates, "scatter_add"));
  if (axis < 0 || axis >= x.rank()) {
    return usage_error(ErrorCode::kOutOfRange, "scatter_add", "axis " + s(axis) + " is out of range for rank " + s(x.rank()));
  }
  if (updates.dtype() != x.dtype() || x.dtype() == DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, "scatter_add",
                       "updates dtype " + std::string(dtype_name(updates.dtype())) + " must equal operand dtype " +
                           std::string(dtype_name(x.dtype())) + " (not bool)");
  }
  TENFERRO_TRY(std::vector<int64_t> idx, read_indices(indices, x.dim(axis), "scatter_add"));
  Shape want;
  for (int64_t k = 0; k < axis; ++k) want.push_back(x.dim(k));
  for (int64_t e : indices.shape()) want.push_back(e);
  for (int64_t k = axis + 1; k < x.rank(); ++k) want.push_back(x.dim(k));
  if (!(updates.shape() == want)) {
    return usage_error(ErrorCode::kShapeMismatch, "scatter_add",
                       "updates shape " + format_dims(updates.shape()) + " differs from " + format_dims(want));
  }
  TENFERRO_TRY(Tensor out, materialize(ctx, x));
  Shape flat;
  for (int64_t k = 0; k < axis; ++k) flat.push_back(x.dim(k));
  flat.push_back(static_cast<int64_t>(idx.size()));
  for (int64_t k = axis + 1; k < x.rank(); ++k) flat.push_back(x.dim(k));
  TENFERRO_TRY(Tensor upd, updates.reshape_copy(flat));
  if (x.numel() == x.dim(axis)) {  // one-element hyperplanes (Note [Element gathers]), in index order
    // (upd may be a view: a broadcast value has stride 0)
    const int64_t step = out.strides()[static_cast<size_t>(axis)], ustep = upd.strides()[static_cast<size_t>(axis)];
    visit_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* o = static_cast<T*>(out.storage()->data()) + out.offset();
        const T* u = static_cast<const T*>(upd.storage()->data()) + upd.offset();
        for (size_t j = 0; j < idx.size(); ++j) {
          o[idx[j] * step] = T(o[idx[j] * step] + u[static_cast<int64_t>(j) * ustep]);
        }
      }
    });
    return out;
  }
  // Sequential over indices so repeated indices accumulate deterministically.
  for (size_t j = 0; j < idx.size(); ++j) {
    TENFERRO_TRY(Tensor dst, out.select(axis, idx[j]));
    TENFERRO_TRY(Tensor src, upd.select(axis, static_cast<int64_t>(j)));
    const std::array<const void*, 2> in{dst.storage()->data(), src.storage()->data()};
    const std::array<const Layout*, 2> lay{&dst.layout(), &src.layout()};
    visit_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        detail::map_kernel<T, T, T>(ctx, dst.storage()->data(), dst.layout(), in, lay, [](T a, T b) { return T(a + b); });
      }
    });
  }
  return out;
}

namespace {

// Note [Argsort lines]: a line is sorted as (value, position) entries: for reals NaN moved
// to the end first (a stable partition, so NaN keep their order; skipped when the line has
// none), then a stable sort of the rest by value alone (no NaN test per comparison);
// complex values compare with numpy_less (core/order.h). A line long
// enough and alone (fewer lines than threads) is cut into one chunk per thread, the chunks
// sorted in parallel and merged stably (std::inplace_merge keeps the left chunk first
// among equals). The entries live in one scratch buffer taken before any work (from the
// caller's pool when given: fresh memory is slow to touch), so a failed allocation is a
// typed error and nothing is written.
constexpr int64_t kParallelSortLine = int64_t{1} << 15;

template <class T>
struct SortEntry {
  T value;
  int64_t position;
};
static_assert(sizeof(SortEntry<double>) == 16 && sizeof(SortEntry<bool>) == 16 && sizeof(SortEntry<c64>) == 16 &&
              sizeof(SortEntry<c128>) == 24);

template <class T>
void sort_line(const CpuExecutionContext& ctx, SortEntry<T>* first, SortEntry<T>* last, bool has_nan, bool split) {
  if constexpr (std::is_floating_point_v<T>) {
    if (has_nan) last = std::stable_partition(first, last, [](const SortEntry<T>& e) { return !std::isnan(e.value); });
  }
  const auto by_value = [](const SortEntry<T>& a, const SortEntry<T>& b) {
    if constexpr (tenferro::detail::ComplexScalar<T>) {
      return numpy_less(a.value, b.value);
    } else {
      return a.value < b.value;
    }
  };
  const int64_t n = last - first, parts = split ? std::min<int64_t>(ctx.threads(), n / 1024) : 1;
  if (parts <= 1) {
    std::stable_sort(first, last, by_value);
    return;
  }
  auto bound = [&](int64_t k) { return first + n * k / parts; };
  ctx.parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) std::stable_sort(bound(k), bound(k + 1), by_value);
  });
  for (int64_t k = 1; k < parts; ++k) std::inplace_merge(first, bound(k), bound(k + 1), by_value);
}

}  // namespace

Result<Tensor> argsort(const CpuExecutionContext& ctx, const Tensor& x, int64_t axis,
                       const std::shared_ptr<HostBufferPool>& pool) {
  TENFERRO_TRY_VOID(check_defined(x, "argsort"));
  if (axis < 0 || axis >= x.rank()) {
    return usage_error(ErrorCode::kOutOfRange, "argsort",
                       "axis " + s(axis) + " is out of range for rank " + s(x.rank()));
  }
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(DType::kI64, x.shape(), pool));
  const int64_t n = x.dim(axis);
  if (x.numel() == 0) return out;
  const int64_t lines = x.numel() / n;
  const auto ax = static_cast<size_t>(axis);
  const int64_t xs = x.strides()[ax], os = out.strides()[ax];
  // Note [Argsort lines]: one long line fans out itself; otherwise chunks of lines, one
  // scratch line each.
  const bool split = lines < ctx.threads() && n >= kParallelSortLine;
  const int64_t chunks = split ? 1 : std::min<int64_t>(lines, 4 * static_cast<int64_t>(ctx.threads()));
  const int64_t words = x.dtype() == DType::kC128 ? 3 : 2;  // 8-byte words per entry
  TENFERRO_TRY(Tensor scratch, Tensor::uninitialized(DType::kI64, {words * chunks * n}, pool));
  visit_dtype(x.dtype(), [&]<class T>() {
    {
      const T* xp = static_cast<const T*>(x.storage()->data()) + x.offset();
      int64_t* op = static_cast<int64_t*>(out.storage()->data()) + out.offset();
      auto* entries = static_cast<SortEntry<T>*>(scratch.storage()->data());
      std::uninitialized_default_construct_n(entries, chunks * n);
      auto run = [&](int64_t chunk) {
        SortEntry<T>* line = entries + chunk * n;
        for (int64_t l = lines * chunk / chunks; l < lines * (chunk + 1) / chunks; ++l) {
          // The line's first element: l over the other axes, column-major.
          int64_t rest = l, xbase = 0, obase = 0;
          for (size_t k = 0; k < x.shape().size(); ++k) {
            if (k == ax) continue;
            const int64_t i = rest % x.shape()[k];
            rest /= x.shape()[k];
            xbase += i * x.strides()[k];
            obase += i * out.strides()[k];
          }
          bool has_nan = false;
          for (int64_t j = 0; j < n; ++j) {
            const T v = xp[xbase + j * xs];
            if constexpr (std::is_floating_point_v<T>) has_nan = has_nan || v != v;
            line[j] = {v, j};
          }
          sort_line(ctx, line, line + n, has_nan, split);
          for (int64_t j = 0; j < n; ++j) op[obase + j * os] = line[j].position;
        }
      };
      ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) run(c);
      });
    }
  });
  return out;
}

Result<Tensor> concatenate(const CpuExecutionContext& ctx, const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) return usage_error(ErrorCode::kInvalidArgument, "concatenate", "needs at least one tensor");
  for (const Tensor& p : parts) TENFERRO_TRY_VOID(check_defined(p, "concatenate"));
  const Tensor& first = parts[0];
  if (axis < 0 || axis >= first.rank()) {
    return usage_error(ErrorCode::kOutOfRange, "concatenate", "axis " + s(axis) + " is out of range for rank " + s(first.rank()));
  }
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    if (p.dtype() != first.dtype()) {
      return usage_error(ErrorCode::kDTypeMismatch, "concatenate", "tensor " + s(static_cast<int64_t>(i)) + " has another dtype");
    }
    bool same = p.rank() == first.rank();
    for (int64_t k = 0; same && k < first.rank(); ++k) same = k == axis || p.dim(k) == first.dim(k);
    if (!same) {
      return usage_error(ErrorCode::kShapeMismatch, "concatenate",
                         "tensor " + s(static_cast<int64_t>(i)) + " has shape " + format_dims(p.shape()) +
                             ", incompatible with " + format_dims(first.shape()) + " along axis " + s(axis));
    }
    total += p.dim(axis);
  }
  Shape shape = first.shape();
  shape[static_cast<size_t>(axis)] = total;
  TENFERRO_TRY(Tensor out, Tensor::uninitialized(first.dtype(), shape));
  int64_t at = 0;
  for (const Tensor& p : parts) {
    TENFERRO_TRY(Tensor region, out.slice(axis, at, at + p.dim(axis), 1));
    copy_region(ctx, p, region);
    at += p.dim(axis);
  }
  return out;
}

Result<Tensor> pad(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& value, Dims low, Dims high,
                   Dims interior) {
  TENFERRO_TRY_VOID(check_defined(x, "pad"));
  TENFERRO_TRY_VOID(check_defined(value, "pad"));
  TENFERRO_TRY_VOID(check_len(low, x.rank(), "low", "pad"));
  TENFERRO_TRY_VOID(check_len(high, x.rank(), "high", "pad"));
  TENFERRO_TRY_VOID(check_len(interior, x.rank(), "interior", "pad"));
  if (value.dtype() != x.dtype() || value.rank() != 0) {
    return usage_error(ErrorCode::kDTypeMismatch, "pad", "padding value must be a rank-0 tensor of the operand dtype");
  }
  // Note [Pad by placement]: the result is the padding value everywhere but at the
  // positions low + j (interior + 1) that fall inside it, which take x's element j;
  // negative low/high crop. The result is filled and x's kept elements copied into a
  // strided region of it, so no intermediate is larger than the result (padding by 2^62
  // and cropping as much again allocates nothing big).
  Shape shape;
  std::vector<int64_t> first(static_cast<size_t>(x.rank())), count(static_cast<size_t>(x.rank()));
  bool any = true;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const auto kk = static_cast<size_t>(k);
    if (interior[kk] < 0) {
      return usage_error(ErrorCode::kInvalidArgument, "pad",
                         "negative interior padding " + s(interior[kk]) + " on axis " + s(k));
    }
    const int64_t n = x.dim(k);
    // low + high + n + (n - 1) interior, overflow-checked (the operands are user input).
    int64_t inner = 0, extent = 0, step = 0;
    if (!checked_mul(n > 0 ? n - 1 : 0, interior[kk], &inner) || !checked_add(inner, n, &extent) ||
        !checked_add(extent, low[kk], &extent) || !checked_add(extent, high[kk], &extent) ||
        !checked_add(interior[kk], 1, &step)) {
      return usage_error(ErrorCode::kOverflow, "pad",
                         "axis " + s(k) + " of extent " + s(n) + " padded by low " + s(low[kk]) + ", high " +
                             s(high[kk]) + ", interior " + s(interior[kk]) + " overflows int64");
    }
    if (extent < 0) {
      return usage_error(ErrorCode::kInvalidShape, "pad",
                         "axis " + s(k) + " of extent " + s(n) + " cropped to a negative extent " + s(extent) +
                             " (low " + s(low[kk]) + ", high " + s(high[kk]) + ")");
    }
    shape.push_back(extent);
    // Kept j: 0 <= low + j step < extent, i.e. j in [ceil(-low / step), floor((extent - 1 -
    // low) / step)] within [0, n), both bounds formed in uint64 (-low and extent - 1 - low
    // can exceed int64 but not 2^64). For kept elements, j step <= (n - 1) step fits (the
    // extent check above) and their positions lie in [0, extent).
    int64_t j0 = 0, j1 = n;  // kept: [j0, j1)
    if (low[kk] < 0) {
      const uint64_t need = static_cast<uint64_t>(-(low[kk] + 1)) + 1;  // -low without overflow
      const uint64_t q = (need + static_cast<uint64_t>(step) - 1) / static_cast<uint64_t>(step);
      j0 = q >= static_cast<uint64_t>(n) ? n : static_cast<int64_t>(q);
    }
    if (extent == 0 || extent - 1 < low[kk]) {
      j1 = 0;
    } else {
      const uint64_t span = static_cast<uint64_t>(extent - 1) - static_cast<uint64_t>(low[kk]);
      const uint64_t last = span / static_cast<uint64_t>(step);
      j1 = last >= static_cast<uint64_t>(n) ? n : static_cast<int64_t>(last) + 1;
    }
    first[kk] = j0;
    count[kk] = std::max<int64_t>(0, j1 - j0);
    any = any && count[kk] > 0;
  }
  TENFERRO_TRY(Tensor fill, value.broadcast_to(shape));
  TENFERRO_TRY(Tensor out, materialize(ctx, fill));
  if (!any) return out;
  Tensor region = out, kept = x;
  for (int64_t k = 0; k < x.rank(); ++k) {
    const auto kk = static_cast<size_t>(k);
    const int64_t step = interior[kk] + 1, at = low[kk] + first[kk] * step;
    TENFERRO_TRY(kept, kept.slice(k, first[kk], first[kk] + count[kk], 1));
    TENFERRO_TRY(region, region.slice(k, at, at + (count[kk] - 1) * step + 1, step));
  }
  copy_region(ctx, kept, region);
  return out;
}

Result<Tensor> reverse(const CpuExecutionContext& ctx, const Tensor& x, Dims axes) {
  TENFERRO_TRY_VOID(check_defined(x, "reverse"));
  Tensor v = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (axes[i] == axes[j]) {
        return usage_error(ErrorCode::kInvalidArgument, "reverse", "axis " + s(axes[i]) + " is repeated in " + format_dims(axes));
      }
    }
    TENFERRO_TRY(v, v.flip(axes[i]));
  }
  return materialize(ctx, v);
}

namespace {
Result<Tensor> triangle(const CpuExecutionContext& ctx, const Tensor& x, int64_t k, bool lower, const char* op) {
  TENFERRO_TRY_VOID(check_defined(x, op));
  if (x.rank() < 2) {
    return usage_error(ErrorCode::kInvalidShape, op, "needs rank >= 2, got shape " + format_dims(x.shape()));
  }
  TENFERRO_TRY(Tensor out, materialize(ctx, x));
  // Zero the complementary triangle column by column (out is compact column-major).
  const int64_t m = x.dim(0), n = x.dim(1);
  const int64_t batch = m * n == 0 ? 0 : out.numel() / (m * n);
  const int64_t es = out.element_size();
  char* base = static_cast<char*>(out.storage()->data()) + out.offset() * es;
  // clamp(c - k, 0, m) for a column index c (0 <= c <= n), without forming c - k, which
  // overflows for offsets near the int64 limits (every offset is valid: past the matrix
  // it keeps or zeroes everything).
  auto rows_before = [m, k](int64_t c) -> int64_t {
    if (k >= c) return 0;
    if (k <= c - m) return m;
    return c - k;
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < n; ++j) {
      // Keep i with j - i <= k (lower) i.e. i >= j - k; or j - i >= k (upper) i.e. i <= j - k.
      int64_t z0 = 0, z1 = 0;  // zero rows [z0, z1)
      if (lower) {
        z0 = 0;
        z1 = rows_before(j);
      } else {
        z0 = rows_before(j + 1);
        z1 = m;
      }
      if (z1 > z0) std::memset(base + ((b * n + j) * m + z0) * es, 0, static_cast<size_t>((z1 - z0) * es));
    }
  }
  return out;
}
}  // namespace

Result<Tensor> tril(const CpuExecutionContext& ctx, const Tensor& x, int64_t k) { return triangle(ctx, x, k, true, "tril"); }
Result<Tensor> triu(const CpuExecutionContext& ctx, const Tensor& x, int64_t k) { return triangle(ctx, x, k, false, "triu"); }

Result<Tensor> extract_diag(const CpuExecutionContext& ctx, const Tensor& x, Dims axes) {
  TENFERRO_TRY_VOID(check_defined(x, "extract_diag"));
  TENFERRO_TRY(Tensor d, x.diagonal(axes));
  return materialize(ctx, d);
}

Result<Tensor> embed_diag(const CpuExecutionContext& ctx, const Tensor& v, int64_t axis) {
  TENFERRO_TRY_VOID(check_defined(v, "embed_diag"));
  if (axis < 0 || axis >= v.rank()) {
    return usage_error(ErrorCode::kOutOfRange, "embed_diag", "axis " + s(axis) + " is out of range for rank " + s(v.rank()));
  }
  Shape shape = v.shape();
  shape.insert(static_cast<size_t>(axis) + 1, v.dim(axis));
  TENFERRO_TRY(Tensor out, Tensor::zeros(v.dtype(), shape));
  TENFERRO_TRY(Tensor d, out.diagonal({axis, axis + 1}));
  copy_region(ctx, v, d);
  return out;
}

}  // namespace tenferro::cpu
