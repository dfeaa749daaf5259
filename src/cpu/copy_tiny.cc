// Note [Tiny transposes]: batches of transposes of at most 8 x 8 elements (copy_tiny.h).

#include "copy_tiny.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tenferro::cpu::detail {

// Note [Tiny transposes]: a permutation that swaps two tiny axes, each the fastest of one
// side, across one long axis contiguous on both (f64 7 x 600 x 1000 x 3 `[3120]`: a 7 x 3
// transpose for each of the 600 x 1000 positions, merged into one batch axis that
// continues the 7 in the source and the 3 in the destination) is a batch of tiny
// transposes. The transpose route moved it in vector quads with element-wise tails per
// segment (0.45-0.57 x memcpy). Here each transpose is unrolled for its extents at
// compile time (one instance per na, nd in 2..8 and element size) and the batch walked in
// order: nd source rows read na elements each, na destination rows written nd elements
// each, all advancing sequentially, so the na + nd streams read and write whole lines.
// Measured against the routes before (Zen 5, 2026-12-05, f64, one thread, fastest of
// five, two or three alternating rounds of a harness over cpu::copy_into, a noisy host):
// `[3120]` of 7 x 600 x 1000 x 3 0.43-0.57 -> 0.76-0.81 x memcpy, of 3 x .. x 7 0.49-0.50
// -> 0.69-0.82, 4 x .. x 3 0.53-0.61 -> 0.58-1.02, 2 x .. x 6 0.49-0.57 -> 0.64-0.78,
// 3 x .. x 5 0.59-0.62 -> 0.59-0.98, 5 x .. x 5 0.62 -> 0.77-0.81, 8 x 300 x 1000 x 6
// 0.54-0.57 -> 0.83-0.92.
// Only loops of these three axes take it: with outer axes as well (f64 3 x 1000 x 3 x
// 1000 `[2103]`, the batch 1000 long, or 3 x 100000 x 3 x 10) such copies reach the
// blocked copies, whose tiles were as fast or faster there (3 x 3: 1.0-1.5 x the time
// through this route; 7 x 3, 5 x 5, 4 x 6: within the noise).

namespace {

template <int S>
struct Elem {
  unsigned char b[S];
};

using TinyFn = void (*)(char* dst, const char* src, int64_t count, int64_t dst_a, int64_t src_d);

// `count` transposes: element (i, j) of transpose k (i < NA along a, j < ND along d) is
// read at src + j * src_d + (k * NA + i) * S and written at dst + i * dst_a + (k * ND +
// j) * S.
template <int S, int NA, int ND>
void tiny_batch(char* dst, const char* src, int64_t count, int64_t dst_a, int64_t src_d) {
  const char* srow[ND];
  char* drow[NA];
  for (int j = 0; j < ND; ++j) srow[j] = src + j * src_d;
  for (int i = 0; i < NA; ++i) drow[i] = dst + i * dst_a;
  for (int64_t k = 0; k < count; ++k) {
    Elem<S> v[ND][NA];
    for (int j = 0; j < ND; ++j) std::memcpy(v[j], srow[j] + k * NA * S, sizeof(v[j]));
    for (int i = 0; i < NA; ++i) {
      for (int j = 0; j < ND; ++j) std::memcpy(drow[i] + (k * ND + j) * S, &v[j][i], S);
    }
  }
}

template <int S, int... I>
constexpr std::array<TinyFn, sizeof...(I)> tiny_table(std::integer_sequence<int, I...>) {
  constexpr int kN = kTinyMaxExtent - 1;  // extents 2..8
  return {&tiny_batch<S, 2 + I / kN, 2 + I % kN>...};
}

template <int S>
TinyFn tiny_fn(int64_t na, int64_t nd) {
  constexpr int kN = kTinyMaxExtent - 1;
  static constexpr std::array<TinyFn, kN* kN> kTable = tiny_table<S>(std::make_integer_sequence<int, kN * kN>{});
  return kTable[static_cast<size_t>((na - 2) * kN + (nd - 2))];
}

TinyFn tiny_fn_for(int64_t elem, int64_t na, int64_t nd) {
  switch (elem) {
    case 1: return tiny_fn<1>(na, nd);
    case 2: return tiny_fn<2>(na, nd);
    case 4: return tiny_fn<4>(na, nd);
    case 8: return tiny_fn<8>(na, nd);
    default: return tiny_fn<16>(na, nd);
  }
}

// Elements per parallel piece of the batch.
constexpr int64_t kPieceElements = int64_t{1} << 15;

}  // namespace

bool tiny_transposes(const StridedLoop<2>& loop, int64_t elem, TinyTransposes* out) noexcept {
  const size_t rank = loop.rank();
  if (rank != 3) return false;  // Note [Tiny transposes]: no outer axes
  TinyTransposes t;
  bool have_a = false, have_d = false;
  for (size_t k = 0; k < rank; ++k) {
    if (loop.axis(k).stride[1] == elem) {
      t.a = k;
      have_a = true;
    }
    if (loop.axis(k).stride[0] == elem) {
      t.d = k;
      have_d = true;
    }
  }
  if (!have_a || !have_d || t.a == t.d) return false;
  const int64_t na = loop.axis(t.a).extent, nd = loop.axis(t.d).extent;
  if (na < 2 || nd < 2 || na > kTinyMaxExtent || nd > kTinyMaxExtent) return false;
  for (size_t k = 0; k < rank; ++k) {
    const LoopAxis<2>& x = loop.axis(k);
    if (k != t.a && k != t.d && x.stride[1] == na * elem && x.stride[0] == nd * elem && x.extent >= kTinyMinBatch) {
      t.b = k;
      *out = t;
      return true;
    }
  }
  return false;
}

void copy_tiny_transposes(const CpuExecutionContext& ctx, StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                          int64_t elem, const TinyTransposes& t) {
  const LoopAxis<2> a = loop.axis(t.a), d = loop.axis(t.d), b = loop.axis(t.b);
  // The three axes first (a, d, b), the rest (none: tiny_transposes takes loops of these
  // three only) in source order. Moving an axis forward shifts the ones it passes.
  size_t pos[3] = {t.a, t.d, t.b};
  for (size_t q = 0; q < 3; ++q) {
    loop.move_axis(pos[q], q);
    for (size_t r = q + 1; r < 3; ++r) {
      if (pos[r] >= q && pos[r] < pos[q]) ++pos[r];
    }
  }
  loop.sort_axes(3, 1);
  const TinyFn fn = tiny_fn_for(elem, a.extent, d.extent);
  const int64_t per = a.extent * d.extent;
  const int64_t piece = std::max<int64_t>(1, kPieceElements / per);
  const int64_t pieces = (b.extent + piece - 1) / piece;
  const int64_t outer = loop.outer_count(3);
  ctx.parallel_for(outer * pieces, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t o = item / pieces, k0 = item % pieces * piece, k1 = std::min(b.extent, k0 + piece);
      loop.run_range(bases, 3, o, o + 1, [&](const std::array<char*, 2>& p) {
        fn(p[0] + k0 * b.stride[0], p[1] + k0 * b.stride[1], k1 - k0, a.stride[0], d.stride[1]);
      });
    }
  });
}

}  // namespace tenferro::cpu::detail
