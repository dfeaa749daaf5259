#include "common.h"

#include <cmath>

#include "tenferro/cpu/elementwise.h"

namespace tenferro::linalg {

std::string_view op_name(Op op) noexcept {
  switch (op) {
    case Op::kSvd: return "svd";
    case Op::kQr: return "qr";
    case Op::kQrPivoted: return "qr_pivoted";
    case Op::kEigh: return "eigh";
    case Op::kEig: return "eig";
    case Op::kCholesky: return "cholesky";
    case Op::kLu: return "lu";
    case Op::kLuSolve: return "lu_solve";
    case Op::kSolve: return "solve";
    case Op::kTriangularSolve: return "triangular_solve";
    case Op::kInv: return "inv";
    case Op::kDet: return "det";
    case Op::kLstsq: return "lstsq";
  }
  return "unknown";
}

// Note [Linalg routes]: one pure function decides how a call runs; the operation then
// executes its answer (common.h run_items). Two choices:
//  - kernel: the engine's small-matrix kernel when the operation has one for the dtype
//    and request and the items are square of extent <= small_max_dim (Note
//    [Small-matrix kernels]); for large items the recursive LU (Note [Recursive LU]) or
//    the staged SVD / eigh (Note [Engine back-transformation]) where they apply; LAPACK
//    otherwise.
//  - fan-out (ARCHITECTURE §3.7, one level): outer-parallel lanes (each item on one
//    thread, OpenBLAS set to one thread) or items one after another, each LAPACK call
//    using the context's threads through OpenBLAS ("provider items"). Never both.
// kAuto goes outer-parallel when there are at least two items, more than one thread,
// and each item is small (the small kernel, or fewer multiply-adds than
// outer_parallel_flops, the same threshold batched matrix products use: below it one
// item does not keep several threads busy); otherwise provider items. Forced policies:
// kSequential (one thread, one item at a time), kOuterParallel (lanes even for large
// items), kProviderItems (LAPACK for every item, even small ones); kWholeBatchVendor is
// kUnsupported (LAPACK has no batch entry point). Precedence of the settings:
// per-operation options > the context's (scoped override > engine default).
Result<Route> decide_route(const RouteInput& in, const cpu::BatchSettings& settings, const LinalgOptions& options) {
  const BatchPolicy policy = options.batch_policy.value_or(settings.policy);
  const int64_t outer_flops = options.outer_parallel_flops.value_or(settings.outer_parallel_flops);
  const int64_t small_max = options.small_max_dim.value_or(kSmallMaxDim);
  const int threads = std::max(1, in.threads);
  const int64_t k = std::min(in.m, in.n);
  int64_t work = in.m * in.n * k;
  if (in.dtype == DType::kC64 || in.dtype == DType::kC128) work *= 4;
  Route r;
  const bool small = in.small_kernel_available && in.m == in.n && in.n <= small_max;
  // Note [Recursive LU] (common.h): large LU factorizations on the engine's GEMM.
  const bool lu_op = in.op == Op::kLu || in.op == Op::kSolve || in.op == Op::kInv || in.op == Op::kDet;
  const bool recursive = lu_op && !small && k >= kRecursiveLuMinDim;
  // Note [Engine back-transformation] (common.h): svd / eigh vectors of large items.
  const bool staged =
      in.staged_available && !small && (in.op == Op::kSvd || in.op == Op::kEigh) && k >= kStagedMinDim;
  const Kernel large = recursive ? Kernel::kRecursiveLu : staged ? Kernel::kStaged : Kernel::kLapack;
  r.kernel = small ? Kernel::kSmall : large;
  const int lanes = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(in.items, 1)));
  switch (policy) {
    case BatchPolicy::kWholeBatchVendor:
      return usage_error(ErrorCode::kUnsupported, std::string(op_name(in.op)).c_str(),
                         "batch policy whole_batch_vendor: LAPACK has no batched entry point (use auto, sequential, "
                         "outer_parallel or provider_items)");
    case BatchPolicy::kSequential:
      r.policy = BatchPolicy::kSequential;
      r.reason = "forced sequential: one item at a time on one thread";
      return r;
    case BatchPolicy::kOuterParallel:
      r.policy = lanes > 1 ? BatchPolicy::kOuterParallel : BatchPolicy::kSequential;
      r.lanes = lanes;
      r.reason = "forced outer_parallel: items split over the context's workers, one thread each";
      return r;
    case BatchPolicy::kProviderItems:
      r.kernel = large;
      r.policy = BatchPolicy::kProviderItems;
      r.provider_threads = threads;
      r.reason = "forced provider_items: one LAPACK call after another, each with the context's threads";
      return r;
    case BatchPolicy::kAuto: break;
  }
  if (in.items >= 2 && threads > 1 && (small || work < outer_flops)) {
    r.policy = BatchPolicy::kOuterParallel;
    r.lanes = lanes;
    r.reason = small ? "auto: small-matrix kernel, items split over the workers"
                     : "auto: items below outer_parallel_flops, split over the workers";
    return r;
  }
  if (threads == 1 || small) {
    r.policy = BatchPolicy::kSequential;
    r.reason = threads == 1 ? "auto: one thread" : "auto: one small item";
    return r;
  }
  r.policy = BatchPolicy::kProviderItems;
  r.provider_threads = threads;
  if (r.kernel == Kernel::kStaged && k < kStagedThreadedLapackMinDim) {
    r.provider_threads = 1;
    r.reason = "auto: large items one after another; LAPACK's reduction on one thread (smaller than "
               "kStagedThreadedLapackMinDim), the back-transformation's products on the context's threads";
    return r;
  }
  r.reason = in.items >= 2 ? "auto: large items, each LAPACK call uses the context's threads"
                           : "auto: one item, LAPACK uses the context's threads";
  return r;
}

Workspace::Workspace() : impl_(std::make_unique<Impl>()) {}
Workspace::~Workspace() = default;
int64_t Workspace::held_bytes() const noexcept { return impl_->bytes; }
int64_t Workspace::queries() const noexcept { return static_cast<int64_t>(impl_->entries.size()); }
int64_t Workspace::hits() const noexcept { return impl_->hits; }
int64_t Workspace::misses() const noexcept { return impl_->misses; }
int64_t Workspace::evictions() const noexcept { return impl_->evictions; }
void Workspace::clear() noexcept {
  if (!impl_->lent) {
    impl_->buffer.reset();
    impl_->data = nullptr;
    impl_->bytes = 0;
  }
  impl_->entries.clear();
  impl_->next = 0;
}

namespace detail {

DType real_dtype(DType dt) noexcept {
  switch (dt) {
    case DType::kC64: return DType::kF32;
    case DType::kC128: return DType::kF64;
    default: return dt;
  }
}

DType complex_dtype(DType dt) noexcept {
  switch (dt) {
    case DType::kF32: return DType::kC64;
    case DType::kF64: return DType::kC128;
    default: return dt;
  }
}

Result<void> check_matrix(const Tensor& a, const char* op, bool square) {
  if (!a.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined tensor");
  TENFERRO_TRY_VOID(dispatch(a.dtype(), op, [](auto) { return ok(); }));  // a LAPACK dtype, named by op
  if (a.rank() < 2) {
    return usage_error(ErrorCode::kInvalidShape, op,
                       "needs a matrix in the last two axes (rank >= 2), got shape " + format_dims(a.shape()));
  }
  const int64_t m = a.dim(a.rank() - 2), n = a.dim(a.rank() - 1);
  if (square && m != n) {
    return usage_error(ErrorCode::kInvalidShape, op, "needs square matrices, got shape " + format_dims(a.shape()));
  }
  constexpr int64_t kMax = std::numeric_limits<lapack_int>::max() / 2;
  if (m > kMax || n > kMax) {
    return usage_error(ErrorCode::kOverflow, op,
                       "matrix extents " + format_dims(a.shape()) + " exceed LAPACK's 32-bit integers");
  }
  return ok();
}

namespace {

// Calls f(i, j) for the entries (i, j) of a rows x cols item that `part` names.
template <class F>
void for_each_part(int64_t rows, int64_t cols, Part part, F&& f) {
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t lo = part == Part::kLower ? std::min(j, rows) : 0;
    const int64_t hi = part == Part::kUpper ? std::min(j + 1, rows) : rows;
    for (int64_t i = lo; i < hi; ++i) f(i, j);
  }
}

template <class T>
bool finite(const T& v) {
  if constexpr (kIsComplex<T>) {
    return std::isfinite(v.real()) && std::isfinite(v.imag());
  } else {
    return std::isfinite(v);
  }
}

template <class T>
T times_pow2(T v, int e) {
  if constexpr (kIsComplex<T>) {
    return {std::ldexp(v.real(), e), std::ldexp(v.imag(), e)};
  } else {
    return std::ldexp(v, e);
  }
}

// Scans one item: its largest magnitude (max(|re|, |im|) for complex: within sqrt(2) of
// |z|, enough to choose a power of two) over the entries `part` names, or the first
// entry that is not finite (*bad_i >= 0 then). Items stored as one contiguous block are
// read in a single linear pass.
template <class T>
Real<T> scan_item(const Mat<const T>& x, int64_t rows, int64_t cols, Part part, int64_t* bad_i, int64_t* bad_j) {
  using R = Real<T>;
  const auto mag = [](const T& v) {
    if constexpr (kIsComplex<T>) {
      return std::max(std::abs(v.real()), std::abs(v.imag()));
    } else {
      return std::abs(v);
    }
  };
  R amax = 0;
  const bool col_block = x.rs == 1 && x.cs == rows, row_block = x.cs == 1 && x.rs == cols;
  if (part == Part::kAll && (col_block || row_block)) {
    // The block as reals (a complex entry's magnitude bound is its larger component):
    // eight independent lanes of maxima, and of v - v, which is 0 for finite values and
    // NaN otherwise; the rare non-finite entry is then located.
    const int64_t n = rows * cols;
    const int64_t nr = n * (kIsComplex<T> ? 2 : 1);
    const R* r = reinterpret_cast<const R*>(x.p);
    constexpr int kLanes = 8;
    R m[kLanes] = {}, z[kLanes] = {};
    int64_t k = 0;
    for (; k + kLanes <= nr; k += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const R v = r[k + l], av = std::abs(v);
        m[l] = av > m[l] ? av : m[l];
        z[l] += v - v;
      }
    }
    R zsum = 0;
    for (; k < nr; ++k) {
      const R av = std::abs(r[k]);
      amax = av > amax ? av : amax;
      zsum += r[k] - r[k];
    }
    for (int l = 0; l < kLanes; ++l) {
      amax = m[l] > amax ? m[l] : amax;
      zsum += z[l];
    }
    if (zsum == 0) return amax;
    for (int64_t e = 0; e < n; ++e) {
      if (!finite(x.p[e])) {
        *bad_i = col_block ? e % rows : e / cols;
        *bad_j = col_block ? e / rows : e % cols;
        break;
      }
    }
    return amax;
  }
  for_each_part(rows, cols, part, [&](int64_t i, int64_t j) {
    if (*bad_i >= 0) return;
    const T v = x(i, j);
    if (!finite(v)) {
      *bad_i = i;
      *bad_j = j;
      return;
    }
    amax = std::max(amax, mag(v));
  });
  return amax;
}

Error non_finite_error(const char* op, const Batch& batch, int64_t it, const char* what, int64_t i, int64_t j) {
  return item_error(ErrorCode::kInvalidArgument, op, batch, it,
                    std::string(what) + " holds a NaN or an infinity (at row " + std::to_string(i) + ", column " +
                        std::to_string(j) + ")");
}

// Every item's largest magnitude (as scan_item) and the first item with a non-finite
// entry (`bad_item` < 0: none). Items whose elements lie closer together across items
// than within one (batch-fastest layouts: a column-major [batch, n, n] tensor) are read
// entry by entry across all items, in memory order (item by item, that read would touch
// each cache line once per item). The scan is one read of the input at memory speed: 10000
// QRs of 8 x 8 (`tenferro bench linalg --only "qr batched"`, alternating, Zen 4,
// 2026-12-03) 3.4-4.6 ms without it, 3.8-5.3 with it; a per-entry branch and per-item
// index arithmetic had made that 4.7-6.9.
template <class T>
struct ItemScan {
  std::vector<Real<T>> amax;  // -1 for an item with a non-finite entry
  int64_t bad_item = -1, bad_i = -1, bad_j = -1;

  ItemScan(const Tensor& a, const Batch& batch, Part part, bool stop_at_bad, bool item_by_item = false) {
    const int64_t rows = a.dim(a.rank() - 2), cols = a.dim(a.rank() - 1);
    amax.assign(static_cast<size_t>(batch.count), Real<T>(0));
    const Mat<const T> first = item_mat<const T>(a, batch, 0);
    const int64_t step = batch.count > 1 ? batch.offset(1, a) - batch.offset(0, a) : 0;
    const bool across = !item_by_item && batch.count > 1 && batch.shape.size() == 1 &&
                        std::abs(step) < std::abs(first.rs) && std::abs(step) < std::abs(first.cs);
    if (!across) {
      const bool one_axis = batch.shape.size() == 1;  // item pointers by a step, no index arithmetic
      for (int64_t it = 0; it < batch.count; ++it) {
        int64_t bi = -1, bj = -1;
        const Mat<const T> x =
            one_axis ? Mat<const T>{first.p + it * step, first.rs, first.cs} : item_mat<const T>(a, batch, it);
        amax[static_cast<size_t>(it)] = scan_item<T>(x, rows, cols, part, &bi, &bj);
        if (bi >= 0) {
          amax[static_cast<size_t>(it)] = -1;  // a non-finite entry
          if (bad_item < 0) bad_item = it, bad_i = bi, bad_j = bj;
          if (stop_at_bad) return;
        }
      }
      return;
    }
    // One batch axis of stride `step`: entry (i, j) of item `it` at first(i, j) + it * step.
    // Branch-free maxima (vectorized for unit steps); a non-finite entry anywhere sends
    // the scan back item by item, which finds and marks it.
    constexpr Real<T> kMax = std::numeric_limits<Real<T>>::max();
    bool any_bad = false;
    Real<T>* m = amax.data();
    const auto mag = [](const T& v) {
      if constexpr (kIsComplex<T>) {
        return std::max(std::abs(v.real()), std::abs(v.imag()));
      } else {
        return std::abs(v);
      }
    };
    const auto not_finite = [](const T& v) {
      if constexpr (kIsComplex<T>) {
        return !(std::abs(v.real()) <= kMax) | !(std::abs(v.imag()) <= kMax);  // NaN fails <=
      } else {
        return !(std::abs(v) <= kMax);
      }
    };
    for_each_part(rows, cols, part, [&](int64_t i, int64_t j) {
      const T* p = &first(i, j);
      bool bad = false;
      if (step == 1) {
        for (int64_t it = 0; it < batch.count; ++it) {
          const Real<T> av = mag(p[it]);
          m[it] = av > m[it] ? av : m[it];
          bad |= not_finite(p[it]);
        }
      } else {
        for (int64_t it = 0; it < batch.count; ++it) {
          const Real<T> av = mag(p[it * step]);
          m[it] = av > m[it] ? av : m[it];
          bad |= not_finite(p[it * step]);
        }
      }
      any_bad = any_bad || bad;
    });
    if (any_bad) *this = ItemScan(a, batch, part, stop_at_bad, /*item_by_item=*/true);
  }
};

}  // namespace

Result<void> check_finite(const Tensor& a, const char* op, const char* what, Part part) {
  const Batch batch(batch_dims(a));
  if (batch.count == 0) return ok();
  return dispatch(a.dtype(), op, [&](auto t) -> Result<void> {
    const ItemScan<decltype(t)> scan(a, batch, part, true);
    if (scan.bad_item >= 0) return non_finite_error(op, batch, scan.bad_item, what, scan.bad_i, scan.bad_j);
    return ok();
  });
}

Result<SafeRange> scale_to_safe_range(const Tensor& a, Part part, const PoolPtr& pool, const char* op,
                                      const char* what) {
  const Batch batch(batch_dims(a));
  const int64_t rows = a.dim(a.rank() - 2), cols = a.dim(a.rank() - 1);
  SafeRange r;
  if (batch.count == 0) return r;
  TENFERRO_TRY_VOID(dispatch(a.dtype(), "linalg", [&](auto t) -> Result<void> {
    using T = decltype(t);
    using R = Real<T>;
    const R small = std::sqrt(std::numeric_limits<R>::min()) / std::numeric_limits<R>::epsilon();
    const ItemScan<T> scan(a, batch, part, op != nullptr);
    if (scan.bad_item >= 0 && op != nullptr) {
      return non_finite_error(op, batch, scan.bad_item, what, scan.bad_i, scan.bad_j);
    }
    for (int64_t it = 0; it < batch.count; ++it) {
      const R amax = scan.amax[static_cast<size_t>(it)];
      // Items with a non-finite entry (when not an error) keep exponent 0.
      if (!(amax > 0) || (amax >= small && amax <= 1 / small)) continue;
      if (r.exponent.empty()) r.exponent.assign(static_cast<size_t>(batch.count), 0);  // the first one
      r.exponent[static_cast<size_t>(it)] = -std::ilogb(amax);                         // amax to [1, 2)
    }
    if (r.exponent.empty()) return ok();
    TENFERRO_TRY(r.scaled, alloc_items(a.dtype(), batch.shape, rows, cols, pool));
    for (int64_t it = 0; it < batch.count; ++it) {
      const Mat<const T> x = item_mat<const T>(a, batch, it);
      const Mat<T> y = item_mat<T>(r.scaled, batch, it);
      const int e = r.exponent[static_cast<size_t>(it)];
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < rows; ++i) y(i, j) = times_pow2(x(i, j), e);
    }
    return ok();
  }));
  return r;
}

void unscale_items(const Tensor& t, const SafeRange& r, int item_rank, int64_t power) {
  if (!r.scaled.defined() || !t.defined()) return;
  const int64_t batch_rank = t.rank() - item_rank;
  const Batch batch(Dims(std::span<const int64_t>(t.shape().data(), static_cast<size_t>(batch_rank))));
  const int64_t rows = item_rank >= 1 ? t.dim(batch_rank) : 1, cols = item_rank == 2 ? t.dim(batch_rank + 1) : 1;
  (void)dispatch(t.dtype(), "linalg", [&](auto z) -> Result<void> {
    using T = decltype(z);
    for (int64_t it = 0; it < batch.count; ++it) {
      // Exponents are at most ~1100 and |power| a matrix extent at most: no int64 overflow;
      // past +-100000 ldexp saturates (0 or infinity) as it would for the exact shift.
      const int64_t shift = -power * r.exponent[static_cast<size_t>(it)];
      if (shift == 0) continue;
      const int e = static_cast<int>(std::clamp<int64_t>(shift, -100000, 100000));
      auto* base = static_cast<T*>(t.storage()->data()) + batch.offset(it, t);
      const int64_t rs = item_rank >= 1 ? t.strides()[static_cast<size_t>(batch_rank)] : 0;
      const int64_t cs = item_rank == 2 ? t.strides()[static_cast<size_t>(batch_rank + 1)] : 0;
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < rows; ++i) base[i * rs + j * cs] = times_pow2(base[i * rs + j * cs], e);
    }
    return ok();
  });
}

Result<void> check_same_dtype(const Tensor& x, const Tensor& y, const char* op) {
  if (x.dtype() != y.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "operand dtypes differ: " + std::string(dtype_name(x.dtype())) + " and " +
                           std::string(dtype_name(y.dtype())) + " (convert explicitly)");
  }
  return ok();
}

Shape with_matrix(Dims batch, int64_t rows, int64_t cols) {
  Shape s(batch.span());
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

Shape with_vector(Dims batch, int64_t len) {
  Shape s(batch.span());
  s.push_back(len);
  return s;
}

Result<Tensor> alloc_items(DType dt, Dims batch, int64_t rows, int64_t cols, const PoolPtr& pool) {
  const Shape shape = cols < 0 ? with_vector(batch, rows) : with_matrix(batch, rows, cols);
  TENFERRO_TRY(const int64_t count, checked_element_count(shape, "linalg"));
  TENFERRO_TRY(Tensor buffer, Tensor::uninitialized(dt, {count}, pool));
  return Tensor::from_storage(dt, buffer.storage(), cpu::dot_general_result_layout(shape, batch.size()));
}

std::string Batch::index(int64_t item) const {
  Shape idx(shape.size(), 0);
  for (size_t j = 0; j < shape.size(); ++j) {
    idx[j] = item % shape[j];
    item /= shape[j];
  }
  return format_dims(idx);
}

Result<Scratch> Scratch::make(int64_t bytes, const PoolPtr& pool, Workspace* ws) {
  Scratch s;
  if (bytes <= 0) return s;
  if (ws != nullptr && !ws->impl().lent) {
    Workspace::Impl& w = ws->impl();
    if (w.bytes < bytes) {
      std::unique_ptr<std::byte[]> grown(new (std::nothrow) std::byte[static_cast<size_t>(bytes) + 64]);
      if (grown == nullptr) {
        return usage_error(ErrorCode::kAllocationFailed, "linalg", "workspace of " + std::to_string(bytes) + " bytes");
      }
      w.buffer = std::move(grown);
      const auto addr = reinterpret_cast<uintptr_t>(w.buffer.get());
      w.data = w.buffer.get() + ((64 - addr % 64) % 64);
      w.bytes = bytes;
    }
    w.lent = true;
    s.lent_ = &w;
    s.data_ = w.data;
    return s;
  }
  if (pool != nullptr) {
    TENFERRO_TRY(s.lease_, pool->acquire(bytes));
    s.data_ = static_cast<std::byte*>(s.lease_.data());
    return s;
  }
  // 64 bytes of slack so the carved arrays can start on a 64-byte boundary.
  s.own_.reset(new (std::nothrow) std::byte[static_cast<size_t>(bytes) + 64]);
  if (s.own_ == nullptr) {
    return usage_error(ErrorCode::kAllocationFailed, "linalg", "scratch of " + std::to_string(bytes) + " bytes");
  }
  const auto addr = reinterpret_cast<uintptr_t>(s.own_.get());
  s.data_ = s.own_.get() + ((64 - addr % 64) % 64);
  return s;
}

Error item_error(ErrorCode code, const char* op, const Batch& batch, int64_t item, const std::string& what) {
  std::string msg = what;
  if (batch.count > 1 || !batch.shape.empty()) {
    msg += " at batch item " + std::to_string(item) + " of " + std::to_string(batch.count) + " (batch index " +
           batch.index(item) + ")";
  }
  return usage_error(code, op, std::move(msg));
}

Result<Route> route_for(const CpuExecutionContext& ctx, Op op, DType dt, int64_t m, int64_t n, int64_t items,
                        bool small_available, const LinalgOptions& options, bool staged_available) {
  RouteInput in;
  in.staged_available = staged_available;
  in.op = op;
  in.dtype = dt;
  in.m = m;
  in.n = n;
  in.items = items;
  in.threads = ctx.threads();
  in.small_kernel_available = small_available;
  return decide_route(in, ctx.batch(), options);
}

Result<void> check_destination(const Tensor& out, DType dt, Dims shape, const char* op) {
  if (!out.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined destination");
  if (out.dtype() != dt) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "destination dtype " + std::string(dtype_name(out.dtype())) + ", result dtype " +
                           std::string(dtype_name(dt)));
  }
  if (Dims(out.shape()).span().size() != shape.size() ||
      !std::equal(out.shape().begin(), out.shape().end(), shape.begin())) {
    return usage_error(ErrorCode::kShapeMismatch, op,
                       "destination shape " + format_dims(out.shape()) + ", result shape " + format_dims(shape));
  }
  return tenferro::detail::check_mutable(out.storage(), out.layout(), op);
}

Result<Shape> broadcast_batches(Tensor& a, Tensor& b, const char* op) {
  TENFERRO_TRY(Shape batch, cpu::broadcast_shapes(batch_dims(a), batch_dims(b), op));
  const Shape fa = with_matrix(batch, a.dim(a.rank() - 2), a.dim(a.rank() - 1));
  const Shape fb = with_matrix(batch, b.dim(b.rank() - 2), b.dim(b.rank() - 1));
  if (a.shape() != fa) {
    TENFERRO_TRY(a, a.broadcast_to(fa));
  }
  if (b.shape() != fb) {
    TENFERRO_TRY(b, b.broadcast_to(fb));
  }
  return batch;
}

}  // namespace detail
}  // namespace tenferro::linalg
