#include "tenferro/fft/fft.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "fft_error.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::fft {

// Note [FFT kernels]: every transform is a sequence of passes, each a rank-1 FFTW
// transform of one axis over every line of the other axes (the transforms are separable;
// Note [FFT passes] says how a pass runs):
//   kC2C / kC2CInverse: one complex pass per listed axis, the first x -> out (the axis
//         of x's smallest stride), the others in place on out;
//   kR2C: a real-to-complex pass of the last listed axis, x -> out, then complex passes
//         of the other listed axes in place on out;
//   kC2R: complex inverse passes of the other listed axes, x -> a scratch tensor, then a
//         complex-to-real pass of the last axis, scratch -> out (FFTW's complex-to-real
//         transforms overwrite their input: with no other axes a direct pass reads a copy
//         of x, a buffered one its own buffer).
// The normalization is one scaling pass over the result (FFTW's transforms are
// unnormalized). Parallelism: a direct pass cuts its longest line axis into one
// contiguous chunk per worker, a buffered pass deals its groups of lines out in equal
// runs, when the result holds at least kParallelElements elements; chunks share plans
// (equal extents and alignments), so a chunk runs with no synchronization.
//
// Note [FFT result layout]: results (and kC2R's scratch) are compact with their axes in
// the order of the input's strides, not column-major: FFTW is fastest when the
// transformed axis is contiguous on both sides, and a row-major input (numpy's default)
// would otherwise be written with the transformed axis strided by the batch.
//
// Note [FFTW planner lock]: FFTW's planner (plan creation and destruction) shares
// process-wide tables and is not thread-safe; executing a plan on new arrays
// (fftw_execute_dft and friends) is. All planning and destruction here runs under one
// function-local mutex: the library's own internal state, not tenferro configuration.
// Plans are made with FFTW_ESTIMATE (a heuristic choice: no timing runs, deterministic,
// the arrays untouched during planning) for the arrays of the call and executed on
// arrays of the same alignment only (fftw_alignment_of is part of the plan key): plans
// without FFTW_UNALIGNED keep FFTW's SIMD codelets, 2.5-4x faster for lengths 64-1024.
//
// Note [FFT plan cache]: FFTW_ESTIMATE planning still costs about as much as executing
// a batch of 16 transforms of length 1024 (tens of microseconds), so a PlanCache keeps
// plans keyed by everything FFTW planned with: precision, transform type, sign, the
// transform and howmany dimensions (length, input stride, output stride), in-place or
// not, and both alignments. Entries are shared_ptrs: an evicted plan is destroyed when
// the last call using it ends.

namespace {

// Results smaller than this run as one chunk: below it the executor's fan-out costs
// more than the transform (FFTW's length-64 transforms take ~40 ns each).
constexpr int64_t kParallelElements = int64_t{1} << 15;

using detail::fft_error;
using detail::kOp;

std::mutex& planner_mutex() {
  static std::mutex m;  // Note [FFTW planner lock]
  return m;
}

// ---- FFTW in both precisions ----

enum class Type : uint8_t { kDft, kR2c, kC2r };

template <class R>
struct Fftw;

template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Cpx = fftw_complex;
  static Plan make(Type t, int rank, const fftw_iodim64* dims, int hm_rank, const fftw_iodim64* hm, void* in, void* out,
                   int sign) {
    const unsigned flags = FFTW_ESTIMATE;
    switch (t) {
      case Type::kDft:
        return fftw_plan_guru64_dft(rank, dims, hm_rank, hm, static_cast<Cpx*>(in), static_cast<Cpx*>(out), sign,
                                    flags);
      case Type::kR2c:
        return fftw_plan_guru64_dft_r2c(rank, dims, hm_rank, hm, static_cast<double*>(in), static_cast<Cpx*>(out),
                                        flags);
      case Type::kC2r:
        return fftw_plan_guru64_dft_c2r(rank, dims, hm_rank, hm, static_cast<Cpx*>(in), static_cast<double*>(out),
                                        flags | FFTW_DESTROY_INPUT);
    }
    return nullptr;
  }
  static void run(Type t, void* plan, void* in, void* out) {
    auto p = static_cast<Plan>(plan);
    switch (t) {
      case Type::kDft: fftw_execute_dft(p, static_cast<Cpx*>(in), static_cast<Cpx*>(out)); break;
      case Type::kR2c: fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Cpx*>(out)); break;
      case Type::kC2r: fftw_execute_dft_c2r(p, static_cast<Cpx*>(in), static_cast<double*>(out)); break;
    }
  }
  static void destroy(void* plan) { fftw_destroy_plan(static_cast<Plan>(plan)); }
  static int alignment(const void* p) { return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))); }
};

template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Cpx = fftwf_complex;
  static Plan make(Type t, int rank, const fftw_iodim64* dims, int hm_rank, const fftw_iodim64* hm, void* in, void* out,
                   int sign) {
    const unsigned flags = FFTW_ESTIMATE;
    switch (t) {
      case Type::kDft:
        return fftwf_plan_guru64_dft(rank, dims, hm_rank, hm, static_cast<Cpx*>(in), static_cast<Cpx*>(out), sign,
                                     flags);
      case Type::kR2c:
        return fftwf_plan_guru64_dft_r2c(rank, dims, hm_rank, hm, static_cast<float*>(in), static_cast<Cpx*>(out),
                                         flags);
      case Type::kC2r:
        return fftwf_plan_guru64_dft_c2r(rank, dims, hm_rank, hm, static_cast<Cpx*>(in), static_cast<float*>(out),
                                         flags | FFTW_DESTROY_INPUT);
    }
    return nullptr;
  }
  static void run(Type t, void* plan, void* in, void* out) {
    auto p = static_cast<Plan>(plan);
    switch (t) {
      case Type::kDft: fftwf_execute_dft(p, static_cast<Cpx*>(in), static_cast<Cpx*>(out)); break;
      case Type::kR2c: fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Cpx*>(out)); break;
      case Type::kC2r: fftwf_execute_dft_c2r(p, static_cast<Cpx*>(in), static_cast<float*>(out)); break;
    }
  }
  static void destroy(void* plan) { fftwf_destroy_plan(static_cast<Plan>(plan)); }
  static int alignment(const void* p) { return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))); }
};

// One FFTW plan; destroyed under the planner lock when its last user lets go.
struct PlanHandle {
  void* plan = nullptr;
  void (*destroy)(void*) = nullptr;
  int64_t points = 0;  // sum of the transform lengths (the cache's size estimate)
  PlanHandle() = default;
  PlanHandle(const PlanHandle&) = delete;
  PlanHandle& operator=(const PlanHandle&) = delete;
  ~PlanHandle() {
    if (plan == nullptr) return;
    std::lock_guard lock(planner_mutex());
    destroy(plan);
  }
};

// A dimension of a guru plan: length, input stride, output stride (elements).
struct Dim {
  int64_t n, is, os;
};

using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace

struct PlanCache::Impl {
  struct Entry {
    Key key;
    std::shared_ptr<PlanHandle> plan;
  };
  mutable std::mutex mutex;
  int64_t capacity;
  std::list<Entry> lru;  // most recent first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index;
  int64_t hits = 0, misses = 0, evictions = 0, points = 0;

  std::shared_ptr<PlanHandle> find(const Key& key) {
    std::lock_guard lock(mutex);
    auto it = index.find(key);
    if (it == index.end()) {
      ++misses;
      return nullptr;
    }
    ++hits;
    lru.splice(lru.begin(), lru, it->second);
    return it->second->plan;
  }
  void insert(const Key& key, std::shared_ptr<PlanHandle> plan) {
    std::vector<std::shared_ptr<PlanHandle>> dropped;  // destroyed after the cache lock
    std::lock_guard lock(mutex);
    if (index.count(key) != 0) return;  // another call planned it meanwhile
    points += plan->points;
    lru.push_front(Entry{key, std::move(plan)});
    index.emplace(key, lru.begin());
    while (static_cast<int64_t>(lru.size()) > capacity) {
      points -= lru.back().plan->points;
      index.erase(lru.back().key);
      dropped.push_back(std::move(lru.back().plan));
      lru.pop_back();
      ++evictions;
    }
    // `dropped` is released after `lock` (declared first, destroyed last).
  }
};

PlanCache::PlanCache(int64_t capacity) : impl_(std::make_unique<Impl>()) {
  impl_->capacity = std::max<int64_t>(1, capacity);
}
PlanCache::~PlanCache() = default;

PlanCache::Stats PlanCache::stats() const {
  std::lock_guard lock(impl_->mutex);
  Stats s;
  s.entries = static_cast<int64_t>(impl_->lru.size());
  s.capacity = impl_->capacity;
  s.hits = impl_->hits;
  s.misses = impl_->misses;
  s.evictions = impl_->evictions;
  s.estimated_bytes = impl_->points * 16;
  return s;
}

void PlanCache::clear() {
  std::list<Impl::Entry> dropped;
  std::lock_guard lock(impl_->mutex);
  impl_->index.clear();
  dropped.swap(impl_->lru);
  impl_->points = 0;
}

std::string_view library_version() noexcept { return fftw_version; }

namespace {

// Compact strides for `shape` with the axes in the order of `like`'s strides (smallest
// |stride| innermost; ties and extent-1 axes by axis index): Note [FFT result layout].
Strides strides_like(const Shape& shape, const Layout& like) {
  const size_t rank = shape.size();
  SmallVector<int64_t, 8> order(rank);
  for (size_t a = 0; a < rank; ++a) order[a] = static_cast<int64_t>(a);
  auto key = [&](int64_t a) {
    const size_t i = static_cast<size_t>(a);
    return like.shape[i] <= 1 ? std::numeric_limits<int64_t>::max() : std::abs(like.strides[i]);
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key(x) < key(y); });
  Strides strides(shape.span());
  int64_t stride = 1;
  for (int64_t a : order) {
    strides[static_cast<size_t>(a)] = stride;
    stride *= shape[static_cast<size_t>(a)];
  }
  return strides;
}

std::string_view buffer_name(Buffer b) {
  return b == Buffer::kInput ? "input" : b == Buffer::kScratch ? "scratch" : "result";
}

}  // namespace

std::string_view pass_route_name(PassRoute route) noexcept {
  return route == PassRoute::kDirect ? "direct" : "buffered";
}

// Note [FFT passes]: a pass runs directly (one FFTW call per chunk) when the transformed
// axis has unit stride on both sides; otherwise buffered. With FFTW_ESTIMATE, FFTW's
// plans for a strided transformed axis are 5-20x slower than its plans for contiguous
// lines (a 512 x 512 row-major array's columns: 13.9 ms in place, against 0.42 ms for
// its rows); FFTW_MEASURE finds fast ones but plans for hundreds of milliseconds.
Result<FftPlan> plan_fft(DType dtype, const Layout& input, const FftSpec& spec) {
  TENFERRO_TRY(FftResultType rt, result_type(dtype, input.shape, spec));
  FftPlan plan;
  plan.result_strides = strides_like(rt.shape, input);
  const Strides scratch_strides = strides_like(input.shape, input);
  double n = 1;
  // The logical lengths: the real side's (kR2C's input, kC2R's output).
  const Shape& logical = spec.kind == Kind::kR2C ? input.shape : rt.shape;
  for (int64_t a : spec.axes) n *= static_cast<double>(logical[static_cast<size_t>(a)]);
  plan.scale = scale_of(spec.kind, spec.norm, n);
  plan.result = std::move(rt);
  auto strides_of = [&](Buffer b) -> const Strides& {
    return b == Buffer::kInput ? input.strides : b == Buffer::kScratch ? scratch_strides : plan.result_strides;
  };
  auto add = [&](int64_t axis, Kind kind, Buffer from, Buffer to) {
    const size_t a = static_cast<size_t>(axis);
    const int64_t is = strides_of(from)[a], os = strides_of(to)[a];
    plan.passes.push_back(
        FftPass{axis, kind, from, to, is == 1 && os == 1 ? PassRoute::kDirect : PassRoute::kBuffered, is, os});
  };
  // Complex passes over `axes`, the first from -> to (the axis of the smallest stride in
  // `from`), the others in place on `to`.
  auto complex_passes = [&](std::vector<int64_t> axes, Kind kind, Buffer from, Buffer to) {
    const Strides& fs = strides_of(from);
    std::stable_sort(axes.begin(), axes.end(), [&](int64_t a, int64_t b) {
      return std::abs(fs[static_cast<size_t>(a)]) < std::abs(fs[static_cast<size_t>(b)]);
    });
    for (size_t i = 0; i < axes.size(); ++i) add(axes[i], kind, i == 0 ? from : to, to);
  };
  const std::vector<int64_t> others(spec.axes.begin(), spec.axes.end() - 1);
  const int64_t last = spec.axes.back();
  switch (spec.kind) {
    case Kind::kC2C:
    case Kind::kC2CInverse: complex_passes(spec.axes, spec.kind, Buffer::kInput, Buffer::kResult); break;
    case Kind::kR2C:
      add(last, Kind::kR2C, Buffer::kInput, Buffer::kResult);
      complex_passes(others, Kind::kC2C, Buffer::kResult, Buffer::kResult);
      break;
    case Kind::kC2R: {
      // FFTW's direct complex-to-real transforms overwrite their input: a direct pass
      // reads the scratch tensor (filled by the other axes' passes, or a copy of the
      // input); a buffered one reads its own buffer, so it may read the input itself.
      const size_t l = static_cast<size_t>(last);
      const bool direct = input.strides[l] == 1 && plan.result_strides[l] == 1;
      if (!others.empty() || direct) {
        plan.scratch = true;
        plan.scratch_copy = others.empty();
        complex_passes(others, Kind::kC2CInverse, Buffer::kInput, Buffer::kScratch);
        add(last, Kind::kC2R, Buffer::kScratch, Buffer::kResult);
      } else {
        add(last, Kind::kC2R, Buffer::kInput, Buffer::kResult);
      }
      break;
    }
  }
  return plan;
}

std::string FftPass::reason() const {
  return "axis " + std::to_string(axis) + " has stride " + std::to_string(in_stride) + " in the " +
         std::string(buffer_name(from)) + " and " + std::to_string(out_stride) + " in the " +
         std::string(buffer_name(to)) +
         (route == PassRoute::kDirect
              ? ": FFTW transforms the contiguous lines where they are"
              : ": lines are gathered into a contiguous buffer (FFTW_ESTIMATE's plans for strided lines are slow)");
}

std::string FftPlan::describe() const {
  std::string s;
  if (scratch) s += scratch_copy ? "scratch copy of the input; " : "scratch of the input's layout; ";
  for (size_t i = 0; i < passes.size(); ++i) {
    const FftPass& p = passes[i];
    s += "pass " + std::to_string(i + 1) + ": " + std::string(kind_name(p.kind)) + " axis " + std::to_string(p.axis) +
         ", " + std::string(buffer_name(p.from)) + " -> " + std::string(buffer_name(p.to)) + ", " +
         std::string(pass_route_name(p.route)) + "; ";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "scale %.17g", scale);
  return s + buf;
}

namespace {

char* base_of(const Tensor& t) { return static_cast<char*>(t.storage()->data()) + t.offset() * t.element_size(); }

// The plan for `dims` over `hm` on arrays `in`/`out`: from the cache, or made now (under
// the planner lock) and cached.
template <class R>
Result<std::shared_ptr<PlanHandle>> plan_for(PlanCache* cache, Type type, int sign, const std::vector<Dim>& dims,
                                             const std::vector<Dim>& hm, char* in, char* out) {
  using F = Fftw<R>;
  Key key{sizeof(R),         static_cast<int64_t>(type),       sign, in == out ? 1 : 0, F::alignment(in),
          F::alignment(out), static_cast<int64_t>(dims.size())};
  for (const Dim& d : dims) key.insert(key.end(), {d.n, d.is, d.os});
  key.push_back(static_cast<int64_t>(hm.size()));
  for (const Dim& d : hm) key.insert(key.end(), {d.n, d.is, d.os});
  if (cache != nullptr) {
    if (std::shared_ptr<PlanHandle> hit = cache->impl().find(key)) return hit;
  }
  std::vector<fftw_iodim64> fd(dims.size()), fh(hm.size());
  int64_t points = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    fd[i] = {dims[i].n, dims[i].is, dims[i].os};
    points += dims[i].n;
  }
  for (size_t i = 0; i < hm.size(); ++i) fh[i] = {hm[i].n, hm[i].is, hm[i].os};
  auto handle = std::make_shared<PlanHandle>();
  {
    std::lock_guard lock(planner_mutex());
    // fftw_iodim64 is fftwf_iodim64 (one struct for every precision).
    handle->plan =
        F::make(type, static_cast<int>(fd.size()), fd.data(), static_cast<int>(fh.size()), fh.data(), in, out, sign);
  }
  if (handle->plan == nullptr) return Error(ErrorStage::kCompletion, ErrorCode::kInternal, kOp, "FFTW made no plan");
  handle->destroy = &F::destroy;
  handle->points = points;
  if (cache != nullptr) cache->impl().insert(key, handle);
  return handle;
}

// One pass (Note [FFT passes]): a rank-1 transform of one axis, every line of the other
// axes, `in` -> `out` (possibly the same array).
struct Pass {
  Type type = Type::kDft;
  int sign = FFTW_FORWARD;
  int64_t n = 0;                    // the transform length (kR2c: real input, kC2r: real output)
  int64_t in_len = 0, out_len = 0;  // elements per line on each side
  int64_t is = 0, os = 0;           // strides along the transformed axis
  std::vector<Dim> lines;           // the other axes (extent-1 axes dropped)
  char* in = nullptr;
  char* out = nullptr;
  int64_t in_elem = 0, out_elem = 0;
};

Pass pass_of(Type type, int sign, const Tensor& in, const Tensor& out, int64_t axis, int64_t n) {
  Pass p;
  p.type = type;
  p.sign = sign;
  p.n = n;
  p.in_len = in.dim(axis);
  p.out_len = out.dim(axis);
  p.is = in.strides()[static_cast<size_t>(axis)];
  p.os = out.strides()[static_cast<size_t>(axis)];
  for (int64_t a = 0; a < in.rank(); ++a) {
    if (a == axis || in.dim(a) == 1) continue;
    p.lines.push_back({in.dim(a), in.strides()[static_cast<size_t>(a)], out.strides()[static_cast<size_t>(a)]});
  }
  p.in = base_of(in);
  p.out = base_of(out);
  p.in_elem = in.element_size();
  p.out_elem = out.element_size();
  return p;
}

// Direct: one FFTW call per chunk of the longest line axis.
template <class R>
Result<void> run_direct(const CpuExecutionContext& ctx, const Pass& p, int64_t elements, PlanCache* cache) {
  using F = Fftw<R>;
  int split = -1;
  for (size_t i = 0; i < p.lines.size(); ++i) {
    if (split < 0 || p.lines[i].n > p.lines[static_cast<size_t>(split)].n) split = static_cast<int>(i);
  }
  const int64_t total = split >= 0 ? p.lines[static_cast<size_t>(split)].n : 1;
  int64_t chunks =
      split >= 0 && ctx.threads() > 1 && elements >= kParallelElements ? std::min<int64_t>(ctx.threads(), total) : 1;
  const int64_t per = (total + chunks - 1) / chunks;
  chunks = (total + per - 1) / per;
  struct Chunk {
    char* in;
    char* out;
    std::shared_ptr<PlanHandle> plan;
  };
  std::vector<Chunk> work;
  const std::vector<Dim> dims{{p.n, p.is, p.os}};
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t start = c * per, len = std::min(per, total - start);
    Chunk ch{p.in, p.out, nullptr};
    std::vector<Dim> hm = p.lines;
    if (split >= 0) {
      const Dim& d = p.lines[static_cast<size_t>(split)];
      ch.in += start * d.is * p.in_elem;
      ch.out += start * d.os * p.out_elem;
      hm[static_cast<size_t>(split)].n = len;
    }
    TENFERRO_TRY(ch.plan, plan_for<R>(cache, p.type, p.sign, dims, hm, ch.in, ch.out));
    work.push_back(std::move(ch));
  }
  ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const Chunk& ch = work[static_cast<size_t>(c)];
      F::run(p.type, ch.plan->plan, ch.in, ch.out);
    }
  });
  return ok();
}

// Lines per group of a buffered pass and the scratch bytes a worker's buffers may hold.
constexpr int64_t kGroupLines = 16;
constexpr int64_t kGroupBytes = int64_t{1} << 19;

// Buffered: groups of up to kGroupLines neighbouring lines (along the line axis of the
// smallest input stride) are gathered into a line-contiguous buffer, transformed there,
// and scattered to `out`.
template <class R, class TI, class TO>
Result<void> run_buffered(const CpuExecutionContext& ctx, const Pass& p, int64_t elements, const PoolPtr& pool,
                          PlanCache* cache) {
  using F = Fftw<R>;
  // The group axis, and the other line axes (the outer loop).
  int g = -1;
  for (size_t i = 0; i < p.lines.size(); ++i) {
    const Dim& d = p.lines[i];
    if (g < 0 || std::abs(d.is) < std::abs(p.lines[static_cast<size_t>(g)].is)) g = static_cast<int>(i);
  }
  const Dim group = g >= 0 ? p.lines[static_cast<size_t>(g)] : Dim{1, 0, 0};
  std::vector<Dim> outer;
  for (size_t i = 0; i < p.lines.size(); ++i) {
    if (static_cast<int>(i) != g) outer.push_back(p.lines[i]);
  }
  const int64_t line_bytes = p.in_len * static_cast<int64_t>(sizeof(TI)) + p.out_len * static_cast<int64_t>(sizeof(TO));
  const int64_t width = std::clamp<int64_t>(kGroupBytes / line_bytes, 1, std::min(kGroupLines, group.n));
  const int64_t blocks = (group.n + width - 1) / width;
  int64_t outer_count = 1;
  for (const Dim& d : outer) outer_count *= d.n;
  const int64_t groups = outer_count * blocks;
  int64_t chunks = ctx.threads() > 1 && elements >= kParallelElements ? std::min<int64_t>(ctx.threads(), groups) : 1;
  // Buffers: per chunk, `width` input lines then (for a real side) `width` output lines,
  // each block at a multiple of 64 bytes (equal alignment: one plan serves all).
  const bool in_place = std::is_same_v<TI, TO>;
  auto round = [](int64_t b) { return (b + 63) / 64 * 64; };
  const int64_t in_bytes = round(width * p.in_len * static_cast<int64_t>(sizeof(TI)));
  const int64_t chunk_bytes = in_bytes + (in_place ? 0 : round(width * p.out_len * static_cast<int64_t>(sizeof(TO))));
  TENFERRO_TRY(Tensor scratch, Tensor::uninitialized(DType::kF64, {(chunks * chunk_bytes + 64) / 8}, pool));
  char* base = static_cast<char*>(scratch.storage()->data());
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  auto plan_of = [&](int64_t count) {
    const std::vector<Dim> dims{{p.n, 1, 1}};
    const std::vector<Dim> hm{{count, p.in_len, p.out_len}};
    return plan_for<R>(cache, p.type, p.sign, dims, hm, base, in_place ? base : base + in_bytes);
  };
  TENFERRO_TRY(std::shared_ptr<PlanHandle> full, plan_of(width));
  std::shared_ptr<PlanHandle> rest;
  if (group.n % width != 0) {
    TENFERRO_TRY(rest, plan_of(group.n % width));
  }
  const auto* src = reinterpret_cast<const TI*>(p.in);
  auto* dst = reinterpret_cast<TO*>(p.out);
  ctx.parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      auto* ibuf = reinterpret_cast<TI*>(base + c * chunk_bytes);
      auto* obuf = in_place ? reinterpret_cast<TO*>(ibuf) : reinterpret_cast<TO*>(base + c * chunk_bytes + in_bytes);
      const int64_t first = c * groups / chunks, last = (c + 1) * groups / chunks;
      for (int64_t id = first; id < last; ++id) {
        int64_t o = id / blocks;
        const int64_t g0 = (id % blocks) * width, count = std::min(width, group.n - g0);
        int64_t ioff = g0 * group.is, ooff = g0 * group.os;
        for (size_t k = outer.size(); k-- > 0;) {
          const int64_t idx = o % outer[k].n;
          o /= outer[k].n;
          ioff += idx * outer[k].is;
          ooff += idx * outer[k].os;
        }
        for (int64_t j = 0; j < p.in_len; ++j) {
          const TI* s = src + ioff + j * p.is;
          for (int64_t b = 0; b < count; ++b) ibuf[b * p.in_len + j] = s[b * group.is];
        }
        F::run(p.type, (count == width ? full : rest)->plan, ibuf, obuf);
        for (int64_t j = 0; j < p.out_len; ++j) {
          TO* d = dst + ooff + j * p.os;
          for (int64_t b = 0; b < count; ++b) d[b * group.os] = obuf[b * p.out_len + j];
        }
      }
    }
  });
  return ok();
}

template <class R>
Result<void> run_pass(const CpuExecutionContext& ctx, const Pass& p, PassRoute route, int64_t elements,
                      const PoolPtr& pool, PlanCache* cache) {
  using C = std::complex<R>;
  if (route == PassRoute::kDirect) return run_direct<R>(ctx, p, elements, cache);
  switch (p.type) {
    case Type::kDft: return run_buffered<R, C, C>(ctx, p, elements, pool, cache);
    case Type::kR2c: return run_buffered<R, R, C>(ctx, p, elements, pool, cache);
    case Type::kC2r: return run_buffered<R, C, R>(ctx, p, elements, pool, cache);
  }
  return ok();
}

template <class R>
void scale_all(const CpuExecutionContext& ctx, const Tensor& out, R s) {
  R* p = reinterpret_cast<R*>(base_of(out));
  const int64_t n = out.numel() * (is_complex(out.dtype()) ? 2 : 1);
  ctx.parallel_for(n, kParallelElements, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] *= s;
  });
}

Result<Tensor> alloc_with(DType dtype, const Shape& shape, const Strides& strides, const PoolPtr& pool) {
  TENFERRO_TRY(const int64_t count, checked_element_count(shape, kOp));
  TENFERRO_TRY(Tensor buffer, Tensor::uninitialized(dtype, {count}, pool));
  Layout layout;
  layout.shape = shape;
  layout.strides = strides;
  return Tensor::from_storage(dtype, buffer.storage(), std::move(layout));
}

template <class R>
Result<Tensor> transform(const CpuExecutionContext& ctx, const Tensor& x, const FftSpec& spec, const FftPlan& plan,
                         const PoolPtr& pool, PlanCache* cache) {
  TENFERRO_TRY(Tensor out, alloc_with(plan.result.dtype, plan.result.shape, plan.result_strides, pool));
  if (out.numel() == 0) return out;
  Tensor tmp;
  if (plan.scratch) {
    TENFERRO_TRY(tmp, alloc_with(x.dtype(), x.shape(), strides_like(x.shape(), x.layout()), pool));
    if (plan.scratch_copy) TENFERRO_TRY_VOID(cpu::copy_into(ctx, x, tmp));
  }
  auto tensor = [&](Buffer b) -> const Tensor& { return b == Buffer::kInput ? x : b == Buffer::kScratch ? tmp : out; };
  for (const FftPass& ps : plan.passes) {
    const Tensor& from = tensor(ps.from);
    const Tensor& to = tensor(ps.to);
    Type type = Type::kDft;
    int sign = FFTW_FORWARD;
    int64_t n = to.dim(ps.axis);
    switch (ps.kind) {
      case Kind::kC2C: break;
      case Kind::kC2CInverse: sign = FFTW_BACKWARD; break;
      case Kind::kR2C:
        type = Type::kR2c;
        n = from.dim(ps.axis);
        break;
      case Kind::kC2R:
        type = Type::kC2r;
        sign = FFTW_BACKWARD;
        n = spec.last_length;
        break;
    }
    TENFERRO_TRY_VOID(run_pass<R>(ctx, pass_of(type, sign, from, to, ps.axis, n), ps.route, out.numel(), pool, cache));
  }
  if (plan.scale != 1.0) scale_all<R>(ctx, out, static_cast<R>(plan.scale));
  return out;
}

}  // namespace

Result<Tensor> fft(const CpuExecutionContext& ctx, const Tensor& x, const FftSpec& spec, const PoolPtr& pool,
                   PlanCache* plans) {
  if (!x.defined()) return fft_error(ErrorCode::kInvalidArgument, "undefined tensor");
  TENFERRO_TRY(const FftPlan plan, plan_fft(x.dtype(), x.layout(), spec));
  const bool single = x.dtype() == DType::kF32 || x.dtype() == DType::kC64;
  if (single) return transform<float>(ctx, x, spec, plan, pool, plans);
  return transform<double>(ctx, x, spec, plan, pool, plans);
}

}  // namespace tenferro::fft
