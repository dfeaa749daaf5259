// Note [Transpose groups] and the notes it leans on: how a transpose's axes become its
// destination group G0 and source group G1 (copy_groups.h).

#include "copy_groups.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "tenferro/cpu/caps.h"

namespace tenferro::cpu::detail {
namespace {

constexpr int64_t kMinGroup = 16;                      // groups grow past gaps until this many elements
constexpr int64_t kTinyGroup = 256;                    // ... source groups of tiny axes until this many
constexpr int64_t kBlockBytes = kTransposeBlockBytes;  // Note [Transpose blocking] in copy_transpose.cc

// Grows a group ending at *end with the axes [*end, rank) of the smallest |stride| in
// operand `op` (and, for G0, with those reserved axes [2, *r_end) that keep it within
// `reserved_until` elements; a reserved axis taken moves to the group's end).
int64_t grow_group(StridedLoop<2>& loop, int64_t elem, int64_t product, int op, size_t* end, size_t* r_end,
                   int64_t reserved_until, int64_t cap) {
  while (product < cap) {
    size_t best = loop.rank();
    auto better = [&](size_t k) {
      return best == loop.rank() || std::llabs(loop.axis(k).stride[op]) < std::llabs(loop.axis(best).stride[op]);
    };
    for (size_t k = 2; k < *r_end; ++k) {
      if (product * loop.axis(k).extent <= reserved_until && better(k)) best = k;
    }
    for (size_t k = *end; k < loop.rank(); ++k) {
      if (better(k)) best = k;
    }
    if (best == loop.rank()) break;
    if (product * loop.axis(best).extent > cap) {
      // Note [Split group axes]: an axis too long to join whole, continuing the group
      // contiguously, joins with its largest factor that fits; the rest stays outside.
      // Without it a group stopped short of such an axis: f64 7 x 1000 x 1000 x 3 `[3210]`
      // had a source group of 7 elements (56-byte reads from 3000 rows per tile) and ran
      // 36-38 ms; with 7 x 500 it runs 12.6-14.4 (memcpy 8-10 ms); 500 x 4 x 500 x 4
      // `[3120]` 6.2 -> 1.3 ms (one thread, Zen 5, 2026-12-03).
      if (best < *r_end || std::llabs(loop.axis(best).stride[op]) != product * elem) break;
      const int64_t e = loop.axis(best).extent;
      int64_t f = std::min(e - 1, cap / product);
      while (f > 1 && e % f != 0) --f;
      if (f * product < 2 * product || f < 2) break;
      loop.split_axis(best, f);
    }
    // Past a minimum size, only grow with an axis that continues the group
    // contiguously in this operand (a gap would scatter the group's accesses).
    // Note [Tiny-axis source groups]: the source group (G1) of axes of extent <= 4
    // grows past gaps up to kTinyGroup elements: with many tiny axes a 16-element
    // group left each tile a few scattered source lines, and the tiles' lines of one
    // source region were read far apart in time (rank-24 size-2 random permutations,
    // Zen 5, alternating runs: 0.32-0.45 -> 0.50-0.64 x memcpy at one thread).
    const int64_t limit = op == 1 && loop.axis(best).extent <= 4 ? kTinyGroup : kMinGroup;
    if (product >= limit && std::llabs(loop.axis(best).stride[op]) != product * elem) break;
    product *= loop.axis(best).extent;
    if (best < *r_end) {
      loop.move_axis(best, *end - 1);  // the reserved range shrinks by one
      --*r_end;
    } else {
      loop.move_axis(best, (*end)++);
    }
  }
  return product;
}

// Note [Transpose source group]: a row block covers kBlockBytes of destination rows
// across the whole source group G1, so G1 decides the block's footprint: kBlockBytes x p1
// bytes. G1 grows to at most transpose_source_group(caps) elements (caps.h), which keeps
// a block within a quarter of the L2. With G1 at the offset tables' limit (4096) a block
// of 64^4 f64 `[3210]` or of the rank-24 size-2 reversal was 2 MiB, twice this L2, and
// its source lines were evicted before the block had used them. Zen 5 (L2 1 MiB, so
// 512), alternating runs, the minimum of five each (2026-12-04): one thread `[3210]`
// 0.81x the time, `[2310]` 0.82, rank-24 reversed 0.80, geometric mean over the 24
// permutations of 64^4 0.95; two threads 0.83, 0.76, 0.91, 0.95; the largest slowdowns
// of single cases (1.05-1.14) within the run-to-run spread of the identity copy, which
// takes no transpose.
// Note [Reserved source lines]: a block of the transpose (Note [Transpose blocking])
// covers kBlockBytes of G0 and all of G1, so a source line is consumed whole in one block
// only if its axes lie in G1 or in G0's first kBlockBytes. The axes that continue the
// source-fastest contiguously, up to kBlockBytes, are therefore reserved for G1
// (positions [1, r_end)); G0, grown first, may take one of them (never axis 1) only
// while it stays within `reserved_until` elements. Without the reservation, G0 took
// every destination-fastest axis, and with many tiny axes those included the source's
// second, third, ... fastest at G0 positions far past a block: each source line was then
// read once per element pair, in blocks far apart in time (a rank-24 size-2 random
// permutation: 0.19 x memcpy; with the reservation 0.9, Zen 5, 2026-12-03).
TransposeGroups form_groups(StridedLoop<2>& loop, int64_t elem, int64_t reserved_until, int64_t g1_cap) {
  size_t r_end = 2;
  for (int64_t run = loop.axis(1).extent; run < kBlockBytes / elem;) {
    size_t next = loop.rank();
    for (size_t k = r_end; k < loop.rank(); ++k) {
      if (loop.axis(k).stride[1] == run * elem) next = k;
    }
    if (next == loop.rank()) break;
    run *= loop.axis(next).extent;
    loop.move_axis(next, r_end++);
  }
  TransposeGroups g;
  g.g0_end = r_end;  // G0 = {0} + [r_end, g0_end) while it grows
  g.p0 = grow_group(loop, elem, loop.axis(0).extent, 0, &g.g0_end, &r_end, reserved_until, kGroup);
  for (size_t k = 1; k < r_end; ++k) loop.move_axis(1, g.g0_end - 1);  // reserved axes after G0
  g.g0_end -= r_end - 1;                                               // G0 = [0, g0_end)
  g.g1_end = g.g0_end + 1;
  size_t no_reserved = 2;
  g.p1 = grow_group(loop, elem, loop.axis(g.g0_end).extent, 1, &g.g1_end, &no_reserved, 0, g1_cap);
  auto segment = [&](size_t first, size_t last, int op) {
    int64_t run = 1;
    for (size_t k = first; k < last && loop.axis(k).stride[op] == run * elem; ++k) run *= loop.axis(k).extent;
    return run;
  };
  g.seg_i = segment(0, g.g0_end, 0);
  g.seg_j = segment(g.g0_end, g.g1_end, 1);
  return g;
}

}  // namespace

int64_t group_table(const StridedLoop<2>& loop, size_t first, size_t last, int op, int64_t* table) {
  int64_t n = 1;
  table[0] = 0;
  for (size_t k = first; k < last; ++k) {
    const int64_t e = loop.axis(k).extent;
    const int64_t st = loop.axis(k).stride[op];
    for (int64_t r = 1; r < e; ++r) {
      for (int64_t q = 0; q < n; ++q) table[r * n + q] = table[q] + r * st;
    }
    n *= e;
  }
  return n;
}

// Note [Transpose groups]: an axis that is among both the destination's and the source's
// fastest (a shared axis: many tiny axes make them common) can make only one group
// contiguous. Two groupings are formed: G0 may take reserved axes within a block
// (destination runs long), or only up to one vector (source runs long); the one whose
// shorter contiguous side (in bytes, counted up to a block) is longer wins, then the one
// whose longer side is, then the first. Rank-24 size-2 permutations, Zen 5, alternating
// runs (2026-12-03): one whose source-second axis is the destination-fifth ran 10.2-10.6
// ms in the first grouping (source runs of 2 elements: the pair path) and 7.0-7.1 in the
// second (runs of 16 and 8 elements); one whose source-third axis is the
// destination-third ran 11.9-12.0 in the first (runs of 4096 and 4) and 16.5-17.5 in the
// second (4 and 16): each is chosen by the rule.
TransposeGroups choose_groups(StridedLoop<2>& loop, int64_t elem, int64_t quad, int64_t g1_cap) {
  StridedLoop<2> alt = loop;
  const TransposeGroups first = form_groups(loop, elem, kBlockBytes / elem, g1_cap);
  const TransposeGroups second = form_groups(alt, elem, quad, g1_cap);
  auto sides = [&](const TransposeGroups& g) {
    const int64_t a = std::min(g.seg_i * elem, kBlockBytes), b = std::min(g.seg_j * elem, kBlockBytes);
    return std::pair<int64_t, int64_t>{std::min(a, b), std::max(a, b)};
  };
  if (sides(second) > sides(first)) {
    loop = alt;
    return second;
  }
  return first;
}

}  // namespace tenferro::cpu::detail
