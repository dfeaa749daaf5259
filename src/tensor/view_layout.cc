#include "tenferro/tensor/view_layout.h"

#include <limits>
#include <string>

namespace tenferro {

// Note [Empty views keep their offset]: a layout with a zero extent reaches no element,
// and its other extents and strides may be huge (a valid [2^40, 2^40, 0] tensor). Offset
// arithmetic on such a layout could overflow, so transforms of an empty layout keep the
// source offset unchanged (which validate_layout already accepted) and combine strides
// with wrapping arithmetic. For non-empty layouts every offset is bounded by the
// validated reachable range, so the arithmetic is exact.

// Note [View metadata without allocation]: every transform builds its result directly
// in a Layout whose Shape/Strides are SmallVectors with inline capacity 8, and reports
// problems only on the error path (which may allocate its message). A successful view
// of rank <= 8 therefore performs no heap allocation; tensor_alloc_test checks this.

namespace {

std::string s(int64_t v) { return std::to_string(v); }

int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

Result<void> check_axis(const Layout& src, int64_t axis, const char* op) {
  if (axis < 0 || axis >= src.rank()) {
    return usage_error(ErrorCode::kOutOfRange, op,
                       "axis " + s(axis) + " is out of range for rank " + s(src.rank()) + " (shape " +
                           format_dims(src.shape) + ")");
  }
  return ok();
}

}  // namespace

Result<Layout> permute_layout(const Layout& src, Dims perm) {
  const int64_t rank = src.rank();
  if (static_cast<int64_t>(perm.size()) != rank) {
    return usage_error(ErrorCode::kInvalidPermutation, "permute",
                       "permutation " + format_dims(perm) + " has length " + s(perm.size()) +
                           " but the tensor has rank " + s(rank));
  }
  // Bitmask of seen axes; ranks above 64 use a second pass (quadratic but tiny).
  uint64_t seen = 0;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i];
    bool repeated = false;
    if (p >= 0 && p < rank) {
      if (p < 64) {
        repeated = (seen >> p) & 1u;
        seen |= uint64_t{1} << p;
      } else {
        for (size_t j = 0; j < i; ++j) repeated = repeated || perm[j] == p;
      }
    }
    if (p < 0 || p >= rank || repeated) {
      return usage_error(ErrorCode::kInvalidPermutation, "permute",
                         "permutation " + format_dims(perm) + " is not a permutation of 0.." + s(rank - 1) +
                             " (entry " + s(i) + " = " + s(p) + (repeated ? " repeats)" : " out of range)"));
    }
  }
  Layout out;
  out.shape.resize_for_overwrite(perm.size());
  out.strides.resize_for_overwrite(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out.shape[i] = src.shape[static_cast<size_t>(perm[i])];
    out.strides[i] = src.strides[static_cast<size_t>(perm[i])];
  }
  out.offset = src.offset;
  return out;
}

Result<Layout> slice_layout(const Layout& src, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  TENFERRO_TRY_VOID(check_axis(src, axis, "slice"));
  const auto ax = static_cast<size_t>(axis);
  const int64_t n = src.shape[ax];
  if (step == 0) {
    return usage_error(ErrorCode::kInvalidArgument, "slice", "step must be nonzero (axis " + s(axis) + ")");
  }
  int64_t count = 0;
  if (step > 0) {
    if (start < 0 || stop < start || stop > n) {
      return usage_error(ErrorCode::kOutOfRange, "slice",
                         "range [" + s(start) + ", " + s(stop) + ") with step " + s(step) +
                             " is out of range for axis " + s(axis) + " of extent " + s(n) +
                             " (need 0 <= start <= stop <= extent)");
    }
    // ceil((stop - start) / step) without overflow: a step may be as large as int64 holds.
    count = stop == start ? 0 : (stop - start - 1) / step + 1;
  } else {
    const bool empty = start == stop && start >= -1 && start <= n;
    if (!empty && (start >= n || stop < -1 || stop > start)) {
      return usage_error(ErrorCode::kOutOfRange, "slice",
                         "range [" + s(start) + ", " + s(stop) + ") with step " + s(step) +
                             " is out of range for axis " + s(axis) + " of extent " + s(n) +
                             " (need -1 <= stop <= start <= extent - 1)");
    }
    // ceil((start - stop) / -step), where -step may not fit (step = INT64_MIN): start -
    // stop <= extent, so dividing by INT64_MAX instead gives the same count.
    const int64_t magnitude = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    count = empty || start == stop ? 0 : (start - stop - 1) / magnitude + 1;
  }
  Layout out = src;
  out.shape[ax] = count;
  if (count > 0 && src.element_count() > 0) {  // Note [Empty views keep their offset]
    out.offset = src.offset + start * src.strides[ax];
    // One element taken: the stride is never applied, and the step may be far larger
    // than any offset (its product with the stride could overflow). More than one: the
    // step is below the extent, so the product stays within the source's reach.
    if (count > 1) out.strides[ax] = src.strides[ax] * step;
  }
  // An empty slice keeps the source offset and stride: nothing is reachable, and no
  // position outside the source can be formed.
  return out;
}

Result<Layout> select_layout(const Layout& src, int64_t axis, int64_t index) {
  TENFERRO_TRY_VOID(check_axis(src, axis, "select"));
  const auto ax = static_cast<size_t>(axis);
  if (index < 0 || index >= src.shape[ax]) {
    return usage_error(ErrorCode::kOutOfRange, "select",
                       "index " + s(index) + " is out of range for axis " + s(axis) + " of extent " +
                           s(src.shape[ax]));
  }
  Layout out = src;
  if (src.element_count() > 0) out.offset = src.offset + index * src.strides[ax];
  out.shape.erase(ax);
  out.strides.erase(ax);
  return out;
}

Result<Layout> diagonal_layout(const Layout& src, Dims axes) {
  if (axes.size() < 2) {
    return usage_error(ErrorCode::kInvalidArgument, "diagonal",
                       "needs at least two axes, got " + format_dims(axes));
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    TENFERRO_TRY_VOID(check_axis(src, axes[i], "diagonal"));
    for (size_t j = 0; j < i; ++j) {
      if (axes[j] == axes[i]) {
        return usage_error(ErrorCode::kInvalidArgument, "diagonal",
                           "axis " + s(axes[i]) + " is repeated in " + format_dims(axes));
      }
    }
  }
  const int64_t extent = src.shape[static_cast<size_t>(axes[0])];
  int64_t stride = 0;
  for (int64_t a : axes) {
    if (src.shape[static_cast<size_t>(a)] != extent) {
      return usage_error(ErrorCode::kShapeMismatch, "diagonal",
                         "axes " + format_dims(axes) + " have different extents in shape " +
                             format_dims(src.shape));
    }
    stride = wrapping_add(stride, src.strides[static_cast<size_t>(a)]);  // exact unless empty
  }
  Layout out;
  out.offset = src.offset;
  for (int64_t k = 0; k < src.rank(); ++k) {
    bool is_diag = false;
    for (int64_t a : axes) is_diag = is_diag || a == k;
    if (k == axes[0]) {
      out.shape.push_back(extent);
      out.strides.push_back(stride);
    } else if (!is_diag) {
      out.shape.push_back(src.shape[static_cast<size_t>(k)]);
      out.strides.push_back(src.strides[static_cast<size_t>(k)]);
    }
  }
  return out;
}

Result<Layout> broadcast_layout(const Layout& src, Dims shape) {
  TENFERRO_TRY_VOID(validate_shape(shape, "broadcast_to"));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < src.rank()) {
    return usage_error(ErrorCode::kShapeMismatch, "broadcast_to",
                       "cannot broadcast shape " + format_dims(src.shape) + " to lower-rank shape " +
                           format_dims(shape));
  }
  Layout out;
  out.offset = src.offset;
  out.shape = Shape(shape.span());
  out.strides.resize(shape.size(), 0);
  const int64_t lead = rank - src.rank();
  for (int64_t k = 0; k < src.rank(); ++k) {
    const int64_t from = src.shape[static_cast<size_t>(k)];
    const int64_t to = shape[static_cast<size_t>(k + lead)];
    if (from == to) {
      out.strides[static_cast<size_t>(k + lead)] = src.strides[static_cast<size_t>(k)];
    } else if (from != 1) {
      return usage_error(ErrorCode::kShapeMismatch, "broadcast_to",
                         "cannot broadcast shape " + format_dims(src.shape) + " to " + format_dims(shape) +
                             " (axis " + s(k) + " has extent " + s(from) + ", target " + s(to) + ")");
    }
  }
  return out;
}

Result<Layout> flip_layout(const Layout& src, int64_t axis) {
  TENFERRO_TRY_VOID(check_axis(src, axis, "flip"));
  const auto ax = static_cast<size_t>(axis);
  Layout out = src;
  if (src.element_count() > 0) {  // Note [Empty views keep their offset]
    out.offset = src.offset + (src.shape[ax] - 1) * src.strides[ax];
    out.strides[ax] = -src.strides[ax];
  }
  return out;
}

Result<Layout> reshape_layout(const Layout& src, Dims requested) {
  // Resolve a single -1 and validate the target shape.
  Shape shape(requested.span());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == -1 && infer_at < 0) {
      infer_at = static_cast<int64_t>(k);
      continue;
    }
    if (shape[k] < 0) {
      return usage_error(ErrorCode::kInvalidShape, "reshape",
                         "target shape " + format_dims(requested) +
                             " has a negative extent (only a single -1 is allowed)");
    }
    if (!checked_mul(known, shape[k], &known)) {
      return usage_error(ErrorCode::kOverflow, "reshape",
                         "element count of target shape " + format_dims(requested) + " overflows int64");
    }
  }
  const int64_t count = src.element_count();
  if (infer_at >= 0) {
    if (known == 0 || count % known != 0) {
      return usage_error(ErrorCode::kInvalidShape, "reshape",
                         "cannot infer the -1 extent of " + format_dims(requested) + " for " + s(count) +
                             " elements (shape " + format_dims(src.shape) + ")");
    }
    shape[static_cast<size_t>(infer_at)] = count / known;
    known = count;
  }
  if (known != count) {
    return usage_error(ErrorCode::kInvalidShape, "reshape",
                       "cannot reshape " + format_dims(src.shape) + " (" + s(count) + " elements) to " +
                           format_dims(requested) + " (" + s(known) + " elements)");
  }
  Layout out;
  out.offset = src.offset;
  out.shape = shape;
  if (count == 0) {
    // Nothing is reachable; any compact strides describe the result.
    out.strides = col_major_strides(shape);
    return out;
  }
  out.strides.resize(shape.size(), 0);
  // Walk both shapes in column-major order, matching groups with equal products. Axes
  // of extent 1 are skipped on the source side and given a harmless stride on the
  // target side.
  const size_t n_src = src.shape.size();
  const size_t n_dst = shape.size();
  size_t i = 0;
  size_t j = 0;
  while (i < n_src || j < n_dst) {
    while (i < n_src && src.shape[i] == 1) ++i;
    // Target axes of extent 1 take stride 1 (any value is valid for them).
    while (j < n_dst && shape[j] == 1) out.strides[j++] = 1;
    if (i >= n_src && j >= n_dst) break;
    // Grow a source group [i0, i) and a target group [j0, j) until their products match.
    const size_t i0 = i;
    const size_t j0 = j;
    int64_t p_src = src.shape[i++];
    int64_t p_dst = shape[j++];
    while (p_src != p_dst) {
      if (p_src < p_dst) {
        p_src *= src.shape[i++];
      } else {
        p_dst *= shape[j++];
      }
    }
    // The source group must be column-major mergeable (size-1 axes inside are ignored).
    int64_t expect = src.strides[i0] * src.shape[i0];
    for (size_t k = i0 + 1; k < i; ++k) {
      if (src.shape[k] == 1) continue;
      if (src.strides[k] != expect) {
        return usage_error(ErrorCode::kIncompatibleLayout, "reshape",
                           "cannot reshape shape " + format_dims(src.shape) + " with strides " +
                               format_dims(src.strides) + " to " + format_dims(requested) +
                               " without a copy (use reshape_copy)");
      }
      expect = src.strides[k] * src.shape[k];
    }
    int64_t stride = src.strides[i0];
    for (size_t k = j0; k < j; ++k) {
      out.strides[k] = stride;
      stride = wrapping_mul(stride, shape[k]);  // the last product is unused and may exceed the range
    }
  }
  return out;
}

Result<Layout> complex_component_layout(const Layout& src, bool imag) {
  Layout out = src;
  bool fine = checked_mul(src.offset, 2, &out.offset) && checked_add(out.offset, imag ? 1 : 0, &out.offset);
  for (size_t k = 0; k < src.strides.size() && fine; ++k) {
    fine = checked_mul(src.strides[k], 2, &out.strides[k]);
  }
  if (!fine) {
    return usage_error(ErrorCode::kOverflow, imag ? "imag" : "real",
                       "component strides of " + format_dims(src.strides) + " overflow int64");
  }
  return out;
}

}  // namespace tenferro
