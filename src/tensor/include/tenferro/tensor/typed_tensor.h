#pragma once
/// \file
/// `TypedTensor<T>`: a tensor handle with a static element type, for the seven preset
/// dtypes and for any user type (host storage only, spec 001 D1), and
/// `TensorViewMut<T>`: checked exclusive write access.

#include <complex>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenferro/core/dtype.h"
#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"
#include "tenferro/tensor/random.h"
#include "tenferro/tensor/storage.h"
#include "tenferro/tensor/tensor_base.h"

namespace tenferro {

class Tensor;
template <class T>
class TensorViewMut;

namespace detail {

/// Calls `f(position)` for every element of `layout` in column-major logical order
/// (axis 0 fastest). Positions are storage element offsets.
template <class F>
void for_each_position(const Layout& layout, F&& f) {
  const size_t rank = layout.shape.size();
  if (layout.element_count() == 0) return;
  if (rank == 0) {
    f(layout.offset);
    return;
  }
  SmallVector<int64_t, kInlineRank> index(rank, 0);
  const int64_t n0 = layout.shape[0];
  const int64_t s0 = layout.strides[0];
  int64_t base = layout.offset;
  while (true) {
    for (int64_t i = 0; i < n0; ++i) f(base + i * s0);
    size_t k = 1;
    for (; k < rank; ++k) {
      if (++index[k] < layout.shape[k]) {
        base += layout.strides[k];
        break;
      }
      base -= (layout.shape[k] - 1) * layout.strides[k];
      index[k] = 0;
    }
    if (k == rank) return;
  }
}

/// A position cursor over a layout in column-major logical order: `position()` is the
/// storage offset of the current element, `advance()` moves to the next one.
class StridedCursor {
 public:
  explicit StridedCursor(const Layout& layout) : layout_(layout), index_(layout.shape.size(), 0), pos_(layout.offset) {}
  int64_t position() const noexcept { return pos_; }
  void advance() noexcept {
    const size_t rank = layout_.shape.size();
    for (size_t k = 0; k < rank; ++k) {
      if (++index_[k] < layout_.shape[k]) {
        pos_ += layout_.strides[k];
        return;
      }
      pos_ -= (layout_.shape[k] - 1) * layout_.strides[k];
      index_[k] = 0;
    }
  }

 private:
  const Layout& layout_;
  SmallVector<int64_t, kInlineRank> index_;
  int64_t pos_;
};

/// Allocates storage for `count` elements built by `construct(T* slot, int64_t i)` in
/// order: inline when small (Note [Inline small storage]), else pooled when `pool` is
/// given, plain otherwise.
template <class T, class Construct>
Result<std::shared_ptr<Storage>> make_storage(int64_t count, const std::shared_ptr<HostBufferPool>& pool,
                                              Construct&& construct) {
  if constexpr (std::is_trivially_copyable_v<T> && alignof(T) <= 16) {
    if (InlineStorage<T>::fits(count)) return std::shared_ptr<Storage>(InlineStorage<T>::create(count, construct));
  }
  if (pool) {
    TENFERRO_TRY(auto s, PooledStorage<T>::create(*pool, count, construct));
    return std::shared_ptr<Storage>(std::move(s));
  }
  TENFERRO_TRY(auto s, ArrayStorage<T>::create(count, construct));
  return std::shared_ptr<Storage>(std::move(s));
}

/// Validates a shape for a new tensor of element size `elem` and returns its element count.
Result<int64_t> new_tensor_count(Dims shape, int64_t elem, const char* op);

template <class T>
struct ComplexComponent {};
template <class R>
struct ComplexComponent<std::complex<R>> {
  using type = R;
};

template <class T>
concept ComplexScalar = requires { typename ComplexComponent<T>::type; };

}  // namespace detail

/// A host tensor handle with element type T.
///
/// T may be one of the seven preset scalars (then the handle converts implicitly to a
/// dtype-erased `Tensor`) or any user type: storage constructs and destroys elements
/// exactly once, and only the operations a type supports are available (copying needs a
/// copyable T, arange needs arithmetic, ...). New tensors are compact column-major.
/// Copies share storage (see TensorBase); writes go through `view_mut()`.
template <class T>
class TypedTensor : public TensorBase<TypedTensor<T>> {
  using Base = TensorBase<TypedTensor<T>>;

 public:
  using value_type = T;

  /// A null handle (`defined()` is false).
  TypedTensor() = default;

  // ---- Construction -------------------------------------------------------------------

  /// Adopts `data` as the column-major elements of `shape` without copying (for
  /// T = bool the elements are copied once, since std::vector<bool> has no element
  /// storage). Errors: kInvalidShape (negative extent or data.size() != element count),
  /// kOverflow. On error `data` is dropped.
  static Result<TypedTensor> from_col_major(Dims shape, std::vector<T> data) {
    TENFERRO_TRY(int64_t count, detail::new_tensor_count(shape, sizeof(T), "from_col_major"));
    if (static_cast<int64_t>(data.size()) != count) {
      return usage_error(ErrorCode::kInvalidShape, "from_col_major",
                         "data has " + std::to_string(data.size()) + " elements but shape " +
                             format_dims(shape) + " needs " + std::to_string(count));
    }
    if constexpr (std::is_same_v<T, bool>) {
      TENFERRO_TRY(auto storage, detail::make_storage<T>(count, nullptr, [&](bool* slot, int64_t i) {
        ::new (slot) bool(data[static_cast<size_t>(i)]);
      }));
      return TypedTensor(std::move(storage), Layout::col_major(shape));
    } else {
      return TypedTensor(VectorStorage<T>::adopt(std::move(data)), Layout::col_major(shape));
    }
  }

  /// Builds a column-major tensor from row-major (C order) data: an O(n) reorder copy
  /// into a new allocation. Errors as from_col_major.
  static Result<TypedTensor> from_row_major(Dims shape, std::span<const T> data)
    requires std::copy_constructible<T>
  {
    TENFERRO_TRY(int64_t count, detail::new_tensor_count(shape, sizeof(T), "from_row_major"));
    if (static_cast<int64_t>(data.size()) != count) {
      return usage_error(ErrorCode::kInvalidShape, "from_row_major",
                         "data has " + std::to_string(data.size()) + " elements but shape " +
                             format_dims(shape) + " needs " + std::to_string(count));
    }
    // Reading the row-major data through a row-major layout in column-major order
    // produces the column-major element sequence.
    Layout src{Shape(shape.span()), row_major_strides(shape), 0};
    return copy_from_layout_(src, data.data(), nullptr);
  }
  static Result<TypedTensor> from_row_major(Dims shape, const std::vector<T>& data)
    requires std::copy_constructible<T>
  {
    return from_row_major(shape, std::span<const T>(data.data(), data.size()));
  }

  /// Every element a copy of `value`. With a pool, the storage is leased from it.
  static Result<TypedTensor> full(Dims shape, const T& value,
                                  const std::shared_ptr<HostBufferPool>& pool = nullptr)
    requires std::copy_constructible<T>
  {
    return generate_(shape, pool, "full", [&](T* slot, int64_t) { ::new (slot) T(value); });
  }
  /// Value-initialized elements (`T{}`: zero for the preset scalars).
  static Result<TypedTensor> zeros(Dims shape, const std::shared_ptr<HostBufferPool>& pool = nullptr)
    requires std::default_initializable<T>
  {
    return generate_(shape, pool, "zeros", [](T* slot, int64_t) { ::new (slot) T{}; });
  }
  /// Storage whose elements the caller overwrites before reading them: the bytes are not
  /// written here (bool elements are set to false, since other bytes are not a bool), so
  /// the pages are first touched by whoever writes them first (Note [First touch]).
  static Result<TypedTensor> uninitialized(Dims shape, const std::shared_ptr<HostBufferPool>& pool = nullptr)
    requires PresetScalar<T>
  {
    return generate_(shape, pool, "uninitialized", [](T* slot, int64_t) {
      // Preset scalars are trivially copyable and destructible: the bytes are used as
      // they are, like numpy.empty.
      if constexpr (std::is_same_v<T, bool>) *slot = false;
    });
  }
  /// Elements equal to one.
  static Result<TypedTensor> ones(Dims shape, const std::shared_ptr<HostBufferPool>& pool = nullptr)
    requires PresetScalar<T>
  {
    return generate_(shape, pool, "ones", [](T* slot, int64_t) { ::new (slot) T(1); });
  }
  /// The rank-1 tensor [0, 1, ..., n-1]. Errors: kInvalidShape (n < 0).
  static Result<TypedTensor> arange(int64_t n) requires PresetScalar<T> && (!std::is_same_v<T, bool>)
  {
    return arange(0.0, static_cast<double>(n), 1.0);
  }
  /// start, start+step, ... while below `stop` (above, for a negative step), like numpy.
  /// Errors: kInvalidArgument (step 0 or a non-finite bound), kInvalidShape.
  static Result<TypedTensor> arange(double start, double stop, double step)
    requires PresetScalar<T> && (!std::is_same_v<T, bool>)
  {
    if (step == 0.0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
      return usage_error(ErrorCode::kInvalidArgument, "arange",
                         "needs finite bounds and a nonzero step (start " + std::to_string(start) +
                             ", stop " + std::to_string(stop) + ", step " + std::to_string(step) + ")");
    }
    const double span = std::ceil((stop - start) / step);
    if (!(span < 9.0e18)) {
      return usage_error(ErrorCode::kOverflow, "arange", "element count overflows int64");
    }
    const int64_t n = span > 0 ? static_cast<int64_t>(span) : 0;
    const int64_t shape[1] = {n};
    return generate_(Dims(std::span<const int64_t>(shape)), nullptr, "arange", [&](T* slot, int64_t i) {
      ::new (slot) T(static_cast<typename ScalarTraits<T>::Real>(start + static_cast<double>(i) * step));
    });
  }
  /// Normally distributed elements (for complex types, real and imaginary parts are each
  /// N(mean, stddev)); reproducible for a seed.
  static Result<TypedTensor> random_normal(Dims shape, uint64_t seed, double mean = 0.0, double stddev = 1.0)
    requires PresetScalar<T> && (is_inexact(kDTypeOf<T>))
  {
    Rng rng(seed);
    return generate_(shape, nullptr, "random_normal", [&](T* slot, int64_t) {
      using R = typename ScalarTraits<T>::Real;
      if constexpr (detail::ComplexScalar<T>) {
        const double re = mean + stddev * rng.normal();
        const double im = mean + stddev * rng.normal();
        ::new (slot) T(static_cast<R>(re), static_cast<R>(im));
      } else {
        ::new (slot) T(static_cast<R>(mean + stddev * rng.normal()));
      }
    });
  }
  /// Uniform elements in [low, high) (integers: floor of a uniform real; bool: true with
  /// probability 1/2 and the bounds ignored); reproducible for a seed.
  static Result<TypedTensor> random_uniform(Dims shape, uint64_t seed, double low = 0.0, double high = 1.0)
    requires PresetScalar<T>
  {
    if (!(low < high) && !std::is_same_v<T, bool>) {
      return usage_error(ErrorCode::kInvalidArgument, "random_uniform",
                         "needs low < high (low " + std::to_string(low) + ", high " + std::to_string(high) + ")");
    }
    Rng rng(seed);
    return generate_(shape, nullptr, "random_uniform", [&](T* slot, int64_t) {
      using R = typename ScalarTraits<T>::Real;
      if constexpr (std::is_same_v<T, bool>) {
        ::new (slot) bool(rng.next() >> 63);
      } else if constexpr (detail::ComplexScalar<T>) {
        const double re = low + (high - low) * rng.uniform();
        const double im = low + (high - low) * rng.uniform();
        ::new (slot) T(static_cast<R>(re), static_cast<R>(im));
      } else if constexpr (std::is_integral_v<T>) {
        double v = std::floor(low + (high - low) * rng.uniform());
        ::new (slot) T(static_cast<T>(v));
      } else {
        ::new (slot) T(static_cast<R>(low + (high - low) * rng.uniform()));
      }
    });
  }

  /// Borrows foreign memory holding at least `capacity` elements as a column-major
  /// tensor of `shape`; `keep_alive` is held until the storage dies and nothing is freed.
  /// Errors: kInvalidShape, kInvalidLayout (shape needs more than `capacity` elements),
  /// kInvalidArgument (null data for a non-empty shape).
  static Result<TypedTensor> wrap(Dims shape, T* data, int64_t capacity, std::shared_ptr<const void> keep_alive) {
    return wrap_impl_(shape, data, capacity, std::move(keep_alive), true);
  }
  /// Read-only variant: mutable access fails with kReadOnly.
  static Result<TypedTensor> wrap(Dims shape, const T* data, int64_t capacity,
                                  std::shared_ptr<const void> keep_alive) {
    return wrap_impl_(shape, const_cast<T*>(data), capacity, std::move(keep_alive), false);
  }
  /// Takes ownership of `count` constructed elements at `data`: `deleter(data)` runs once
  /// when the storage dies (it must destroy the elements too). Errors as wrap; on error
  /// the deleter is still run, so nothing leaks.
  static Result<TypedTensor> adopt(Dims shape, T* data, int64_t count, std::function<void(T*)> deleter) {
    auto storage = ExternalStorage::managed(data, count * static_cast<int64_t>(sizeof(T)),
                                            [d = std::move(deleter)](void* p) { d(static_cast<T*>(p)); });
    TENFERRO_TRY(int64_t need, detail::new_tensor_count(shape, sizeof(T), "adopt"));
    if (need > count) {
      return usage_error(ErrorCode::kInvalidLayout, "adopt",
                         "shape " + format_dims(shape) + " needs " + std::to_string(need) + " elements, buffer has " +
                             std::to_string(count));
    }
    return TypedTensor(std::move(storage), Layout::col_major(shape));
  }
  /// A handle over existing storage with an explicit layout (validated against the
  /// storage size). Errors: kInvalidLayout, kInvalidShape, kOverflow.
  static Result<TypedTensor> from_storage(std::shared_ptr<Storage> storage, Layout layout,
                                          Placement placement = Placement::cpu_default()) {
    if (!storage) {
      return usage_error(ErrorCode::kInvalidArgument, "from_storage", "storage is null");
    }
    TENFERRO_TRY_VOID(validate_layout(layout, storage->byte_size() / static_cast<int64_t>(sizeof(T)), "from_storage"));
    TypedTensor t(std::move(storage), std::move(layout));
    t.placement_ = placement;
    return t;
  }

  // ---- Element access -----------------------------------------------------------------

  static constexpr int64_t element_size() noexcept { return static_cast<int64_t>(sizeof(T)); }
  /// Storage start (element 0 of the storage, not of the view).
  const T* storage_data() const noexcept { return this->storage_ ? static_cast<const T*>(this->storage_->data()) : nullptr; }
  /// Pointer to logical element (0, ..., 0); meaningful only for a non-empty tensor
  /// (nullptr for a null handle).
  const T* data() const noexcept {
    return this->storage_ ? storage_data() + this->layout_.offset : nullptr;
  }
  /// Checked pointer to one element. Errors: kInvalidShape (rank), kOutOfRange.
  Result<const T*> ptr(Dims index) const {
    TENFERRO_TRY(int64_t pos, checked_offset(this->layout_, index, "at"));
    return storage_data() + pos;
  }
  /// Checked copy of one element. Errors as ptr.
  Result<T> get(Dims index) const requires std::copy_constructible<T>
  {
    TENFERRO_TRY(const T* p, ptr(index));
    return *p;
  }
  /// Calls `f(const T&)` for every element in column-major logical order.
  template <class F>
  void for_each(F&& f) const {
    const T* base = storage_data();
    detail::for_each_position(this->layout_, [&](int64_t pos) { f(base[pos]); });
  }

  // ---- Materialization ----------------------------------------------------------------

  /// This handle if already compact column-major, else a compact copy.
  Result<TypedTensor> contiguous() const requires std::copy_constructible<T>
  {
    if (this->is_contiguous()) return *this;
    return to_col_major();
  }
  /// Always a fresh compact column-major copy (a deep clone; drawn from `pool` if given).
  Result<TypedTensor> to_col_major(const std::shared_ptr<HostBufferPool>& pool = nullptr) const
    requires std::copy_constructible<T>
  {
    return copy_from_layout_(this->layout_, storage_data(), pool);
  }
  /// Deep copy into plain storage (same as to_col_major()).
  Result<TypedTensor> clone() const requires std::copy_constructible<T>
  {
    return to_col_major();
  }
  /// reshape, copying first when the layout does not allow a view (explicit O(n) copy).
  Result<TypedTensor> reshape_copy(Dims shape) const requires std::copy_constructible<T>
  {
    auto view = this->reshape(shape);
    if (view.has_value() || view.error().code() != ErrorCode::kIncompatibleLayout) return view;
    TENFERRO_TRY(TypedTensor compact, to_col_major());
    return compact.reshape(shape);
  }

  // ---- Complex components ---------------------------------------------------------------

  /// View of the real parts (shares storage). Only for std::complex element types.
  auto real() const requires detail::ComplexScalar<T>
  {
    return component_(false);
  }
  /// View of the imaginary parts (shares storage).
  auto imag() const requires detail::ComplexScalar<T>
  {
    return component_(true);
  }

  // ---- Mutation ---------------------------------------------------------------------------

  /// Exclusive write access. Errors: kNotExclusive (another handle shares the storage),
  /// kReadOnly (wrapped read-only memory), kIncompatibleLayout (the view may alias
  /// elements, e.g. broadcast), kInvalidArgument (null handle).
  Result<TensorViewMut<T>> view_mut();

 private:
  friend class TensorBase<TypedTensor<T>>;
  friend class Tensor;
  template <class U>
  friend class TypedTensor;

  TypedTensor(std::shared_ptr<Storage> storage, Layout layout) noexcept
      : Base(std::move(storage), std::move(layout), Placement::cpu_default()) {}
  TypedTensor(std::shared_ptr<Storage> storage, Layout layout, Placement placement) noexcept
      : Base(std::move(storage), std::move(layout), placement) {}

  Result<TypedTensor> with_layout_(Layout layout) const {
    return TypedTensor(this->storage_, std::move(layout), this->placement_);
  }

  template <class Construct>
  static Result<TypedTensor> generate_(Dims shape, const std::shared_ptr<HostBufferPool>& pool, const char* op,
                                       Construct&& construct) {
    TENFERRO_TRY(int64_t count, detail::new_tensor_count(shape, sizeof(T), op));
    TENFERRO_TRY(auto storage, detail::make_storage<T>(count, pool, construct));
    return TypedTensor(std::move(storage), Layout::col_major(shape));
  }

  static Result<TypedTensor> copy_from_layout_(const Layout& src, const T* base,
                                               const std::shared_ptr<HostBufferPool>& pool) {
    TENFERRO_TRY(int64_t count, detail::new_tensor_count(src.shape, sizeof(T), "to_col_major"));
    detail::StridedCursor cursor(src);
    TENFERRO_TRY(auto storage, detail::make_storage<T>(count, pool, [&](T* slot, int64_t) {
      ::new (slot) T(base[cursor.position()]);
      cursor.advance();
    }));
    return TypedTensor(std::move(storage), Layout::col_major(src.shape));
  }

  static Result<TypedTensor> wrap_impl_(Dims shape, T* data, int64_t capacity, std::shared_ptr<const void> keep_alive,
                                        bool writable) {
    TENFERRO_TRY(int64_t need, detail::new_tensor_count(shape, sizeof(T), "wrap"));
    if (capacity < need || capacity < 0) {
      return usage_error(ErrorCode::kInvalidLayout, "wrap",
                         "shape " + format_dims(shape) + " needs " + std::to_string(need) +
                             " elements, buffer has " + std::to_string(capacity));
    }
    if (data == nullptr && need > 0) {
      return usage_error(ErrorCode::kInvalidArgument, "wrap", "data pointer is null for shape " + format_dims(shape));
    }
    int64_t bytes = 0;
    if (!checked_mul(capacity, sizeof(T), &bytes)) {
      return usage_error(ErrorCode::kOverflow, "wrap", "capacity " + std::to_string(capacity) + " overflows bytes");
    }
    auto storage = ExternalStorage::foreign(data, bytes, std::move(keep_alive), writable);
    return TypedTensor(std::move(storage), Layout::col_major(shape));
  }

  auto component_(bool imag) const {
    using R = typename detail::ComplexComponent<T>::type;
    auto layout = complex_component_layout(this->layout_, imag);
    if (!layout.has_value()) return Result<TypedTensor<R>>(std::move(layout).error());
    return Result<TypedTensor<R>>(TypedTensor<R>(this->storage_, std::move(*layout), this->placement_));
  }
};

/// Checked, exclusive write access to a tensor's elements.
///
/// Created by `TypedTensor<T>::view_mut()` / `Tensor::view_mut<T>()` when the storage
/// has exactly one handle. The view holds the storage itself, so it stays valid even if
/// the tensor it came from dies. Every checked write re-verifies exclusivity: if another
/// handle to the storage appears (a copy of the source tensor, say), writes fail with
/// kNotExclusive and write nothing. Move-only; not thread-safe.
template <class T>
class TensorViewMut {
 public:
  TensorViewMut(TensorViewMut&&) noexcept = default;
  TensorViewMut& operator=(TensorViewMut&&) noexcept = default;
  TensorViewMut(const TensorViewMut&) = delete;
  TensorViewMut& operator=(const TensorViewMut&) = delete;

  const Layout& layout() const noexcept { return layout_; }
  const Shape& shape() const noexcept { return layout_.shape; }
  int64_t numel() const noexcept { return layout_.element_count(); }
  /// True while no handle other than the source tensor shares the storage.
  bool exclusive() const noexcept { return storage_.use_count() <= 2; }

  /// Unchecked pointer to logical element (0, ..., 0). The caller keeps exclusivity.
  T* data() noexcept { return base_() + layout_.offset; }
  /// Checked pointer to one element. Errors: kNotExclusive, kInvalidShape, kOutOfRange.
  Result<T*> ptr(Dims index) {
    TENFERRO_TRY_VOID(check_exclusive_("ptr"));
    TENFERRO_TRY(int64_t pos, checked_offset(layout_, index, "ptr"));
    return base_() + pos;
  }
  /// Sets one element. Errors as ptr; nothing is written on error.
  Result<void> set(Dims index, T value) {
    TENFERRO_TRY_VOID(check_exclusive_("set"));
    TENFERRO_TRY(int64_t pos, checked_offset(layout_, index, "set"));
    base_()[pos] = std::move(value);
    return ok();
  }
  /// Assigns `value` to every element. Errors: kNotExclusive.
  Result<void> fill(const T& value) {
    TENFERRO_TRY_VOID(check_exclusive_("fill"));
    T* base = base_();
    detail::for_each_position(layout_, [&](int64_t pos) { base[pos] = value; });
    return ok();
  }
  /// Copies `src` element-wise (any layout). Errors: kShapeMismatch, kNotExclusive;
  /// checked before the first write.
  Result<void> copy_from(const TypedTensor<T>& src) {
    TENFERRO_TRY_VOID(check_exclusive_("copy_from"));
    if (!(src.shape() == layout_.shape)) {
      return usage_error(ErrorCode::kShapeMismatch, "copy_from",
                         "source shape " + format_dims(src.shape()) + " differs from destination shape " +
                             format_dims(layout_.shape));
    }
    // Walk destination and source in the same column-major order.
    T* dst = base_();
    const T* sbase = src.storage_data();
    detail::StridedCursor cursor(src.layout());
    detail::for_each_position(layout_, [&](int64_t pos) {
      dst[pos] = sbase[cursor.position()];
      cursor.advance();
    });
    return ok();
  }

 private:
  friend class TypedTensor<T>;
  friend class Tensor;
  TensorViewMut(std::shared_ptr<Storage> storage, Layout layout) noexcept
      : storage_(std::move(storage)), layout_(std::move(layout)) {}
  T* base_() const noexcept { return static_cast<T*>(storage_->data()); }
  Result<void> check_exclusive_(const char* op) const {
    if (!exclusive()) {
      return usage_error(ErrorCode::kNotExclusive, op,
                         "storage is now shared by " + std::to_string(storage_.use_count() - 1) +
                             " handles besides this mutable view");
    }
    return ok();
  }

  std::shared_ptr<Storage> storage_;
  Layout layout_;
};

namespace detail {
/// Shared checks of view_mut for TypedTensor and Tensor.
Result<void> check_mutable(const std::shared_ptr<Storage>& storage, const Layout& layout, const char* op);
}  // namespace detail

template <class T>
Result<TensorViewMut<T>> TypedTensor<T>::view_mut() {
  TENFERRO_TRY_VOID(detail::check_mutable(this->storage_, this->layout_, "view_mut"));
  return TensorViewMut<T>(this->storage_, this->layout_);
}

}  // namespace tenferro
