#include "tenferro/core/shape.h"

#include <algorithm>
#include <cstdlib>

namespace tenferro {

std::string format_dims(Dims dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(dims[i]);
  }
  out += ']';
  return out;
}

Result<void> validate_shape(Dims shape, const char* op) {
  int64_t n = 1;
  bool overflow = false;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 0) {
      return usage_error(ErrorCode::kInvalidShape, op,
                         "extent " + std::to_string(shape[k]) + " of axis " + std::to_string(k) +
                             " is negative in shape " + format_dims(shape));
    }
    if (!overflow && !checked_mul(n, shape[k], &n)) overflow = true;
  }
  // A zero extent makes the product 0 even if a prefix overflowed: numpy agrees that
  // such a shape is valid, and its element count is 0.
  bool has_zero = std::find(shape.begin(), shape.end(), int64_t{0}) != shape.end();
  if (overflow && !has_zero) {
    return usage_error(ErrorCode::kOverflow, op,
                       "element count of shape " + format_dims(shape) + " overflows int64");
  }
  return ok();
}

Result<int64_t> checked_element_count(Dims shape, const char* op) {
  TENFERRO_TRY_VOID(validate_shape(shape, op));
  return element_count(shape);
}

Result<int64_t> checked_byte_count(Dims shape, DType dtype, const char* op) {
  TENFERRO_TRY(int64_t n, checked_element_count(shape, op));
  int64_t bytes = 0;
  if (!checked_mul(n, dtype_size(dtype), &bytes)) {
    return usage_error(ErrorCode::kOverflow, op,
                       "byte count of shape " + format_dims(shape) + " with dtype " +
                           std::string(dtype_name(dtype)) + " overflows int64");
  }
  return bytes;
}

namespace {
// Column-major strides of `shape` written into `s` (of the same size).
void fill_col_major_strides(Dims shape, Strides& s) noexcept {
  uint64_t acc = 1;  // wrapping: see element_count
  for (size_t k = 0; k < shape.size(); ++k) {
    s[k] = static_cast<int64_t>(acc);
    acc *= static_cast<uint64_t>(std::max<int64_t>(shape[k], 1));
  }
}
}  // namespace

Strides col_major_strides(Dims shape) {
  Strides s(shape.size());
  fill_col_major_strides(shape, s);
  return s;
}

Strides row_major_strides(Dims shape) {
  Strides s(shape.size());
  uint64_t acc = 1;  // wrapping: see element_count
  for (size_t k = shape.size(); k-- > 0;) {
    s[k] = static_cast<int64_t>(acc);
    acc *= static_cast<uint64_t>(std::max<int64_t>(shape[k], 1));
  }
  return s;
}

Layout Layout::col_major(Dims shape) {
  // Built in place (returned by NRVO): every kernel output's layout comes from here.
  Layout layout{Shape(shape.span()), Strides(shape.size()), 0};
  fill_col_major_strides(shape, layout.strides);
  return layout;
}

Result<ReachableRange> reachable_range(const Layout& layout, const char* op) {
  ReachableRange r;
  if (layout.shape.size() != layout.strides.size()) {
    return usage_error(ErrorCode::kInvalidLayout, op,
                       "shape " + format_dims(layout.shape) + " and strides " +
                           format_dims(layout.strides) + " have different ranks");
  }
  for (int64_t e : layout.shape) {
    if (e == 0) return r;  // empty
  }
  int64_t lo = layout.offset;
  int64_t hi = layout.offset;
  for (size_t k = 0; k < layout.shape.size(); ++k) {
    int64_t span = 0;
    if (!checked_mul(layout.shape[k] - 1, layout.strides[k], &span) ||
        !checked_add(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) {
      return usage_error(ErrorCode::kOverflow, op,
                         "reachable offsets of shape " + format_dims(layout.shape) + " with strides " +
                             format_dims(layout.strides) + " overflow int64");
    }
  }
  r.min = lo;
  r.max = hi;
  r.empty = false;
  return r;
}

Result<void> validate_layout(const Layout& layout, int64_t capacity, const char* op) {
  TENFERRO_TRY_VOID(validate_shape(layout.shape, op));
  TENFERRO_TRY(ReachableRange r, reachable_range(layout, op));
  if (r.empty) {
    if (layout.offset < 0 || layout.offset > capacity) {
      return usage_error(ErrorCode::kInvalidLayout, op,
                         "offset " + std::to_string(layout.offset) + " outside storage of " +
                             std::to_string(capacity) + " elements");
    }
    return ok();
  }
  if (r.min < 0 || r.max >= capacity) {
    return usage_error(ErrorCode::kInvalidLayout, op,
                       "shape " + format_dims(layout.shape) + " with strides " + format_dims(layout.strides) +
                           " and offset " + std::to_string(layout.offset) + " reaches elements [" +
                           std::to_string(r.min) + ", " + std::to_string(r.max) + "] outside storage of " +
                           std::to_string(capacity) + " elements");
  }
  return ok();
}

namespace {
template <bool kColMajor>
bool is_compact(const Layout& layout) noexcept {
  if (layout.element_count() == 0) return true;  // nothing reachable; avoids overflow below
  int64_t expected = 1;
  const size_t rank = layout.shape.size();
  for (size_t i = 0; i < rank; ++i) {
    size_t k = kColMajor ? i : rank - 1 - i;
    int64_t e = layout.shape[k];
    if (e == 0) return true;
    if (e != 1 && layout.strides[k] != expected) return false;
    expected *= e;
  }
  return true;
}
}  // namespace

bool is_col_major_contiguous(const Layout& layout) noexcept { return is_compact<true>(layout); }
bool is_row_major_contiguous(const Layout& layout) noexcept { return is_compact<false>(layout); }

bool is_injective(const Layout& layout) noexcept {
  struct Axis {
    int64_t extent;
    int64_t stride;  // absolute value
  };
  Axis axes[64];
  size_t n = 0;
  for (size_t k = 0; k < layout.shape.size(); ++k) {
    int64_t e = layout.shape[k];
    if (e == 0) return true;
    if (e == 1) continue;
    if (n == 64) return false;  // more than 64 non-trivial axes: cannot prove
    axes[n++] = Axis{e, std::llabs(layout.strides[k])};
  }
  std::sort(axes, axes + n, [](const Axis& a, const Axis& b) { return a.stride < b.stride; });
  int64_t span = 0;  // largest reachable distance using the smaller axes
  for (size_t i = 0; i < n; ++i) {
    if (axes[i].stride <= span) return false;
    int64_t extra = 0;
    if (!checked_mul(axes[i].extent - 1, axes[i].stride, &extra) || !checked_add(span, extra, &span)) {
      return false;
    }
  }
  return true;
}

Result<int64_t> checked_offset(const Layout& layout, Dims index, const char* op) {
  if (index.size() != layout.shape.size()) {
    return usage_error(ErrorCode::kInvalidShape, op,
                       "index " + format_dims(index) + " has rank " + std::to_string(index.size()) +
                           " but the tensor has shape " + format_dims(layout.shape));
  }
  int64_t pos = layout.offset;
  for (size_t k = 0; k < index.size(); ++k) {
    if (index[k] < 0 || index[k] >= layout.shape[k]) {
      return usage_error(ErrorCode::kOutOfRange, op,
                         "index " + format_dims(index) + " is out of range for shape " +
                             format_dims(layout.shape) + " (axis " + std::to_string(k) + ")");
    }
    pos += index[k] * layout.strides[k];
  }
  return pos;
}

}  // namespace tenferro
