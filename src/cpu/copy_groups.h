#pragma once
// Private to the copy kernel: the groups of a transpose (copy_groups.cc), formed from the
// loop's axes alone, so compiled once (no ISA-specific code); copy_transpose.cc, compiled
// per ISA level, moves them.

#include <cstddef>
#include <cstdint>

#include "strided_loop.h"

namespace tenferro::cpu::detail {

inline constexpr int64_t kGroup = 4096;  // max elements of a table-described group (2 x 32 KiB tables)

// Groups of a transpose on `loop` (axis 0 destination-fastest, axis 1 source-fastest):
// G0 = axes [0, g0_end) of p0 elements, G1 = [g0_end, g1_end) of p1, and the runs seg_i /
// seg_j of each that are contiguous in the destination / source.
struct TransposeGroups {
  size_t g0_end = 1, g1_end = 2;
  int64_t p0 = 1, p1 = 1, seg_i = 1, seg_j = 1;
};

/// Forms the groups of a transpose on `loop` (axis 0 destination-fastest, axis 1
/// source-fastest; reorders the axes so that G0 = [0, g0_end), G1 = [g0_end, g1_end), the
/// odometer after): Note [Transpose groups]. `quad` is the vector path's elements per
/// vector, `g1_cap` the most elements of G1 (transpose_source_group). Pure but for `loop`.
TransposeGroups choose_groups(StridedLoop<2>& loop, int64_t elem, int64_t quad, int64_t g1_cap);

/// Fills `table` (room for kGroup entries) with the byte offsets, in operand `op`, of the
/// elements of the axes [first, last) of `loop` enumerated column-major; returns the
/// element count.
int64_t group_table(const StridedLoop<2>& loop, size_t first, size_t last, int op, int64_t* table);

}  // namespace tenferro::cpu::detail
