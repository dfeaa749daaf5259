// Note [Tiny transposes]: batches of transposes of at most 8 x 8 elements (copy_tiny.h).

#include "copy_tiny.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tenferro::cpu::detail {

// Note [Tiny transposes]: a permutation that swaps two tiny axes, each the fastest of one
// side, is a batch of tiny transposes when some other axis b steps through them in order
// on both sides: on each side b continues the tiny axis's rows (f64 7 x 600 x 1000 x 3
// `[3120]`: a 7 x 3 transpose for each of the 600 x 1000 positions, merged into one axis
// that continues the 7 in the source and the 3 in the destination), or the whole na x nd
// block when the other tiny axis follows there (a batch of small matrices transposed:
// numpy's `x.swapaxes(-1, -2)` of an (n, 4, 4) array, column-major 4 x 4 x n `[102]`).
// Each transpose is unrolled for its extents at compile time (one instance per na, nd in
// 2..8 and element size) and the batch walked in order: nd source rows read na elements
// each, na destination rows written nd elements each, all advancing sequentially (for
// blocks, one contiguous block each side), so the streams read and write whole lines.
// Other axes (outer ones) are walked in source order around the batch. The transpose
// route moved such copies in vector quads with element-wise tails per segment, or (with
// outer axes) the blocked copies in tiles, one outer iteration per tiny transpose or
// block. Measured (Zen 5, 2026-12-05, f64, a harness over cpu::copy_into alternating the
// routes in one process, fastest of ten, one thread; ratio = an identity copy's time /
// the copy's): 4 x 4 x 1e6 `[102]` 129-138 -> 9.3-11.1 ms (0.07 -> 1.04), 3 x 3 x 1e6
// 11-17 -> 5.6-6.5, 8 x 8 x 1e5 16.7 -> 4.5, 2 x 2 x 2e6 14.9 -> 5.2, 4^11 swapping its
// first two axes 33-37 -> 2.4-2.8, 8^8 likewise 42.8 -> 11.1; with outer axes 3 x 1000 x
// 3 x 1000 `[2103]` 10.5 -> 6.8 (0.52 -> 0.81; two threads 0.45 -> 0.92), 3 x 100000 x 3
// x 10 8.3 -> 4.2, 2 x 2000 x 2 x 1000 11.6 -> 4.4, 3 x 10 x 3 x 100000 10.1 -> 6.1; 8 x 8
// batches with outer axes and rank-12 to rank-24 permutations of size-2 axes unchanged.
// When the route first came (three axes only, pattern of rows), its transposes moved
// each source row's na elements as one block of bytes and took the destination's
// elements out of it one by one, a store-forwarding pattern that made this route no
// faster than the tiles with outer axes: typed words through registers take 0.55 x the
// time (a standalone loop of 3 x 3 f64 transposes, 9e6 elements: 11.4-11.9 -> 6.3-6.6 ms;
// 3 x 7 9.5 -> 5.0, 7 x 3 6.3 -> 5.2, f32 3 x 5 6.7 -> 5.0, bytes 2 x 8 20.3 -> 12.9).

namespace {

template <int S>
struct Elem {
  unsigned char b[S];
};
// The word an element of S bytes moves as: an integer of its size, or a 16-byte struct.
template <int S>
struct WordOf {
  using Type = Elem<S>;
};
template <>
struct WordOf<1> {
  using Type = uint8_t;
};
template <>
struct WordOf<2> {
  using Type = uint16_t;
};
template <>
struct WordOf<4> {
  using Type = uint32_t;
};
template <>
struct WordOf<8> {
  using Type = uint64_t;
};

using TinyFn = void (*)(char* dst, const char* src, int64_t count, const TinyStrides& st);

// `count` transposes: element (i, j) of transpose k (i < NA along a, j < ND along d) is
// read at src + j * src_d + i * S + k * src_b and written at dst + i * dst_a + j * S + k *
// dst_b (bytes, TinyStrides); elements move as typed words through registers (Note [Tiny
// transposes]).
template <int S, int NA, int ND>
void tiny_batch(char* dst, const char* src, int64_t count, const TinyStrides& st) {
  using W = typename WordOf<S>::Type;
  // Locals, not reads through `st`, which the stores could alias as far as the compiler
  // knows.
  const int64_t src_b = st.src_b, dst_b = st.dst_b;
  const char* srow[ND];
  char* drow[NA];
  for (int j = 0; j < ND; ++j) srow[j] = src + j * st.src_d;
  for (int i = 0; i < NA; ++i) drow[i] = dst + i * st.dst_a;
  for (int64_t k = 0; k < count; ++k) {
    W v[ND][NA];
    for (int j = 0; j < ND; ++j) {
      const W* row = reinterpret_cast<const W*>(srow[j]);
      for (int i = 0; i < NA; ++i) v[j][i] = row[i];
      srow[j] += src_b;
    }
    for (int i = 0; i < NA; ++i) {
      W* row = reinterpret_cast<W*>(drow[i]);
      for (int j = 0; j < ND; ++j) row[j] = v[j][i];
      drow[i] += dst_b;
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
  if (rank < 3) return false;
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
  const LoopAxis<2>&ax_a = loop.axis(t.a), &ax_d = loop.axis(t.d);
  const int64_t na = ax_a.extent, nd = ax_d.extent;
  if (na < 2 || nd < 2 || na > kTinyMaxExtent || nd > kTinyMaxExtent) return false;
  // The batch axis continues a's rows in the source, or the whole na x nd block when d
  // follows a there; and d's rows in the destination, or the whole block when a follows
  // d there (Note [Tiny transposes]). The longest such axis.
  const bool src_block = ax_d.stride[1] == na * elem, dst_block = ax_a.stride[0] == nd * elem;
  int64_t longest = 0;
  for (size_t k = 0; k < rank; ++k) {
    const LoopAxis<2>& x = loop.axis(k);
    if (k == t.a || k == t.d || x.extent < kTinyMinBatch || x.extent <= longest) continue;
    const bool src_ok = x.stride[1] == na * elem || (src_block && x.stride[1] == na * nd * elem);
    const bool dst_ok = x.stride[0] == nd * elem || (dst_block && x.stride[0] == na * nd * elem);
    if (src_ok && dst_ok) {
      t.b = k;
      longest = x.extent;
    }
  }
  if (longest == 0) return false;
  *out = t;
  return true;
}

void copy_tiny_transposes(const CpuExecutionContext& ctx, StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                          int64_t elem, const TinyTransposes& t) {
  const LoopAxis<2> a = loop.axis(t.a), d = loop.axis(t.d), b = loop.axis(t.b);
  // The three axes first (a, d, b), the outer ones after them in source order. Moving an axis forward shifts the ones
  // it passes.
  size_t pos[3] = {t.a, t.d, t.b};
  for (size_t q = 0; q < 3; ++q) {
    loop.move_axis(pos[q], q);
    for (size_t r = q + 1; r < 3; ++r) {
      if (pos[r] >= q && pos[r] < pos[q]) ++pos[r];
    }
  }
  loop.sort_axes(3, 1);
  const TinyFn fn = tiny_fn_for(elem, a.extent, d.extent);
  const TinyStrides st{a.stride[0], d.stride[1], b.stride[0], b.stride[1]};
  const int64_t per = a.extent * d.extent;
  const int64_t piece = std::max<int64_t>(1, kPieceElements / per);
  const int64_t pieces = (b.extent + piece - 1) / piece;
  const int64_t outer = loop.outer_count(3);
  ctx.parallel_for(outer * pieces, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t o = item / pieces, k0 = item % pieces * piece, k1 = std::min(b.extent, k0 + piece);
      loop.run_range(bases, 3, o, o + 1, [&](const std::array<char*, 2>& p) {
        fn(p[0] + k0 * b.stride[0], p[1] + k0 * b.stride[1], k1 - k0, st);
      });
    }
  });
}

}  // namespace tenferro::cpu::detail
