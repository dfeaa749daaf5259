#pragma once
// Private: the N-ary elementwise map over broadcast-compatible strided operands.

#include <array>
#include <cstdint>
#include <utility>

#include "strided_loop.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu::detail {

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
  constexpr std::array<int64_t, kN> kElem{static_cast<int64_t>(sizeof(Out)), static_cast<int64_t>(sizeof(Ins))...};
  StridedLoop<kN> loop(layouts, kElem);
  if (loop.empty()) return;
  const std::array<int64_t, kN> s = loop.axis(0).stride;
  bool unit = true;
  for (int i = 0; i < kN; ++i) unit = unit && s[i] == kElem[i];
  loop.run_chunked(ctx, bases, [&](const std::array<char*, kN>& p, int64_t n) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      if (unit) {
        Out* o = reinterpret_cast<Out*>(p[0]);
        std::tuple<const Ins*...> in{reinterpret_cast<const Ins*>(p[I + 1])...};
        for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<I>(in)[i]...);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const Ins*>(p[I + 1] + i * s[I + 1])...);
        }
      }
    }(std::index_sequence_for<Ins...>{});
  });
}

}  // namespace tenferro::cpu::detail
