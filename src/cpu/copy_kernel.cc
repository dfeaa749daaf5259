// The strided copy kernel, compiled once per ISA level (Note [ISA kernels] in
// gemm_kernels.cc); copy.cc dispatches to the copy for the context's usable level.

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <immintrin.h>

#include "copy_tiny.h"
#include "strided_loop.h"
#include "tenferro/core/isa_region.h"
#include "tenferro/cpu/kernels.h"

TENFERRO_ISA_BEGIN
#include "copy_parts.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {

// Note [Copy kernel]: the copy runs on the merged axes of Note [Strided loop plan]
// (operand 0 = destination, 1 = source), and copy_typed picks its route from them alone
// (design 0002 has the table), in this order:
// - tiny transposes (copy_tiny.cc): the source-fastest and the
//   destination-fastest axes of extents 2..8 and a batch axis stepping through both in
//   order (their rows or their whole block, on each side), any outer axes (Note [Tiny
//   transposes]).
// - small-block permutations (copy_tiny.cc): the axes below some axis's equal step on
//   both sides fill a block of at most 256 elements densely on each side, with runs too
//   short for the runs and transpose routes (Note [Small-block permutations]).
// - runs: the source's fastest axis is also the destination's. Runs of a line or more
//   are memcpy'd (large copies walk them in source order with streaming stores, Note
//   [Streamed runs]); shorter runs go to blocked copies.
// - transpose (copy_transpose.cc): a destination group G0 (the destination-fastest axes,
//   contiguous there) and a source group G1 (the source-fastest axes, contiguous there)
//   form a P0 x P1 matrix, moved in register tiles of whole lines or vectors on both
//   sides (Note [Line transposes], Note [Zips]); the remaining axes are the odometer
//   split across threads.
// - blocked (copy_blocked.cc): what has no vector path (contiguous segments shorter
//   than a vector on one side, every permutation of a scalar build) is copied in tiles
//   of runs of at least 256 bytes on both sides (Note [Blocked copies]).

namespace {

#if TENFERRO_ISA_LEVEL >= 1
// Note [Streamed runs]: a large copy whose source and destination share the fastest axis
// (unit stride in both) moves runs of that axis; the rest is a permutation of whole runs.
// Walked in destination order, each run's source is far from the last one's, and
// streaming stores then made it slower (they are only good once reads are sequential).
// Walked in source order instead, the reads are one sequential stream and the writes
// whole lines scattered by streaming stores, which need no read of the destination.
// Runs must be long enough to be mostly whole lines: a run's unaligned head and tail
// lines are stored normally. Zen 5, 64^4 f64 [0321] as 512-byte runs in a standalone
// loop, against glibc memcpy of the same bytes (2026-12-03): destination order with
// normal stores 0.53-0.70, with streaming stores 0.35-0.47; source order with streaming
// stores 1.02-1.31.
constexpr int64_t kStreamRunBytes = 256;  // shortest run streamed: four lines (measured: 512)

bool streams_runs(const detail::StridedLoop<2>& loop, int64_t dst_bytes) {
  return dst_bytes >= kStreamBytes && loop.rank() > 1 &&
         loop.axis(0).extent * loop.axis(0).stride[0] >= kStreamRunBytes;
}

// Copies `bytes` from s to d, the whole 64-byte lines of d with streaming stores.
inline void stream_run(char* d, const char* s, int64_t bytes) {
  const int64_t head = std::min<int64_t>(bytes, static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(d) % 64) % 64));
  std::memcpy(d, s, static_cast<size_t>(head));
  int64_t k = head;
  for (; k + 64 <= bytes; k += 64) {
    const __m256d a = _mm256_loadu_pd(reinterpret_cast<const double*>(s + k));
    const __m256d b = _mm256_loadu_pd(reinterpret_cast<const double*>(s + k + 32));
    _mm256_stream_pd(reinterpret_cast<double*>(d + k), a);
    _mm256_stream_pd(reinterpret_cast<double*>(d + k + 32), b);
  }
  std::memcpy(d + k, s + k, static_cast<size_t>(bytes - k));
}

// Note [Run tiles]: in source order the runs of the source-next axis x go to destination
// places x's destination stride apart, and each of those write streams continues where
// the last one stopped only at the next step of the destination-fastest outer axis w.
// When w is x's neighbour in source order the streams continue at once; when another
// axis lies between, each stream gets one run and then jumps, and the next one lands a
// whole sub-odometer later. Then x and w are walked as tiles of kRunTileBytes / run
// runs each way, so every tile reads and writes contiguous pieces of that size. Zen 5,
// 64^4 f64 [0321] (512-byte runs, x's destination stride 2 MiB): 0.53 x memcpy in plain
// source order, 0.76 with tiles of 8 x 8 runs in the standalone loop, and in `tenferro
// bench kernels --only permute` (alternating, 2026-12-03) 0.50-0.74 -> 0.71-1.05 at one
// thread, 0.65-1.03 either way at two; the permutations whose w follows x (0.84-1.10)
// were slower tiled (0.66-0.90) in the standalone loop.
constexpr int64_t kRunTileBytes = 4096;

// Runs of axis 0 (unit stride in both operands), the other axes walked in source order
// (Note [Run tiles] for the exception).
void copy_streamed_runs(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop,
                        const std::array<char*, 2>& bases) {
  loop.sort_axes(1, 1);
  const int64_t bytes = loop.axis(0).extent * loop.axis(0).stride[0];
  size_t w = 1;
  for (size_t k = 2; k < loop.rank(); ++k) {
    if (std::llabs(loop.axis(k).stride[0]) < std::llabs(loop.axis(w).stride[0])) w = k;
  }
  const int64_t tile = kRunTileBytes / bytes;
  if (w >= 3 && tile > 1 && loop.axis(1).stride[1] == bytes && loop.axis(w).stride[0] == bytes) {
    loop.move_axis(w, 2);
    const detail::LoopAxis<2> xa = loop.axis(1), wa = loop.axis(2);
    const int64_t x_tiles = (xa.extent + tile - 1) / tile, w_tiles = (wa.extent + tile - 1) / tile;
    ctx.parallel_for(loop.outer_count(3) * w_tiles, 1, [&](int64_t b, int64_t e) {
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / w_tiles, w0 = item % w_tiles * tile, w1 = std::min(wa.extent, w0 + tile);
        loop.run_range(bases, 3, o, o + 1, [&](const std::array<char*, 2>& p) {
          for (int64_t xt = 0; xt < x_tiles; ++xt) {
            const int64_t x0 = xt * tile, x1 = std::min(xa.extent, x0 + tile);
            for (int64_t wi = w0; wi < w1; ++wi) {
              for (int64_t xi = x0; xi < x1; ++xi) {
                stream_run(p[0] + wi * wa.stride[0] + xi * xa.stride[0], p[1] + wi * wa.stride[1] + xi * xa.stride[1],
                           bytes);
              }
            }
          }
        });
      }
      _mm_sfence();
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / bytes);
  ctx.parallel_for(loop.outer_count(1), grain, [&](int64_t b, int64_t e) {
    loop.run_range(bases, 1, b, e, [&](const std::array<char*, 2>& p) { stream_run(p[0], p[1], bytes); });
    // Streaming stores are weakly ordered: fence on the thread that issued them.
    _mm_sfence();
  });
}
#endif

template <class W>
void copy_typed(const CpuExecutionContext& ctx, const char* src_base, const Layout& src, char* dst_base,
                const Layout& dst) {
  constexpr int64_t kElem = sizeof(W);
  detail::StridedLoop<2> loop({&dst, &src}, {kElem, kElem});
  if (loop.empty()) return;
  std::array<char*, 2> bases{dst_base, const_cast<char*>(src_base)};
  // Note [Tiny transposes]: a batch of transposes of tiny axes, unrolled per extent.
  if (detail::TinyTransposes t; detail::tiny_transposes(loop, kElem, &t)) {
    detail::copy_tiny_transposes(ctx, loop, bases, kElem, t);
    return;
  }
  // Note [Small-block permutations]: a batch of permutations of one small block.
  if (detail::BlockPermutation bp; detail::block_permutation(loop, kElem, &bp)) {
    detail::copy_block_permutations(ctx, loop, bases, kElem, bp);
    return;
  }
  const size_t src_fast = loop.fastest_axis(1);
  if (src_fast == 0 || loop.rank() == 1) {
    const int64_t ds = loop.axis(0).stride[0];
    const int64_t ss = loop.axis(0).stride[1];
#if TENFERRO_ISA_LEVEL >= 1
    if (ds == kElem && ss == kElem && streams_runs(loop, dst.element_count() * kElem)) {
      copy_streamed_runs(ctx, loop, bases);
      return;
    }
#endif
    // Runs shorter than a line each: Note [Blocked copies].
    if (ds == kElem && ss == kElem && loop.rank() > 1 && loop.axis(0).extent * kElem < 64) {
      copy_blocked(ctx, loop, bases, kElem);
      return;
    }
    loop.run_chunked(ctx, bases, [&](const std::array<char*, 2>& p, int64_t n) {
      if (ds == kElem && ss == kElem) {
        std::memcpy(p[0], p[1], static_cast<size_t>(n * kElem));
        return;
      }
      char* d = p[0];
      const char* s = p[1];
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<W*>(d + i * ds) = *reinterpret_cast<const W*>(s + i * ss);
      }
    });
    return;
  }
  copy_transpose(ctx, loop, bases, dst.element_count() * kElem, kElem);
}

}  // namespace

void copy_strided(const CpuExecutionContext& ctx, const void* src_base, const Layout& src, void* dst_base,
                  const Layout& dst, int64_t elem) {
  const char* s = static_cast<const char*>(src_base);
  char* d = static_cast<char*>(dst_base);
  with_word(elem, [&](auto word) { copy_typed<decltype(word)>(ctx, s, src, d, dst); });
}

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
TENFERRO_ISA_END
