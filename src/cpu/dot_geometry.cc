// The geometry behind the dot_general planner: how each operand's dimensions group into
// the rows, columns and contraction of a strided batch of matrices (Note [dot_general
// routes] in dot_plan.cc), in which order the contraction pairs are walked, which free
// groups could split, and the DotProblem the planner decides from. Facts only: every
// choice is made in dot_plan.cc.

#include <algorithm>
#include <optional>
#include <string>

#include "dot_plan.h"

namespace tenferro::cpu {

namespace {
std::string s(int64_t v) { return std::to_string(v); }
}  // namespace

namespace detail {

// Merges `axes` of `layout` (in the given order) into one (extent, stride) if they are
// column-major contiguous among themselves; extent-1 axes are ignored.
DotGroup merge_group(const Layout& layout, std::span<const int64_t> axes) {
  DotGroup g;
  bool first = true;
  int64_t expect = 0;
  for (int64_t a : axes) {
    const int64_t e = layout.shape[static_cast<size_t>(a)];
    const int64_t st = layout.strides[static_cast<size_t>(a)];
    g.extent *= e;
    if (e == 1) continue;
    if (first) {
      g.stride = st;
      expect = st * e;
      first = false;
    } else {
      if (st != expect) g.mergeable = false;
      expect = st * e;
    }
  }
  if (g.extent <= 1) g.stride = 0;
  return g;
}

namespace {

Result<void> check_axes(std::span<const int64_t> axes, int64_t rank, const char* which, SmallVector<bool, 64>& used) {
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) {
      return usage_error(ErrorCode::kOutOfRange, "dot_general",
                         std::string(which) + " axis " + s(a) + " is out of range for rank " + s(rank));
    }
    if (used[static_cast<size_t>(a)]) {
      return usage_error(ErrorCode::kInvalidArgument, "dot_general",
                         std::string(which) + " axis " + s(a) + " is used twice");
    }
    used[static_cast<size_t>(a)] = true;
  }
  return ok();
}

}  // namespace

Result<DotAxes> dot_axes(const Shape& lhs, const Shape& rhs, const DotDims& d) {
  if (d.lhs_batch.size() != d.rhs_batch.size() || d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "dot_general",
                       "batch lists " + format_dims(d.lhs_batch.span()) + " / " + format_dims(d.rhs_batch.span()) +
                           " or contracting lists " + format_dims(d.lhs_contracting.span()) + " / " +
                           format_dims(d.rhs_contracting.span()) + " differ in length");
  }
  SmallVector<bool, 64> lu(lhs.size(), false), ru(rhs.size(), false);
  TENFERRO_TRY_VOID(check_axes(d.lhs_batch.span(), lhs.ssize(), "lhs batch", lu));
  TENFERRO_TRY_VOID(check_axes(d.lhs_contracting.span(), lhs.ssize(), "lhs contracting", lu));
  TENFERRO_TRY_VOID(check_axes(d.rhs_batch.span(), rhs.ssize(), "rhs batch", ru));
  TENFERRO_TRY_VOID(check_axes(d.rhs_contracting.span(), rhs.ssize(), "rhs contracting", ru));
  DotAxes p;
  for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
    const int64_t a = lhs[static_cast<size_t>(d.lhs_batch[i])], b = rhs[static_cast<size_t>(d.rhs_batch[i])];
    if (a != b) {
      return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                         "batch pair " + s(static_cast<int64_t>(i)) + " has extents " + s(a) + " (lhs axis " +
                             s(d.lhs_batch[i]) + ") and " + s(b) + " (rhs axis " + s(d.rhs_batch[i]) + ")");
    }
    p.batch *= a;
  }
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    const int64_t a = lhs[static_cast<size_t>(d.lhs_contracting[i])],
                  b = rhs[static_cast<size_t>(d.rhs_contracting[i])];
    if (a != b) {
      return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                         "contracting pair " + s(static_cast<int64_t>(i)) + " has extents " + s(a) + " (lhs axis " +
                             s(d.lhs_contracting[i]) + ") and " + s(b) + " (rhs axis " + s(d.rhs_contracting[i]) + ")");
    }
    p.k *= a;
  }
  for (size_t a = 0; a < lhs.size(); ++a) {
    if (!lu[a]) {
      p.lhs_free.push_back(static_cast<int64_t>(a));
      p.m *= lhs[a];
    }
  }
  for (size_t a = 0; a < rhs.size(); ++a) {
    if (!ru[a]) {
      p.rhs_free.push_back(static_cast<int64_t>(a));
      p.n *= rhs[a];
    }
  }
  return p;
}
bool operand_ok(BatchPolicy policy, GemmProvider provider, bool output, bool conj_complex, int64_t rows,
                int64_t cols, int64_t rs, int64_t cs) {
  int64_t ld = 0;
  if (policy == BatchPolicy::kWholeBatchVendor) {
    if (output) return detail::blas_form(rows, cols, rs, cs, false, &ld);
    return (!conj_complex && detail::blas_form(rows, cols, rs, cs, false, &ld)) ||
           detail::blas_form(rows, cols, rs, cs, true, &ld);
  }
  switch (provider) {
    case GemmProvider::kOpenBlas:
      return detail::blas_form(rows, cols, rs, cs, false, &ld) || detail::blas_form(rows, cols, rs, cs, true, &ld);
    case GemmProvider::kBlis:
      // Positive strides on non-trivial dimensions.
      return (rows <= 1 || rs > 0) && (cols <= 1 || cs > 0);
    default:
      return true;
  }
}
}  // namespace detail

namespace {

using detail::DotAxes;
using detail::FreeSplit;
using detail::merge_group;

// Positions 0..n-1 of `axes` ordered by |stride| in `l`, ties in list order (an insertion
// sort: stable, and no temporary buffer, which std::stable_sort would allocate).
SmallVector<size_t, 8> order_by_stride(const Layout& l, std::span<const int64_t> axes) {
  SmallVector<size_t, 8> order;
  for (size_t i = 0; i < axes.size(); ++i) order.push_back(i);
  auto stride = [&](size_t i) { return std::llabs(l.strides[static_cast<size_t>(axes[i])]); };
  for (size_t t = 1; t < order.size(); ++t)
    for (size_t u = t; u > 0 && stride(order[u]) < stride(order[u - 1]); --u) std::swap(order[u], order[u - 1]);
  return order;
}

// Note [Contraction order]: the contracting pairs may be listed in any order (the sum
// does not depend on it), but a group merges into one stride only when its axes come in
// ascending stride order. The pairs are ordered by the strides of the larger operand,
// so that it is never packed when it could be walked in place. When even that order
// does not merge it, it keeps that order if the other operand is at most 1/8 of its size
// (packing both then costs little more, and the large pack walks its memory in order:
// ordering by a 1024-element partner made lm brackets' [4, 1996, 4, 4, 4] pack scatter
// its writes, 4 ms against 1.9 ms); with a partner of similar size the pairs follow the
// partner's strides when that merges it, so only one operand is packed (MPS: two
// [19, k, 19] tensors). Example: lhs [12 x 144] (k strides 12, 144)
// with rhs [144 x 13200] whose matching k strides are 144, 12: ordering by the rhs packs
// the 1728-element lhs instead of the 1.9M-element rhs.
DotDims contraction_order(const Layout& l, const Layout& r, const DotDims& dims) {
  DotDims d = dims;
  const size_t nk = d.lhs_contracting.size();
  if (nk < 2) return d;
  const bool lhs_big = element_count(l.shape) >= element_count(r.shape);
  auto sort_by = [&](const Layout& by, bool by_lhs) {
    const auto order = order_by_stride(by, by_lhs ? dims.lhs_contracting.span() : dims.rhs_contracting.span());
    for (size_t t = 0; t < nk; ++t) {
      d.lhs_contracting[t] = dims.lhs_contracting[order[t]];
      d.rhs_contracting[t] = dims.rhs_contracting[order[t]];
    }
  };
  sort_by(lhs_big ? l : r, lhs_big);
  const Layout& big = lhs_big ? l : r;
  const Layout& small = lhs_big ? r : l;
  if (merge_group(big, lhs_big ? d.lhs_contracting.span() : d.rhs_contracting.span()).mergeable) return d;
  // The larger operand is packed whatever the order. A much smaller partner is packed
  // too (cheap) so that the large pack walks its memory in order; a partner of similar
  // size keeps its own order when that merges it, so only one operand is packed.
  if (8 * element_count(small.shape) <= element_count(big.shape)) return d;
  const DotDims by_big = d;
  sort_by(small, !lhs_big);
  if (!merge_group(small, lhs_big ? d.rhs_contracting.span() : d.lhs_contracting.span()).mergeable) return by_big;
  return d;
}

// Note [Split free groups]: an operand whose free labels do not merge into one stride
// (say rhs [n1, k, n2] with the contracted labels between two free ones) would be
// packed whole, a full read and write of what is often the largest tensor of the step.
// Instead the free labels, ordered by the operand's strides, split into an inner run
// that merges in the operand and in the destination, and outer labels that become extra
// batch dimensions (stride 0 in the other operand): the product runs as a batch of
// M x N_inner x K products on the operand in place. The batch runs below the peak rate
// of one large product, so this pays only where the pack is a large part of the step:
// the pack moves 16 bytes per element of the operand, the product does 2 M flops per
// element, so with DRAM at ~7.6 GB/s and dgemm at ~37 GFLOP/s (the Zen 4 VM of 2026-11-30) the pack
// costs about 38 / M of the product: the split is used when the other side M is at most
// 64. Each product also re-packs the other operand inside the BLAS call, so it must stay
// in cache (at most 65536 elements) or all its re-packs move less than one pack of this
// operand; and the operand holds at least 32768 elements, the inner run at least 8 and
// each product at least 16384 multiply-adds (smaller cases pack: a pack is cheap there,
// tiny products are not). MERA closed: a 40 x 198288 x 171 step whose 271 MB operand was
// packed runs as 3672 products of 40 x 54 x 171 instead (2 threads: 220 ms -> 94-102 ms);
// with M = 136 or 399 splitting was slower than packing (34 -> 48 ms, 453 -> 841 ms).

std::optional<FreeSplit> split_free(const Layout& op, const Layout& out, std::span<const int64_t> op_axes,
                                    std::span<const int64_t> out_axes) {
  const size_t n = op_axes.size();
  if (n < 2 || n > 8) return std::nullopt;
  const auto order = order_by_stride(op, op_axes);
  for (size_t len = n - 1; len >= 1; --len) {
    SmallVector<int64_t, 8> in_op, in_out;
    for (size_t t = 0; t < len; ++t) {
      in_op.push_back(op_axes[order[t]]);
      in_out.push_back(out_axes[order[t]]);
    }
    const DotGroup g_op = merge_group(op, in_op.span()), g_out = merge_group(out, in_out.span());
    if (!g_op.mergeable || !g_out.mergeable) continue;
    FreeSplit s{g_op, g_out, {}, {}, {}, 1};
    for (size_t t = len; t < n; ++t) {
      const auto a = static_cast<size_t>(op_axes[order[t]]);
      const auto b = static_cast<size_t>(out_axes[order[t]]);
      if (op.shape[a] == 1) continue;
      s.ext.push_back(op.shape[a]);
      s.op_st.push_back(op.strides[a]);
      s.out_st.push_back(out.strides[b]);
      s.items *= op.shape[a];
    }
    return s;
  }
  return std::nullopt;
}

int64_t first_extent(const Layout& l, std::span<const int64_t> group) {
  for (int64_t a : group) {
    if (l.shape[static_cast<size_t>(a)] > 1) return l.shape[static_cast<size_t>(a)];
  }
  return 1;
}

// Elements of the longest unit-stride run formed by axes of `group` (the group's axes
// that continue each other contiguously from stride 1); 1 when none has stride 1.
int64_t unit_run(const Layout& l, std::span<const int64_t> group) {
  int64_t run = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (int64_t a : group) {
      const auto i = static_cast<size_t>(a);
      if (l.shape[i] > 1 && l.strides[i] == run) {
        run *= l.shape[i];
        grew = true;
      }
    }
  }
  return run;
}

// The contraction as nested loops, innermost first (Note [Short-side products with a
// strided contraction] in gemm.cc): contracted pairs ordered by the lhs stride, and
// neighbours that continue each other in both operands merged. False when more than
// kMaxKLevels loops remain.
bool k_levels(const Layout& l, const Layout& r, const DotDims& dims, detail::KLevels* out) {
  struct Pair {
    int64_t extent, sa, sb;
  };
  SmallVector<Pair, 8> pairs;
  for (size_t i = 0; i < dims.lhs_contracting.size(); ++i) {
    const auto la = static_cast<size_t>(dims.lhs_contracting[i]), ra = static_cast<size_t>(dims.rhs_contracting[i]);
    if (l.shape[la] == 1) continue;
    const Pair p{l.shape[la], l.strides[la], r.strides[ra]};
    size_t at = pairs.size();  // insertion sort by |lhs stride| (no allocation)
    pairs.push_back(p);
    while (at > 0 && std::llabs(pairs[at - 1].sa) > std::llabs(p.sa)) {
      pairs[at] = pairs[at - 1];
      --at;
    }
    pairs[at] = p;
  }
  *out = detail::KLevels{};
  for (const Pair& p : pairs) {
    if (out->count > 0) {
      const int c = out->count - 1;
      if (p.sa == out->sa[c] * out->extent[c] && p.sb == out->sb[c] * out->extent[c]) {
        out->extent[c] *= p.extent;
        continue;
      }
    }
    if (out->count == detail::kMaxKLevels) return false;
    out->extent[out->count] = p.extent;
    out->sa[out->count] = p.sa;
    out->sb[out->count] = p.sb;
    ++out->count;
  }
  // Innermost: the loop with the smallest stride in either operand (it walks that
  // operand in memory order; the other loops move whole runs).
  auto step = [&](int v) { return std::min(std::llabs(out->sa[v]), std::llabs(out->sb[v])); };
  int best = 0;
  for (int v = 1; v < out->count; ++v)
    if (step(v) < step(best)) best = v;
  std::swap(out->extent[0], out->extent[best]);
  std::swap(out->sa[0], out->sa[best]);
  std::swap(out->sb[0], out->sb[best]);
  return out->count > 0;
}

bool is_complex_dtype(DType d) { return d == DType::kC64 || d == DType::kC128; }

// Whether both OpenBLAS and BLIS address an r x c operand in place.
bool providers_take(bool output, bool conj, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return detail::operand_ok(BatchPolicy::kProviderItems, GemmProvider::kOpenBlas, output, conj, rows, cols, rs, cs) &&
         detail::operand_ok(BatchPolicy::kSequential, GemmProvider::kBlis, output, conj, rows, cols, rs, cs);
}

bool unit_batch_stride(const Layout& l, std::span<const int64_t> axes) {
  for (int64_t a : axes) {
    const auto i = static_cast<size_t>(a);
    if (l.shape[i] > 1 && std::llabs(l.strides[i]) == 1) return true;
  }
  return false;
}

// The lane run of lhs and rhs (Note [Batch-lane products] in gemm_lanes.cc): the first
// batch pair with stride 1 in both operands, then every batch pair that continues the run
// in both (stride = the run's extent so far). `out`, when given, must continue it too.
// Pairs past the 64th are not considered. Returns the run's items (0: none) and its
// pairs as bits of `pairs`.
int64_t operand_lane_run(const Layout& lhs, const Layout& rhs, const DotDims& dims, const Layout* out,
                         std::span<const int64_t> out_batch, uint64_t* pairs) {
  const size_t nb = std::min<size_t>(dims.lhs_batch.size(), 64);
  auto extent = [&](size_t i) { return lhs.shape[static_cast<size_t>(dims.lhs_batch[i])]; };
  auto in_run = [&](size_t i, int64_t want) {
    return extent(i) > 1 && lhs.strides[static_cast<size_t>(dims.lhs_batch[i])] == want &&
           rhs.strides[static_cast<size_t>(dims.rhs_batch[i])] == want &&
           (out == nullptr || out->strides[static_cast<size_t>(out_batch[i])] == want);
  };
  *pairs = 0;
  int64_t run = 0;
  for (size_t i = 0; i < nb && run == 0; ++i) {
    if (in_run(i, 1)) {
      run = extent(i);
      *pairs = uint64_t{1} << i;
    }
  }
  for (bool grown = run > 0; grown;) {
    grown = false;
    for (size_t i = 0; i < nb; ++i) {
      if ((*pairs >> i & 1u) == 0 && in_run(i, run)) {
        run *= extent(i);
        *pairs |= uint64_t{1} << i;
        grown = true;
      }
    }
  }
  return run;
}

}  // namespace

namespace detail {

std::optional<Layout> lane_first_layout(const Layout& lhs, const Layout& rhs, const DotDims& dims, const Shape& shape) {
  uint64_t pairs = 0;
  if (operand_lane_run(lhs, rhs, dims, nullptr, {}, &pairs) == 0) return std::nullopt;
  // The run's pairs in run order: each continues the one before it (stride = the
  // extents so far), so ordering them by lhs stride gives that order.
  SmallVector<size_t, 8> run;
  for (size_t i = 0; i < 64 && i < dims.lhs_batch.size(); ++i) {
    if ((pairs >> i & 1u) != 0) run.push_back(i);
  }
  std::sort(run.begin(), run.end(), [&](size_t x, size_t y) {
    return lhs.strides[static_cast<size_t>(dims.lhs_batch[x])] < lhs.strides[static_cast<size_t>(dims.lhs_batch[y])];
  });
  // The run first, then dot_general_result_layout's order: [lhs free, rhs free, batch].
  Layout out;
  out.shape = shape;
  out.strides = Strides(shape.size(), 0);
  int64_t stride = 1;
  for (size_t i : run) {
    out.strides[i] = stride;
    stride *= shape[i];
  }
  const size_t nbatch = dims.lhs_batch.size();
  for (size_t i = nbatch; i < shape.size(); ++i) {
    out.strides[i] = stride;
    stride *= shape[i];
  }
  for (size_t i = 0; i < nbatch; ++i) {
    if (i < 64 && (pairs >> i & 1u) != 0) continue;
    out.strides[i] = stride;
    stride *= shape[i];
  }
  return out;
}

void analyze_dot(DType dtype, const Layout& lhs, const Layout& rhs, const Layout& out, const DotDims& dims_in,
                 const DotAxes& axes, const DotOptions& options, DotAnalysis* a) {
  a->dims = contraction_order(lhs, rhs, dims_in);  // Note [Contraction order]
  a->axes = axes;
  const DotDims& dims = a->dims;
  DotProblem& p = a->problem;
  p = DotProblem{};
  p.dtype = dtype;
  p.batch = axes.batch;
  p.m = axes.m;
  p.n = axes.n;
  p.k = axes.k;
  p.lhs_elements = element_count(lhs.shape);
  p.rhs_elements = element_count(rhs.shape);
  const int64_t nb = static_cast<int64_t>(dims.lhs_batch.size());
  a->out_batch.clear();
  a->out_m.clear();
  a->out_n.clear();
  for (int64_t i = 0; i < nb; ++i) a->out_batch.push_back(i);
  for (size_t i = 0; i < axes.lhs_free.size(); ++i) a->out_m.push_back(nb + static_cast<int64_t>(i));
  for (size_t i = 0; i < axes.rhs_free.size(); ++i)
    a->out_n.push_back(nb + static_cast<int64_t>(axes.lhs_free.size() + i));
  p.lm = merge_group(lhs, axes.lhs_free.span());
  p.lk = merge_group(lhs, dims.lhs_contracting.span());
  p.rk = merge_group(rhs, dims.rhs_contracting.span());
  p.rn = merge_group(rhs, axes.rhs_free.span());
  p.om = merge_group(out, a->out_m.span());
  p.on = merge_group(out, a->out_n.span());
  p.lhs_batch_unit = unit_batch_stride(lhs, dims.lhs_batch.span());
  p.rhs_batch_unit = unit_batch_stride(rhs, dims.rhs_batch.span());
  p.out_batch_unit = unit_batch_stride(out, a->out_batch.span());
  p.lane_batch = operand_lane_run(lhs, rhs, dims, &out, a->out_batch.span(), &a->lane_dims);
  p.conj_lhs = options.conj_lhs && is_complex_dtype(dtype);
  p.conj_rhs = options.conj_rhs && is_complex_dtype(dtype);
  p.beta_zero = options.beta == c128(0.0);
  // Candidate splits of free groups that do not merge (Note [Split free groups]); the
  // planner decides whether to take them.
  a->rhs_split.reset();
  a->lhs_split.reset();
  if (!p.rn.mergeable) {
    a->rhs_split = split_free(rhs, out, axes.rhs_free.span(), a->out_n.span());
    if (a->rhs_split) {
      const FreeSplit& sp = *a->rhs_split;
      p.rhs_split = DotFreeSplit{true, sp.op, sp.out, sp.items,
                                 providers_take(false, p.conj_rhs, p.k, sp.op.extent, p.rk.stride, sp.op.stride) &&
                                     providers_take(true, false, p.m, sp.op.extent, p.om.stride, sp.out.stride)};
    }
  }
  if (!p.lm.mergeable) {
    a->lhs_split = split_free(lhs, out, axes.lhs_free.span(), a->out_m.span());
    if (a->lhs_split) {
      const FreeSplit& sp = *a->lhs_split;
      p.lhs_split = DotFreeSplit{true, sp.op, sp.out, sp.items,
                                 providers_take(false, p.conj_lhs, sp.op.extent, p.k, sp.op.stride, p.lk.stride) &&
                                     providers_take(true, false, sp.op.extent, p.n, sp.out.stride, p.on.stride)};
    }
  }
  p.lhs_first_free = first_extent(lhs, axes.lhs_free.span());
  p.lhs_k_unit_run = unit_run(lhs, dims.lhs_contracting.span());
  p.rhs_first_k = first_extent(rhs, dims.rhs_contracting.span());
  p.rhs_n_unit_run = unit_run(rhs, axes.rhs_free.span());
  p.k_levels = k_levels(lhs, rhs, dims, &a->klev);
  if (p.k_levels && a->klev.count > 0) {
    p.k_inner = a->klev.extent[0];
    p.k_inner_lhs = a->klev.sa[0];
    p.k_inner_rhs = a->klev.sb[0];
  }
}

Result<DotAxes> validate_dot(const Tensor& lhs, const Tensor& rhs, const DotDims& dims) {
  if (!lhs.defined() || !rhs.defined()) {
    return usage_error(ErrorCode::kInvalidArgument, "dot_general", "tensor handle is null");
  }
  if (lhs.dtype() != rhs.dtype()) {
    return usage_error(ErrorCode::kDTypeMismatch, "dot_general",
                       "operand dtypes " + std::string(dtype_name(lhs.dtype())) + " and " +
                           std::string(dtype_name(rhs.dtype())) + " differ");
  }
  return dot_axes(lhs.shape(), rhs.shape(), dims);
}

}  // namespace detail

Result<DotProblem> dot_problem(DType dtype, const Layout& lhs, const Layout& rhs, const Layout& out,
                               const DotDims& dims, const DotOptions& options) {
  TENFERRO_TRY(DotAxes axes, detail::dot_axes(lhs.shape, rhs.shape, dims));
  TENFERRO_TRY(Shape shape, dot_general_shape(lhs.shape, rhs.shape, dims));
  if (!(out.shape == shape)) {
    return usage_error(ErrorCode::kShapeMismatch, "dot_general",
                       "destination shape " + format_dims(out.shape) + " differs from result shape " + format_dims(shape));
  }
  detail::DotAnalysis a;
  detail::analyze_dot(dtype, lhs, rhs, out, dims, axes, options, &a);
  return a.problem;
}

}  // namespace tenferro::cpu
