// Note [Tiny transposes] and Note [Small-block permutations]: batches of transposes of at
// most 8 x 8 elements, and of permutations of one small block (copy_tiny.h); compiled
// once (typed moves, no ISA-specific code).

#include "copy_tiny.h"

#include "copy_word.h"

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
// block: a batch of 4 x 4 matrices transposed ran at 0.07 x an identity copy, now about
// 1.0. The transposes move typed words through registers: moving each source row's na
// elements as one block of bytes and taking the destination's elements out of it one
// by one is a store-forwarding pattern, about 1.8 x the time. Figures: docs/benchmarks.md
// (Zen 5, "Permutation copies", tiny transposes and small blocks).

namespace {

using TinyFn = void (*)(char* dst, const char* src, int64_t count, const TinyStrides& st);

// `count` transposes: element (i, j) of transpose k (i < NA along a, j < ND along d) is
// read at src + j * src_d + i * S + k * src_b and written at dst + i * dst_a + j * S + k *
// dst_b (bytes, TinyStrides); elements move as typed words through registers (Note [Tiny
// transposes]).
template <int S, int NA, int ND>
void tiny_batch(char* dst, const char* src, int64_t count, const TinyStrides& st) {
  using W = Word<S>;
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
  return with_word(elem, [&](auto w) { return tiny_fn<static_cast<int>(sizeof(w))>(na, nd); });
}

// Elements per parallel piece of the batch.
constexpr int64_t kPieceElements = int64_t{1} << 15;

// Moves the axes `which` (positions in `loop`, distinct) to the front in that order.
// Moving an axis forward shifts the ones it passes.
void axes_to_front(StridedLoop<2>& loop, size_t* which, size_t n) {
  for (size_t q = 0; q < n; ++q) {
    loop.move_axis(which[q], q);
    for (size_t r = q + 1; r < n; ++r) {
      if (which[r] >= q && which[r] < which[q]) ++which[r];
    }
  }
}

// Note [Small-block permutations]: a permutation among small axes under an axis that
// steps equally on both sides (a state vector of 2^24 amplitudes with qubits 1 and 3
// swapped: column-major 2 x 2 x 2 x 2 x 2^20 `[0321...]`; 3^5 axes permuted under a
// batch) is a batch of identical permutations of one block: the axes below the batch
// axis's step on both sides fill the block densely on each side. Its runs are a few
// elements long on each side, so the runs route copied them one by one in tiles and the
// transpose route had no vector path. Here a table of the block's permutation (the
// source element of each destination element) is built once per copy, and each block is
// copied in destination order, its source read from L1, block after block sequentially
// on both sides. Blocks of at most kBlockMaxElements; a loop with a shared fastest run
// of a line or more stays with the runs route, and one whose runs are a vector long on
// both sides (16 x 16 blocks, 3 x 7 x 5 x n `[2013]`) with the transpose route, whose
// vector tiles were faster there. Two qubits of a 2^24 f64 state vector swapped ran at
// 0.20 x an identity copy, now about 1.0; the einsum-benchmark instances that reach the
// route are unchanged within the noise. Figures: docs/benchmarks.md (Zen 5,
// "Permutation copies", tiny transposes and small blocks).
//
// `count` blocks of `block` elements, `step` bytes apart on both sides; the destination's
// element e of a block is the source's element tab[e] of it (typed words).
template <int S>
void block_batch(char* dst, const char* src, int64_t count, int64_t step, const int32_t* tab, int64_t block) {
  using W = Word<S>;
  for (int64_t k = 0; k < count; ++k) {
    const W* s = reinterpret_cast<const W*>(src + k * step);
    W* d = reinterpret_cast<W*>(dst + k * step);
    for (int64_t e = 0; e < block; ++e) d[e] = s[tab[e]];
  }
}

using BlockFn = void (*)(char* dst, const char* src, int64_t count, int64_t step, const int32_t* tab, int64_t block);

BlockFn block_fn_for(int64_t elem) {
  return with_word(elem, [](auto w) -> BlockFn { return &block_batch<static_cast<int>(sizeof(w))>; });
}

// Walks a batch axis (`batch`, at position `inner` of `loop`, the axes before it inside
// each batch item, the ones after it outer) in pieces of about kPieceElements elements
// (`per_item` elements each item) split across the context's threads: calls
// fn(dst, src, count) for each piece of `count` consecutive items, dst and src at its
// first item.
template <class F>
void for_each_batch_piece(const CpuExecutionContext& ctx, const StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                          size_t inner, const LoopAxis<2>& batch, int64_t per_item, F&& fn) {
  const int64_t piece = std::max<int64_t>(1, kPieceElements / per_item);
  const int64_t pieces = (batch.extent + piece - 1) / piece;
  const int64_t outer = loop.outer_count(inner + 1);
  ctx.parallel_for(outer * pieces, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t o = item / pieces, k0 = item % pieces * piece, k1 = std::min(batch.extent, k0 + piece);
      loop.run_range(bases, inner + 1, o, o + 1, [&](const std::array<char*, 2>& p) {
        fn(p[0] + k0 * batch.stride[0], p[1] + k0 * batch.stride[1], k1 - k0);
      });
    }
  });
}

// Whether axis `a` lies inside the blocks of a batch axis stepping `step` bytes on both
// sides (Note [Small-block permutations]).
bool inside_block(const LoopAxis<2>& a, int64_t step) { return a.stride[0] < step && a.stride[1] < step; }

// Whether the axes flagged in `inner` fill [0, block) elements densely in operand `op`:
// sorted by stride there, each steps the product of the extents before it.
bool dense(const StridedLoop<2>& loop, const bool* inner, int op, int64_t elem) {
  int64_t run = elem;
  size_t left = 0;
  for (size_t k = 0; k < loop.rank(); ++k) left += inner[k] ? 1 : 0;
  for (; left > 0; --left) {
    size_t next = loop.rank();
    for (size_t k = 0; k < loop.rank(); ++k) {
      if (inner[k] && loop.axis(k).stride[op] == run) next = k;
    }
    if (next == loop.rank()) return false;
    run *= loop.axis(next).extent;
  }
  return true;
}

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
  // The three axes first (a, d, b), the outer ones after them in source order.
  size_t pos[3] = {t.a, t.d, t.b};
  axes_to_front(loop, pos, 3);
  loop.sort_axes(3, 1);
  const TinyFn fn = tiny_fn_for(elem, a.extent, d.extent);
  const TinyStrides st{a.stride[0], d.stride[1], b.stride[0], b.stride[1]};
  for_each_batch_piece(ctx, loop, bases, 2, b, a.extent * d.extent,
                       [&](char* dst, const char* src, int64_t count) { fn(dst, src, count, st); });
}

bool block_permutation(const StridedLoop<2>& loop, int64_t elem, BlockPermutation* out) noexcept {
  const size_t rank = loop.rank();
  if (rank < 3 || rank > kBlockMaxRank) return false;
  // Runs of a line or more shared by both sides are the runs route's, and a transpose
  // whose runs (contiguous on each side) are a vector long or more the transpose route's
  // (Note [Copy kernel]).
  const int64_t vector = (elem <= 4 ? 16 : 32) / elem;
  int64_t dst_run = 0, src_run = 0;
  bool shared = false;
  for (size_t k = 0; k < rank; ++k) {
    const LoopAxis<2>& x = loop.axis(k);
    if (x.stride[0] <= 0 || x.stride[1] <= 0) return false;  // reversed or broadcast: not blocks
    if (x.stride[0] == elem) dst_run = x.extent;
    if (x.stride[1] == elem) src_run = x.extent;
    shared = shared || (x.stride[0] == elem && x.stride[1] == elem);
  }
  if (shared ? dst_run * elem >= 64 : std::min(dst_run, src_run) >= vector) return false;
  // The batch axis: the smallest step equal on both sides that closes a dense block.
  BlockPermutation best;
  for (size_t x = 0; x < rank; ++x) {
    const LoopAxis<2>& bx = loop.axis(x);
    const int64_t step = bx.stride[0];
    if (bx.stride[1] != step || step % elem != 0) continue;
    const int64_t block = step / elem;
    if (block < 4 || block > kBlockMaxElements || (best.block > 0 && block >= best.block)) continue;
    bool inner[kBlockMaxRank] = {};
    int64_t product = 1;
    bool ok = true;
    for (size_t k = 0; k < rank && ok; ++k) {
      if (k == x) continue;
      const LoopAxis<2>& a = loop.axis(k);
      if (inside_block(a, step)) {
        inner[k] = true;
        product *= a.extent;
      } else {
        ok = a.stride[0] % step == 0 && a.stride[1] % step == 0;  // whole blocks apart
      }
    }
    if (!ok || product != block || !dense(loop, inner, 0, elem) || !dense(loop, inner, 1, elem)) continue;
    best.x = x;
    best.block = block;
  }
  if (best.block == 0) return false;
  *out = best;
  return true;
}

void copy_block_permutations(const CpuExecutionContext& ctx, StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                             int64_t elem, const BlockPermutation& bp) {
  const LoopAxis<2> x = loop.axis(bp.x);
  const int64_t step = x.stride[0];
  // The block's axes first, then the batch axis, the outer ones after it in source order.
  size_t order[kBlockMaxRank];
  size_t n = 0;
  for (size_t k = 0; k < loop.rank(); ++k) {
    const LoopAxis<2>& a = loop.axis(k);
    if (k != bp.x && inside_block(a, step)) order[n++] = k;
  }
  order[n] = bp.x;
  axes_to_front(loop, order, n + 1);
  loop.sort_axes(n + 1, 1);
  // The table: the source element of each destination element of a block.
  int32_t tab[kBlockMaxElements];
  {
    int64_t index[kBlockMaxRank] = {};
    int64_t d = 0, s = 0;
    for (int64_t e = 0; e < bp.block; ++e) {
      tab[d / elem] = static_cast<int32_t>(s / elem);
      for (size_t k = 0; k < n; ++k) {  // odometer over the block's axes
        const LoopAxis<2>& a = loop.axis(k);
        d += a.stride[0];
        s += a.stride[1];
        if (++index[k] < a.extent) break;
        d -= a.extent * a.stride[0];
        s -= a.extent * a.stride[1];
        index[k] = 0;
      }
    }
  }
  const BlockFn fn = block_fn_for(elem);
  for_each_batch_piece(ctx, loop, bases, n, x, bp.block,
                       [&](char* dst, const char* src, int64_t count) { fn(dst, src, count, step, tab, bp.block); });
}

}  // namespace tenferro::cpu::detail
