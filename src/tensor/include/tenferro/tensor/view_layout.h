#pragma once
/// \file
/// Metadata-only view transforms on strided layouts. Each function validates its
/// arguments, returns a new Layout over the same elements, and never touches data.
/// They allocate nothing for rank <= 8 (see Note [View metadata without allocation]).
/// All errors have stage kUsage and name the view op.

#include <cstdint>

#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"

namespace tenferro {

/// Axis `i` of the result is axis `perm[i]` of the source.
/// Errors: kInvalidPermutation (wrong length, repeated or out-of-range axis).
Result<Layout> permute_layout(const Layout& src, Dims perm);

/// Elements start, start+step, ... of `axis`, stopping before `stop`. `step` may be
/// negative (then start >= stop). Indices are absolute positions, never wrapped:
/// step > 0 needs 0 <= start <= stop <= extent; step < 0 needs -1 <= stop <= start <= extent-1
/// (stop = -1 runs through index 0), or start == stop for an empty result.
/// Errors: kOutOfRange (axis or bounds), kInvalidArgument (step 0).
Result<Layout> slice_layout(const Layout& src, int64_t axis, int64_t start, int64_t stop, int64_t step);

/// Fixes `axis` at `index`, removing the axis. Errors: kOutOfRange.
Result<Layout> select_layout(const Layout& src, int64_t axis, int64_t index);

/// Takes the diagonal over two or more axes of equal extent: they are replaced by a
/// single axis at the position of the first listed axis, whose stride is the sum of
/// theirs. Errors: kOutOfRange (axis), kInvalidArgument (fewer than 2 or repeated
/// axes), kShapeMismatch (extents differ).
Result<Layout> diagonal_layout(const Layout& src, Dims axes);

/// numpy broadcasting to `shape`: source axes align to the right; an axis of extent 1
/// (or a missing leading axis) gets stride 0. Errors: kShapeMismatch, kInvalidShape.
Result<Layout> broadcast_layout(const Layout& src, Dims shape);

/// Reverses `axis` (offset moves to the last element, the stride is negated).
Result<Layout> flip_layout(const Layout& src, int64_t axis);

/// Column-major reshape without copying. One extent may be -1 (inferred). Succeeds when
/// every group of source axes that merges or splits is itself column-major mergeable
/// (stride[k+1] == stride[k] * extent[k]); otherwise kIncompatibleLayout, and the
/// caller may ask for an explicit copy (reshape_copy). Errors also: kInvalidShape
/// (element counts differ, more than one -1).
Result<Layout> reshape_layout(const Layout& src, Dims shape);

/// The real (imag = false) or imaginary component of a complex layout, expressed in
/// units of the component type: strides double, the offset doubles (+1 for imag).
/// Errors: kOverflow.
Result<Layout> complex_component_layout(const Layout& src, bool imag);

}  // namespace tenferro
