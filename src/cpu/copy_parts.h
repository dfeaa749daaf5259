#pragma once
// Private to the copy kernel (copy_kernel.cc, copy_transpose.cc, copy_blocked.cc, each
// compiled once per ISA level): the element words and the routes one file hands to
// another. Included inside the ISA region (after TENFERRO_ISA_BEGIN), after
// strided_loop.h and the CPU kernels header.

#include "copy_word.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

// Word<S> and with_word: copy_word.h (namespace tenferro::cpu::detail, visible here).

constexpr int64_t kStreamBytes = 8 << 20;  // outputs at least this large use streaming stores

/// Note [Blocked copies] (copy_blocked.cc): copies `loop` (operand 0 destination, 1 source,
/// strides in bytes of `elem`-byte elements) in tiles; reorders the loop's axes.
void copy_blocked(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                  int64_t elem);

/// A transpose (copy_transpose.cc): `loop` with the source's fastest axis not the
/// destination's; `dst_bytes` is the whole output's size (it decides streaming stores).
/// Hands copies without a vector path to copy_blocked. Reorders the loop's axes.
void copy_transpose(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                    int64_t dst_bytes, int64_t elem);

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
