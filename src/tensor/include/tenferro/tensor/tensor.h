#pragma once
/// \file
/// `Tensor`: the dtype-erased tensor handle, host export/import and printing.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tenferro/core/dtype.h"
#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"
#include "tenferro/tensor/tensor_base.h"
#include "tenferro/tensor/typed_tensor.h"

namespace tenferro {

/// How printing abbreviates large tensors.
struct PrintOptions {
  /// Tensors with more elements than this are summarized with "..." per axis.
  int64_t threshold = 1000;
  /// Leading and trailing entries kept per axis when summarizing.
  int64_t edge_items = 3;
  /// Significant digits of floating values.
  int precision = 6;
};

/// A dtype-erased tensor handle: shared storage + layout + dtype + placement.
///
/// Cheap to copy (copies share storage); views are metadata-only (TensorBase). New
/// tensors are compact column-major. Typed access goes through `typed<T>()`, `get<T>()`
/// and `view_mut<T>()`, which check the dtype. Not synchronized: concurrent reads are
/// fine, writes need exclusive storage (view_mut).
class Tensor : public TensorBase<Tensor> {
 public:
  /// A null handle (`defined()` is false).
  Tensor() = default;
  /// Erases the element type of a typed handle (no copy; shares storage).
  template <PresetScalar T>
  Tensor(const TypedTensor<T>& typed)  // NOLINT(google-explicit-constructor)
      : TensorBase<Tensor>(std::shared_ptr<Storage>(typed.storage()), Layout(typed.layout()), typed.placement()),
        dtype_(kDTypeOf<T>) {}

  DType dtype() const noexcept { return dtype_; }
  int64_t element_size() const noexcept { return dtype_size(dtype_); }

  // ---- Construction (see TypedTensor<T> for the exact contracts) -------------------------

  /// Adopts column-major data without copying. Errors: kInvalidShape, kOverflow.
  template <PresetScalar T>
  static Result<Tensor> from_col_major(Dims shape, std::vector<T> data) {
    return TypedTensor<T>::from_col_major(shape, std::move(data)).transform(erase_<T>);
  }
  /// Reorders row-major (C order) data into a new column-major tensor (one O(n) copy).
  template <PresetScalar T>
  static Result<Tensor> from_row_major(Dims shape, std::span<const T> data) {
    return TypedTensor<T>::from_row_major(shape, data).transform(erase_<T>);
  }
  template <PresetScalar T>
  static Result<Tensor> from_row_major(Dims shape, const std::vector<T>& data) {
    return TypedTensor<T>::from_row_major(shape, std::span<const T>(data.data(), data.size())).transform(erase_<T>);
  }
  static Result<Tensor> zeros(DType dtype, Dims shape, const std::shared_ptr<HostBufferPool>& pool = nullptr);
  /// New compact storage the caller overwrites before reading (see
  /// TypedTensor::uninitialized; bool elements are false).
  static Result<Tensor> uninitialized(DType dtype, Dims shape, const std::shared_ptr<HostBufferPool>& pool = nullptr);
  static Result<Tensor> ones(DType dtype, Dims shape, const std::shared_ptr<HostBufferPool>& pool = nullptr);
  /// Every element equal to `value` converted to `dtype` (real part for real dtypes,
  /// value != 0 for bool). Errors: kInvalidArgument when `value` has an imaginary part and
  /// `dtype` is real, or is not an integer for an integer dtype (no silent truncation).
  static Result<Tensor> full(DType dtype, Dims shape, c128 value,
                             const std::shared_ptr<HostBufferPool>& pool = nullptr);
  /// [0, 1, ..., n-1]. Errors: kDTypeMismatch for bool.
  static Result<Tensor> arange(DType dtype, int64_t n);
  /// start, start+step, ... before stop. Errors: kDTypeMismatch for bool, kInvalidArgument.
  static Result<Tensor> arange(DType dtype, double start, double stop, double step);
  /// Errors: kDTypeMismatch unless dtype is floating or complex.
  static Result<Tensor> random_normal(DType dtype, Dims shape, uint64_t seed, double mean = 0.0,
                                      double stddev = 1.0);
  static Result<Tensor> random_uniform(DType dtype, Dims shape, uint64_t seed, double low = 0.0,
                                       double high = 1.0);
  /// Borrows `byte_size` bytes at `data` as a column-major tensor (see TypedTensor::wrap).
  /// Errors: kInvalidLayout, kInvalidArgument (null or misaligned data).
  static Result<Tensor> wrap(DType dtype, Dims shape, void* data, int64_t byte_size,
                             std::shared_ptr<const void> keep_alive, bool writable = true);
  /// A handle over existing storage with an explicit, validated layout.
  static Result<Tensor> from_storage(DType dtype, std::shared_ptr<Storage> storage, Layout layout,
                                     Placement placement = Placement::cpu_default());

  // ---- Typed access -------------------------------------------------------------------------

  /// The same handle with a static element type. Errors: kDTypeMismatch.
  template <PresetScalar T>
  Result<TypedTensor<T>> typed() const {
    TENFERRO_TRY_VOID(check_dtype_(kDTypeOf<T>, "typed"));
    return TypedTensor<T>(storage_, layout_, placement_);
  }
  /// Checked element read. Errors: kDTypeMismatch, kInvalidShape, kOutOfRange.
  template <PresetScalar T>
  Result<T> get(Dims index) const {
    TENFERRO_TRY_VOID(check_dtype_(kDTypeOf<T>, "get"));
    return TypedTensor<T>(storage_, layout_, placement_).get(index);
  }
  /// Any element converted to complex<double> (exact for every dtype but i64 beyond 2^53).
  Result<c128> get_as_c128(Dims index) const;
  /// Exclusive write access. Errors: kDTypeMismatch and those of TypedTensor::view_mut.
  template <PresetScalar T>
  Result<TensorViewMut<T>> view_mut() {
    TENFERRO_TRY_VOID(check_dtype_(kDTypeOf<T>, "view_mut"));
    TENFERRO_TRY_VOID(detail::check_mutable(storage_, layout_, "view_mut"));
    return TensorViewMut<T>(storage_, layout_);
  }

  // ---- Materialization and component views -----------------------------------------------

  /// This handle if compact column-major, else a compact copy.
  Result<Tensor> contiguous() const;
  /// Always a fresh compact column-major copy (from `pool` if given).
  Result<Tensor> to_col_major(const std::shared_ptr<HostBufferPool>& pool = nullptr) const;
  /// Deep copy (same as to_col_major()).
  Result<Tensor> clone() const { return to_col_major(); }
  /// reshape, copying first when a view is impossible.
  Result<Tensor> reshape_copy(Dims shape) const;
  /// Real / imaginary parts of a complex tensor as a view. Errors: kDTypeMismatch.
  Result<Tensor> real() const { return complex_component_(false); }
  Result<Tensor> imag() const { return complex_component_(true); }

  /// Readable text: a header with shape, dtype and layout, then nested rows (axis 0
  /// outermost, like numpy's display of the same logical array), abbreviated per options.
  std::string to_string(const PrintOptions& options = {}) const;

 private:
  friend class TensorBase<Tensor>;
  Tensor(std::shared_ptr<Storage> storage, Layout layout, Placement placement, DType dtype) noexcept
      : TensorBase<Tensor>(std::move(storage), std::move(layout), placement), dtype_(dtype) {}
  Result<Tensor> with_layout_(Layout layout) const { return Tensor(storage_, std::move(layout), placement_, dtype_); }
  Result<void> check_dtype_(DType want, const char* op) const;
  Result<Tensor> complex_component_(bool imag) const;
  template <PresetScalar T>
  static Tensor erase_(TypedTensor<T>&& t) {
    return Tensor(t);
  }

  DType dtype_ = DType::kF64;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

// ---- Host export / import -------------------------------------------------------------------

/// Whether a host export/import moved elements.
enum class HostTransfer : uint8_t { kZeroCopy, kCopied };

/// A contiguous, mutable, column-major host buffer handed to the caller.
struct HostExport {
  std::shared_ptr<void> owner;  ///< keeps `data` alive; drop it to release the buffer
  void* data = nullptr;         ///< first element (column-major, compact)
  int64_t byte_size = 0;        ///< numel * dtype size
  DType dtype = DType::kF64;
  Shape shape;
  HostTransfer transfer = HostTransfer::kZeroCopy;  ///< whether exactly one copy was made
};

/// Hands the tensor's elements to the caller as one mutable compact column-major buffer.
/// Zero-copy when the tensor is the only handle to its storage, the storage is writable
/// host memory and the layout is compact column-major; otherwise exactly one copy into a
/// fresh buffer, reported in `transfer`. Consumes the handle. Errors: kInvalidArgument
/// (null handle), kUnsupported (non-host placement).
Result<HostExport> export_host(Tensor&& tensor);

/// Element order of an imported buffer.
enum class HostOrder : uint8_t { kColMajor, kRowMajor };

/// A tensor made from a caller's contiguous buffer, and whether it was copied.
struct HostImport {
  Tensor tensor;
  HostTransfer transfer = HostTransfer::kZeroCopy;
};

/// Makes a tensor over the caller's contiguous buffer of `shape` in `order`. Zero-copy
/// (the buffer is borrowed; `owner` is kept alive, and writes through the tensor reach
/// the buffer) when `data` is aligned for `dtype`; otherwise exactly one copy into a new
/// column-major tensor (then `owner` is released before returning). A row-major buffer
/// becomes a row-major-strided view. Errors: kInvalidShape, kInvalidLayout (buffer too
/// small), kInvalidArgument (null data).
Result<HostImport> import_host(DType dtype, Dims shape, HostOrder order, void* data, int64_t byte_size,
                               std::shared_ptr<void> owner);

}  // namespace tenferro
