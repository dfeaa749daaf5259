#pragma once
// Private to the copy kernel: the word an element of S bytes moves as, shared by the
// files compiled per ISA level (through copy_parts.h) and those compiled once
// (copy_tiny.cc). Types and a dispatch only: no code that depends on the ISA.

#include <cstdint>
#include <type_traits>

namespace tenferro::cpu::detail {

template <int S>
struct Bytes {
  unsigned char b[S];
};
// The word moved for an element of S bytes: an integer of its size, or S bytes.
template <int S>
using Word = std::conditional_t<
    S == 1, uint8_t,
    std::conditional_t<S == 2, uint16_t,
                       std::conditional_t<S == 4, uint32_t, std::conditional_t<S == 8, uint64_t, Bytes<S>>>>>;

// Calls f(Word<elem>{}): the one place an element size becomes a word type.
template <class F>
decltype(auto) with_word(int64_t elem, F&& f) {
  switch (elem) {
    case 1: return f(Word<1>{});
    case 2: return f(Word<2>{});
    case 4: return f(Word<4>{});
    case 8: return f(Word<8>{});
    default: return f(Word<16>{});
  }
}

}  // namespace tenferro::cpu::detail
