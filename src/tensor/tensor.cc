#include "tenferro/tensor/tensor.h"

#include <cmath>
#include <cstring>
#include <utility>

namespace tenferro {

namespace detail {

Result<int64_t> new_tensor_count(Dims shape, int64_t elem, const char* op) {
  TENFERRO_TRY(int64_t count, checked_element_count(shape, op));
  int64_t bytes = 0;
  if (!checked_mul(count, elem, &bytes)) {
    return usage_error(ErrorCode::kOverflow, op,
                       "byte count of shape " + format_dims(shape) + " with " + std::to_string(elem) +
                           "-byte elements overflows int64");
  }
  return count;
}

Result<void> check_mutable(const std::shared_ptr<Storage>& storage, const Layout& layout, const char* op) {
  if (!storage) return usage_error(ErrorCode::kInvalidArgument, op, "tensor handle is null");
  if (storage.use_count() != 1) {
    return usage_error(ErrorCode::kNotExclusive, op,
                       "storage is shared by " + std::to_string(storage.use_count()) +
                           " handles; mutable access needs exactly one (clone() for a private copy)");
  }
  if (!storage->writable()) {
    return usage_error(ErrorCode::kReadOnly, op, "storage wraps read-only memory");
  }
  if (!is_injective(layout)) {
    return usage_error(ErrorCode::kIncompatibleLayout, op,
                       "shape " + format_dims(layout.shape) + " with strides " + format_dims(layout.strides) +
                           " may map two indices to one element (e.g. a broadcast); write through a compact copy");
  }
  return ok();
}

}  // namespace detail

Result<void> Tensor::check_dtype_(DType want, const char* op) const {
  if (dtype_ != want) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "tensor has dtype " + std::string(dtype_name(dtype_)) + ", requested " +
                           std::string(dtype_name(want)));
  }
  return ok();
}

Result<Tensor> Tensor::zeros(DType dtype, Dims shape, const std::shared_ptr<HostBufferPool>& pool) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    return TypedTensor<T>::zeros(shape, pool).transform(erase_<T>);
  });
}

Result<Tensor> Tensor::uninitialized(DType dtype, Dims shape, const std::shared_ptr<HostBufferPool>& pool) {
  // Built in place (no TypedTensor round trip): this is every kernel's output allocation.
  TENFERRO_TRY(int64_t count, detail::new_tensor_count(shape, dtype_size(dtype), "uninitialized"));
  Result<std::shared_ptr<Storage>> storage = visit_dtype(dtype, [&]<class T>() {
    return detail::make_storage<T>(count, pool, [](T* slot, int64_t) {
      // As TypedTensor::uninitialized: bytes used as they are, bool set to false.
      if constexpr (std::is_same_v<T, bool>) *slot = false;
    });
  });
  if (!storage) return storage.error();
  return Tensor(std::move(*storage), Layout::col_major(shape), Placement::cpu_default(), dtype);
}

Result<Tensor> Tensor::ones(DType dtype, Dims shape, const std::shared_ptr<HostBufferPool>& pool) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    return TypedTensor<T>::ones(shape, pool).transform(erase_<T>);
  });
}

Result<Tensor> Tensor::full(DType dtype, Dims shape, c128 value, const std::shared_ptr<HostBufferPool>& pool) {
  if (!is_complex(dtype) && value.imag() != 0.0) {
    return usage_error(ErrorCode::kInvalidArgument, "full",
                       "value has imaginary part " + std::to_string(value.imag()) + " but dtype " +
                           std::string(dtype_name(dtype)) + " is real");
  }
  if (is_integral(dtype) && value.real() != std::trunc(value.real())) {
    return usage_error(ErrorCode::kInvalidArgument, "full",
                       "value " + std::to_string(value.real()) + " is not an integer for dtype " +
                           std::string(dtype_name(dtype)));
  }
  // Out of range, the conversion to the integer type would be undefined behaviour.
  const double lo = dtype == DType::kI32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = dtype == DType::kI32 ? 2147483648.0 : 9223372036854775808.0;  // exclusive
  if (is_integral(dtype) && !(value.real() >= lo && value.real() < hi)) {
    return usage_error(
        ErrorCode::kOverflow, "full",
        "value " + std::to_string(value.real()) + " is out of the range of dtype " + std::string(dtype_name(dtype)));
  }
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    T v{};
    if constexpr (std::is_same_v<T, bool>) {
      v = value != c128(0.0, 0.0);
    } else if constexpr (detail::ComplexScalar<T>) {
      using R = typename T::value_type;
      v = T(static_cast<R>(value.real()), static_cast<R>(value.imag()));
    } else {
      v = static_cast<T>(value.real());
    }
    return TypedTensor<T>::full(shape, v, pool).transform(erase_<T>);
  });
}

namespace {
Error bool_arange_error() {
  return usage_error(ErrorCode::kDTypeMismatch, "arange", "arange is not defined for dtype bool");
}
}  // namespace

Result<Tensor> Tensor::arange(DType dtype, int64_t n) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    if constexpr (std::is_same_v<T, bool>) {
      return bool_arange_error();
    } else {
      return TypedTensor<T>::arange(n).transform(erase_<T>);
    }
  });
}

Result<Tensor> Tensor::arange(DType dtype, double start, double stop, double step) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    if constexpr (std::is_same_v<T, bool>) {
      return bool_arange_error();
    } else {
      return TypedTensor<T>::arange(start, stop, step).transform(erase_<T>);
    }
  });
}

Result<Tensor> Tensor::random_normal(DType dtype, Dims shape, uint64_t seed, double mean, double stddev) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    if constexpr (is_inexact(kDTypeOf<T>)) {
      return TypedTensor<T>::random_normal(shape, seed, mean, stddev).transform(erase_<T>);
    } else {
      return usage_error(ErrorCode::kDTypeMismatch, "random_normal",
                         "needs a floating or complex dtype, got " + std::string(dtype_name(dtype)));
    }
  });
}

Result<Tensor> Tensor::random_uniform(DType dtype, Dims shape, uint64_t seed, double low, double high) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    return TypedTensor<T>::random_uniform(shape, seed, low, high).transform(erase_<T>);
  });
}

Result<Tensor> Tensor::wrap(DType dtype, Dims shape, void* data, int64_t byte_size,
                            std::shared_ptr<const void> keep_alive, bool writable) {
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(dtype_alignment(dtype)) != 0) {
    return usage_error(ErrorCode::kInvalidArgument, "wrap",
                       "data is not aligned to " + std::to_string(dtype_alignment(dtype)) + " bytes for dtype " +
                           std::string(dtype_name(dtype)));
  }
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    const int64_t capacity = byte_size / static_cast<int64_t>(sizeof(T));
    if (writable) {
      return TypedTensor<T>::wrap(shape, static_cast<T*>(data), capacity, std::move(keep_alive)).transform(erase_<T>);
    }
    return TypedTensor<T>::wrap(shape, static_cast<const T*>(data), capacity, std::move(keep_alive))
        .transform(erase_<T>);
  });
}

Result<Tensor> Tensor::from_storage(DType dtype, std::shared_ptr<Storage> storage, Layout layout,
                                    Placement placement) {
  return visit_dtype(dtype, [&]<class T>() -> Result<Tensor> {
    return TypedTensor<T>::from_storage(std::move(storage), std::move(layout), placement).transform(erase_<T>);
  });
}

Result<c128> Tensor::get_as_c128(Dims index) const {
  TENFERRO_TRY(int64_t pos, checked_offset(layout_, index, "get"));
  return visit_dtype(dtype_, [&]<class T>() -> c128 {
    const T v = static_cast<const T*>(storage_->data())[pos];
    if constexpr (detail::ComplexScalar<T>) {
      return c128(static_cast<double>(v.real()), static_cast<double>(v.imag()));
    } else {
      return c128(static_cast<double>(v), 0.0);
    }
  });
}

Result<Tensor> Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return to_col_major();
}

Result<Tensor> Tensor::to_col_major(const std::shared_ptr<HostBufferPool>& pool) const {
  if (!defined()) return usage_error(ErrorCode::kInvalidArgument, "to_col_major", "tensor handle is null");
  return visit_dtype(dtype_, [&]<class T>() -> Result<Tensor> {
    return TypedTensor<T>(storage_, layout_, placement_).to_col_major(pool).transform(erase_<T>);
  });
}

Result<Tensor> Tensor::reshape_copy(Dims shape) const {
  auto view = reshape(shape);
  if (view.has_value() || view.error().code() != ErrorCode::kIncompatibleLayout) return view;
  TENFERRO_TRY(Tensor compact, to_col_major());
  return compact.reshape(shape);
}

Result<Tensor> Tensor::complex_component_(bool imag) const {
  const char* op = imag ? "imag" : "real";
  if (!is_complex(dtype_)) {
    return usage_error(ErrorCode::kDTypeMismatch, op, "needs a complex dtype, got " + std::string(dtype_name(dtype_)));
  }
  TENFERRO_TRY(Layout layout, complex_component_layout(layout_, imag));
  return Tensor(storage_, std::move(layout), placement_, real_dtype(dtype_));
}

Result<HostExport> export_host(Tensor&& tensor) {
  Tensor t = std::move(tensor);
  if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "export_host", "tensor handle is null");
  if (!t.placement().is_host()) {
    return usage_error(ErrorCode::kUnsupported, "export_host",
                       "tensor is placed on " + t.placement().to_string() + "; transfer it to the host explicitly");
  }
  HostExport out;
  out.dtype = t.dtype();
  out.shape = t.shape();
  out.byte_size = t.numel() * t.element_size();
  const bool eligible = t.storage_use_count() == 1 && t.storage()->writable() && t.is_contiguous();
  if (eligible) {
    out.transfer = HostTransfer::kZeroCopy;
  } else {
    TENFERRO_TRY(t, t.to_col_major());
    out.transfer = HostTransfer::kCopied;
  }
  out.data = static_cast<char*>(t.storage()->data()) + t.offset() * t.element_size();
  out.owner = std::static_pointer_cast<void>(t.storage());
  return out;
}

Result<HostImport> import_host(DType dtype, Dims shape, HostOrder order, void* data, int64_t byte_size,
                               std::shared_ptr<void> owner) {
  TENFERRO_TRY(int64_t bytes, checked_byte_count(shape, dtype, "import_host"));
  if (byte_size < bytes || byte_size < 0) {
    return usage_error(ErrorCode::kInvalidLayout, "import_host",
                       "shape " + format_dims(shape) + " of dtype " + std::string(dtype_name(dtype)) + " needs " +
                           std::to_string(bytes) + " bytes, buffer has " + std::to_string(byte_size));
  }
  if (data == nullptr && bytes > 0) {
    return usage_error(ErrorCode::kInvalidArgument, "import_host", "data pointer is null");
  }
  const bool aligned = reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(dtype_alignment(dtype)) == 0;
  Layout layout{Shape(shape.span()),
                order == HostOrder::kColMajor ? col_major_strides(shape) : row_major_strides(shape), 0};
  HostImport out;
  if (aligned) {
    auto storage = ExternalStorage::foreign(data, byte_size, std::shared_ptr<const void>(std::move(owner)), true);
    TENFERRO_TRY(out.tensor, Tensor::from_storage(dtype, std::move(storage), std::move(layout)));
    out.transfer = HostTransfer::kZeroCopy;
    return out;
  }
  // Misaligned: copy the bytes once into an aligned tensor of the same order, then make
  // it column-major without a second copy only if it already is; a row-major buffer
  // keeps its strides (still one copy).
  TENFERRO_TRY(Tensor fresh, Tensor::zeros(dtype, {bytes / dtype_size(dtype)}));
  if (bytes > 0) std::memcpy(fresh.storage()->data(), data, static_cast<size_t>(bytes));
  TENFERRO_TRY(out.tensor, Tensor::from_storage(dtype, fresh.storage(), std::move(layout)));
  out.transfer = HostTransfer::kCopied;
  return out;
}

}  // namespace tenferro
