#pragma once
// Private to the copy kernel: batches of tiny transposes (copy_tiny.cc), compiled once
// (plain moves, no ISA-specific code) and called by the blocked copies of every ISA level.

#include <array>
#include <cstdint>

#include "strided_loop.h"

namespace tenferro::cpu::detail {

/// The shape of a batch of tiny transposes (Note [Tiny transposes]): in a loop of three
/// or more axes, `a` (the source-fastest, unit stride there, extent na), `d` (the
/// destination-fastest, extent nd) and `b` (the batch axis, continuing in the source `a`,
/// or the na x nd block where `d` follows `a` there, and in the destination `d`, or the
/// block where `a` follows `d`), with 2 <= na, nd <= kTinyMaxExtent and b at least
/// kTinyMinBatch long; the other axes are outer ones.
struct TinyTransposes {
  size_t a = 0, d = 0, b = 0;
};

/// Byte strides of a batch of tiny transposes: a's in the destination, d's in the source,
/// the batch axis's in each.
struct TinyStrides {
  int64_t dst_a = 0, src_d = 0, dst_b = 0, src_b = 0;
};

inline constexpr int64_t kTinyMaxExtent = 8;
inline constexpr int64_t kTinyMinBatch = 8;

/// Whether `loop` (operand 0 destination, 1 source, byte strides of `elem`-byte
/// elements) is a batch of tiny transposes, and its axes. Pure.
bool tiny_transposes(const StridedLoop<2>& loop, int64_t elem, TinyTransposes* out) noexcept;

/// Copies `loop` as the batch of tiny transposes `t` (from tiny_transposes); reorders the
/// loop's axes.
void copy_tiny_transposes(const CpuExecutionContext& ctx, StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                          int64_t elem, const TinyTransposes& t);

/// A batch of permutations of one small block (Note [Small-block permutations]): the axes
/// whose steps are below the batch axis `x`'s on both sides fill a block of `block`
/// elements densely on each side (4 <= block <= kBlockMaxElements); `x` steps one block
/// on both sides, every other axis whole blocks; no shared fastest run of a line or more.
struct BlockPermutation {
  size_t x = 0;
  int64_t block = 0;
};

inline constexpr int64_t kBlockMaxElements = 256;
inline constexpr size_t kBlockMaxRank = 32;  // merged axes of loops that take the route

/// Whether `loop` (operand 0 destination, 1 source, byte strides of `elem`-byte
/// elements) is a batch of small-block permutations, with the smallest such block. Pure.
bool block_permutation(const StridedLoop<2>& loop, int64_t elem, BlockPermutation* out) noexcept;

/// Copies `loop` as the batch of block permutations `bp` (from block_permutation);
/// reorders the loop's axes.
void copy_block_permutations(const CpuExecutionContext& ctx, StridedLoop<2>& loop, const std::array<char*, 2>& bases,
                             int64_t elem, const BlockPermutation& bp);

}  // namespace tenferro::cpu::detail
