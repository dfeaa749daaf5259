#include "tenferro/einsum_cpu/einsum.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "tenferro/cpu/kernels.h"
#include "tenferro/cpu/reduce.h"
#include "tenferro/tensor/view_layout.h"

namespace tenferro::einsum {

// Note [Einsum plan]: preparation resolves the notation, searches the path, and turns
// the tree into steps. Each operand is first reduced on its own: repeated labels become
// a diagonal view, a size-1 axis against a larger extent elsewhere is dropped (Note
// [Einsum broadcast labels]), and
// labels no other operand or the output has are summed (one reduce). Each binary step
// is one dot_general: labels of both operands that survive are batch dimensions, labels
// of both that do not are contracted, the rest are free. The operands are viewed
// (permute, no copy) as [batch, free, contracting] and [batch, contracting, free] with
// each group in the operand's own memory order, so dot_general finds matrix-compatible
// strides whenever the memory allows and packs only an operand that needs it. An
// intermediate's memory order is dot_general's ([lhs free, rhs free, batch]), which the
// planner tracks to order the next step's groups (batch items one element apart in both
// operands keep that order in the intermediate instead, Note [Lane-first results], which
// the views of the next step take as they are). The last step writes into the
// destination (dot_general_into through a permuted view); a repeated output label is a
// diagonal view of a zero-filled destination.
//
// Note [Einsum label orders]: dot_general packs an operand whose row or column labels
// are not contiguous in memory. The planner simulates that: the contracted labels take
// the memory order of whichever operand lets more elements go unpacked, and an operand
// that will be packed anyway gets its free labels ordered for the step that consumes
// the result (labels that step contracts are placed next to each other at the boundary
// of the two free blocks), so the consumer finds them contiguous. An operand whose free
// labels split around its contracted block (an inner run, the contracted labels, more
// free labels) against a narrow partner is not packed: dot_general runs one product per
// outer index (Note [Split free groups]), so its free labels keep their memory order
// (MERA open's 11 x 415800 x 24 step, 2 threads: an 80 MB operand no longer packed,
// 48.7 -> 18.7 ms; its 196830 x 45 x 11 step 22.6 -> 8.5 ms, medians of 3 runs).

// Note [Boolean einsum]: on bool operands einsum is numpy's: products are logical ANDs
// and sums logical ORs (the result is true where any term is). Summed operand labels
// reduce with max (= any), and each step is dot_general's boolean semiring. Intermediates
// stay bool, so nothing overflows however many terms a sum has.
//
// Note [Einsum workspace]: an execution keeps its operand and intermediate tensors in
// the workspace's slot table (sized once by make_workspace). Each intermediate is
// written by dot_general_into into a buffer taken from the workspace's free list (best
// fit, only buffers nobody else holds), or a new pooled buffer on a cold run; when its
// last consumer has run, the buffer returns to the free list, so buffers are shared by
// intermediates whose lifetimes do not overlap. Each step also owns a cpu::DotScratch
// for the operands dot_general must pack. A warm execute_into therefore allocates
// nothing: no storage objects, no buffers, no tables. An operand with labels of its own
// (summed before any step) is reduced into a buffer the workspace keeps per operand. What
// still allocates: shapes and strides of rank > 8 (inline capacity, ARCHITECTURE §4), the
// result of the allocating execute (a fresh buffer: it belongs to the caller), and
// profiling. The execute overloads without a workspace make a temporary one.

struct EinsumPlan::Leaf {
  std::vector<SmallVector<int64_t, 8>> diagonals;
  SmallVector<int64_t, 8> drop_axes;  // extent-1 axes of broadcast labels (Note [Einsum broadcast labels])
  SmallVector<int64_t, 8> sum_axes;
  Shape summed_shape;  // the operand after sum_axes are summed away (when there are any)
};

struct EinsumPlan::Step {
  int32_t a = 0, b = 0;
  SmallVector<int64_t, 8> perm_a, perm_b;
  cpu::DotDims dims;
};

// Note [Einsum lanes]: with several threads, a step runs with all of them (dot_general
// splits it over the workers), but a step of a few hundred microseconds gains little
// that way: a worker joins 8-40 us late or not at all, and each product ends in a join
// (the matrix chain's 99 steps ran at 2 threads in the time of 1). Independent subtrees
// of the contraction tree need no join between their steps, so the plan runs a set of
// disjoint subtrees ("lanes") concurrently, each lane's steps one after another on one
// thread (ParallelMode::kOuter, one fan-out level), and afterwards the remaining steps
// (the "top": every ancestor of a lane) in plan order with all threads. Workers take
// the lanes heaviest first from a shared counter, so a late worker only takes fewer.
//
// Choosing the lanes (plan_lanes, once per thread count, deterministic): a step costs
// its multiply-adds plus kLaneElementCost per element read or written (one core moves an
// f64 in about the time of 8-10 multiply-adds here). With T threads a top step runs
// 1 + g (T - 1) times faster than on one, g by the route dot_general takes: 0 for an
// unbatched product below 2^19 multiply-adds (BatchSettings::parallel_min_flops: one
// thread) or a batched one below 2^14; 0.4 for a thin product (no batch, a side of at
// most 32, a contraction of at least 64), which streams its long operand from memory
// in pieces, each split ending in a join; 0.8 otherwise. Lanes run kLaneSharing = 1.1
// times slower than alone (shared caches and memory bandwidth). Starting from the whole
// tree as one lane, the heaviest lane is repeatedly replaced by its two subtrees (its
// step joining the top); each configuration is estimated as the
// longest-processing-time schedule of the lanes on T threads plus kLaneForkCost plus
// the top steps' time, and the best one is kept if it beats the all-top estimate by
// 15 %. Calibrated at 2 threads against profiles of the benchmark instances
// (2026-11-30): the matrix chain (99 thin steps of 50-500 us; critical path 176 of 305
// MFLOP) gets lanes, estimated 0.80 of the all-top time; the lm_* instances, whose
// batched steps ran 1.6-2.8x faster split over 2 threads than alone, estimate 0.94-0.97
// and keep all steps on all threads (with lanes they ran 1.14x slower); MERA, MPS,
// tensornetwork and gm_queen get none.
//
// Buffers: lanes take and return intermediate buffers through the workspace's free
// list under one mutex (Note [Einsum workspace]); buffers of concurrent steps never
// alias, as a buffer returns only after its last consumer ran. Concurrent lanes hold
// their live intermediates at the same time, so peak memory can exceed the sequential
// order's (by at most the other lanes' largest live sets). Results do not depend on
// timing: a lane step always runs its one-thread route, a top step its T-thread one.
constexpr double kLaneElementCost = 8;
constexpr double kLaneForkCost = 5e5;
constexpr double kLaneSharing = 1.1;
constexpr double kLaneWideGain = 0.8, kLaneThinGain = 0.4;
constexpr double kLaneOneThreadMadds = 524288, kLaneTinyMadds = 16384;

struct EinsumPlan::Lanes {
  std::vector<int32_t> steps;  // lane after lane, each in plan order
  std::vector<int32_t> begin;  // lane i is steps[begin[i], begin[i + 1]); heaviest first
  std::vector<int32_t> top;    // the other steps, in plan order
  int32_t count() const { return begin.empty() ? 0 : static_cast<int32_t>(begin.size()) - 1; }
};

namespace {

std::string s(int64_t v) { return std::to_string(v); }

// Makespan of a longest-processing-time-first schedule of `w` on `threads` machines;
// sorts `w` descending.
double lpt_makespan(std::vector<double>& w, int threads, std::vector<double>& bins) {
  std::sort(w.begin(), w.end(), std::greater<>());
  bins.assign(static_cast<size_t>(threads), 0.0);
  for (double x : w) *std::min_element(bins.begin(), bins.end()) += x;
  return bins.empty() ? 0.0 : *std::max_element(bins.begin(), bins.end());
}

// Applies diagonals for repeated labels: returns the axes lists (each applied to the
// result of the previous one) and leaves `labels` with each label once, at its first
// position.
std::vector<SmallVector<int64_t, 8>> plan_diagonals(std::vector<Label>* labels) {
  std::vector<SmallVector<int64_t, 8>> out;
  for (size_t i = 0; i < labels->size(); ++i) {
    SmallVector<int64_t, 8> pos;
    for (size_t j = i; j < labels->size(); ++j) {
      if ((*labels)[j] == (*labels)[i]) pos.push_back(static_cast<int64_t>(j));
    }
    if (pos.size() < 2) continue;
    out.push_back(pos);
    for (size_t k = pos.size(); k-- > 1;) labels->erase(labels->begin() + pos[k]);
  }
  return out;
}

int64_t index_of(const std::vector<Label>& v, Label l) {
  return static_cast<int64_t>(std::find(v.begin(), v.end(), l) - v.begin());
}

bool contains(const std::vector<Label>& v, Label l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// A compact column-major tensor of `shape`, writable (sole owner of its storage), on the
// storage moved out of `slot` when that is large enough and nobody else holds it, else
// on a new pooled buffer. The caller puts the storage back into `slot` once written, for
// the next execution (Note [Einsum workspace]).
Result<Tensor> workspace_tensor(DType dtype, const Shape& shape, std::shared_ptr<Storage>& slot,
                                const std::shared_ptr<HostBufferPool>& pool) {
  const int64_t n = element_count(shape);
  if (!slot || slot->byte_size() < n * dtype_size(dtype) || slot.use_count() != 1) {
    TENFERRO_TRY(Tensor fresh, Tensor::uninitialized(dtype, {n}, pool));
    slot = fresh.storage();
  }
  return Tensor::from_storage(dtype, std::move(slot), Layout::col_major(shape));
}

}  // namespace

// Note [Row-major operands]: the planner orders every step for column-major leaves (each
// operand's labels fastest first) and lays intermediates and the result out column-major,
// so an einsum over C-ordered operands (numpy's default, and every array read from a
// .npy file numpy wrote) found its free and contracted labels in reverse memory order and
// packed operands the column-major mirror of the same problem reads in place: an MPS
// inner product of 200 C-ordered operands ran 46 ms against 21 ms over their
// column-major mirrors (one thread). An einsum is unchanged when every term's labels and
// its operand's axes are reversed together, and so is the output with the result's axes;
// a C-ordered array reversed is a column-major view (no copy). So a kRowMajor plan is
// planned on that mirror (the labels of every term reversed, the shapes too) and its run
// reverses the operands, the destination and the result as views; the caller sees its
// own spec, shapes and output. preferred_operand_order chooses the order the operands
// fit: kRowMajor when operands whose axes (those of extent > 1) run slowest-first in
// memory hold more elements than those whose axes run fastest-first, and the problem
// has at least kMirrorMinElements elements (below, the few hundred nanoseconds of views
// matter more than any packing). A tensor with a single axis of extent > 1 counts as
// neither.
constexpr int64_t kMirrorMinElements = 4096;

std::string_view operand_order_name(OperandOrder order) noexcept {
  return order == OperandOrder::kRowMajor ? "row-major" : "column-major";
}

OperandOrder preferred_operand_order(std::span<const Tensor> operands) noexcept {
  int64_t row = 0, col = 0, total = 0;
  for (const Tensor& t : operands) {
    if (!t.defined()) continue;
    const int64_t n = t.numel();
    total += n;
    // Strides of the axes of extent > 1, in axis order: strictly falling (slowest
    // first), strictly rising (fastest first), or neither.
    int64_t prev = -1;
    int axes = 0;
    bool falling = true, rising = true;
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (t.dim(d) <= 1) continue;
      const int64_t st = std::llabs(t.strides()[static_cast<size_t>(d)]);
      if (axes > 0) {
        falling = falling && st < prev;
        rising = rising && st > prev;
      }
      prev = st;
      ++axes;
    }
    if (axes < 2) continue;
    if (falling) row += n;
    if (rising) col += n;
  }
  return total >= kMirrorMinElements && row > col ? OperandOrder::kRowMajor : OperandOrder::kColumnMajor;
}

namespace {

// The permutation that reverses `rank` axes.
SmallVector<int64_t, 8> reverse_axes(int64_t rank) {
  SmallVector<int64_t, 8> perm;
  for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  return perm;
}

// The axes of `t` in reverse order (a view).
Result<Tensor> reversed(const Tensor& t) {
  const auto perm = reverse_axes(t.rank());
  return t.permute(Dims(perm.span()));
}

}  // namespace

Result<std::shared_ptr<const EinsumPlan>> EinsumPlan::prepare(std::string_view subscripts,
                                                              std::span<const Shape> shapes, DType dtype,
                                                              const PathPolicy& policy, OperandOrder order) {
  TENFERRO_TRY(Subscripts parsed, parse_subscripts(subscripts));
  TENFERRO_TRY(EinsumSpec spec, resolve(parsed, shapes));
  return prepare(spec, shapes, dtype, policy, order);
}

Result<std::shared_ptr<const EinsumPlan>> EinsumPlan::prepare(const EinsumSpec& spec, std::span<const Shape> shapes,
                                                              DType dtype, const PathPolicy& policy,
                                                              OperandOrder order) {
  if (order == OperandOrder::kColumnMajor) {
    TENFERRO_TRY(auto plan, plan_spec(spec, shapes, dtype, policy));
    return std::shared_ptr<const EinsumPlan>(std::move(plan));
  }
  if (order != OperandOrder::kRowMajor) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum",
                       "operand order " + s(static_cast<int64_t>(order)) + " is neither column- nor row-major");
  }
  if (spec.inputs.size() != shapes.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum",
                       s(static_cast<int64_t>(spec.inputs.size())) + " terms but " +
                           s(static_cast<int64_t>(shapes.size())) + " shapes");
  }
  // Note [Row-major operands]: the mirror's terms and shapes.
  EinsumSpec mirror = spec;
  for (auto& in : mirror.inputs) std::reverse(in.begin(), in.end());
  std::reverse(mirror.output.begin(), mirror.output.end());
  std::vector<Shape> mirror_shapes(shapes.begin(), shapes.end());
  for (Shape& sh : mirror_shapes) std::reverse(sh.begin(), sh.end());
  TENFERRO_TRY(auto plan, plan_spec(mirror, mirror_shapes, dtype, policy));
  plan->spec_ = spec;
  plan->in_shapes_.assign(shapes.begin(), shapes.end());
  std::reverse(plan->out_shape_.begin(), plan->out_shape_.end());
  plan->order_ = OperandOrder::kRowMajor;
  return std::shared_ptr<const EinsumPlan>(std::move(plan));
}

Result<std::shared_ptr<EinsumPlan>> EinsumPlan::plan_spec(const EinsumSpec& spec, std::span<const Shape> shapes,
                                                          DType dtype, const PathPolicy& policy) {
  if (spec.inputs.empty()) return usage_error(ErrorCode::kInvalidArgument, "einsum", "einsum needs an operand");
  if (spec.inputs.size() != shapes.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum",
                       s(static_cast<int64_t>(spec.inputs.size())) + " terms but " +
                           s(static_cast<int64_t>(shapes.size())) + " shapes");
  }
  auto plan = std::shared_ptr<EinsumPlan>(new EinsumPlan());
  plan->spec_ = spec;
  plan->dtype_ = dtype;
  plan->in_shapes_.assign(shapes.begin(), shapes.end());
  const auto n = static_cast<int32_t>(spec.inputs.size());

  // Note [Einsum broadcast labels]: a label with extent 1 in an operand and a larger
  // extent elsewhere (numpy's broadcasting of named labels) is dropped from that operand
  // instead of broadcast: the operand is constant along it, so the product is the same
  // with the label absent there (where it then appears in no other operand and not in
  // the output, the others sum it away before any step). A stride-0 view would be packed
  // (materialized at the full extent) by every dot_general that takes it.
  // `reduced`: the terms without those labels, from which the path and the steps are
  // planned.
  // Whether operand i broadcasts label l: every occurrence of l there has extent 1 and
  // the label a larger extent elsewhere (a repeated label with mixed extents is left to
  // the diagonal, which rejects it).
  auto broadcasts = [&](int32_t i, Label l) {
    const std::vector<Label>& in = spec.inputs[static_cast<size_t>(i)];
    if (spec.extent(l) == 1) return false;
    for (size_t a = 0; a < in.size(); ++a) {
      if (in[a] == l && shapes[static_cast<size_t>(i)][a] != 1) return false;
    }
    return true;
  };
  EinsumSpec reduced = spec;
  for (int32_t i = 0; i < n; ++i) {
    std::vector<Label> keep;
    for (Label l : spec.inputs[static_cast<size_t>(i)]) {
      if (!broadcasts(i, l)) keep.push_back(l);
    }
    reduced.inputs[static_cast<size_t>(i)] = std::move(keep);
  }
  // Operands holding each label, and the output's labels.
  std::map<Label, int32_t> ops_with;
  for (const auto& in : reduced.inputs) {
    std::vector<Label> u = in;
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    for (Label l : u) ops_with[l]++;
  }
  auto in_output = [&](Label l) { return contains(spec.output, l); };

  // Leaves.
  std::vector<std::vector<Label>> labels(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    auto leaf = std::make_shared<Leaf>();
    std::vector<Label> ls = spec.inputs[static_cast<size_t>(i)];
    leaf->diagonals = plan_diagonals(&ls);
    // After the diagonals: the axes of broadcast labels (extent 1 in this operand) are
    // dropped (Note [Einsum broadcast labels]).
    std::vector<Label> present;
    for (size_t a = 0; a < ls.size(); ++a) {
      if (broadcasts(i, ls[a])) {
        leaf->drop_axes.push_back(static_cast<int64_t>(a));
      } else {
        present.push_back(ls[a]);
      }
    }
    std::vector<Label> kept;
    for (size_t a = 0; a < present.size(); ++a) {
      if (ops_with[present[a]] == 1 && !in_output(present[a])) {
        leaf->sum_axes.push_back(static_cast<int64_t>(a));
      } else {
        kept.push_back(present[a]);
        leaf->summed_shape.push_back(spec.extent(present[a]));
      }
    }
    labels[static_cast<size_t>(i)] = std::move(kept);
    plan->leaves_.push_back(std::move(leaf));
  }

  // Path.
  std::vector<Label> dense_to_label;
  const Network net = make_network(reduced, &dense_to_label);
  const auto t0 = std::chrono::steady_clock::now();
  TENFERRO_TRY(plan->tree_, search_path(net, policy));
  plan->search_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TENFERRO_TRY(plan->cost_, evaluate(net, plan->tree_));

  // Steps. `mem` tracks each node's labels from fastest to slowest in memory (leaves
  // are assumed column-major; intermediates are exactly dot_general's order).
  // Pass 1: the labels each step contracts, and which step consumes each node
  // (Note [Einsum label orders]).
  const size_t total_nodes = static_cast<size_t>(n) + plan->tree_.steps.size();
  std::vector<std::vector<Label>> contracted(plan->tree_.steps.size());
  std::vector<int64_t> consumer(total_nodes, -1);
  {
    std::vector<std::vector<Label>> sets = labels;
    std::map<Label, int32_t> cnt;
    for (const auto& ls : sets)
      for (Label l : ls) cnt[l]++;
    for (size_t k = 0; k < plan->tree_.steps.size(); ++k) {
      const auto [a, b] = plan->tree_.steps[k];
      consumer[static_cast<size_t>(a)] = static_cast<int64_t>(k);
      consumer[static_cast<size_t>(b)] = static_cast<int64_t>(k);
      const auto la = sets[static_cast<size_t>(a)], lb = sets[static_cast<size_t>(b)];
      std::vector<Label> out;
      for (const auto* side : {&la, &lb}) {
        for (Label l : *side) {
          if (contains(out, l)) continue;
          const int occ = (contains(la, l) ? 1 : 0) + (contains(lb, l) ? 1 : 0);
          if (in_output(l) || cnt[l] > occ) {
            out.push_back(l);
          } else if (!contains(contracted[k], l)) {
            contracted[k].push_back(l);
          }
        }
      }
      for (Label l : la) cnt[l]--;
      for (Label l : lb) cnt[l]--;
      for (Label l : out) cnt[l]++;
      sets.push_back(std::move(out));
    }
  }
  // Whether an operand with memory order `memv` is a BLAS matrix for groups g1, g2:
  // each group contiguous in the given order and one of them first (extent-1 labels
  // ignored; batch labels may sit anywhere after).
  auto matrix_ok = [&](const std::vector<Label>& memv, const std::vector<Label>& g1, const std::vector<Label>& g2) {
    std::vector<Label> m;
    for (Label l : memv)
      if (spec.extent(l) > 1) m.push_back(l);
    auto start = [&](const std::vector<Label>& g) -> int64_t {
      std::vector<Label> f;
      for (Label l : g)
        if (spec.extent(l) > 1) f.push_back(l);
      if (f.empty()) return -2;
      const int64_t at = index_of(m, f[0]);
      for (size_t t = 0; t < f.size(); ++t) {
        if (at + static_cast<int64_t>(t) >= static_cast<int64_t>(m.size()) || m[static_cast<size_t>(at) + t] != f[t]) return -1;
      }
      return at;
    };
    const int64_t s1 = start(g1), s2 = start(g2);
    if (s1 == -1 || s2 == -1) return false;
    return s1 <= 0 || s2 <= 0;
  };
  auto elements = [&](const std::vector<Label>& ls) {
    double e = 1;
    for (Label l : ls) e *= static_cast<double>(spec.extent(l));
    return e;
  };
  // Whether dot_general runs an operand with memory order `memv` unpacked by splitting
  // its free labels (Note [Split free groups] in dot_geometry.cc): an inner run of free
  // labels first, the contracted labels right after it in the given order, the other
  // free labels outside, an inner run of at least 8 elements, an operand of at least
  // 32768 elements and the other operand's free extent at most 64.
  auto split_ok = [&](const std::vector<Label>& memv, const std::vector<Label>& free, const std::vector<Label>& cg,
                      double other_free) {
    std::vector<Label> m, c;
    for (Label l : memv)
      if (spec.extent(l) > 1) m.push_back(l);
    for (Label l : cg)
      if (spec.extent(l) > 1) c.push_back(l);
    if (c.empty() || other_free > 64 || elements(memv) < 32768) return false;
    size_t inner = 0;
    double run = 1;
    while (inner < m.size() && contains(free, m[inner])) run *= static_cast<double>(spec.extent(m[inner++]));
    if (inner == 0 || run < 8 || inner + c.size() > m.size()) return false;
    for (size_t t = 0; t < c.size(); ++t) {
      if (m[inner + t] != c[t]) return false;
    }
    for (size_t t = inner + c.size(); t < m.size(); ++t) {
      if (contains(free, m[t])) return true;  // free labels outside: a split, not a plain matrix
    }
    return false;
  };
  // Pass 2: orders.
  std::vector<std::vector<Label>> mem = labels;
  for (size_t k = 0; k < plan->tree_.steps.size(); ++k) {
    auto [a, b] = plan->tree_.steps[k];
    // Note [Root orientation]: the root's memory order is [lhs free, rhs free, batch], and
    // the result is column-major in output order. When the operands are a transposed
    // pair (the first's fastest label contracted, the second's free) whose swap is a plain
    // pair (the new lhs free-fastest, the new rhs contracted-fastest) and the output's
    // fastest label is the second's, they swap roles: the product runs untransposed and
    // writes the output order, provided the new lhs has at least the free volume of the new
    // rhs (the output's fastest dimension is the kernels' vector dimension). A numpy
    // product of two C-ordered matrices, planned as its column-major mirror "ji,kj->ki",
    // ran transposed-transposed 10 % slower than the same product of column-major
    // operands (Zen 5, 256^3 f64); MERA open's root (free volumes 177147 and 243), swapped
    // to a 243-row product, ran 6 % slower (58.5-60.4 ms against 62.1-65.1 ms, three
    // alternating runs), so it stays.
    if (k + 1 == plan->tree_.steps.size()) {
      auto fastest = [&](int32_t node) -> std::optional<Label> {
        for (Label l : mem[static_cast<size_t>(node)]) {
          if (spec.extent(l) > 1) return l;
        }
        return std::nullopt;
      };
      // x free-fastest and y contracted-fastest.
      auto plain = [&](int32_t x, int32_t y) {
        const auto fx = fastest(x), fy = fastest(y);
        return fx && fy && !contains(labels[static_cast<size_t>(y)], *fx) && contains(contracted[k], *fy);
      };
      std::optional<Label> out_first;
      for (Label l : spec.output) {
        if (spec.extent(l) > 1) {
          out_first = l;
          break;
        }
      }
      // Free volume of x (its labels not in y).
      auto free_volume = [&](int32_t x, int32_t y) {
        double v = 1;
        for (Label l : labels[static_cast<size_t>(x)]) {
          if (!contains(labels[static_cast<size_t>(y)], l)) v *= static_cast<double>(spec.extent(l));
        }
        return v;
      };
      if (out_first && !plain(a, b) && plain(b, a) && contains(labels[static_cast<size_t>(b)], *out_first) &&
          !contains(labels[static_cast<size_t>(a)], *out_first) && free_volume(b, a) >= free_volume(a, b)) {
        std::swap(a, b);
      }
    }
    const auto& la = labels[static_cast<size_t>(a)];
    const auto& lb = labels[static_cast<size_t>(b)];
    // Shared labels follow one operand's memory order (the choice that leaves the larger
    // volume unpacked); free labels follow their own operand's memory order.
    std::vector<Label> batch, fa, fb;
    for (Label l : mem[static_cast<size_t>(a)]) {
      if (!contains(lb, l)) fa.push_back(l);
    }
    for (Label l : mem[static_cast<size_t>(b)]) {
      if (!contains(la, l)) fb.push_back(l);
    }
    auto shared_in = [&](int32_t node, bool want_contracted) {
      std::vector<Label> out;
      for (Label l : mem[static_cast<size_t>(node)]) {
        if (contains(la, l) && contains(lb, l) && contains(contracted[k], l) == want_contracted) out.push_back(l);
      }
      return out;
    };
    std::vector<Label> contract;
    {
      double best = -1;
      for (int32_t from : {a, b}) {
        const std::vector<Label> c = shared_in(from, true);
        const bool a_ok = matrix_ok(mem[static_cast<size_t>(a)], fa, c) || split_ok(mem[static_cast<size_t>(a)], fa, c, elements(fb));
        const bool b_ok = matrix_ok(mem[static_cast<size_t>(b)], c, fb) || split_ok(mem[static_cast<size_t>(b)], fb, c, elements(fa));
        const double saved = (a_ok ? elements(la) : 0) + (b_ok ? elements(lb) : 0);
        if (saved > best) {
          best = saved;
          contract = c;
        }
      }
    }
    batch = shared_in(elements(la) >= elements(lb) ? a : b, false);
    // An operand that is packed anyway can take any free-label order: choose the one
    // its consumer wants (its contracted labels together at the fa/fb boundary).
    const int64_t parent = consumer[static_cast<size_t>(n) + k];
    if (parent >= 0) {
      const auto& pk = contracted[static_cast<size_t>(parent)];
      auto rank = [&](Label l, bool contracted_first) {
        const bool c = contains(pk, l);
        return contracted_first ? (c ? 0 : 1) : (c ? 1 : 0);
      };
      if (!matrix_ok(mem[static_cast<size_t>(a)], fa, contract) &&
          !split_ok(mem[static_cast<size_t>(a)], fa, contract, elements(fb))) {
        std::stable_sort(fa.begin(), fa.end(), [&](Label x, Label y) { return rank(x, false) < rank(y, false); });
      }
      if (!matrix_ok(mem[static_cast<size_t>(b)], contract, fb) &&
          !split_ok(mem[static_cast<size_t>(b)], fb, contract, elements(fa))) {
        std::stable_sort(fb.begin(), fb.end(), [&](Label x, Label y) { return rank(x, true) < rank(y, true); });
      }
    }
    auto step = std::make_shared<Step>();
    step->a = a;
    step->b = b;
    const auto nb = static_cast<int64_t>(batch.size()), nfa = static_cast<int64_t>(fa.size());
    for (Label l : batch) step->perm_a.push_back(index_of(la, l));
    for (Label l : fa) step->perm_a.push_back(index_of(la, l));
    for (Label l : contract) step->perm_a.push_back(index_of(la, l));
    for (Label l : batch) step->perm_b.push_back(index_of(lb, l));
    for (Label l : contract) step->perm_b.push_back(index_of(lb, l));
    for (Label l : fb) step->perm_b.push_back(index_of(lb, l));
    for (int64_t i = 0; i < nb; ++i) {
      step->dims.lhs_batch.push_back(i);
      step->dims.rhs_batch.push_back(i);
    }
    for (int64_t i = 0; i < static_cast<int64_t>(contract.size()); ++i) {
      step->dims.lhs_contracting.push_back(nb + nfa + i);
      step->dims.rhs_contracting.push_back(nb + i);
    }
    std::vector<Label> out_labels = batch, out_mem = fa;
    out_labels.insert(out_labels.end(), fa.begin(), fa.end());
    out_labels.insert(out_labels.end(), fb.begin(), fb.end());
    out_mem.insert(out_mem.end(), fb.begin(), fb.end());
    out_mem.insert(out_mem.end(), batch.begin(), batch.end());
    {
      // Cost estimate and parallel class of the step (Note [Einsum lanes]).
      const double nbatch = elements(batch), m = elements(fa), nn = elements(fb), kk = elements(contract);
      const double madds = nbatch * m * nn * kk;
      plan->step_cost_.push_back(madds + kLaneElementCost * (elements(la) + elements(lb) + elements(out_labels)));
      StepScaling c = StepScaling::kWide;
      if (nbatch <= 1 && madds < kLaneOneThreadMadds) {
        c = StepScaling::kOneThread;
      } else if (nbatch > 1 && madds < kLaneTinyMadds) {
        c = StepScaling::kOneThread;
      } else if (nbatch <= 1 && std::min(m, nn) <= 32 && kk >= 64) {
        c = StepScaling::kThin;
      }
      plan->step_scaling_.push_back(c);
    }
    labels.push_back(std::move(out_labels));
    mem.push_back(std::move(out_mem));
    plan->steps_.push_back(std::move(step));
  }
  plan->root_labels_ = labels.back();

  // Output: diagonals for repeated labels, then the permutation to the root's order.
  std::vector<Label> unique = spec.output;
  plan->out_diags_ = plan_diagonals(&unique);
  plan->repeated_output_ = !plan->out_diags_.empty();
  for (Label l : spec.output) plan->out_shape_.push_back(spec.extent(l));
  if (unique.size() != plan->root_labels_.size()) {
    return usage_error(ErrorCode::kInternal, "einsum", "planned result labels do not match the output");
  }
  for (Label l : plan->root_labels_) plan->root_to_out_.push_back(index_of(unique, l));
  plan->lanes_.resize(kMaxLaneThreads + 1);
  return plan;
}

int64_t EinsumPlan::footprint_bytes() const noexcept {
  int64_t b = static_cast<int64_t>(sizeof(EinsumPlan));
  b += static_cast<int64_t>(steps_.size() * (sizeof(Step) + 64) + leaves_.size() * (sizeof(Leaf) + 64));
  for (const auto& in : spec_.inputs) b += static_cast<int64_t>(in.size() * sizeof(Label));
  b += static_cast<int64_t>(tree_.steps.size() * sizeof(tree_.steps[0]));
  b += static_cast<int64_t>(steps_.size() * (sizeof(double) + sizeof(StepScaling)) + lanes_.size() * sizeof(lanes_[0]));
  return b;
}

std::shared_ptr<const EinsumPlan::Lanes> EinsumPlan::plan_lanes(int threads) const {
  auto out = std::make_shared<Lanes>();
  const auto steps = static_cast<int32_t>(steps_.size());
  const auto n = static_cast<int32_t>(in_shapes_.size());
  if (threads < 2 || steps < 3) return out;
  // Subtree weights (children come before their parent in plan order).
  std::vector<double> weight(static_cast<size_t>(steps), 0.0);
  auto child_step = [&](int32_t node) { return node >= n ? node - n : -1; };
  for (int32_t k = 0; k < steps; ++k) {
    double w = step_cost_[static_cast<size_t>(k)];
    for (int32_t c : {child_step(steps_[static_cast<size_t>(k)]->a), child_step(steps_[static_cast<size_t>(k)]->b)}) {
      if (c >= 0) w += weight[static_cast<size_t>(c)];
    }
    weight[static_cast<size_t>(k)] = w;
  }
  auto top_time = [&](int32_t k) {
    double gain = kLaneWideGain;
    switch (step_scaling_[static_cast<size_t>(k)]) {
      case StepScaling::kOneThread: gain = 0; break;
      case StepScaling::kThin: gain = kLaneThinGain; break;
      case StepScaling::kWide: break;
    }
    return step_cost_[static_cast<size_t>(k)] / (1.0 + gain * (threads - 1));
  };
  double all_top = 0;
  for (int32_t k = 0; k < steps; ++k) all_top += top_time(k);
  // Greedy descent: split the heaviest lane; remember the best configuration.
  auto heavier = [&](int32_t x, int32_t y) {
    const double wx = weight[static_cast<size_t>(x)], wy = weight[static_cast<size_t>(y)];
    return wx != wy ? wx < wy : x > y;  // max-heap on weight, ties to the lower step
  };
  std::vector<int32_t> heap{steps - 1}, popped;
  std::vector<double> w, bins;
  double top = 0, best = all_top;
  size_t best_pops = 0;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heavier);
    const int32_t x = heap.back();
    heap.pop_back();
    popped.push_back(x);
    top += top_time(x);
    for (int32_t c : {child_step(steps_[static_cast<size_t>(x)]->a), child_step(steps_[static_cast<size_t>(x)]->b)}) {
      if (c < 0) continue;
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), heavier);
    }
    if (heap.size() < 2) continue;
    w.clear();
    for (int32_t r : heap) w.push_back(weight[static_cast<size_t>(r)]);
    const double est = top + kLaneForkCost + kLaneSharing * lpt_makespan(w, threads, bins);
    if (est < best) {
      best = est;
      best_pops = popped.size();
    }
  }
  if (best_pops == 0 || best > 0.85 * all_top) return out;
  // Replay: the popped steps are the top; their step children not popped are lane roots.
  std::vector<int32_t> lane_of(static_cast<size_t>(steps), -2);  // -1 top, -2 unassigned
  for (size_t i = 0; i < best_pops; ++i) lane_of[static_cast<size_t>(popped[i])] = -1;
  std::vector<int32_t> roots;
  for (size_t i = 0; i < best_pops; ++i) {
    const Step& st = *steps_[static_cast<size_t>(popped[i])];
    for (int32_t c : {child_step(st.a), child_step(st.b)}) {
      if (c >= 0 && lane_of[static_cast<size_t>(c)] != -1) roots.push_back(c);
    }
  }
  std::sort(roots.begin(), roots.end(), [&](int32_t x, int32_t y) { return heavier(y, x); });
  for (size_t i = 0; i < roots.size(); ++i) lane_of[static_cast<size_t>(roots[i])] = static_cast<int32_t>(i);
  for (int32_t k = steps; k-- > 0;) {
    const int32_t l = lane_of[static_cast<size_t>(k)];
    if (l < 0) continue;
    const Step& st = *steps_[static_cast<size_t>(k)];
    for (int32_t c : {child_step(st.a), child_step(st.b)}) {
      if (c >= 0) lane_of[static_cast<size_t>(c)] = l;
    }
  }
  out->begin.push_back(0);
  for (size_t i = 0; i < roots.size(); ++i) {
    for (int32_t k = 0; k < steps; ++k) {
      if (lane_of[static_cast<size_t>(k)] == static_cast<int32_t>(i)) out->steps.push_back(k);
    }
    out->begin.push_back(static_cast<int32_t>(out->steps.size()));
  }
  for (int32_t k = 0; k < steps; ++k) {
    if (lane_of[static_cast<size_t>(k)] == -1) out->top.push_back(k);
  }
  return out;
}

const EinsumPlan::Lanes& EinsumPlan::lanes_for(int threads) const {
  const auto t = static_cast<size_t>(std::clamp(threads, 1, kMaxLaneThreads));
  std::lock_guard lock(lanes_mu_);
  if (!lanes_[t]) lanes_[t] = plan_lanes(static_cast<int>(t));
  return *lanes_[t];
}

std::vector<std::vector<int32_t>> EinsumPlan::lanes(int threads) const {
  const Lanes& l = lanes_for(threads);
  std::vector<std::vector<int32_t>> out;
  for (int32_t i = 0; i < l.count(); ++i) {
    out.emplace_back(l.steps.begin() + l.begin[static_cast<size_t>(i)], l.steps.begin() + l.begin[static_cast<size_t>(i) + 1]);
  }
  return out;
}

Result<void> EinsumPlan::check_operands(std::span<const Tensor> operands) const {
  if (operands.size() != in_shapes_.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum",
                       "the plan takes " + s(static_cast<int64_t>(in_shapes_.size())) + " operands, got " +
                           s(static_cast<int64_t>(operands.size())));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& t = operands[i];
    if (!t.defined()) {
      return usage_error(ErrorCode::kInvalidArgument, "einsum", "operand " + s(static_cast<int64_t>(i)) + " is null");
    }
    if (t.dtype() != dtype_) {
      return usage_error(ErrorCode::kDTypeMismatch, "einsum",
                         "operand " + s(static_cast<int64_t>(i)) + " has dtype " + std::string(dtype_name(t.dtype())) +
                             ", the plan " + std::string(dtype_name(dtype_)));
    }
    if (!(t.shape() == in_shapes_[i])) {
      return usage_error(ErrorCode::kShapeMismatch, "einsum",
                         "operand " + s(static_cast<int64_t>(i)) + " has shape " + format_dims(t.shape()) +
                             ", the plan " + format_dims(in_shapes_[i]));
    }
  }
  return ok();
}

EinsumWorkspace EinsumPlan::make_workspace() const {
  EinsumWorkspace ws;
  ws.plan_ = this;
  ws.slots_.resize(in_shapes_.size() + steps_.size());
  ws.free_.reserve(steps_.size());
  ws.dot_.resize(steps_.size());
  ws.leaf_.resize(in_shapes_.size());
  return ws;
}

int64_t EinsumWorkspace::retained_bytes() const noexcept {
  int64_t b = 0;
  for (const auto& s : free_) b += s ? s->byte_size() : 0;
  for (const auto& s : leaf_) b += s ? s->byte_size() : 0;
  for (const auto& d : dot_) {
    for (const auto* s : {&d.lhs, &d.rhs, &d.out}) b += *s ? (*s)->byte_size() : 0;
  }
  return b;
}

Result<void> EinsumPlan::check_workspace(const EinsumWorkspace& ws) const {
  if (ws.plan_ != this) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum", "the workspace was made by another plan (use make_workspace())");
  }
  return ok();
}

Result<Tensor> EinsumPlan::execute(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands,
                                   const std::shared_ptr<HostBufferPool>& pool, const cpu::DotOptions& dot,
                                   std::vector<StepProfile>* profile) const {
  EinsumWorkspace ws = make_workspace();
  return execute(ctx, operands, ws, pool, dot, profile);
}

Result<void> EinsumPlan::execute_into(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands,
                                      Tensor& out, const std::shared_ptr<HostBufferPool>& pool,
                                      const cpu::DotOptions& dot, std::vector<StepProfile>* profile) const {
  EinsumWorkspace ws = make_workspace();
  return execute_into(ctx, operands, out, ws, pool, dot, profile);
}

Result<Tensor> EinsumPlan::execute(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands,
                                   EinsumWorkspace& ws, const std::shared_ptr<HostBufferPool>& pool,
                                   const cpu::DotOptions& dot, std::vector<StepProfile>* profile) const {
  TENFERRO_TRY_VOID(check_operands(operands));
  TENFERRO_TRY_VOID(check_workspace(ws));
  if (repeated_output_) {
    Tensor out;
    if (order_ == OperandOrder::kRowMajor) {  // row-major, as the plan's other results
      Shape rev = out_shape_;
      std::reverse(rev.begin(), rev.end());
      TENFERRO_TRY(Tensor zeros, Tensor::zeros(dtype_, rev, pool));
      TENFERRO_TRY(out, reversed(zeros));
    } else {
      TENFERRO_TRY(out, Tensor::zeros(dtype_, out_shape_, pool));
    }
    TENFERRO_TRY_VOID(run(ctx, operands, &out, ws, pool, dot, profile));
    return out;
  }
  return run(ctx, operands, nullptr, ws, pool, dot, profile);
}

Result<void> EinsumPlan::execute_into(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands,
                                      Tensor& out, EinsumWorkspace& ws, const std::shared_ptr<HostBufferPool>& pool,
                                      const cpu::DotOptions& dot, std::vector<StepProfile>* profile) const {
  TENFERRO_TRY_VOID(check_operands(operands));
  TENFERRO_TRY_VOID(check_workspace(ws));
  if (!out.defined()) return usage_error(ErrorCode::kInvalidArgument, "einsum", "destination is null");
  if (out.dtype() != dtype_ || !(out.shape() == out_shape_)) {
    return usage_error(ErrorCode::kShapeMismatch, "einsum",
                       "destination " + std::string(dtype_name(out.dtype())) + " " + format_dims(out.shape()) +
                           " differs from the result " + std::string(dtype_name(dtype_)) + " " +
                           format_dims(out_shape_));
  }
  TENFERRO_TRY_VOID(tenferro::detail::check_mutable(out.storage(), out.layout(), "einsum"));
  if (repeated_output_) {
    // Off-diagonal elements are zero.
    TENFERRO_TRY_VOID(cpu::zero_into(ctx, out));
  }
  TENFERRO_TRY(Tensor unused, run(ctx, operands, &out, ws, pool, dot, profile));
  (void)unused;
  return ok();
}

Result<Tensor> EinsumPlan::run(const cpu::CpuExecutionContext& ctx, std::span<const Tensor> operands, Tensor* out,
                               EinsumWorkspace& ws, const std::shared_ptr<HostBufferPool>& pool,
                               const cpu::DotOptions& dot_in, std::vector<StepProfile>* profile) const {
  cpu::DotOptions dot = dot_in;
  dot.alpha = 1.0;
  dot.beta = 0.0;
  dot.conj_lhs = dot.conj_rhs = false;
  const size_t n = operands.size();
  std::vector<Tensor>& slots = ws.slots_;
  // Whatever happens, the slots end empty: operands and results are not retained.
  struct ClearSlots {
    std::vector<Tensor>& s;
    ~ClearSlots() {
      for (Tensor& t : s) t = Tensor();
    }
  } clear_slots{slots};
  // Note [Einsum fixed cost]: a small einsum's time is its metadata work, so operands
  // that need no leaf transform are read in place (not copied into a slot) and identity
  // permutations make no view: one dot_general call is most of what a one-step plan costs.
  auto is_identity = [](const auto& perm) {
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  // A kRowMajor plan runs on the operands reversed (Note [Row-major operands]).
  const bool mirrored = order_ == OperandOrder::kRowMajor;
  auto plain = [&](size_t i) {
    const Leaf& leaf = *leaves_[i];
    return !mirrored && !steps_.empty() && leaf.diagonals.empty() && leaf.drop_axes.empty() && leaf.sum_axes.empty();
  };
  for (size_t i = 0; i < n; ++i) {
    const Leaf& leaf = *leaves_[i];
    if (plain(i)) continue;  // read from `operands` (slots[i] stays empty)
    Tensor t = operands[i];
    if (mirrored) {
      TENFERRO_TRY(t, reversed(t));
    }
    for (const auto& axes : leaf.diagonals) {
      TENFERRO_TRY(t, t.diagonal(Dims(axes.span())));
    }
    if (!leaf.drop_axes.empty()) {
      // The extent-1 axes of broadcast labels go: a view of the remaining axes.
      Shape shape;
      Strides strides;
      for (size_t a = 0; a < t.shape().size(); ++a) {
        if (std::find(leaf.drop_axes.begin(), leaf.drop_axes.end(), static_cast<int64_t>(a)) != leaf.drop_axes.end()) {
          continue;
        }
        shape.push_back(t.shape()[a]);
        strides.push_back(t.strides()[a]);
      }
      TENFERRO_TRY(t, t.as_strided(Dims(shape.span()), Dims(strides.span()), t.offset()));
    }
    if (!leaf.sum_axes.empty()) {
      // Into the operand's workspace buffer (Note [Einsum workspace]).
      TENFERRO_TRY(Tensor dst, workspace_tensor(dtype_, leaf.summed_shape, ws.leaf_[i], pool));
      // Bool sums are logical ORs, numpy's einsum on bool (Note [Boolean einsum]).
      const cpu::ReduceOp op = dtype_ == DType::kBool ? cpu::ReduceOp::kMax : cpu::ReduceOp::kSum;
      TENFERRO_TRY_VOID(cpu::reduce_into(ctx, op, t, Dims(leaf.sum_axes.span()), false, dst));
      ws.leaf_[i] = dst.storage();
      t = std::move(dst);
    }
    slots[i] = std::move(t);
  }

  // The destination view in root order (Note [Einsum plan]): built from the storage
  // alone so that the write sees exclusive storage; `out` is restored afterwards. When the
  // root is already in output order (no diagonal, identity permutation), the caller's
  // handle itself moves in and back out.
  Tensor target;
  Layout out_layout;
  const bool out_as_is = out != nullptr && !mirrored && out_diags_.empty() && is_identity(root_to_out_);
  if (out_as_is) {
    target = std::move(*out);
  } else if (out != nullptr) {
    out_layout = out->layout();
    Layout v = out_layout;
    if (mirrored) {
      const auto rev = reverse_axes(static_cast<int64_t>(v.shape.size()));
      TENFERRO_TRY(v, permute_layout(v, Dims(rev.span())));
    }
    for (const auto& axes : out_diags_) {
      TENFERRO_TRY(v, diagonal_layout(v, Dims(axes.span())));
    }
    TENFERRO_TRY(v, permute_layout(v, Dims(root_to_out_.span())));
    std::shared_ptr<Storage> storage = out->storage();
    *out = Tensor();
    auto made = Tensor::from_storage(dtype_, std::move(storage), v);
    if (!made) return made.error();
    target = std::move(*made);
  }
  // One binary step on `c`; `mu` guards the free list and the profile while lanes run
  // (Note [Einsum lanes]).
  auto run_step = [&](size_t k, const cpu::CpuExecutionContext& c, std::mutex* mu, int32_t lane) -> Result<void> {
    auto guard = [mu] { return mu != nullptr ? std::unique_lock<std::mutex>(*mu) : std::unique_lock<std::mutex>(); };
    const Step& st = *steps_[k];
    auto source = [&](int32_t slot) -> const Tensor& {
      const auto s = static_cast<size_t>(slot);
      return s < n && plain(s) ? operands[s] : slots[s];
    };
    Tensor pa, pb;  // the permuted views, when a permutation is not the identity
    const Tensor* a_ptr = &source(st.a);
    const Tensor* b_ptr = &source(st.b);
    if (!is_identity(st.perm_a)) {
      TENFERRO_TRY(pa, a_ptr->permute(Dims(st.perm_a.span())));
      a_ptr = &pa;
    }
    if (!is_identity(st.perm_b)) {
      TENFERRO_TRY(pb, b_ptr->permute(Dims(st.perm_b.span())));
      b_ptr = &pb;
    }
    const Tensor& va = *a_ptr;
    const Tensor& vb = *b_ptr;
    const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    // `dst`: the destination's layout (dot_general_into), null for dot_general's own.
    auto record = [&](const Layout* dst) {
      if (!profile) return;
      StepProfile p;
      p.step = static_cast<int64_t>(k);
      for (size_t i = 0; i < st.dims.lhs_batch.size(); ++i) p.batch *= va.dim(st.dims.lhs_batch[i]);
      for (size_t i = 0; i < st.dims.lhs_contracting.size(); ++i) p.k *= va.dim(st.dims.lhs_contracting[i]);
      p.m = va.numel() / std::max<int64_t>(1, p.batch * p.k);
      p.n = vb.numel() / std::max<int64_t>(1, p.batch * p.k);
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (auto route = cpu::explain_dot_general(c, va, vb, st.dims, dot, dst)) p.route = *route;
      p.lane = lane;
      auto lock = guard();
      profile->push_back(p);
    };
    // Last use of an intermediate: its storage returns to the workspace once the views
    // of this step are gone (Note [Einsum workspace]).
    auto release_operands = [&] {
      pa = Tensor();
      pb = Tensor();
      for (int32_t slot : {st.a, st.b}) {
        Tensor& t = slots[static_cast<size_t>(slot)];
        if (static_cast<size_t>(slot) >= n && t.defined()) {
          auto lock = guard();
          ws.free_.push_back(t.storage());
        }
        t = Tensor();
      }
    };
    if (k + 1 == steps_.size()) {
      if (target.defined()) {
        TENFERRO_TRY_VOID(cpu::dot_general_into(c, va, vb, st.dims, dot, target, pool, &ws.dot_[k]));
      } else {
        // The returned result is the caller's: a fresh buffer, never a workspace one.
        TENFERRO_TRY(slots[n + k], cpu::dot_general(c, va, vb, st.dims, dot, pool));
      }
      record(target.defined() ? &target.layout() : nullptr);
      release_operands();
      return ok();
    }
    TENFERRO_TRY(Shape shape, cpu::dot_general_shape(va.shape(), vb.shape(), st.dims));
    const int64_t bytes = element_count(shape) * dtype_size(dtype_);
    std::shared_ptr<Storage> storage;
    {
      // Best fit among the released buffers, else a new pooled buffer.
      auto lock = guard();
      size_t best = ws.free_.size();
      for (size_t i = 0; i < ws.free_.size(); ++i) {
        if (ws.free_[i]->byte_size() >= bytes && ws.free_[i].use_count() == 1 &&
            (best == ws.free_.size() || ws.free_[i]->byte_size() < ws.free_[best]->byte_size())) {
          best = i;
        }
      }
      if (best < ws.free_.size()) {
        storage = std::move(ws.free_[best]);
        ws.free_[best] = std::move(ws.free_.back());
        ws.free_.pop_back();
      }
    }
    if (!storage) {
      TENFERRO_TRY(Tensor fresh, Tensor::uninitialized(dtype_, {element_count(shape)}, pool));
      storage = fresh.storage();
    }
    // dot_general's own memory order (Note [Lane-first results]): the planner assumed
    // [lhs free, rhs free, batch], which it is unless both operands hold their batch
    // items one element apart; any order is correct for the next step's views.
    TENFERRO_TRY(Layout own, cpu::dot_general_own_layout(c, va, vb, st.dims, dot));
    TENFERRO_TRY(Tensor dst, Tensor::from_storage(dtype_, std::move(storage), std::move(own)));
    TENFERRO_TRY_VOID(cpu::dot_general_into(c, va, vb, st.dims, dot, dst, pool, &ws.dot_[k]));
    slots[n + k] = std::move(dst);
    record(&slots[n + k].layout());
    release_operands();
    return ok();
  };
  auto body = [&]() -> Result<Tensor> {
    const Lanes* lanes = ctx.threads() > 1 && steps_.size() >= 3 ? &lanes_for(ctx.threads()) : nullptr;
    if (lanes != nullptr && lanes->count() > 0) {
      // Lanes first, each on one thread, then the top with all threads (Note [Einsum lanes]).
      std::mutex mu;
      std::atomic<int32_t> next{0};
      std::atomic<bool> failed{false};
      std::optional<Error> first_error;
      const int32_t count = lanes->count();
      ctx.parallel_for(std::min<int64_t>(ctx.threads(), count), 1, [&](int64_t b, int64_t e) {
        const cpu::CpuExecutionContext lane_ctx(nullptr, cpu::ParallelMode::kOuter, 1, ctx.batch());
        for (int64_t w = b; w < e; ++w) {
          for (int32_t i = next.fetch_add(1); i < count && !failed.load(); i = next.fetch_add(1)) {
            for (int32_t j = lanes->begin[static_cast<size_t>(i)]; j < lanes->begin[static_cast<size_t>(i) + 1]; ++j) {
              Result<void> r = run_step(static_cast<size_t>(lanes->steps[static_cast<size_t>(j)]), lane_ctx, &mu, i);
              if (!r) {
                std::lock_guard lock(mu);
                if (!first_error) first_error = r.error();
                failed.store(true);
                break;
              }
            }
          }
        }
      });
      if (first_error) return *first_error;
      for (int32_t k : lanes->top) TENFERRO_TRY_VOID(run_step(static_cast<size_t>(k), ctx, nullptr, -1));
    } else {
      for (size_t k = 0; k < steps_.size(); ++k) TENFERRO_TRY_VOID(run_step(k, ctx, nullptr, -1));
    }
    // At most one retained buffer per step (lanes may take buffers in another order on
    // each execution and allocate a few more): drop the smallest beyond that.
    while (ws.free_.size() > steps_.size()) {
      auto smallest = std::min_element(ws.free_.begin(), ws.free_.end(),
                                       [](const auto& x, const auto& y) { return x->byte_size() < y->byte_size(); });
      *smallest = std::move(ws.free_.back());
      ws.free_.pop_back();
    }
    if (target.defined() && !steps_.empty()) return Tensor();  // the last step wrote it
    const Tensor& root = slots.back();
    if (target.defined()) {
      TENFERRO_TRY_VOID(cpu::copy_into(ctx, root, target));
      return Tensor();
    }
    // Allocating result: the root in output order (a view when a step made it; a copy
    // when the single operand would otherwise be returned as a view of the input).
    SmallVector<int64_t, 8> inv(root_to_out_.size(), 0);
    for (size_t i = 0; i < root_to_out_.size(); ++i) inv[static_cast<size_t>(root_to_out_[i])] = static_cast<int64_t>(i);
    Tensor mirror_out;  // a kRowMajor plan's result in the mirror's output order, then reversed
    if (steps_.empty()) {
      TENFERRO_TRY(mirror_out, cpu::permute_copy(ctx, root, Dims(inv.span()), pool));
    } else if (is_identity(inv)) {
      mirror_out = std::move(slots.back());
    } else {
      TENFERRO_TRY(mirror_out, root.permute(Dims(inv.span())));
    }
    if (mirrored) return reversed(mirror_out);
    return mirror_out;
  };
  Result<Tensor> result = body();
  if (out_as_is) {
    *out = std::move(target);
  } else if (out != nullptr) {
    std::shared_ptr<Storage> storage = target.storage();
    target = Tensor();
    auto restored = Tensor::from_storage(dtype_, std::move(storage), out_layout);
    if (restored) *out = std::move(*restored);
  }
  return result;
}

// ---- Plan cache -------------------------------------------------------------------------------

namespace {
// Binary key: subscripts, dtype, each rank and extent, the policy (no formatting: this
// runs on every cached call).
std::string plan_key(std::string_view subscripts, std::span<const Shape> shapes, DType dtype, const PathPolicy& policy,
                     OperandOrder order) {
  std::string key;
  key.reserve(subscripts.size() + 16 + 8 * shapes.size() * 5);
  key.append(subscripts).push_back('\0');
  key.push_back(static_cast<char>(dtype));
  key.push_back(static_cast<char>(order));
  for (const Shape& sh : shapes) {
    const auto rank = static_cast<uint32_t>(sh.size());
    key.append(reinterpret_cast<const char*>(&rank), sizeof rank);
    key.append(reinterpret_cast<const char*>(sh.data()), sh.size() * sizeof(int64_t));
  }
  key.append(policy.key());
  return key;
}
}  // namespace

std::shared_ptr<const EinsumPlan> PlanCache::find(std::string_view subscripts, std::span<const Shape> shapes,
                                                  DType dtype, const PathPolicy& policy, OperandOrder order) {
  const std::string key = plan_key(subscripts, shapes, dtype, policy, order);
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  stats_.hits++;
  return it->second->second;
}

Result<std::shared_ptr<const EinsumPlan>> PlanCache::get(std::string_view subscripts, std::span<const Shape> shapes,
                                                         DType dtype, const PathPolicy& policy, OperandOrder order) {
  std::string key = plan_key(subscripts, shapes, dtype, policy, order);
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      stats_.hits++;
      return it->second->second;
    }
    stats_.misses++;
  }
  // Plan outside the lock (a concurrent miss on the same key plans twice; both agree).
  TENFERRO_TRY(auto plan, EinsumPlan::prepare(subscripts, shapes, dtype, policy, order));
  std::lock_guard lock(mu_);
  if (index_.count(key)) return plan;
  lru_.emplace_front(key, plan);
  index_[key] = lru_.begin();
  stats_.entries = static_cast<int64_t>(lru_.size());
  stats_.retained_bytes += plan->footprint_bytes();
  while (lru_.size() > capacity_) {
    stats_.retained_bytes -= lru_.back().second->footprint_bytes();
    index_.erase(lru_.back().first);
    lru_.pop_back();
    stats_.evictions++;
  }
  stats_.entries = static_cast<int64_t>(lru_.size());
  return plan;
}

PlanCache::Stats PlanCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void PlanCache::clear() {
  std::lock_guard lock(mu_);
  lru_.clear();
  index_.clear();
  stats_.entries = 0;
  stats_.retained_bytes = 0;
}

Result<Tensor> einsum(const cpu::CpuExecutionContext& ctx, std::string_view subscripts,
                      std::span<const Tensor> operands, const PathPolicy& policy, PlanCache* cache,
                      const std::shared_ptr<HostBufferPool>& pool) {
  std::vector<Shape> shapes;
  DType dtype = DType::kF64;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].defined()) {
      return usage_error(ErrorCode::kInvalidArgument, "einsum", "operand " + s(static_cast<int64_t>(i)) + " is null");
    }
    shapes.push_back(operands[i].shape());
    if (i == 0) dtype = operands[i].dtype();
  }
  const OperandOrder order = preferred_operand_order(operands);  // Note [Row-major operands]
  std::shared_ptr<const EinsumPlan> plan;
  if (cache != nullptr) {
    TENFERRO_TRY(plan, cache->get(subscripts, shapes, dtype, policy, order));
  } else {
    TENFERRO_TRY(plan, EinsumPlan::prepare(subscripts, shapes, dtype, policy, order));
  }
  return plan->execute(ctx, operands, pool);
}

}  // namespace tenferro::einsum
