// Note [Blocked copies]: permutations without a vector path, in tiles (compiled once per
// ISA level, Note [ISA kernels] in gemm_kernels.cc).

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include <immintrin.h>

#include "strided_loop.h"
#include "tenferro/core/isa_region.h"
#include "tenferro/cpu/kernels.h"

TENFERRO_ISA_BEGIN
#include "copy_parts.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {
namespace {

// Note [Blocked copies]: a permutation whose contiguous runs are shorter than a vector
// on one side (axes of extent 3, 5 or 7 next to the fastest, a shared fastest axis of a
// few elements) has no vector path, and walking it as a transpose or as runs copied one
// by one left each tiny transpose or run an outer iteration of its own, with its lines
// read and written far apart in time (f64 7 x 1000 x 1000 x 3 `[3120]`: 3 x 7
// transposes, 1e6 of them, 0.1-0.3 x memcpy). It is copied in tiles instead: each side
// (destination, source) takes its fastest axes while they continue it contiguously, until
// its runs reach kTileRunBytes (an axis that overshoots is split), and the tile is the
// product of both choices (an axis wanted by both gets the larger extent). So every tile
// reads and writes runs of at least that many bytes (or whole axes), and holds at most
// about (kTileRunBytes / element)^2 elements, which stay in L1 while it is copied:
// straight, element by element with its longest axis innermost (or a shared run moved
// whole), or staged through an L1 buffer when that inner loop would touch many rows (see
// below). Tiles are walked in source order. One thread, alternating runs (Zen 5,
// 2026-12-03): that `[3120]` 31-34 -> 15-19 ms, f64 7 x 1000 x 1000 x 3 `[0321]` (runs of
// 56 bytes, each copied as an outer iteration of its own) 68-118 -> 22 ms, 3 x 1000 x 3 x
// 1000 `[0321]` 24-28 -> 15-18 ms, bool 7 x 1000 x 1000 x 3 `[3210]` 22-43 -> 3.3 ms;
// numpy's copies of the same permutations took 83, 24 and 46 ms. This is also how a
// scalar build (or TENFERRO_MAX_ISA=scalar) copies every permutation: with staging 64^4
// f64 `[3210]` 115 -> 38 ms, 4096 x 4096 108 -> 27 ms, f32 64^4 `[3210]` 122 -> 22 ms.
// Tried and not kept (Zen 4, 2026-12-03): for outputs of 8 MiB or more, tiles whose
// destination runs were grown to whole lines, staged in destination order and stored
// with streaming stores (no read of the destination): f64 7 x 600 x 1000 x 3 `[0321]`
// 19-25 -> 22-33 ms, 3 x 1000 x 3 x 1000 `[2103]` 2x slower (more source streams per
// tile and the staging pass cost more than the saved reads; walking tiles in
// destination order did not help).
constexpr int64_t kTileRunBytes = 256;
constexpr int64_t kStageBytes = 32 << 10;  // Note [Blocked copies]: the L1 buffer of a tile
constexpr int64_t kStageRows = 8;          // ... used when a straight inner loop spans more rows

// Copies n bytes (1 <= n <= 64) from s to d (not overlapping): two overlapping moves of
// the widest size that fits, no call and no loop for lengths of a run shorter than a line.
inline void copy_short(char* d, const char* s, int64_t n) {
#if TENFERRO_ISA_LEVEL >= 1
  if (n >= 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + n - 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + n - 32), b);
    return;
  }
  if (n >= 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n - 16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), b);
    return;
  }
#endif
  if (n >= 8 && n <= 16) {
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
    return;
  }
  std::memcpy(d, s, static_cast<size_t>(n));
}

// Copies a run of `bytes` (not overlapping): short ones without a call.
inline void copy_run(char* d, const char* s, int64_t bytes) {
  if (bytes <= 64) {
    copy_short(d, s, bytes);
  } else {
    std::memcpy(d, s, static_cast<size_t>(bytes));
  }
}

template <class W>
void copy_blocked_typed(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop,
                        const std::array<char*, 2>& bases) {
  constexpr int64_t kE = sizeof(W);
  constexpr int64_t kTarget = kE <= 2 ? kTileRunBytes / 2 : kTileRunBytes;  // bytes: 128 x 128 tiles
  loop.sort_axes(0, 1);  // source order: tiles and the odometers below walk the source
  const size_t rank = loop.rank();
  SmallVector<int64_t, 8> tile;
  tile.resize(rank, 1);
  for (int op = 0; op < 2; ++op) {
    SmallVector<size_t, 8> order;
    for (size_t k = 0; k < rank; ++k) order.push_back(k);
    for (size_t a = 1; a < rank; ++a) {
      for (size_t b = a;
           b > 0 && std::llabs(loop.axis(order[b]).stride[op]) < std::llabs(loop.axis(order[b - 1]).stride[op]); --b) {
        std::swap(order[b], order[b - 1]);
      }
    }
    int64_t run = kE;
    for (size_t q = 0; q < rank; ++q) {
      const detail::LoopAxis<2>& a = loop.axis(order[q]);
      if (std::llabs(a.stride[op]) != run) break;
      const int64_t need = (kTarget + run - 1) / run;
      if (a.extent > need) {
        tile[order[q]] = std::max(tile[order[q]], need);
        break;
      }
      tile[order[q]] = a.extent;
      run *= a.extent;
    }
  }
  // The innermost axis: a run contiguous on both sides (copied whole, it is shorter than
  // a line), else the tile's longest; the others of the tile in source order.
  const bool shared_run =
      loop.axis(0).stride[0] == kE && loop.axis(0).stride[1] == kE && tile[0] == loop.axis(0).extent;
  size_t inner = 0;
  for (size_t k = 1; k < rank && !shared_run; ++k) {
    if (tile[k] > tile[inner]) inner = k;
  }
  SmallVector<size_t, 8> mid;
  int64_t tile_elems = tile[inner], tiles = 1;
  SmallVector<int64_t, 8> counts;
  for (size_t k = 0; k < rank; ++k) {
    counts.push_back((loop.axis(k).extent + tile[k] - 1) / tile[k]);
    tiles *= counts[k];
    if (k != inner && tile[k] > 1) {
      mid.push_back(k);
      tile_elems *= tile[k];
    }
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / tile_elems);
  // Note [Blocked copies]: a tile is staged through an L1 buffer: its source runs are
  // copied into the buffer one after the other (compact, in source order), then its
  // destination runs written from it one after the other. Copied straight, element by
  // element, the tile's inner loop touched one line in each of its rows per step, and rows
  // a multiple of 4 KiB apart share a cache set: with 32 rows on a side each line was
  // evicted before it was complete (64^4 f64 `[3210]` through this path, as in a scalar
  // build: 150 ms, memcpy 10). In the buffer every line is read and written whole.
  SmallVector<int64_t, 8> buf_st;  // buffer strides (bytes) of the tile axes, source order
  buf_st.resize(rank, 0);
  SmallVector<size_t, 8> tile_axes;  // axes of the tile, source order
  int64_t buf_bytes = kE;
  for (size_t k = 0; k < rank; ++k) {
    if (tile[k] > 1) {
      tile_axes.push_back(k);
      buf_st[k] = buf_bytes;
      buf_bytes *= tile[k];
    }
  }
  // Staged only when the straight copy's inner loop would touch one line in each of
  // many rows on either side (more than kStageRows): with few rows (3 x 1000 x 3 x 1000
  // `[2103]`, inner steps of 24 bytes on both sides) the extra pass cost more (7.8 ->
  // 11.4 ms) than it saved.
  auto rows = [&](int op) { return std::llabs(loop.axis(inner).stride[op]) >= 64 ? tile[inner] : 1; };
  const bool staged =
      !shared_run && !tile_axes.empty() && buf_bytes <= kStageBytes && std::max(rows(0), rows(1)) > kStageRows;
  // Stage in: all tile axes but the source-fastest (a0). Stage out: all but the tile's
  // destination-fastest (b0), in destination order.
  SmallVector<size_t, 8> in_rest, out_rest;
  size_t a0 = 0, b0 = 0;
  if (staged) {
    a0 = tile_axes[0];
    for (size_t q = 1; q < tile_axes.size(); ++q) in_rest.push_back(tile_axes[q]);
    SmallVector<size_t, 8> by_dst = tile_axes;
    for (size_t x = 1; x < by_dst.size(); ++x) {
      for (size_t y = x;
           y > 0 && std::llabs(loop.axis(by_dst[y]).stride[0]) < std::llabs(loop.axis(by_dst[y - 1]).stride[0]); --y) {
        std::swap(by_dst[y], by_dst[y - 1]);
      }
    }
    b0 = by_dst[0];
    for (size_t q = 1; q < by_dst.size(); ++q) out_rest.push_back(by_dst[q]);
  }
  // Note [Blocked copies]: a tile of short shared runs reads and writes them in as many
  // rows as its other axes have positions, more streams than hardware prefetchers follow;
  // the next tile's runs are prefetched (read for the source, write for the destination)
  // while this one is copied. (Prefetching the ends of strided inner runs cost more than
  // it saved: f64 3 x 1000 x 3 x 1000 `[2103]` 6.8-7.8 -> 12-12.8 ms.)
  ctx.parallel_for(tiles, grain, [&](int64_t b, int64_t e) {
    SmallVector<int64_t, 8> n, next_n, cnt;
    n.resize(rank, 1);
    next_n.resize(rank, 1);
    cnt.resize(rank, 0);
    alignas(64) char stage[kStageBytes];
    SmallVector<size_t, 8> in_tail, out_tail;
    auto locate = [&](int64_t t, char** d, const char** s, SmallVector<int64_t, 8>& sizes) {
      *d = bases[0] + loop.base_offset(0);
      *s = bases[1] + loop.base_offset(1);
      int64_t rem = t;
      for (size_t k = 0; k < rank; ++k) {
        const detail::LoopAxis<2>& a = loop.axis(k);
        const int64_t start = rem % counts[k] * tile[k];
        rem /= counts[k];
        sizes[k] = std::min(tile[k], a.extent - start);
        *d += start * a.stride[0];
        *s += start * a.stride[1];
      }
    };
    // The one odometer of a tile: calls f(pa, pb) at every position of `axes` (extents
    // `sizes`), two pointers stepping by per-axis byte strides; the axes left out are
    // f's to walk.
    // With kRowLoop the first axis is a plain loop and the odometer steps once per row of
    // it: for the tiny shared runs of Note [Blocked copies] (f64 7 x 600 x 1000 x 3
    // `[0321]`, runs of 56 bytes: 11.0 -> 9.0 ms, Zen 5, alternating, 2026-12-05); the
    // staged and element-wise walks, whose f is a loop itself, were 3-5 % slower so.
    auto walk = [&](auto row_loop, const SmallVector<size_t, 8>& axes, const SmallVector<int64_t, 8>& sizes,
                    auto stride_a, auto stride_b, char* pa, const char* pb, auto&& f) {
      constexpr bool kRowLoop = decltype(row_loop)::value;
      const size_t first = kRowLoop && !axes.empty() ? 1 : 0;
      const size_t k0 = first == 1 ? axes[0] : 0;
      const int64_t n0 = first == 1 ? sizes[k0] : 1;
      const int64_t step_a = first == 1 ? stride_a(k0) : 0, step_b = first == 1 ? stride_b(k0) : 0;
      for (size_t q = first; q < axes.size(); ++q) cnt[q] = 0;
      for (;;) {
        if constexpr (kRowLoop) {
          for (int64_t x = 0; x < n0; ++x) f(pa + x * step_a, pb + x * step_b);
        } else {
          f(pa, pb);
        }
        size_t q = first;
        for (; q < axes.size(); ++q) {
          const size_t k = axes[q];
          if (++cnt[q] < sizes[k]) {
            pa += stride_a(k);
            pb += stride_b(k);
            break;
          }
          pa -= (sizes[k] - 1) * stride_a(k);
          pb -= (sizes[k] - 1) * stride_b(k);
          cnt[q] = 0;
        }
        if (q == axes.size()) return;
      }
    };
    auto buf_stride = [&](size_t k) { return buf_st[k]; };
    auto src_stride = [&](size_t k) { return loop.axis(k).stride[1]; };
    auto dst_stride = [&](size_t k) { return loop.axis(k).stride[0]; };
    const int64_t di = loop.axis(inner).stride[0], si = loop.axis(inner).stride[1];
    char* d = nullptr;
    const char* s = nullptr;
    locate(b, &d, &s, n);
    for (int64_t t = b; t < e; ++t) {
      char* next_d = nullptr;
      const char* next_s = nullptr;
      if (t + 1 < e) locate(t + 1, &next_d, &next_s, next_n);
      if (t + 1 < e && shared_run) {
        const int64_t last = next_n[inner] - 1;
        walk(std::true_type{}, mid, next_n, dst_stride, src_stride, next_d, next_s, [&](char* pd, const char* ps) {
          __builtin_prefetch(ps, 0, 3);
          __builtin_prefetch(ps + last * si, 0, 3);
          __builtin_prefetch(pd, 1, 3);
          __builtin_prefetch(pd + last * di, 1, 3);
        });
      }
      if (staged) {
        // Stage in: the leading tile axes that are whole and contiguous in the source
        // (their buffer strides are then contiguous too) form one run.
        const int64_t sa = src_stride(a0);
        int64_t na = n[a0];
        size_t first = 0;
        while (first < in_rest.size() && src_stride(in_rest[first]) == na * sa && buf_st[in_rest[first]] == na * kE) {
          na *= n[in_rest[first++]];
        }
        in_tail.clear();
        for (size_t q = first; q < in_rest.size(); ++q) in_tail.push_back(in_rest[q]);
        walk(std::false_type{}, in_tail, n, buf_stride, src_stride, stage, s, [&](char* pb, const char* ps) {
          if (sa == kE) {
            copy_run(pb, ps, na * kE);
          } else {
            for (int64_t x = 0; x < na; ++x)
              *reinterpret_cast<W*>(pb + x * kE) = *reinterpret_cast<const W*>(ps + x * sa);
          }
        });
        // Stage out: likewise the leading axes contiguous on both sides form one run.
        const int64_t db = dst_stride(b0), bb = buf_st[b0];
        int64_t nb = n[b0];
        first = 0;
        while (first < out_rest.size() && dst_stride(out_rest[first]) == nb * db &&
               buf_st[out_rest[first]] == nb * bb) {
          nb *= n[out_rest[first++]];
        }
        out_tail.clear();
        if (db == kE && bb == kE) {
          for (size_t q = first; q < out_rest.size(); ++q) out_tail.push_back(out_rest[q]);
          walk(std::false_type{}, out_tail, n, dst_stride, buf_stride, d, stage,
               [&](char* pd, const char* pb) { copy_run(pd, pb, nb * kE); });
        } else {
          // Element-wise: the next axis in destination order is walked inside too (both
          // within the tile's destination lines), the longer of the two innermost, so a
          // short destination-fastest axis (extent 3) does not make every step a walk.
          const size_t b1 = first < out_rest.size() ? out_rest[first] : rank;
          for (size_t q = first + 1; q < out_rest.size(); ++q) out_tail.push_back(out_rest[q]);
          const int64_t n1 = b1 < rank ? n[b1] : 1, d1 = b1 < rank ? dst_stride(b1) : 0,
                        s1 = b1 < rank ? buf_st[b1] : 0;
          const bool swap = n1 > nb;
          const int64_t ni = swap ? n1 : nb, no = swap ? nb : n1;
          const int64_t din = swap ? d1 : db, bin = swap ? s1 : bb, dout = swap ? db : d1, bout = swap ? bb : s1;
          walk(std::false_type{}, out_tail, n, dst_stride, buf_stride, d, stage, [&](char* pd, const char* pb) {
            for (int64_t y = 0; y < no; ++y) {
              char* qd = pd + y * dout;
              const char* qb = pb + y * bout;
              for (int64_t x = 0; x < ni; ++x)
                *reinterpret_cast<W*>(qd + x * din) = *reinterpret_cast<const W*>(qb + x * bin);
            }
          });
        }
        d = next_d;
        s = next_s;
        std::swap(n, next_n);
        continue;
      }
      const int64_t ni = n[inner];
      if (shared_run) {
        walk(std::true_type{}, mid, n, dst_stride, src_stride, d, s,
             [&](char* pd, const char* ps) { copy_short(pd, ps, ni * kE); });
      } else {
        walk(std::false_type{}, mid, n, dst_stride, src_stride, d, s, [&](char* pd, const char* ps) {
          for (int64_t x = 0; x < ni; ++x)
            *reinterpret_cast<W*>(pd + x * di) = *reinterpret_cast<const W*>(ps + x * si);
        });
      }
      d = next_d;
      s = next_s;
      std::swap(n, next_n);
    }
  });
}

}  // namespace

void copy_blocked(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                  int64_t elem) {
  with_word(elem, [&](auto word) { copy_blocked_typed<decltype(word)>(ctx, loop, bases); });
}

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
TENFERRO_ISA_END
