#pragma once
// Private: the multi-operand strided iteration shared by copy, elementwise and
// reduction kernels.
//
// Note [Strided loop plan]: all operands have the same logical shape. Axes of extent 1
// are dropped, the rest are sorted by the output's absolute stride (operand 0), and
// adjacent axes are merged whenever every operand is contiguous across them. The
// innermost merged axis becomes the kernel's inner loop (count + per-operand byte
// strides); the remaining axes form an outer odometer whose linear range is split
// across threads. A rank-31 tensor with all extents 2 and compatible strides therefore
// collapses to one long inner loop. Metadata lives in SmallVectors (no allocation up
// to rank 8).

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

#include "tenferro/core/shape.h"
#include "tenferro/cpu/context.h"

namespace tenferro::cpu::detail {

template <int N>
struct LoopAxis {
  int64_t extent;
  std::array<int64_t, N> stride;  // bytes
};

template <int N>
class StridedLoop {
 public:
  /// `layouts[i]` / `elem_size[i]`: operand i (0 = output). Shapes must be equal.
  StridedLoop(const std::array<const Layout*, N>& layouts, const std::array<int64_t, N>& elem_size) {
    const Layout& out = *layouts[0];
    empty_ = out.element_count() == 0;
    if (empty_) return;
    for (size_t k = 0; k < out.shape.size(); ++k) {
      if (out.shape[k] == 1) continue;
      LoopAxis<N> a;
      a.extent = out.shape[k];
      for (int i = 0; i < N; ++i) a.stride[i] = layouts[i]->strides[k] * elem_size[i];
      axes_.push_back(a);
    }
    // Sort by |output stride| (stable insertion sort: ranks are small).
    for (size_t i = 1; i < axes_.size(); ++i) {
      for (size_t j = i; j > 0 && std::llabs(axes_[j].stride[0]) < std::llabs(axes_[j - 1].stride[0]); --j) {
        std::swap(axes_[j], axes_[j - 1]);
      }
    }
    // Merge axis k+1 into k when every operand is contiguous across the pair.
    size_t w = 0;
    for (size_t r = 0; r < axes_.size(); ++r) {
      if (w > 0) {
        LoopAxis<N>& prev = axes_[w - 1];
        bool mergeable = true;
        for (int i = 0; i < N; ++i) mergeable = mergeable && axes_[r].stride[i] == prev.stride[i] * prev.extent;
        if (mergeable) {
          prev.extent *= axes_[r].extent;
          continue;
        }
      }
      axes_[w++] = axes_[r];
    }
    axes_.resize(w);
    if (axes_.empty()) axes_.push_back(LoopAxis<N>{1, {}});  // a single element
    for (int i = 0; i < N; ++i) base_offset_[i] = layouts[i]->offset * elem_size[i];
  }

  bool empty() const noexcept { return empty_; }
  /// Byte offset of operand i's first element from its base pointer (its layout's offset).
  int64_t base_offset(int i) const noexcept { return base_offset_[static_cast<size_t>(i)]; }
  size_t rank() const noexcept { return axes_.size(); }
  const LoopAxis<N>& axis(size_t k) const noexcept { return axes_[k]; }
  /// Moves axis `from` to position `to`, shifting the axes between (either direction).
  void move_axis(size_t from, size_t to) noexcept {
    LoopAxis<N> a = axes_[from];
    for (size_t j = from; j > to; --j) axes_[j] = axes_[j - 1];
    for (size_t j = from; j < to; ++j) axes_[j] = axes_[j + 1];
    axes_[to] = a;
  }
  /// Splits axis k (extent e) into axis k of extent f (its strides) and, right after it,
  /// an axis of extent e / f with f times its strides (f must divide e).
  void split_axis(size_t k, int64_t f) {
    LoopAxis<N> rest = axes_[k];
    rest.extent = axes_[k].extent / f;
    for (int i = 0; i < N; ++i) rest.stride[i] *= f;
    axes_[k].extent = f;
    axes_.push_back(rest);
    move_axis(axes_.size() - 1, k + 1);
  }
  /// Stable-sorts the axes [first, rank) by |stride| of operand `op`, so an odometer over
  /// them walks that operand in memory order.
  void sort_axes(size_t first, int op) noexcept {
    for (size_t i = first + 1; i < axes_.size(); ++i) {
      for (size_t j = i; j > first && std::llabs(axes_[j].stride[op]) < std::llabs(axes_[j - 1].stride[op]); --j) {
        std::swap(axes_[j], axes_[j - 1]);
      }
    }
  }
  /// Index of the axis with the smallest |stride| of operand `op` (first on ties).
  size_t fastest_axis(int op) const noexcept {
    size_t best = 0;
    for (size_t k = 1; k < axes_.size(); ++k) {
      if (std::llabs(axes_[k].stride[op]) < std::llabs(axes_[best].stride[op])) best = k;
    }
    return best;
  }
  /// Number of inner-loop runs (product of the outer extents).
  int64_t outer_count(size_t inner_axes = 1) const noexcept {
    int64_t n = 1;
    for (size_t k = inner_axes; k < axes_.size(); ++k) n *= axes_[k].extent;
    return n;
  }

  /// Calls `inner(ptrs, axes...)` for every outer index. `bases[i]` are operand base
  /// pointers (storage start, bytes); `inner_axes` axes (0 or 1 or 2) are left to the
  /// callback, which reads them via axis(k). Outer iterations [begin, end) only.
  template <class F>
  void run_range(const std::array<char*, N>& bases, size_t inner_axes, int64_t begin, int64_t end, F&& inner) const {
    const size_t rank = axes_.size();
    std::array<char*, N> ptr;
    SmallVector<int64_t, kInlineRank> index(rank > inner_axes ? rank - inner_axes : 0, 0);
    // Unravel `begin` over the outer axes.
    int64_t rem = begin;
    for (int i = 0; i < N; ++i) ptr[i] = bases[i] + base_offset_[i];
    for (size_t k = inner_axes; k < rank; ++k) {
      const int64_t idx = rem % axes_[k].extent;
      rem /= axes_[k].extent;
      index[k - inner_axes] = idx;
      for (int i = 0; i < N; ++i) ptr[i] += idx * axes_[k].stride[i];
    }
    for (int64_t it = begin; it < end; ++it) {
      inner(ptr);
      // Advance the odometer.
      for (size_t k = inner_axes; k < rank; ++k) {
        int64_t& idx = index[k - inner_axes];
        if (++idx < axes_[k].extent) {
          for (int i = 0; i < N; ++i) ptr[i] += axes_[k].stride[i];
          break;
        }
        for (int i = 0; i < N; ++i) ptr[i] -= (axes_[k].extent - 1) * axes_[k].stride[i];
        idx = 0;
      }
    }
  }

  /// Like run with one inner axis, but the callback receives `(ptrs, count)` for a run
  /// of `count` consecutive elements of axis 0; when there are fewer outer iterations
  /// than threads can use, axis 0 itself is split into chunks, so a single long axis
  /// (a contiguous tensor) still spreads over the workers.
  template <class F>
  void run_chunked(const CpuExecutionContext& ctx, const std::array<char*, N>& bases, F&& inner) const {
    if (empty_) return;
    const int64_t n = axes_[0].extent;
    const int64_t outer = outer_count(1);
    constexpr int64_t kMinChunk = int64_t{1} << 14;
    if (ctx.threads() <= 1 || outer >= 4 * ctx.threads() || n < 2 * kMinChunk) {
      run(ctx, bases, 1, n, [&](const std::array<char*, N>& p) { inner(p, n); });
      return;
    }
    const int64_t pieces = std::min<int64_t>((n + kMinChunk - 1) / kMinChunk, 8 * ctx.threads());
    const int64_t piece = (n + pieces - 1) / pieces;
    for (int64_t o = 0; o < outer; ++o) {
      run_range(bases, 1, o, o + 1, [&](const std::array<char*, N>& p) {
        ctx.parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c) {
            const int64_t lo = c * piece, len = std::min(n, lo + piece) - lo;
            if (len <= 0) continue;
            std::array<char*, N> q;
            for (int i = 0; i < N; ++i) q[i] = p[i] + lo * axes_[0].stride[i];
            inner(q, len);
          }
        });
      });
    }
  }

  /// run_range over all outer iterations, split across the context's threads when the
  /// total work (outer count x `inner_work`) is large.
  template <class F>
  void run(const CpuExecutionContext& ctx, const std::array<char*, N>& bases, size_t inner_axes, int64_t inner_work,
           F&& inner) const {
    if (empty_) return;
    const int64_t outer = outer_count(inner_axes);
    constexpr int64_t kMinWorkPerChunk = int64_t{1} << 15;
    const int64_t grain = std::max<int64_t>(1, kMinWorkPerChunk / std::max<int64_t>(inner_work, 1));
    ctx.parallel_for(outer, grain, [&](int64_t b, int64_t e) { run_range(bases, inner_axes, b, e, inner); });
  }

 private:
  SmallVector<LoopAxis<N>, kInlineRank> axes_;
  std::array<int64_t, N> base_offset_{};
  bool empty_ = false;
};

}  // namespace tenferro::cpu::detail
