#pragma once
/// \file
/// What every tensor handle has: shared storage, a strided layout, a placement, and the
/// metadata-only view operations (shared by Tensor and TypedTensor<T>).

#include <cstdint>
#include <memory>
#include <utility>

#include "tenferro/core/placement.h"
#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"
#include "tenferro/tensor/storage.h"
#include "tenferro/tensor/view_layout.h"

namespace tenferro {

/// CRTP base of Tensor and TypedTensor<T>. `Derived` provides
/// `static int64_t element_size_of(const Derived&)` semantics through `element_size()`.
///
/// A handle is cheap to copy (a shared_ptr copy plus inline metadata for rank <= 8).
/// Copies share storage. Handles are not synchronized: concurrent reads through
/// different handles are fine; writes need a TensorViewMut (exclusive storage).
template <class Derived>
class TensorBase {
 public:
  /// False for a default-constructed (null) handle, which has no storage.
  bool defined() const noexcept { return storage_ != nullptr; }
  const Layout& layout() const noexcept { return layout_; }
  const Shape& shape() const noexcept { return layout_.shape; }
  const Strides& strides() const noexcept { return layout_.strides; }
  /// Position of element (0, ..., 0) in the storage, in elements.
  int64_t offset() const noexcept { return layout_.offset; }
  int64_t rank() const noexcept { return layout_.rank(); }
  /// Extent of `axis` (unchecked).
  int64_t dim(int64_t axis) const noexcept { return layout_.shape[static_cast<size_t>(axis)]; }
  int64_t numel() const noexcept { return layout_.element_count(); }
  Placement placement() const noexcept { return placement_; }
  const std::shared_ptr<Storage>& storage() const noexcept { return storage_; }
  /// Number of handles (tensors, views, mutable views) sharing the storage.
  long storage_use_count() const noexcept { return storage_.use_count(); }
  template <class Other>
  bool shares_storage_with(const TensorBase<Other>& other) const noexcept {
    return storage_ != nullptr && storage_ == other.storage();
  }
  /// Compact column-major (any offset).
  bool is_contiguous() const noexcept { return is_col_major_contiguous(layout_); }

  // ---- Metadata-only views: share storage, copy nothing, allocate nothing for rank <= 8.

  /// Axis i of the result is axis perm[i] of this tensor. Errors: kInvalidPermutation.
  Result<Derived> permute(Dims perm) const { return wrap_(permute_layout(layout_, perm)); }
  /// Reverses the axis order (matrix transpose for rank 2).
  Result<Derived> transpose() const {
    Layout out = layout_;
    const size_t r = out.shape.size();
    for (size_t k = 0; k < r; ++k) {
      out.shape[k] = layout_.shape[r - 1 - k];
      out.strides[k] = layout_.strides[r - 1 - k];
    }
    return derived().with_layout_(std::move(out));
  }
  /// Strided range of one axis; see slice_layout for the exact bounds. Errors: kOutOfRange,
  /// kInvalidArgument.
  Result<Derived> slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const {
    return wrap_(slice_layout(layout_, axis, start, stop, step));
  }
  /// Fixes `axis` at `index` (rank drops by one). Errors: kOutOfRange.
  Result<Derived> select(int64_t axis, int64_t index) const {
    return wrap_(select_layout(layout_, axis, index));
  }
  /// Diagonal over two or more equal-extent axes. Errors: see diagonal_layout.
  Result<Derived> diagonal(Dims axes) const { return wrap_(diagonal_layout(layout_, axes)); }
  /// numpy broadcasting with stride-0 axes. Errors: kShapeMismatch.
  Result<Derived> broadcast_to(Dims shape) const { return wrap_(broadcast_layout(layout_, shape)); }
  /// Reverses `axis`. Errors: kOutOfRange.
  Result<Derived> flip(int64_t axis) const { return wrap_(flip_layout(layout_, axis)); }
  /// Column-major reshape when the layout allows it without a copy; otherwise
  /// kIncompatibleLayout (use reshape_copy). One extent may be -1.
  Result<Derived> reshape(Dims shape) const { return wrap_(reshape_layout(layout_, shape)); }
  /// An arbitrary strided view of the same storage (like numpy's as_strided, but every
  /// reachable element is checked to lie inside the storage). Units are elements of this
  /// tensor's type. Errors: kInvalidShape, kInvalidLayout, kOverflow.
  Result<Derived> as_strided(Dims shape, Dims strides, int64_t offset) const {
    if (shape.size() != strides.size()) {
      return usage_error(ErrorCode::kInvalidLayout, "as_strided",
                         "shape " + format_dims(shape) + " and strides " + format_dims(strides) +
                             " have different ranks");
    }
    Layout out{Shape(shape.span()), Strides(strides.span()), offset};
    TENFERRO_TRY_VOID(validate_layout(out, capacity(), "as_strided"));
    return derived().with_layout_(std::move(out));
  }
  /// Storage capacity in elements of this tensor's type.
  int64_t capacity() const noexcept {
    return storage_ ? storage_->byte_size() / derived().element_size() : 0;
  }

 protected:
  TensorBase() = default;
  // Rvalue parameters: a by-value layout would be moved twice (into the parameter, then
  // into the member) on every tensor construction.
  TensorBase(std::shared_ptr<Storage>&& storage, Layout&& layout, Placement placement) noexcept
      : storage_(std::move(storage)), layout_(std::move(layout)), placement_(placement) {}

  std::shared_ptr<Storage> storage_;
  Layout layout_;
  Placement placement_ = Placement::cpu_default();

 private:
  const Derived& derived() const noexcept { return static_cast<const Derived&>(*this); }
  Result<Derived> wrap_(Result<Layout> layout) const {
    if (!layout.has_value()) return std::move(layout).error();
    return derived().with_layout_(std::move(*layout));
  }
};

}  // namespace tenferro
