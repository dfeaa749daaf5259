#pragma once
// Private: the N-ary elementwise map over broadcast-compatible strided operands.

#include <array>
#include <cstdint>
#include <utility>

#include <emmintrin.h>

#include "strided_loop.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu::detail {

// Note [Streaming map stores]: a large destination (at least kMapStreamBytes) with a
// unit-stride inner run is written with non-temporal stores, so the destination's lines
// are not read first (read-for-ownership): an elementwise product of two 32 MB operands
// moves 96 MB instead of 128 MB. The values are computed 64 bytes at a time into a small
// local array that the compiler keeps in registers, then streamed (SSE2 non-temporal
// stores) to the 16-byte aligned part of the destination. An earlier form staged 1 KiB
// in a stack buffer: its stores and reloads ran the loop 25-35 % slower than register
// chunks at the baseline ISA and made the time depend on where the stack sat relative
// to the operands (docs/benchmarks.md "Python"). The stores are fenced before the run
// returns.
constexpr int64_t kMapStreamBytes = int64_t{8} << 20;
// Element count up to which compact maps skip the strided loop (Note [Small compact maps]).
constexpr int64_t kSmallMapElements = 4096;

// Note [One unit-stride loop per map]: every unit-stride run of a map (the small compact
// case, a plain run, the pieces of a streamed run) goes through the one loop below, so
// each (operation, dtype) instantiates one vectorized loop body instead of three; the
// strided loop is the only other body. This halves the compile time of the elementwise
// translation unit without changing the generated loop.
template <class Out, class F, class... Ins>
void unit_map(Out* o, int64_t n, const F& f, const Ins*... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}

// The stores are SSE2 (every x86-64 CPU), so this runs at the library's baseline.
template <class Out, class F, class... Ins>
void stream_map(Out* o, int64_t n, const F& f, const Ins*... in) {
  static_assert(16 % sizeof(Out) == 0 || sizeof(Out) == 16);
  constexpr int64_t kChunk = 64 / static_cast<int64_t>(sizeof(Out));
  int64_t i = 0;
  while (i < n && reinterpret_cast<uintptr_t>(o + i) % 16 != 0) ++i;
  unit_map(o, i, f, in...);
  for (; n - i >= kChunk; i += kChunk) {
    alignas(16) Out v[kChunk];
    for (int64_t k = 0; k < kChunk; ++k) v[k] = f(in[i + k]...);
    auto* dst = reinterpret_cast<__m128i*>(o + i);
    _mm_stream_si128(dst + 0, _mm_load_si128(reinterpret_cast<const __m128i*>(v) + 0));
    _mm_stream_si128(dst + 1, _mm_load_si128(reinterpret_cast<const __m128i*>(v) + 1));
    _mm_stream_si128(dst + 2, _mm_load_si128(reinterpret_cast<const __m128i*>(v) + 2));
    _mm_stream_si128(dst + 3, _mm_load_si128(reinterpret_cast<const __m128i*>(v) + 3));
  }
  unit_map(o + i, n - i, f, (in + i)...);
  _mm_sfence();
}

/// out[i] = f(in_0[i], ..., in_k[i]) for every index of `out`'s layout. The input
/// layouts must already have `out`'s shape (broadcast views). Unit-stride runs use a
/// plain pointer loop the compiler vectorizes; other runs use byte strides.
template <class Out, class... Ins, class F>
void map_kernel(const CpuExecutionContext& ctx, void* out_base, const Layout& out_layout,
                const std::array<const void*, sizeof...(Ins)>& in_bases,
                const std::array<const Layout*, sizeof...(Ins)>& in_layouts, F f) {
  constexpr int kN = 1 + static_cast<int>(sizeof...(Ins));
  std::array<const Layout*, kN> layouts;
  std::array<char*, kN> bases;
  layouts[0] = &out_layout;
  bases[0] = static_cast<char*>(out_base);
  for (int i = 1; i < kN; ++i) {
    layouts[i] = in_layouts[static_cast<size_t>(i - 1)];
    bases[i] = const_cast<char*>(static_cast<const char*>(in_bases[static_cast<size_t>(i - 1)]));
  }
  // Note [Small compact maps]: small operands that are all compact column-major with the
  // output's shape (the common eager case) run as one flat loop, without building the
  // strided loop (whose setup costs more than the arithmetic on a few elements). Small
  // means at most kSmallMapElements, which a sequential context would run in one chunk
  // anyway.
  {
    const int64_t n = element_count(out_layout.shape);
    bool compact = n <= kSmallMapElements && is_col_major_contiguous(out_layout);
    for (int i = 1; compact && i < kN; ++i) {
      compact = layouts[static_cast<size_t>(i)]->shape == out_layout.shape &&
                is_col_major_contiguous(*layouts[static_cast<size_t>(i)]);
    }
    if (compact) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        unit_map(reinterpret_cast<Out*>(bases[0]) + out_layout.offset, n, f,
                 (reinterpret_cast<const Ins*>(bases[I + 1]) + layouts[I + 1]->offset)...);
      }(std::index_sequence_for<Ins...>{});
      return;
    }
  }
  constexpr std::array<int64_t, kN> kElem{static_cast<int64_t>(sizeof(Out)), static_cast<int64_t>(sizeof(Ins))...};
  StridedLoop<kN> loop(layouts, kElem);
  if (loop.empty()) return;
  const std::array<int64_t, kN> s = loop.axis(0).stride;
  bool unit = true;
  for (int i = 0; i < kN; ++i) unit = unit && s[i] == kElem[i];
  // Note [Streaming map stores].
  const bool stream = unit && 32 % sizeof(Out) == 0 &&
                      element_count(out_layout.shape) * static_cast<int64_t>(sizeof(Out)) >= kMapStreamBytes;
  loop.run_chunked(ctx, bases, [&](const std::array<char*, kN>& p, int64_t n) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      if (unit) {
        Out* o = reinterpret_cast<Out*>(p[0]);
        if constexpr (32 % sizeof(Out) == 0) {
          if (stream) {
            stream_map(o, n, f, reinterpret_cast<const Ins*>(p[I + 1])...);
            return;
          }
        }
        unit_map(o, n, f, reinterpret_cast<const Ins*>(p[I + 1])...);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const Ins*>(p[I + 1] + i * s[I + 1])...);
        }
      }
    }(std::index_sequence_for<Ins...>{});
  });
}

}  // namespace tenferro::cpu::detail
