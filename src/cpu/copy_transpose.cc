// The transpose route of the strided copy (Note [Copy kernel] in copy_kernel.cc): the
// offset tables and the vector transposes of the groups copy_groups.cc forms, compiled
// once per ISA level (Note [ISA kernels] in gemm_kernels.cc).

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <immintrin.h>

#include "copy_groups.h"
#include "strided_loop.h"
#include "tenferro/core/isa_region.h"
#include "tenferro/cpu/kernels.h"

TENFERRO_ISA_BEGIN
#include "copy_parts.h"

namespace tenferro::cpu::detail::TENFERRO_ISA_NS {
namespace {

constexpr int64_t kPrefetchLines = 2;   // Note [Transpose prefetch]: line-chunks ahead
constexpr int64_t kBlockBytes = kTransposeBlockBytes;  // Note [Transpose blocking]
constexpr int64_t kMinPairTile = 1024;  // elements of a transpose worth its pair path
// Note [Aliased row blocks]: rows this far apart share an L2 set (the way size of a 1 MiB,
// 16-way L2; larger L2s with 16 ways have larger ways, of which this is a divisor).
constexpr int64_t kL2WayBytes = int64_t{64} << 10;
constexpr int64_t kAliasedRows = 32;      // rows per block when they alias (Note [Aliased row blocks])
constexpr int64_t kAliasedMinCols = 256;  // narrower blocks keep kBlockBytes

// Offsets (bytes) of a group's elements in one operand: a table or a stride.
struct Offsets {
  const int64_t* table = nullptr;
  int64_t stride = 0;
  int64_t at(int64_t i) const { return table ? table[i] : i * stride; }
  // Whether every group of g consecutive elements among the first n (the last partial
  // group excluded) steps by `delta` bytes. A stride answers at once: groups can be as
  // long as a whole axis (millions), tables are at most kGroup long.
  bool runs_of(int64_t g, int64_t n, int64_t delta) const {
    if (table == nullptr) return n < 2 || g < 2 || stride == delta;
    for (int64_t b = 0; b + g <= n; b += g) {
      for (int64_t k = 1; k < g; ++k) {
        if (table[b + k] != table[b] + k * delta) return false;
      }
    }
    return true;
  }
  // Whether the offsets of elements 0, step, 2 step, ... below n are multiples of align.
  bool aligned(int64_t n, int64_t step, int64_t align) const {
    if (table == nullptr) return n <= step || (stride * step) % align == 0;
    for (int64_t k = 0; k < n; k += step) {
      if (table[k] % align != 0) return false;
    }
    return true;
  }
};

// Whether the source rows of the first row block (up to `rows` of them) all lie a
// multiple of kL2WayBytes from its first row (Note [Aliased row blocks]).
bool rows_alias_in_l2(const Offsets& si, int64_t rows) {
  if (rows < 2) return false;
  for (int64_t r = 1; r < rows; ++r) {
    if ((si.at(r) - si.at(0)) % kL2WayBytes != 0) return false;
  }
  return true;
}

// Copies a P0 x P1 block: dst[di(i) + dj(j)] = src[si(i) + sj(j)], where di is
// contiguous (stride d0) and sj contiguous (stride s1).
template <class W>
struct Transposer {
  int64_t p0, p1;
  Offsets di;  // dst offsets along i (G0)
  Offsets si;  // src offsets along i
  Offsets dj;  // dst offsets along j (G1)
  Offsets sj;  // src offsets along j
  bool stream;
  bool stream_aligned = false;  // stream, and every vector store address is 32-byte aligned
  bool row_order = false;       // streamed line tiles in row order (Note [Row-order line tiles])
  bool vec_ok = false;          // quads within segments of i contiguous in dst, of j in src
  bool pair_ok = false;         // (8-byte elements) pairs of i contiguous in dst, of j in src
  bool zip_ok = false;          // Note [Zips]: pairs of i contiguous in dst, j in zip groups
  bool unzip_ok = false;        // pairs of j contiguous in src, i in zip groups
  // Note [Transpose segments]: i runs contiguously in dst over segments of seg_i
  // elements (the leading G0 axes that continue each other in dst), j in src over
  // segments of seg_j. The vector path takes quads inside each segment and copies a
  // segment's last (length mod 4) elements one by one, so a group whose first axis has
  // an extent like 5 or 9 is still mostly moved in vectors. Before, such a group fell
  // back to element-wise copies: MERA closed's 136 x 58320 rhs pack (source [5 x 8] N x K
  // tiles) took 36-48 ms on one thread and 21-24 ms on two; with segments 7-8 ms and 6
  // ms (memcpy of the same bytes 8-14 ms; `tenferro` MERA closed at 2 threads 970 -> 865
  // ms, 3 interleaved pairs, 2026-11-30).
  int64_t seg_i = 1, seg_j = 1;

  static constexpr int64_t kE = sizeof(W);
  // Elements per vector (a quad: the side of the vector path's square register
  // transposes): 16 bytes of 1-, 2- and 4-byte elements, 32 bytes of 8- and 16-byte ones.
  static constexpr int64_t kVector = kE <= 4 ? 16 / kE : 32 / kE;
  // Alignment of the vector path's streaming stores: 16 bytes for 4-byte elements, 32 else.
  static constexpr uintptr_t kStreamAlign = kE == 4 ? 16 : 32;
  // Elements per vector of a zip (Note [Zips]).
  static constexpr int64_t kZip = 32 / kE;

  void scalar(char* d, const char* s, int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
    for (int64_t i = i0; i < i1; ++i) {
      const char* srow = s + si.at(i);
      char* dcol = d + di.at(i);
      for (int64_t j = j0; j < j1; ++j) {
        *reinterpret_cast<W*>(dcol + dj.at(j)) = *reinterpret_cast<const W*>(srow + sj.at(j));
      }
    }
  }

  // Note [Transpose blocking]: i advances a block of destination bytes at a time, j
  // runs over the whole group, so every store completes destination lines (good for
  // streaming stores, whose write-combining buffers are few).
  void run(char* d, const char* s) const { run_rows(d, s, 0, p0); }
  void run_rows(char* d, const char* s, int64_t i_begin, int64_t i_end) const {
    for (int64_t i0 = i_begin; i0 < i_end; i0 += i_block) {
      block(d, s, i0, std::min(i_end, i0 + i_block), 0, p1);
    }
  }
  // All rows, columns [j_begin, j_end) (whole destination rows).
  void run_cols(char* d, const char* s, int64_t j_begin, int64_t j_end) const {
    for (int64_t i0 = 0; i0 < p0; i0 += i_block) {
      block(d, s, i0, std::min(p0, i0 + i_block), j_begin, j_end);
    }
  }
  // Note [Transpose blocking] (measured, docs/benchmarks.md): rows advance in blocks of
  // 512 destination bytes (64 rows of f64), so each destination row gets whole lines
  // in one contiguous run. Rows a multiple of 4 KiB apart alias in L1 and L2, which
  // once made this one line per block (a line's worth of each row stayed live); since
  // every source line is now consumed whole before the next row quad (Note [Line-wise
  // transposes]), the large block serves those too (Zen 5, 2026-12-02: 64^4 f64
  // permutations below 0.6 x memcpy 16 -> 5 of 28 at one thread, 15 -> 3 at two).
  //
  // Note [Aliased row blocks]: where every row of a block lies a multiple of
  // kL2WayBytes from the first in the source (64^4 `[3xxx]` rows 2 MiB apart, the rank-24
  // reversal's 8 MiB and more), each line-chunk of the block's 64 rows maps to one L2
  // set, and the 64 lines a chunk reads, with those fetched two chunks ahead, overflow
  // its 16 ways: most reads then come from L3, which other tenants of a shared host
  // also fill. Fewer rows per block read fewer lines into the set, but write each
  // destination row in more, shorter pieces (a 512-byte row in four of 128 bytes at 16
  // rows), which the memory then takes as scattered writes. Such blocks take
  // kAliasedRows rows, 256 destination bytes of f64, when the block is wide (p1 >=
  // kAliasedMinCols) and the destination rows are longer than one block (p0 > 64 rows of
  // f64: `[3201]`, `[3210]`, rank-24 reversed, each p0 = 4096); rows that fit one block
  // (`[3012]`, `[3021]`, p0 = 64) keep it whole, since splitting it splits every
  // destination row. On a contended host 16 rows (as many as the set has ways) gave the
  // worst rounds of 16, 32 and 64 (`[3012]` 0.34 x memcpy at one thread, against 0.67
  // with its whole block), though in a quiet hour its fastest rounds were the best;
  // figures in docs/benchmarks.md (Zen 5, "Permutation copies"). Rows aliasing only in
  // pairs of sets (32 KiB apart, `[2xxx]`) keep the 512-byte block (16- or 32-row blocks:
  // `[2301]`, destination rows 32 KiB apart, 1.06-1.26 x the time), as do narrow blocks
  // (`[3120]`, 64 columns: 1.15) and rows of one line (8 rows of f64: 1.2-1.46 for every
  // case).
  int64_t i_block = 1;
  void choose_block(bool aliased_rows) {
    i_block = std::max<int64_t>(1, kBlockBytes / kE);
    if (aliased_rows) i_block = std::min(i_block, kAliasedRows);
  }

  void block(char* d, const char* s, int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
#if TENFERRO_ISA_LEVEL >= 1
    constexpr int64_t kV = kVector;
    if constexpr (kV > 0) {
      if (vec_ok) {
        // Sub-ranges of [i0, i1) and [j0, j1) inside one segment (Note [Transpose segments]).
        const bool nt = stream_aligned && (reinterpret_cast<uintptr_t>(d) % kStreamAlign) == 0;
        for (int64_t ia = i0; ia < i1;) {
          const int64_t ib = std::min(i1, (ia / seg_i + 1) * seg_i);
          const int64_t iv = ia + (ib - ia) / kV * kV;
          for (int64_t ja = j0; ja < j1;) {
            const int64_t jb = std::min(j1, (ja / seg_j + 1) * seg_j);
            const int64_t jv = ja + (jb - ja) / kV * kV;
            if (nt) {
              quads<kV, true>(d, s, ia, iv, ja, jv);
            } else {
              quads<kV, false>(d, s, ia, iv, ja, jv);
            }
            if (jv < jb) {
              if (nt) {
                tail_cols<kV, kE >= 4>(d, s, ia, iv, jv, jb);
              } else {
                tail_cols<kV, false>(d, s, ia, iv, jv, jb);
              }
            }
            ja = jb;
          }
          if (iv < ib) scalar(d, s, iv, ib, j0, j1);
          ia = ib;
        }
        return;
      }
    }
    if constexpr (kE == 8 || kE == 4) {
      if (zip_ok && i0 % 2 == 0 && j0 % kZip == 0) {
        const int64_t iv = i0 + (i1 - i0) / 2 * 2;
        const int64_t jv = j0 + (j1 - j0) / kZip * kZip;
        if (stream_aligned && reinterpret_cast<uintptr_t>(d) % 32 == 0) {
          zip_block<true>(d, s, i0, iv, j0, jv);
        } else {
          zip_block<false>(d, s, i0, iv, j0, jv);
        }
        if (iv < i1) scalar(d, s, iv, i1, j0, j1);
        if (jv < j1) scalar(d, s, i0, iv, jv, j1);
        return;
      }
      if (unzip_ok && i0 % kZip == 0 && j0 % 2 == 0) {
        const int64_t iv = i0 + (i1 - i0) / kZip * kZip;
        const int64_t jv = j0 + (j1 - j0) / 2 * 2;
        if (stream_aligned && reinterpret_cast<uintptr_t>(d) % 32 == 0) {
          unzip_block<true>(d, s, i0, iv, j0, jv);
        } else {
          unzip_block<false>(d, s, i0, iv, j0, jv);
        }
        if (iv < i1) scalar(d, s, iv, i1, j0, j1);
        if (jv < j1) scalar(d, s, i0, iv, jv, j1);
        return;
      }
    }
    if constexpr (kE == 8) {
      if (pair_ok && i0 % 2 == 0 && j0 % 2 == 0) {
        const int64_t iv = i0 + (i1 - i0) / 2 * 2;
        const int64_t jv = j0 + (j1 - j0) / 2 * 2;
        if (stream_aligned && (reinterpret_cast<uintptr_t>(d) % 16) == 0) {
          pair_block<true>(d, s, i0, iv, j0, jv);
        } else {
          pair_block<false>(d, s, i0, iv, j0, jv);
        }
        if (iv < i1) scalar(d, s, iv, i1, j0, j1);
        if (jv < j1) scalar(d, s, i0, iv, jv, j1);
        return;
      }
    }
#endif
    scalar(d, s, i0, i1, j0, j1);
  }

#if TENFERRO_ISA_LEVEL >= 1
  // The quads of [i0, iv) x [j0, jv) (both multiples of kV long). Note [Line
  // transposes]: 8- and 4-byte elements move in square tiles of whole 64-byte lines
  // (8 x 8 doubles, 16 x 16 floats) where both ranges allow, and in quads around them.
  // Each destination line is then written whole at once, and (but for AVX2's 8-byte
  // tiles, below) each source line read whole. For 4-byte elements this is what matters:
  // their quads wrote 16 bytes to each of 16 destination rows per step, so with streaming
  // stores every line was flushed in pieces, and without them the stores were four times
  // as many. f32 transposes at one thread, alternating runs (Zen 5, 2026-12-03): 64^4
  // `[3210]` 29 -> 9.5 ms, `[1023]` 21 -> 9.6 ms, 8192 x 4096 58 -> 14 ms (0.14 -> 0.6 x
  // memcpy); with AVX2 (TENFERRO_MAX_ISA=avx2) 0.12-0.17 -> 0.5-0.7. For 8-byte elements
  // (AVX-512) the tiles halve the loads of quads and save a quarter of the shuffles: 64^4
  // f64 `[3xxx]` 10.4-13.4 -> 8.7-10.8 ms; in cache (16^4, per 256 MiB, against the AVX2
  // kernel) `[3120]` 21-24 -> 13.7 ms. With AVX2, 8-byte tiles are four 4 x 4 quads in
  // the order that completes each destination line with two stores back to back (a
  // quad-only block completes a line every second row quad, and reads each source line
  // whole instead): 64^4 f64 under TENFERRO_MAX_ISA=avx2 on Zen 4 (alternating runs,
  // 2026-12-03), one thread: `[3120]` 23.8-26.6 -> 18.4-18.9 ms, `[3102]` 0.86x, `[32xx]`
  // 0.85x, `[1xxx]` 0.92-0.95x, but `[2xxx]` 1.02-1.25x; geometric mean 0.97x, cases
  // below 0.6 x memcpy 6 -> 0 in three rounds; two threads: `[3xxx]` 0.84-1.00x,
  // `[2xxx]` 1.05-1.23x, mean 1.02x. The same for 16-byte elements (4 x 4 transposes of
  // 128-bit lanes) was no faster than their pairs (c128 16^4 and 48^4, three permutations).
  template <int64_t kV, bool kStream>
  void quads(char* d, const char* s, int64_t i0, int64_t iv, int64_t j0, int64_t jv) const {
    if constexpr (kLine > 0) {
      const int64_t iw = i0 + (iv - i0) / kLine * kLine, jw = j0 + (jv - j0) / kLine * kLine;
      if (iw > i0 && jw > j0) {
        line_transposes<kStream>(d, s, i0, iw, j0, jw);
        if (jw < jv) vec_block<kV, kStream && kE >= 4>(d, s, i0, iw, jw, jv);
        if (iw < iv) vec_block<kV, kStream && kE >= 4>(d, s, iw, iv, j0, jv);
        return;
      }
    }
    vec_block<kV, kStream && kE >= 4>(d, s, i0, iv, j0, jv);
  }

  // Elements per line moved by line transposes at this ISA level (0: none): 8- and
  // 4-byte elements and bytes, with AVX2 or AVX-512 (Note [Line transposes]).
  static constexpr int64_t kLine = TENFERRO_ISA_LEVEL >= 1 && (kE == 8 || kE == 4 || kE == 1) ? 64 / kE : 0;

  // Transposes kLine x kLine blocks of whole lines (Note [Line transposes]); the source
  // lines of two block columns ahead are prefetched as for quads (Note [Transpose
  // prefetch]).
  //
  // Note [Row-order line tiles]: with streaming stores, tiles of 4- and 8-byte elements
  // can go through the block row group by row group (kLine source rows, each read across
  // all of j before the next group; the next group's lines are prefetched to L2 as the
  // tiles go): the reads are then kLine sequential streams, which the hardware
  // prefetchers follow, while a destination line leaves whole with each tile wherever
  // it lands. In column order (j outer, the order without streaming, where the
  // destination lines of a block stay in cache) each step reads one line from each of
  // a block's 64 rows, and rows a multiple of 4 KiB apart (64^4 `[31xx]`: 2 MiB) share
  // one L1 set. Which order wins depends on the core, so row_order_line_tiles decides
  // from the L1d; byte tiles (staged through L1 buffers) keep column order everywhere
  // (bool 8192 x 8192 ran 1.23-1.26x slower in row order, Zen 4).
  // - L1d of 32 KiB (8 ways; Zen 4, AVX-512, four alternating rounds, 2026-12-03), row
  //   order, one thread: 64^4 f64 `[3120]` 28.1 -> 19.2 ms median, `[3102]` 19.9 -> 16.3,
  //   f32 `[1023]` 14.7 -> 11.1, geometric mean over the permutation rows 0.95x; two
  //   threads `[3102]` 0.66x, `[3120]` 0.73x, mean 0.92x; under TENFERRO_MAX_ISA=avx2
  //   `[31xx]` 0.83x, the rest within the noise.
  // - L1d of 48 KiB (12 ways; Zen 5, AVX-512, three alternating rounds, 2026-12-04), row
  //   order against column order, one thread: geometric mean over `bench kernels --only
  //   permute` 1.35x slower, two threads 1.29x; 64^4 f64 `[23xx]` and `[32xx]` 3.0-3.2x
  //   (7.5-8.3 -> 24-25 ms; 0.25-0.3 x memcpy), `[1xxx]`, `[2xxx]`, `[30xx]` 1.3-1.7x,
  //   rank-24 reversed 2.6x; only f32 `[1023]` faster (0.68x). Chunks of 64 to 1024
  //   columns in row order were all slower than column order there. Column order.
  // - Other L1d sizes (Intel's 48 KiB included): not measured in row order; column
  //   order, the order before this choice existed.

  template <bool kStream>
  void line_transposes(char* d, const char* s, int64_t i0, int64_t iw, int64_t j0, int64_t jw) const {
    if constexpr (kStream && kE >= 4) {
      if (row_order) {  // Note [Row-order line tiles]
        row_order_line_transposes(d, s, i0, iw, j0, jw);
        return;
      }
    }
    column_order_line_transposes<kStream>(d, s, i0, iw, j0, jw);
  }

  // Streamed line tiles in row order (Note [Row-order line tiles]); 4- and 8-byte elements.
  void row_order_line_transposes(char* d, const char* s, int64_t i0, int64_t iw, int64_t j0, int64_t jw) const {
    constexpr int64_t kW = kLine > 0 ? kLine : 1;
    for (int64_t i = i0; i < iw; i += kW) {
      const char* srow0[kW];
      const char* pnext[kW];
      for (int64_t k = 0; k < kW; ++k) srow0[k] = s + si.at(i + k);
      const bool ahead = i + 2 * kW <= iw;
      if (ahead) {
        for (int64_t k = 0; k < kW; ++k) pnext[k] = s + si.at(i + kW + k);
      }
      const int64_t doff = di.at(i);
      for (int64_t j = j0; j < jw; j += kW) {
        char* drow[kW];
        for (int64_t k = 0; k < kW; ++k) drow[k] = d + dj.at(j + k);
        const int64_t so = sj.at(j);
        const char* srow[kW];
        for (int64_t k = 0; k < kW; ++k) srow[k] = srow0[k] + so;
        if (ahead) {
          for (int64_t k = 0; k < kW; ++k) _mm_prefetch(pnext[k] + so, _MM_HINT_T2);
        }
        line_tile<true>(srow, drow, doff);
      }
    }
  }

  // Line tiles in column order: j outer, every row group of the block for each.
  template <bool kStream>
  void column_order_line_transposes(char* d, const char* s, int64_t i0, int64_t iw, int64_t j0, int64_t jw) const {
    constexpr int64_t kW = kLine > 0 ? kLine : 1;
    // Note [Transpose prefetch]: the first kPrefetchLines line-chunks of a block are not
    // fetched ahead by its own columns. In a block of at most 2 kPrefetchLines chunks
    // (a batch of small transposes: 64 x 64 f32, 32 x 32 f64) that is half of it or more,
    // so they are asked for when the block starts: f32 64^4 `[1023]` (4096 blocks of 16
    // KiB) 6.5-6.7 -> 4.7-5.1 ms at one thread, 2.5-3.3 -> 2.1-2.2 at two (Zen 5,
    // alternating A-B-B-A rounds, 2026-12-05). Wider blocks do not take it: their own
    // lookahead covers most of them.
    if ((jw - j0) / kW <= 2 * kPrefetchLines) {
      for (int64_t j = j0; j < std::min(jw, j0 + kPrefetchLines * kW); j += kW) {
        const char* scol = s + sj.at(j);
        for (int64_t i = i0; i < iw; ++i) _mm_prefetch(scol + si.at(i), _MM_HINT_T2);
      }
    }
    for (int64_t j = j0; j < jw; j += kW) {
      char* drow[kW];
      for (int64_t k = 0; k < kW; ++k) drow[k] = d + dj.at(j + k);
      const char* scol = s + sj.at(j);
      const int64_t jp = j + kPrefetchLines * kW;
      const char* pcol = jp + kW <= jw ? s + sj.at(jp) : nullptr;
      for (int64_t i = i0; i < iw; i += kW) {
        const char* srow[kW];
        for (int64_t k = 0; k < kW; ++k) {
          const int64_t so = si.at(i + k);
          if (pcol != nullptr) _mm_prefetch(pcol + so, _MM_HINT_T2);
          srow[k] = scol + so;
        }
        if constexpr (kE == 1) {
          byte_line_tile<kStream>(srow, drow, di.at(i));
        } else {
          line_tile<kStream>(srow, drow, di.at(i));
        }
      }
    }
  }

#if TENFERRO_ISA_LEVEL >= 1
#pragma GCC diagnostic push
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused masked source.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  // One line tile of bytes (64 source lines -> 64 destination lines). Note [Byte line
  // tiles]: the source lines go into an L1 buffer in 16-byte pieces (their rows may alias
  // in L1, the buffer does not), arranged so that one vector of the buffer holds the same
  // 16 columns of as many rows as it has 128-bit lanes (one row per lane, 16 rows apart);
  // one in-lane 16 x 16 byte transpose of 16 such vectors then leaves in each vector a
  // whole destination line (AVX-512) or half of one (AVX2), stored straight from the
  // register. This replaced 16 x 16 transposes of 16-byte vectors between two L1 buffers
  // (a quarter or half of the shuffles, one buffer pass fewer): bool 8192 x 8192, Zen 5,
  // five alternating rounds (2026-12-05), fastest 6.7 -> 5.7 ms at one thread, 3.1 -> 2.6
  // at two, under TENFERRO_MAX_ISA=avx2 7.2 -> 6.2 and 3.3 -> 2.7.
  //
  // Note [Streamed byte tiles]: with kStream each destination line leaves as streaming
  // stores, so it is written whole without a read of the destination first; only the line
  // tiles of bytes stream (their quads and tail columns store 16-byte pieces of lines,
  // which streaming stores would flush partly filled). bool 8192 x 8192 on Zen 4
  // (alternating runs against the kernel before, 2026-12-03): 14.0-16.3 -> 10.2-10.6 ms
  // at one thread (0.63-0.69 -> 0.84-1.21 x memcpy), 8.9-11.3 -> 5.5-8.0 ms at two; with
  // TENFERRO_MAX_ISA=avx2 12.9-21.2 -> 9.9-13.7 ms.
  template <bool kStream>
  static void byte_line_tile(const char* const* srow, char* const* drow, int64_t doff) {
#if TENFERRO_ISA_LEVEL >= 2
    using V = __m512i;
#else
    using V = __m256i;
#endif
    constexpr int64_t kVB = sizeof(V);    // bytes per vector
    constexpr int64_t kParts = 64 / kVB;  // vectors per destination line
    // Vector (part h, column block g, block row k) at ((h * 4 + g) * 16 + k) * kVB; its
    // lane L holds columns 16g..16g+15 of source row kVB * h + 16 * L + k.
    alignas(64) char in[64 * 64];
    for (int64_t j = 0; j < 64; ++j) {
      const int64_t h = j / kVB, lane = j % kVB / 16, k = j % 16;
      char* to = in + (h * 64 + k) * kVB + 16 * lane;
      for (int64_t g = 0; g < 4; ++g) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(srow[j] + 16 * g));
        _mm_store_si128(reinterpret_cast<__m128i*>(to + g * 16 * kVB), x);
      }
    }
    // The pieces of one destination line are stored back to back: a streamed line left
    // partly written while others are (AVX2: its other half 64 lines later) is flushed
    // in pieces (1.3x the time of the 16-byte quads this replaced).
    for (int64_t g = 0; g < 4; ++g) {
      V r[kParts][16];
      for (int64_t h = 0; h < kParts; ++h) {
        const char* from = in + (h * 4 + g) * 16 * kVB;
        for (int64_t k = 0; k < 16; ++k) r[h][k] = vload(from + k * kVB);
        lane_transpose16(r[h]);
      }
      for (int64_t n = 0; n < 16; ++n) {
        for (int64_t h = 0; h < kParts; ++h) vstore<kStream>(drow[16 * g + n] + doff + h * kVB, r[h][n]);
      }
    }
  }

  static __m128i unpack(__m128i a, __m128i b, int bits, bool hi) {
    switch (bits) {
      case 8: return hi ? _mm_unpackhi_epi8(a, b) : _mm_unpacklo_epi8(a, b);
      case 16: return hi ? _mm_unpackhi_epi16(a, b) : _mm_unpacklo_epi16(a, b);
      case 32: return hi ? _mm_unpackhi_epi32(a, b) : _mm_unpacklo_epi32(a, b);
      default: return hi ? _mm_unpackhi_epi64(a, b) : _mm_unpacklo_epi64(a, b);
    }
  }
#if TENFERRO_ISA_LEVEL >= 2
  static __m512i vload(const char* p) { return _mm512_load_si512(p); }
  static __m512i unpack(__m512i a, __m512i b, int bits, bool hi) {
    switch (bits) {
      case 8: return hi ? _mm512_unpackhi_epi8(a, b) : _mm512_unpacklo_epi8(a, b);
      case 16: return hi ? _mm512_unpackhi_epi16(a, b) : _mm512_unpacklo_epi16(a, b);
      case 32: return hi ? _mm512_unpackhi_epi32(a, b) : _mm512_unpacklo_epi32(a, b);
      default: return hi ? _mm512_unpackhi_epi64(a, b) : _mm512_unpacklo_epi64(a, b);
    }
  }
  // One destination piece of 64 bytes, streamed as two stores of 32 back to back
  // (stream_aligned guarantees 32). One 64-byte streaming store where the line is aligned
  // was slower: bool 8192 x 8192 5.9 -> 6.3 ms at one thread, 2.7 -> 3.5 at two (Zen 5,
  // five alternating rounds, 2026-12-05; the same held for f32 line tiles).
  template <bool kStream>
  static void vstore(char* p, __m512i x) {
    if constexpr (kStream) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), _mm512_castsi512_si256(x));
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p) + 1, _mm512_extracti64x4_epi64(x, 1));
    } else {
      _mm512_storeu_si512(p, x);
    }
  }
#else
  static __m256i vload(const char* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
  static __m256i unpack(__m256i a, __m256i b, int bits, bool hi) {
    switch (bits) {
      case 8: return hi ? _mm256_unpackhi_epi8(a, b) : _mm256_unpacklo_epi8(a, b);
      case 16: return hi ? _mm256_unpackhi_epi16(a, b) : _mm256_unpacklo_epi16(a, b);
      case 32: return hi ? _mm256_unpackhi_epi32(a, b) : _mm256_unpacklo_epi32(a, b);
      default: return hi ? _mm256_unpackhi_epi64(a, b) : _mm256_unpacklo_epi64(a, b);
    }
  }
  template <bool kStream>
  static void vstore(char* p, __m256i x) {
    if constexpr (kStream) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), x);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x);
    }
  }
#endif

  // r[k] = row k of a 16 x 16 byte block in every 128-bit lane; afterwards r[n] = column
  // n of each lane's block. Four interleaving stages: bytes of row pairs, then 16-, 32-
  // and 64-bit units of pairs of those. Byte quads (micro) use it on 16-byte vectors.
  template <class V>
  static void lane_transpose16(V* r) {
    V a[16], b[16];
    // a[2m + hi]: columns 8hi.. of rows 2m, 2m + 1 as 16-bit units.
    for (int64_t m = 0; m < 8; ++m) {
      a[2 * m] = unpack(r[2 * m], r[2 * m + 1], 8, false);
      a[2 * m + 1] = unpack(r[2 * m], r[2 * m + 1], 8, true);
    }
    // b[4q + g]: columns 4g.. of rows 4q..4q+3 as 32-bit units.
    for (int64_t q = 0; q < 4; ++q) {
      for (int64_t h = 0; h < 2; ++h) {
        b[4 * q + 2 * h] = unpack(a[4 * q + h], a[4 * q + 2 + h], 16, false);
        b[4 * q + 2 * h + 1] = unpack(a[4 * q + h], a[4 * q + 2 + h], 16, true);
      }
    }
    // a[8o + e]: columns 2e, 2e + 1 of rows 8o..8o+7 as 64-bit units.
    for (int64_t o = 0; o < 2; ++o) {
      for (int64_t g = 0; g < 4; ++g) {
        a[8 * o + 2 * g] = unpack(b[8 * o + g], b[8 * o + 4 + g], 32, false);
        a[8 * o + 2 * g + 1] = unpack(b[8 * o + g], b[8 * o + 4 + g], 32, true);
      }
    }
    for (int64_t e = 0; e < 8; ++e) {
      r[2 * e] = unpack(a[e], a[8 + e], 64, false);
      r[2 * e + 1] = unpack(a[e], a[8 + e], 64, true);
    }
  }
#pragma GCC diagnostic pop
#endif

#if TENFERRO_ISA_LEVEL >= 2
#pragma GCC diagnostic push
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused masked source.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  // One line tile: dst row k, bytes [doff, doff + 64) = column k of the kLine source
  // lines srow[0..kLine). Streaming stores go out in the pieces stream_aligned guarantees:
  // 32 bytes for 8-byte elements, 16 for 4-byte ones.
  template <bool kStream>
  static void line_tile(const char* const* srow, char* const* drow, int64_t doff) {
    __m512 r[kLine];
    for (int64_t k = 0; k < kLine; ++k) r[k] = _mm512_loadu_ps(reinterpret_cast<const float*>(srow[k]));
    if constexpr (kE == 8) {
      transpose8x8(r);
    } else {
      transpose16x16(r);
    }
    for (int64_t k = 0; k < kLine; ++k) {
      float* out = reinterpret_cast<float*>(drow[k] + doff);
      if constexpr (kStream && kE == 8) {
        _mm256_stream_ps(out, _mm512_castps512_ps256(r[k]));
        _mm256_stream_ps(out + 8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r[k]), 1)));
      } else if constexpr (kStream) {
        _mm_stream_ps(out, _mm512_castps512_ps128(r[k]));
        _mm_stream_ps(out + 4, _mm512_extractf32x4_ps(r[k], 1));
        _mm_stream_ps(out + 8, _mm512_extractf32x4_ps(r[k], 2));
        _mm_stream_ps(out + 12, _mm512_extractf32x4_ps(r[k], 3));
      } else {
        _mm512_storeu_ps(out, r[k]);
      }
    }
  }

  // r[k] = row k of an 8 x 8 block of 8-byte elements; afterwards r[k] = column k.
  static void transpose8x8(__m512* r) {
    __m512d x[8];
    for (int64_t k = 0; k < 8; ++k) x[k] = _mm512_castps_pd(r[k]);
    // t[2m] = rows 2m, 2m+1 at columns 0, 2, 4, 6; t[2m+1] at columns 1, 3, 5, 7.
    __m512d t[8];
    for (int64_t k = 0; k < 8; k += 2) {
      t[k] = _mm512_unpacklo_pd(x[k], x[k + 1]);
      t[k + 1] = _mm512_unpackhi_pd(x[k], x[k + 1]);
    }
    // u[k] / u[k + 4]: columns k and k + 4 of rows 0-3 / 4-7 (k = 0..3).
    __m512d u[8];
    for (int64_t k = 0; k < 2; ++k) {
      u[k] = _mm512_shuffle_f64x2(t[k], t[k + 2], 0x88);
      u[k + 2] = _mm512_shuffle_f64x2(t[k], t[k + 2], 0xDD);
      u[k + 4] = _mm512_shuffle_f64x2(t[k + 4], t[k + 6], 0x88);
      u[k + 6] = _mm512_shuffle_f64x2(t[k + 4], t[k + 6], 0xDD);
    }
    for (int64_t k = 0; k < 4; ++k) {
      r[k] = _mm512_castpd_ps(_mm512_shuffle_f64x2(u[k], u[k + 4], 0x88));
      r[k + 4] = _mm512_castpd_ps(_mm512_shuffle_f64x2(u[k], u[k + 4], 0xDD));
    }
  }

  // r[k] = row k of a 16 x 16 block of 4-byte elements; afterwards r[k] = column k. In
  // 128-bit lanes L: a = rows k, k + 1 interleaved; b[4g + c] = column 4L + c of rows
  // 4g..4g+3; then lanes are gathered across row groups in two shuffles.
  static void transpose16x16(__m512* r) {
    __m512 a[16];
    for (int64_t k = 0; k < 16; k += 2) {
      a[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
      a[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    __m512 b[16];
    for (int64_t k = 0; k < 16; k += 4) {
      const __m512d a0 = _mm512_castps_pd(a[k]), a1 = _mm512_castps_pd(a[k + 1]);
      const __m512d a2 = _mm512_castps_pd(a[k + 2]), a3 = _mm512_castps_pd(a[k + 3]);
      b[k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
      b[k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
      b[k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
      b[k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    // e[2c] / e[2c + 1]: lanes (0, 2) / (1, 3) of row groups 0, 1; f the same of groups 2, 3.
    __m512 e[8], f[8];
    for (int64_t c = 0; c < 4; ++c) {
      e[2 * c] = _mm512_shuffle_f32x4(b[c], b[4 + c], 0x88);
      e[2 * c + 1] = _mm512_shuffle_f32x4(b[c], b[4 + c], 0xDD);
      f[2 * c] = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0x88);
      f[2 * c + 1] = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0xDD);
    }
    for (int64_t c = 0; c < 4; ++c) {
      r[c] = _mm512_shuffle_f32x4(e[2 * c], f[2 * c], 0x88);
      r[8 + c] = _mm512_shuffle_f32x4(e[2 * c], f[2 * c], 0xDD);
      r[4 + c] = _mm512_shuffle_f32x4(e[2 * c + 1], f[2 * c + 1], 0x88);
      r[12 + c] = _mm512_shuffle_f32x4(e[2 * c + 1], f[2 * c + 1], 0xDD);
    }
  }
#pragma GCC diagnostic pop
#elif TENFERRO_ISA_LEVEL == 1
  // One line tile with AVX2. 8-byte elements: the four 4 x 4 quads of an 8 x 8 tile.
  // 4-byte elements: 16 x 16 in four 8 x 8 transposes, ordered
  // so that each destination line is completed by two stores back to back (rows 0-7 of
  // columns 0-7, then rows 8-15 of the same columns), and each source line is read whole
  // within the tile. Streaming stores go out as 16-byte pieces (stream_aligned).
  template <bool kStream>
  static void line_tile(const char* const* srow, char* const* drow, int64_t doff) {
    static_assert(kE == 4 || kE == 8, "AVX2 line tiles move 4- and 8-byte elements");
    if constexpr (kE == 8) {
      // 8 x 8 doubles in four 4 x 4 quads, in the same order: each destination line is
      // completed by two 32-byte stores back to back.
      for (int64_t c = 0; c < 8; c += 4) {
        for (int64_t h = 0; h < 8; h += 4) {
          const char* rows[4];
          for (int64_t k = 0; k < 4; ++k) rows[k] = srow[h + k] + 8 * c;
          micro<kStream>(drow + c, rows, doff + 8 * h);
        }
      }
    } else {
      for (int64_t c = 0; c < 16; c += 8) {
        for (int64_t h = 0; h < 16; h += 8) {
          __m256 r[8];
          for (int64_t k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(srow[h + k]) + c);
          transpose8x8(r);
          for (int64_t k = 0; k < 8; ++k) {
            float* out = reinterpret_cast<float*>(drow[c + k] + doff) + h;
            if constexpr (kStream) {
              _mm_stream_ps(out, _mm256_castps256_ps128(r[k]));
              _mm_stream_ps(out + 4, _mm256_extractf128_ps(r[k], 1));
            } else {
              _mm256_storeu_ps(out, r[k]);
            }
          }
        }
      }
    }
  }

  // r[k] = row k of an 8 x 8 block of 4-byte elements; afterwards r[k] = column k. In
  // 128-bit lanes: t interleaves row pairs, u holds columns (c, c + 4) of rows 0-3 /
  // 4-7 in its two lanes, and the lanes are then paired across the row halves.
  static void transpose8x8(__m256* r) {
    __m256 t[8], u[8];
    for (int64_t k = 0; k < 8; k += 2) {
      t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
      t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int64_t k = 0; k < 8; k += 4) {
      u[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
      u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
      u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
      u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
    }
    for (int64_t k = 0; k < 4; ++k) {
      r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
      r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
  }
#endif

  // 2 x 2 transposes of 8-byte elements (SSE2), for groups whose contiguous runs are
  // only two long (many axes of extent 2).
  template <bool kStream>
  void pair_block(char* d, const char* s, int64_t i0, int64_t iv, int64_t j0, int64_t jv) const {
    for (int64_t j = j0; j < jv; j += 2) {
      char* d0r = d + dj.at(j);
      char* d1r = d + dj.at(j + 1);
      const char* scol = s + sj.at(j);
      for (int64_t i = i0; i < iv; i += 2) {
        const __m128d r0 = _mm_loadu_pd(reinterpret_cast<const double*>(scol + si.at(i)));
        const __m128d r1 = _mm_loadu_pd(reinterpret_cast<const double*>(scol + si.at(i + 1)));
        const __m128d c0 = _mm_unpacklo_pd(r0, r1), c1 = _mm_unpackhi_pd(r0, r1);
        const int64_t off = di.at(i);
        if constexpr (kStream) {
          _mm_stream_pd(reinterpret_cast<double*>(d0r + off), c0);
          _mm_stream_pd(reinterpret_cast<double*>(d1r + off), c1);
        } else {
          _mm_storeu_pd(reinterpret_cast<double*>(d0r + off), c0);
          _mm_storeu_pd(reinterpret_cast<double*>(d1r + off), c1);
        }
      }
    }
  }
#endif

#if TENFERRO_ISA_LEVEL >= 1
  // Note [Zips]: a transpose with one side two elements wide (a 2 x n matrix, an axis of
  // extent 2 next to a large one: qubit indices) has no quads, and its 2 x 2 pairs cost a
  // loop step per four elements. When the destination holds i-pairs side by side along j
  // (consecutive j in a zip group are 2 elements apart in dst and adjacent in src), two
  // source rows are interleaved a vector at a time: a zip; the mirror case (j-pairs
  // adjacent in the source, i in zip groups 2 elements apart there) is an unzip. Each
  // step reads two vectors and writes two, all within 64 contiguous bytes on the
  // interleaved side; large outputs stream (32-byte stores, sequential on both sides).
  // One thread, alternating runs against the pair path and scalar copies before (Zen 5,
  // 2026-12-03, 64 MiB): f64 2000 x 2 x 2000 `[102]` 7.7 -> 3.9 ms, 2000 x 2000 x 2
  // `[201]` 14.0 -> 6.3 ms; with the route checks of a whole-axis group made O(1)
  // (Offsets::runs_of) 4e6 x 2 `[10]` 14.0 -> 2.4 ms, f64 2 x 4e6 `[10]` 7.5 -> 2.6 ms,
  // f32 2 x 8e6 `[10]` 16.4 -> 2.8 ms (memcpy of the same bytes 3.1 ms).
  template <bool kStream>
  static void store32(char* out, __m256d x) {
    if constexpr (kStream) {
      _mm256_stream_pd(reinterpret_cast<double*>(out), x);
    } else {
      _mm256_storeu_pd(reinterpret_cast<double*>(out), x);
    }
  }

  template <bool kStream>
  void zip_block(char* d, const char* s, int64_t i0, int64_t iv, int64_t j0, int64_t jv) const {
    for (int64_t i = i0; i < iv; i += 2) {
      const char* s0 = s + si.at(i);
      const char* s1 = s + si.at(i + 1);
      char* drow = d + di.at(i);
      for (int64_t j = j0; j < jv; j += kZip) {
        const int64_t so = sj.at(j);
        char* out = drow + dj.at(j);
        if constexpr (kE == 8) {
          const __m256d a = _mm256_loadu_pd(reinterpret_cast<const double*>(s0 + so));
          const __m256d b = _mm256_loadu_pd(reinterpret_cast<const double*>(s1 + so));
          const __m256d lo = _mm256_unpacklo_pd(a, b), hi = _mm256_unpackhi_pd(a, b);
          store32<kStream>(out, _mm256_permute2f128_pd(lo, hi, 0x20));
          store32<kStream>(out + 32, _mm256_permute2f128_pd(lo, hi, 0x31));
        } else {
          const __m256 a = _mm256_loadu_ps(reinterpret_cast<const float*>(s0 + so));
          const __m256 b = _mm256_loadu_ps(reinterpret_cast<const float*>(s1 + so));
          const __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
          store32<kStream>(out, _mm256_castps_pd(_mm256_permute2f128_ps(lo, hi, 0x20)));
          store32<kStream>(out + 32, _mm256_castps_pd(_mm256_permute2f128_ps(lo, hi, 0x31)));
        }
      }
    }
  }

  template <bool kStream>
  void unzip_block(char* d, const char* s, int64_t i0, int64_t iv, int64_t j0, int64_t jv) const {
    for (int64_t j = j0; j < jv; j += 2) {
      char* d0 = d + dj.at(j);
      char* d1 = d + dj.at(j + 1);
      const char* scol = s + sj.at(j);
      for (int64_t i = i0; i < iv; i += kZip) {
        const char* in = scol + si.at(i);
        const int64_t doff = di.at(i);
        if constexpr (kE == 8) {
          const __m256d x = _mm256_loadu_pd(reinterpret_cast<const double*>(in));
          const __m256d y = _mm256_loadu_pd(reinterpret_cast<const double*>(in + 32));
          const __m256d a = _mm256_permute4x64_pd(_mm256_unpacklo_pd(x, y), 0xD8);
          const __m256d b = _mm256_permute4x64_pd(_mm256_unpackhi_pd(x, y), 0xD8);
          store32<kStream>(d0 + doff, a);
          store32<kStream>(d1 + doff, b);
        } else {
          const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(in));
          const __m256 y = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 32));
          const __m256d a = _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(x, y, 0x88)), 0xD8);
          const __m256d b = _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(x, y, 0xDD)), 0xD8);
          store32<kStream>(d0 + doff, a);
          store32<kStream>(d1 + doff, b);
        }
      }
    }
  }
#endif

#if TENFERRO_ISA_LEVEL >= 1
  // Note [Transpose micro-kernel]: row pointers are formed once per quad of rows and
  // columns, and the streaming/unaligned choice is made once per block (a template
  // parameter), so the inner loop is loads, shuffles and stores only.
  template <int64_t kV, bool kStream>
  void vec_block(char* d, const char* s, int64_t i0, int64_t iv, int64_t j0, int64_t jv) const {
    // Note [Line-wise transposes]: the quads that cover one 64-byte line of a source row
    // run back to back for each quad of rows, so every source line is consumed whole
    // while it is in L1, even when the rows of a block alias in the cache (rows a
    // multiple of 4 KiB apart).
    constexpr int64_t kQ = (64 / kE) / kV > 1 ? (64 / kE) / kV : 1;
    int64_t j = j0;
    if constexpr (kQ > 1) {
      for (; j + kQ * kV <= jv; j += kQ * kV) {
        char* drow[kQ][kV];
        const char* scol[kQ];
        for (int64_t q = 0; q < kQ; ++q) {
          for (int64_t k = 0; k < kV; ++k) drow[q][k] = d + dj.at(j + q * kV + k);
          scol[q] = s + sj.at(j + q * kV);
        }
        // Note [Transpose prefetch]: each quad of rows asks for the source lines it
        // will read kPrefetchLines line-chunks later (the same rows): a block reads one
        // line from each of its 64 rows per chunk, more streams than the hardware
        // prefetchers follow when the rows are pages apart. The hint is T2 (outer
        // levels, not L1): rows a multiple of 4 KiB apart share one L1 set, where lines
        // fetched ahead evicted each other. Zen 5, 64^4 f64, alternating runs against
        // the kernel without it (2026-12-02): [1xxx] permutations 0.52-0.87 -> 0.70-1.03
        // x memcpy at 1 thread, [3xxx] 0.33-0.62 -> 0.45-0.79; at 2 threads 18 -> 4 of
        // 28 cases below 0.6 (a T0 hint helped [1xxx] as much but not [3xxx]).
        const int64_t jp = j + kPrefetchLines * kQ * kV;
        const char* pcol = jp + kQ * kV <= jv ? s + sj.at(jp) : nullptr;
        for (int64_t i = i0; i < iv; i += kV) {
          int64_t so[kV];
          for (int64_t k = 0; k < kV; ++k) so[k] = si.at(i + k);
          if (pcol != nullptr) {
            for (int64_t k = 0; k < kV; ++k) _mm_prefetch(pcol + so[k], _MM_HINT_T2);
          }
          const int64_t doff = di.at(i);
          for (int64_t q = 0; q < kQ; ++q) {
            const char* srow[kV];
            for (int64_t k = 0; k < kV; ++k) srow[k] = scol[q] + so[k];
            micro<kStream>(drow[q], srow, doff);
          }
        }
      }
    }
    for (; j < jv; j += kV) {
      char* drow[kV];
      for (int64_t k = 0; k < kV; ++k) drow[k] = d + dj.at(j + k);
      const char* scol = s + sj.at(j);
      // Quads of segments shorter than a line (many tiny axes): the source of the
      // quads kPrefetchLines ahead, in the next segments (Note [Transpose prefetch]).
      // A rank-24 size-2 random permutation whose source segments are 4 elements:
      // 14.1-15.2 -> 7.7-8.9 ms at one thread, 7.5-8.4 -> 5.6-7.0 at two (alternating,
      // Zen 5, 2026-12-03).
      const int64_t jp = j + kPrefetchLines * kV;
      const char* pcol = jp + kV <= p1 ? s + sj.at(jp) : nullptr;
      for (int64_t i = i0; i < iv; i += kV) {
        const char* srow[kV];
        for (int64_t k = 0; k < kV; ++k) {
          const int64_t so = si.at(i + k);
          if (pcol != nullptr) _mm_prefetch(pcol + so, _MM_HINT_T2);
          srow[k] = scol + so;
        }
        micro<kStream>(drow, srow, di.at(i));
      }
    }
  }

  // The last (length mod 4) j of a segment: whole destination rows, each written in
  // vectors of kV elements gathered from the source (streamed like the quads).
  template <int64_t kV, bool kStream>
  void tail_cols(char* d, const char* s, int64_t i0, int64_t iv, int64_t j0, int64_t j1) const {
    for (int64_t j = j0; j < j1; ++j) {
      char* drow = d + dj.at(j);
      const char* scol = s + sj.at(j);
      for (int64_t i = i0; i < iv; i += kV) {
        alignas(32) W v[kV];
        for (int64_t k = 0; k < kV; ++k) v[k] = *reinterpret_cast<const W*>(scol + si.at(i + k));
        char* out = drow + di.at(i);
        if constexpr (kE < 4) {
          const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(v));
          if constexpr (kStream) {
            _mm_stream_si128(reinterpret_cast<__m128i*>(out), x);
          } else {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out), x);
          }
        } else if constexpr (kE == 4) {
          const __m128 x = _mm_load_ps(reinterpret_cast<const float*>(v));
          if constexpr (kStream) {
            _mm_stream_ps(reinterpret_cast<float*>(out), x);
          } else {
            _mm_storeu_ps(reinterpret_cast<float*>(out), x);
          }
        } else {
          const __m256d x = _mm256_load_pd(reinterpret_cast<const double*>(v));
          if constexpr (kStream) {
            _mm256_stream_pd(reinterpret_cast<double*>(out), x);
          } else {
            _mm256_storeu_pd(reinterpret_cast<double*>(out), x);
          }
        }
      }
    }
  }

  template <bool kStream>
  static void store16(char* out, __m128i x) {
    if constexpr (kStream) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(out), x);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), x);
    }
  }

  template <bool kStream>
  static void micro(char* const* drow, const char* const* srow, int64_t doff) {
    if constexpr (kE == 8) {
      const __m256d r0 = _mm256_loadu_pd(reinterpret_cast<const double*>(srow[0]));
      const __m256d r1 = _mm256_loadu_pd(reinterpret_cast<const double*>(srow[1]));
      const __m256d r2 = _mm256_loadu_pd(reinterpret_cast<const double*>(srow[2]));
      const __m256d r3 = _mm256_loadu_pd(reinterpret_cast<const double*>(srow[3]));
      const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      const __m256d c0 = _mm256_permute2f128_pd(t0, t2, 0x20), c1 = _mm256_permute2f128_pd(t1, t3, 0x20);
      const __m256d c2 = _mm256_permute2f128_pd(t0, t2, 0x31), c3 = _mm256_permute2f128_pd(t1, t3, 0x31);
      store32<kStream>(drow[0] + doff, c0);
      store32<kStream>(drow[1] + doff, c1);
      store32<kStream>(drow[2] + doff, c2);
      store32<kStream>(drow[3] + doff, c3);
    } else if constexpr (kE == 4) {
      __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(srow[0]));
      __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(srow[1]));
      __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(srow[2]));
      __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(srow[3]));
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      store16<kStream>(drow[0] + doff, _mm_castps_si128(r0));
      store16<kStream>(drow[1] + doff, _mm_castps_si128(r1));
      store16<kStream>(drow[2] + doff, _mm_castps_si128(r2));
      store16<kStream>(drow[3] + doff, _mm_castps_si128(r3));
    } else if constexpr (kE == 2) {
      // 8 x 8 of 16-bit elements: row pairs interleaved, then pairs of pairs, then halves.
      __m128i r[8], a[8], b[8];
      for (int64_t k = 0; k < 8; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(srow[k]));
      for (int64_t k = 0; k < 8; k += 2) {
        a[k] = _mm_unpacklo_epi16(r[k], r[k + 1]);      // columns 0-3 of rows k, k + 1
        a[k + 1] = _mm_unpackhi_epi16(r[k], r[k + 1]);  // columns 4-7
      }
      for (int64_t k = 0; k < 8; k += 4) {  // b[k + g]: columns 2g, 2g + 1 of rows k..k+3
        b[k] = _mm_unpacklo_epi32(a[k], a[k + 2]);
        b[k + 1] = _mm_unpackhi_epi32(a[k], a[k + 2]);
        b[k + 2] = _mm_unpacklo_epi32(a[k + 1], a[k + 3]);
        b[k + 3] = _mm_unpackhi_epi32(a[k + 1], a[k + 3]);
      }
      for (int64_t g = 0; g < 4; ++g) {
        store16<kStream>(drow[2 * g] + doff, _mm_unpacklo_epi64(b[g], b[4 + g]));
        store16<kStream>(drow[2 * g + 1] + doff, _mm_unpackhi_epi64(b[g], b[4 + g]));
      }
    } else if constexpr (kE == 1) {
      __m128i r[16];
      for (int64_t k = 0; k < 16; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(srow[k]));
      lane_transpose16(r);
      for (int64_t n = 0; n < 16; ++n) store16<kStream>(drow[n] + doff, r[n]);
    } else if constexpr (kE == 16) {
      const __m256d r0 = _mm256_loadu_pd(reinterpret_cast<const double*>(srow[0]));
      const __m256d r1 = _mm256_loadu_pd(reinterpret_cast<const double*>(srow[1]));
      const __m256d c0 = _mm256_permute2f128_pd(r0, r1, 0x20), c1 = _mm256_permute2f128_pd(r0, r1, 0x31);
      if constexpr (kStream) {
        _mm256_stream_pd(reinterpret_cast<double*>(drow[0] + doff), c0);
        _mm256_stream_pd(reinterpret_cast<double*>(drow[1] + doff), c1);
      } else {
        _mm256_storeu_pd(reinterpret_cast<double*>(drow[0] + doff), c0);
        _mm256_storeu_pd(reinterpret_cast<double*>(drow[1] + doff), c1);
      }
    }
  }
#endif
};

template <class W>
void copy_transpose_typed(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop,
                          const std::array<char*, 2>& bases, int64_t dst_bytes) {
  constexpr int64_t kElem = sizeof(W);
  const size_t src_fast = loop.fastest_axis(1);
  // Transpose: G1 starts with the source-fastest axis (moved to position 1), G0 with the
  // destination-fastest (axis 0); Note [Transpose groups] forms the rest.
  loop.move_axis(src_fast, 1);
  constexpr int64_t kQ = Transposer<W>::kVector;  // elements per vector of the quad path
  const TransposeGroups groups = choose_groups(loop, kElem, kQ, transpose_source_group(ctx.caps()));
  const size_t g0_end = groups.g0_end, g1_end = groups.g1_end;
  const int64_t p0 = groups.p0, p1 = groups.p1;
  // Offset tables.
  int64_t g0_dst[kGroup], g0_src[kGroup], g1_dst[kGroup], g1_src[kGroup];
  Transposer<W> tr{};
  tr.p0 = p0;
  tr.p1 = p1;
  auto describe = [&](size_t first, size_t last, int op, int64_t* table) {
    Offsets o;
    if (last == first + 1) {
      o.stride = loop.axis(first).stride[op];
    } else {
      group_table(loop, first, last, op, table);
      o.table = table;
    }
    return o;
  };
  tr.di = describe(0, g0_end, 0, g0_dst);
  tr.si = describe(0, g0_end, 1, g0_src);
  tr.dj = describe(g0_end, g1_end, 0, g1_dst);
  tr.sj = describe(g0_end, g1_end, 1, g1_src);
  {
    // Vector path: quads inside the contiguous segments of i (dst) and j (src), Note
    // [Transpose segments].
    tr.seg_i = groups.seg_i;
    tr.seg_j = groups.seg_j;
    tr.vec_ok = tr.seg_i >= kQ && tr.seg_j >= kQ;
    tr.pair_ok = kElem == 8 && p0 >= 2 && p1 >= 2 && tr.di.runs_of(2, p0, kElem) && tr.sj.runs_of(2, p1, kElem);
    if constexpr ((kElem == 8 || kElem == 4) && TENFERRO_ISA_LEVEL >= 1) {
      // Note [Zips]: pairs on one side, zip groups (adjacent on the other side's source,
      // 2 elements apart on its destination, or the mirror) on the other.
      constexpr int64_t kZ = Transposer<W>::kZip;
      auto pairs = [](const Offsets& o, int64_t n) { return n % 2 == 0 && o.runs_of(2, n, kElem); };
      auto zip_groups = [&](const Offsets& near, const Offsets& far, int64_t n) {
        return n >= kZ && near.runs_of(kZ, n, kElem) && far.runs_of(kZ, n, 2 * kElem);
      };
      tr.zip_ok = !tr.vec_ok && pairs(tr.di, p0) && zip_groups(tr.sj, tr.dj, p1);
      tr.unzip_ok = !tr.vec_ok && !tr.zip_ok && pairs(tr.sj, p1) && zip_groups(tr.di, tr.si, p0);
    }
  }
  // No vector path (or a scalar build), or only pairs of a transpose too small to pay
  // for its outer iteration: Note [Blocked copies].
  const bool pairs_pay = tr.pair_ok && p0 * p1 >= kMinPairTile;
  if (TENFERRO_ISA_LEVEL == 0 || !(tr.vec_ok || tr.zip_ok || tr.unzip_ok || pairs_pay)) {
    copy_blocked(ctx, loop, bases, kElem);
    return;
  }
  // 2-byte elements are stored normally: their vectors are 16 bytes of 8 rows, partial
  // lines that streaming stores would flush in pieces; bytes stream only their line
  // tiles (Note [Streamed byte tiles]), whose alignment is checked per 64 elements.
  tr.stream = kElem != 2 && dst_bytes >= kStreamBytes;
  tr.stream_aligned = tr.stream;
  tr.row_order = row_order_line_tiles(ctx.caps());
  // 8-byte elements only: measured there (Note [Aliased row blocks]). Destination rows
  // within one block (p0 rows at most a block) keep the whole block.
  tr.choose_block(kElem == 8 && p1 >= kAliasedMinCols && p0 > kBlockBytes / kElem &&
                  rows_alias_in_l2(tr.si, kBlockBytes / kElem));
  {
    // Alignment of every vector store: 32 bytes for the quad path (16 for floats and
    // for the pair path); row offsets dj and column offsets di at vector starts.
    // i segments that are not whole quads leave element-wise tails inside destination
    // lines: no streaming stores then (j tails are whole destination rows). Bytes stream
    // only whole line tiles, which start every 64 elements of i. Tried for outputs that
    // stream but whose rows start off vector boundaries (rows of 114, 243 or 3125 doubles:
    // a dozen transposes of the einsum suite): each block transposed into an L1 buffer and
    // its rows stored as runs, whole lines streamed, ragged ends normally. 5^10 reversed
    // 0.88-0.98x, MERA and tensornetwork instances 0.91-1.07x (Zen 4, 2026-12-03, three
    // alternating rounds): within the noise, not kept.
    const bool quads = tr.vec_ok;
    const int64_t step = quads ? (kElem == 1 ? 64 : kQ) : 2;
    if (quads && tr.seg_i < p0 && tr.seg_i % step != 0) {
      tr.stream_aligned = false;
    }
    const bool zips = tr.zip_ok || tr.unzip_ok;  // 32-byte stores (Note [Zips])
    const int64_t align = zips ? 32 : quads ? static_cast<int64_t>(Transposer<W>::kStreamAlign) : 16;
    const int64_t j_step = tr.zip_ok ? Transposer<W>::kZip : 1;
    const int64_t i_step = tr.zip_ok ? 2 : tr.unzip_ok ? Transposer<W>::kZip : step;
    tr.stream_aligned = tr.stream_aligned && tr.dj.aligned(p1, j_step, align) && tr.di.aligned(p0, i_step, align);
  }
  // Note [Transposes in source order]: with streaming stores the outer axes are walked in
  // source order, as for runs (Note [Streamed runs]): consecutive tiles then read
  // neighbouring source memory while their destination pieces, whole rows of lines, may
  // land far apart. 64^4 f64 [1032] (64 x 64 tiles, one outer axis 2 MiB apart in the
  // source, the other in the destination) 0.55-0.90 -> 0.86-1.15 x memcpy, the rank-24
  // random permutations 0.49-0.66 -> 0.61-0.66 at one thread; at two threads 2-11 ->
  // 4-10 cases below 0.6 per round, mean ratio 0.74-0.80 -> 0.80-0.83 (alternating
  // runs, Zen 5, 2026-12-03).
  if (tr.stream) loop.sort_axes(g1_end, 1);
  const int64_t outer = loop.outer_count(g1_end);
  if (ctx.threads() > 1 && outer < 4 * ctx.threads() && p0 * p1 >= (int64_t{1} << 15)) {
    // Few outer iterations: split each transpose over its rows (i) instead, or over its
    // columns (j, whole destination rows each) when there are too few row blocks for the
    // workers: a 64 x 262144 transpose (64^4 [3012]) has one row block, and ran on one
    // worker of two (0.28-0.38 x a two-thread memcpy). A row piece is 64 rows, or for
    // elements under 4 bytes one row block (Note [Transpose blocking]): 64 rows gave each
    // destination row of a byte transpose 64 bytes per piece, and bool 8192 x 8192 ran 12.2
    // ms on two threads (13.6 on one); with 512-row pieces 6.8. f32 transposes want 64 rows
    // there (64^4 `[3210]` at two threads 2.4 ms; with their 128-row block 3.1-3.2).
    const int64_t kIChunk = kElem < 4 ? tr.i_block : 64;
    constexpr int64_t kJChunk = 256;
    const int64_t row_pieces = (p0 + kIChunk - 1) / kIChunk;
    const bool by_columns = row_pieces < 4 * ctx.threads() && p1 >= 4 * ctx.threads() * kJChunk;
    const int64_t pieces = by_columns ? (p1 + kJChunk - 1) / kJChunk : row_pieces;
    for (int64_t o = 0; o < outer; ++o) {
      loop.run_range(bases, g1_end, o, o + 1, [&](const std::array<char*, 2>& p) {
        ctx.parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
          if (by_columns) {
            tr.run_cols(p[0], p[1], b * kJChunk, std::min(p1, e * kJChunk));
          } else {
            tr.run_rows(p[0], p[1], b * kIChunk, std::min(p0, e * kIChunk));
          }
#if TENFERRO_ISA_LEVEL >= 1
          if (tr.stream) _mm_sfence();
#endif
        });
      });
    }
    return;
  }
  loop.run(ctx, bases, g1_end, p0 * p1, [&](const std::array<char*, 2>& p) {
    tr.run(p[0], p[1]);
#if TENFERRO_ISA_LEVEL >= 1
    // Streaming stores are weakly ordered: fence on the thread that issued them.
    if (tr.stream) _mm_sfence();
#endif
  });
}

}  // namespace

void copy_transpose(const CpuExecutionContext& ctx, detail::StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                    int64_t dst_bytes, int64_t elem) {
  with_word(elem, [&](auto word) { copy_transpose_typed<decltype(word)>(ctx, loop, bases, dst_bytes); });
}

}  // namespace tenferro::cpu::detail::TENFERRO_ISA_NS
TENFERRO_ISA_END
