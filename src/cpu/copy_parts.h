#pragma once
// Private to the copy kernel (copy_kernel.cc, copy_transpose.cc, copy_blocked.cc, each
// compiled once per ISA level): the element words and the routes one file hands to
// another. Included inside the ISA region (after TENFERRO_ISA_BEGIN), after
// strided_loop.h and the CPU kernels header.

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

template <int S>
struct Bytes {
  unsigned char b[S];
};
// The word moved for an element of S bytes.
template <int S>
using Word = std::conditional_t<
    S == 1, uint8_t,
    std::conditional_t<S == 2, uint16_t,
                       std::conditional_t<S == 4, uint32_t, std::conditional_t<S == 8, uint64_t, Bytes<S>>>>>;

// Calls f(Word<elem>{}): the one place an element size becomes a word type.
template <class F>
void with_word(int64_t elem, F&& f) {
  switch (elem) {
    case 1: return f(Word<1>{});
    case 2: return f(Word<2>{});
    case 4: return f(Word<4>{});
    case 8: return f(Word<8>{});
    default: return f(Word<16>{});
  }
}

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
