#pragma once
/// \file
/// Shapes, strides, overflow-checked counts and strided layouts.

#include <cstdint>
#include <span>
#include <initializer_list>
#include <string>
#include <vector>

#include "tenferro/core/dtype.h"
#include "tenferro/core/result.h"
#include "tenferro/core/small_vector.h"

namespace tenferro {

/// Inline metadata capacity: ranks up to 8 never allocate (ARCHITECTURE §4).
inline constexpr size_t kInlineRank = 8;

/// Extents of each axis (axis 0 first). Extents are >= 0.
using Shape = SmallVector<int64_t, kInlineRank>;
/// Element strides of each axis; may be negative or zero.
using Strides = SmallVector<int64_t, kInlineRank>;

/// A borrowed list of int64 values (a shape, strides, axes or an index). Converts
/// implicitly from a braced list, a Shape/Strides, a std::vector or a span, so calls read
/// `t.permute({1, 0})`. It never owns: a braced list lives until the end of the full
/// expression, which covers any call it is passed to.
class Dims {
 public:
  Dims(std::initializer_list<int64_t> list) noexcept : span_(list.begin(), list.size()) {}  // NOLINT
  Dims(std::span<const int64_t> span) noexcept : span_(span) {}                           // NOLINT
  Dims(const Shape& shape) noexcept : span_(shape.span()) {}                               // NOLINT
  Dims(const std::vector<int64_t>& v) noexcept : span_(v.data(), v.size()) {}              // NOLINT
  std::span<const int64_t> span() const noexcept { return span_; }
  size_t size() const noexcept { return span_.size(); }
  int64_t operator[](size_t i) const noexcept { return span_[i]; }
  const int64_t* begin() const noexcept { return span_.data(); }
  const int64_t* end() const noexcept { return span_.data() + span_.size(); }

 private:
  std::span<const int64_t> span_;
};

/// `*out = a * b`; returns false on overflow.
[[nodiscard]] inline bool checked_mul(int64_t a, int64_t b, int64_t* out) noexcept {
  return !__builtin_mul_overflow(a, b, out);
}
/// `*out = a + b`; returns false on overflow.
[[nodiscard]] inline bool checked_add(int64_t a, int64_t b, int64_t* out) noexcept {
  return !__builtin_add_overflow(a, b, out);
}

/// Formats a list of integers as "[2, 3, 4]" (for error messages and printing).
std::string format_dims(Dims dims);

/// Validates that every extent is >= 0 and the element count fits in int64_t.
/// Errors: kInvalidShape (negative extent), kOverflow. `op` names the caller.
Result<void> validate_shape(Dims shape, const char* op);

/// Product of extents (1 for rank 0), overflow-checked. Errors as validate_shape.
Result<int64_t> checked_element_count(Dims shape, const char* op = "element_count");

/// Element count times dtype size, overflow-checked.
Result<int64_t> checked_byte_count(Dims shape, DType dtype, const char* op = "byte_count");

/// Product of extents without checks: for shapes already validated (e.g. held by a
/// Tensor, whose invariants guarantee no overflow).
inline int64_t element_count(Dims shape) noexcept {
  // Unsigned (wrapping) products: a valid shape with a zero extent may have a prefix
  // product beyond int64 (e.g. [2^40, 2^40, 0]); the wrapped product is still exactly 0
  // then, and equals the true count otherwise.
  uint64_t n = 1;
  for (int64_t e : shape) n *= static_cast<uint64_t>(e);
  return static_cast<int64_t>(n);
}

/// Compact column-major strides (axis 0 fastest) for a validated shape.
Strides col_major_strides(Dims shape);
/// Compact row-major strides (last axis fastest) for a validated shape.
Strides row_major_strides(Dims shape);

/// A strided view onto a linear element buffer: element `idx` lives at
/// `offset + sum(idx[k] * strides[k])`. Units are elements, not bytes.
struct Layout {
  Shape shape;
  Strides strides;
  int64_t offset = 0;

  int64_t rank() const noexcept { return shape.ssize(); }
  int64_t element_count() const noexcept { return tenferro::element_count(shape); }
  /// Compact column-major layout of `shape` at offset 0 (shape must be valid).
  static Layout col_major(Dims shape);

  friend bool operator==(const Layout&, const Layout&) = default;
};

/// The lowest and highest element positions a layout can reach. For an empty layout
/// (some extent 0) no element is reachable and `empty` is true.
struct ReachableRange {
  int64_t min = 0;
  int64_t max = -1;
  bool empty = true;
};

/// Computes the reachable range with overflow checks (kOverflow on failure).
Result<ReachableRange> reachable_range(const Layout& layout, const char* op = "reachable_range");

/// Checks a layout against a buffer of `capacity` elements: shape valid, ranks of shape
/// and strides agree, and every reachable position lies in [0, capacity). Negative and
/// zero strides are allowed. Empty layouts need only a valid shape and 0 <= offset <= capacity.
/// Errors: kInvalidShape, kOverflow, kInvalidLayout.
Result<void> validate_layout(const Layout& layout, int64_t capacity, const char* op = "validate_layout");

/// True when the layout is compact column-major (strides of size-1 axes are ignored).
bool is_col_major_contiguous(const Layout& layout) noexcept;
/// True when the layout is compact row-major (strides of size-1 axes are ignored).
bool is_row_major_contiguous(const Layout& layout) noexcept;

/// True when distinct indices provably map to distinct positions (no two elements
/// alias). Uses the sufficient test "sorted by |stride|, each stride exceeds the span
/// of the smaller ones"; layouts it cannot prove are reported as false. Empty layouts
/// are injective.
bool is_injective(const Layout& layout) noexcept;

/// Offset of a multi-index in the layout, with bounds checking of each index.
/// Errors: kInvalidShape (rank mismatch), kOutOfRange.
Result<int64_t> checked_offset(const Layout& layout, Dims index, const char* op = "at");

}  // namespace tenferro
