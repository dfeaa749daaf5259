#include "tenferro/fft/fft.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tenferro/cpu/kernels.h"

namespace tenferro::fft {

// Note [FFT kernels]: every transform is one or two FFTW "guru" steps over the tensor's
// own strides (FFTW reads any strides, so a strided view is never copied first):
//   kC2C / kC2CInverse: one rank-k complex transform over the listed axes, x -> out;
//   kR2C: a rank-1 real-to-complex transform of the last listed axis, x -> out, then an
//         in-place rank-(k-1) complex transform of the other listed axes on out;
//   kC2R: a rank-(k-1) inverse complex transform of the other listed axes, x -> a
//         scratch tensor (for k = 1 a copy of x: FFTW's complex-to-real transforms
//         overwrite their input), then a rank-1 complex-to-real transform of the last
//         axis, scratch -> out.
// The axes not transformed are FFTW's "howmany" loop (extent-1 axes dropped). The
// normalization is one scaling pass over the result (FFTW's transforms are
// unnormalized). Parallelism: the longest howmany axis is cut into one contiguous chunk
// per worker when the result holds at least kParallelElements elements; each chunk runs
// a plan of its own extent (at most two distinct extents, and chunk starts of at most a
// few distinct alignments), so a chunk is one FFTW call with no synchronization.
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

constexpr const char* kOp = "fft";
// Results smaller than this run as one chunk: below it the executor's fan-out costs
// more than the transform (FFTW's length-64 transforms take ~40 ns each).
constexpr int64_t kParallelElements = int64_t{1} << 15;

Error fft_error(ErrorCode code, std::string msg) { return usage_error(code, kOp, std::move(msg)); }

DType real_of(DType d) { return d == DType::kC64 ? DType::kF32 : DType::kF64; }
DType complex_of(DType d) { return d == DType::kF32 ? DType::kC64 : DType::kC128; }

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

// The guru description of one step (Note [FFT kernels]).
struct Dim {
  int64_t n, is, os;
};
struct Step {
  Type type = Type::kDft;
  int sign = FFTW_FORWARD;
  std::vector<Dim> dims, howmany;
  char* in = nullptr;
  char* out = nullptr;
  int64_t in_elem = 0, out_elem = 0;  // bytes per input / output element
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

std::string_view kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::kC2C: return "c2c";
    case Kind::kC2CInverse: return "c2c_inverse";
    case Kind::kR2C: return "r2c";
    case Kind::kC2R: return "c2r";
  }
  return "unknown";
}

std::string_view norm_name(Norm norm) noexcept {
  switch (norm) {
    case Norm::kBackward: return "backward";
    case Norm::kOrtho: return "ortho";
    case Norm::kForward: return "forward";
  }
  return "unknown";
}

double scale_of(Kind kind, Norm norm, double n) noexcept {
  const bool inverse = kind == Kind::kC2CInverse || kind == Kind::kC2R;
  switch (norm) {
    case Norm::kBackward: return inverse ? 1.0 / n : 1.0;
    case Norm::kOrtho: return 1.0 / std::sqrt(n);
    case Norm::kForward: return inverse ? 1.0 : 1.0 / n;
  }
  return 1.0;
}

Result<FftResultType> result_type(DType dtype, Dims shape, const FftSpec& spec) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::string kind(kind_name(spec.kind));
  const bool real_in = spec.kind == Kind::kR2C;
  if (real_in ? !is_floating(dtype) : !is_complex(dtype)) {
    std::string hint = real_in ? "f32 or f64" : "c64 or c128";
    if (!real_in && is_floating(dtype)) hint += " (convert with astype, or use a real-input transform)";
    return fft_error(ErrorCode::kDTypeMismatch, kind + " needs " + hint + ", got " + std::string(dtype_name(dtype)));
  }
  if (spec.axes.empty()) return fft_error(ErrorCode::kInvalidArgument, kind + ": no axes to transform");
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    const int64_t a = spec.axes[i];
    if (a < 0 || a >= rank) {
      return fft_error(ErrorCode::kOutOfRange,
                       kind + ": axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    }
    if (std::find(spec.axes.begin(), spec.axes.begin() + static_cast<std::ptrdiff_t>(i), a) !=
        spec.axes.begin() + static_cast<std::ptrdiff_t>(i)) {
      return fft_error(ErrorCode::kInvalidArgument, kind + ": axis " + std::to_string(a) + " is listed twice");
    }
  }
  Shape out(shape);
  const size_t last = static_cast<size_t>(spec.axes.back());
  for (int64_t a : spec.axes) {
    if (shape[static_cast<size_t>(a)] == 0 && !(spec.kind == Kind::kC2R && static_cast<size_t>(a) == last)) {
      return fft_error(ErrorCode::kInvalidShape, kind + ": transformed axis " + std::to_string(a) +
                                                     " has extent 0 (shape " + format_dims(shape) + ")");
    }
  }
  DType out_dtype = dtype;
  if (spec.kind == Kind::kR2C) {
    out_dtype = complex_of(dtype);
    out[last] = shape[last] / 2 + 1;
  } else if (spec.kind == Kind::kC2R) {
    out_dtype = real_of(dtype);
    if (spec.last_length < 1) {
      return fft_error(ErrorCode::kInvalidArgument,
                       kind + ": output length " + std::to_string(spec.last_length) + " (must be >= 1)");
    }
    if (shape[last] != spec.last_length / 2 + 1) {
      return fft_error(ErrorCode::kShapeMismatch, kind + ": output length " + std::to_string(spec.last_length) +
                                                      " needs " + std::to_string(spec.last_length / 2 + 1) +
                                                      " bins along axis " + std::to_string(last) + ", got " +
                                                      std::to_string(shape[last]));
    }
    out[last] = spec.last_length;
  }
  TENFERRO_TRY_VOID(checked_element_count(out, kOp));
  return FftResultType{out_dtype, std::move(out)};
}

namespace {

char* base_of(const Tensor& t) { return static_cast<char*>(t.storage()->data()) + t.offset() * t.element_size(); }

// Runs one step (Note [FFT kernels]) in precision R.
template <class R>
Result<void> run_step(const CpuExecutionContext& ctx, const Step& s, int64_t result_elements, PlanCache* cache) {
  using F = Fftw<R>;
  // The howmany axis cut into chunks: the longest.
  int split = -1;
  for (size_t i = 0; i < s.howmany.size(); ++i) {
    if (split < 0 || s.howmany[i].n > s.howmany[static_cast<size_t>(split)].n) split = static_cast<int>(i);
  }
  int64_t chunks = 1;
  if (split >= 0 && ctx.threads() > 1 && result_elements >= kParallelElements) {
    chunks = std::min<int64_t>(ctx.threads(), s.howmany[static_cast<size_t>(split)].n);
  }
  const int64_t total = split >= 0 ? s.howmany[static_cast<size_t>(split)].n : 1;
  const int64_t per = (total + chunks - 1) / chunks;
  chunks = (total + per - 1) / per;

  struct Chunk {
    char* in;
    char* out;
    std::shared_ptr<PlanHandle> plan;
  };
  std::vector<Chunk> work(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t start = c * per, len = std::min(per, total - start);
    Chunk& ch = work[static_cast<size_t>(c)];
    ch.in = s.in;
    ch.out = s.out;
    std::vector<Dim> hm = s.howmany;
    if (split >= 0) {
      const Dim& d = s.howmany[static_cast<size_t>(split)];
      ch.in += start * d.is * s.in_elem;
      ch.out += start * d.os * s.out_elem;
      hm[static_cast<size_t>(split)].n = len;
    }
    // Reuse the plan of an earlier chunk with the same extent and alignments.
    const int ain = F::alignment(ch.in), aout = F::alignment(ch.out);
    for (int64_t p = 0; p < c && !ch.plan; ++p) {
      const Chunk& o = work[static_cast<size_t>(p)];
      const int64_t plen = std::min(per, total - p * per);
      if (plen == len && F::alignment(o.in) == ain && F::alignment(o.out) == aout) ch.plan = o.plan;
    }
    if (ch.plan) continue;
    Key key{sizeof(R), static_cast<int64_t>(s.type),       s.sign, s.in == s.out ? 1 : 0, ain,
            aout,      static_cast<int64_t>(s.dims.size())};
    for (const Dim& d : s.dims) key.insert(key.end(), {d.n, d.is, d.os});
    key.push_back(static_cast<int64_t>(hm.size()));
    for (const Dim& d : hm) key.insert(key.end(), {d.n, d.is, d.os});
    if (cache != nullptr) ch.plan = cache->impl().find(key);
    if (ch.plan) continue;
    std::vector<fftw_iodim64> dims(s.dims.size()), hms(hm.size());
    int64_t points = 0;
    for (size_t i = 0; i < s.dims.size(); ++i) {
      dims[i] = {s.dims[i].n, s.dims[i].is, s.dims[i].os};
      points += s.dims[i].n;
    }
    for (size_t i = 0; i < hm.size(); ++i) hms[i] = {hm[i].n, hm[i].is, hm[i].os};
    auto handle = std::make_shared<PlanHandle>();
    {
      std::lock_guard lock(planner_mutex());
      // fftw_iodim64 is fftwf_iodim64 (one struct for every precision).
      handle->plan = F::make(s.type, static_cast<int>(dims.size()), dims.data(), static_cast<int>(hms.size()),
                             hms.data(), ch.in, ch.out, s.sign);
    }
    if (handle->plan == nullptr) return Error(ErrorStage::kCompletion, ErrorCode::kInternal, kOp, "FFTW made no plan");
    handle->destroy = &F::destroy;
    handle->points = points;
    ch.plan = handle;
    if (cache != nullptr) cache->impl().insert(key, handle);
  }
  ctx.parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const Chunk& ch = work[static_cast<size_t>(c)];
      F::run(s.type, ch.plan->plan, ch.in, ch.out);
    }
  });
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

// The howmany loop of `t` over the axes not in `skip` (extent-1 axes dropped), input
// strides from `in`, output strides from `out` (same shape on those axes).
std::vector<Dim> loops_of(const Tensor& in, const Tensor& out, std::span<const int64_t> skip) {
  std::vector<Dim> hm;
  for (int64_t a = 0; a < in.rank(); ++a) {
    if (std::find(skip.begin(), skip.end(), a) != skip.end() || in.dim(a) == 1) continue;
    hm.push_back({in.dim(a), in.strides()[static_cast<size_t>(a)], out.strides()[static_cast<size_t>(a)]});
  }
  return hm;
}

std::vector<Dim> dims_of(const Tensor& in, const Tensor& out, std::span<const int64_t> axes, int64_t last_n = -1) {
  std::vector<Dim> d;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    const int64_t n = last_n > 0 && i + 1 == axes.size() ? last_n : in.dim(static_cast<int64_t>(a));
    d.push_back({n, in.strides()[a], out.strides()[a]});
  }
  return d;
}

// A new compact tensor of `shape` whose axes are laid out in the order of `like`'s
// strides (smallest |stride| innermost; ties and extent-1 axes by axis index), so that a
// transformed axis that is contiguous in the input is contiguous in the result: FFTW's
// transforms with a strided output run 5-15x slower (a row-major 256 x 1024 batch written
// column-major: 6.1 ms against 0.46). Note [FFT result layout].
Result<Tensor> alloc_like(DType dtype, const Shape& shape, const Tensor& like, const PoolPtr& pool) {
  const size_t rank = shape.size();
  SmallVector<int64_t, 8> order(rank);
  for (size_t a = 0; a < rank; ++a) order[a] = static_cast<int64_t>(a);
  auto key = [&](int64_t a) {
    const size_t i = static_cast<size_t>(a);
    return like.dim(a) <= 1 ? std::numeric_limits<int64_t>::max() : std::abs(like.strides()[i]);
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key(x) < key(y); });
  TENFERRO_TRY(const int64_t count, checked_element_count(shape, kOp));
  TENFERRO_TRY(Tensor buffer, Tensor::uninitialized(dtype, {count}, pool));
  Layout layout;
  layout.shape = shape;
  layout.strides = Strides(shape.span());
  int64_t stride = 1;
  for (int64_t a : order) {
    layout.strides[static_cast<size_t>(a)] = stride;
    stride *= shape[static_cast<size_t>(a)];
  }
  return Tensor::from_storage(dtype, buffer.storage(), std::move(layout));
}

template <class R>
Result<Tensor> transform(const CpuExecutionContext& ctx, const Tensor& x, const FftSpec& spec, const FftResultType& rt,
                         const PoolPtr& pool, PlanCache* cache) {
  TENFERRO_TRY(Tensor out, alloc_like(rt.dtype, rt.shape, x, pool));
  if (out.numel() == 0) return out;
  const std::span<const int64_t> axes(spec.axes);
  const std::span<const int64_t> others = axes.first(axes.size() - 1);
  const int64_t elements = out.numel();
  double n = 1;
  // The logical lengths: the real side's (kR2C's input, kC2R's output).
  const Shape& logical = spec.kind == Kind::kR2C ? x.shape() : rt.shape;
  for (int64_t a : axes) n *= static_cast<double>(logical[static_cast<size_t>(a)]);
  switch (spec.kind) {
    case Kind::kC2C:
    case Kind::kC2CInverse: {
      Step s;
      s.type = Type::kDft;
      s.sign = spec.kind == Kind::kC2C ? FFTW_FORWARD : FFTW_BACKWARD;
      s.dims = dims_of(x, out, axes);
      s.howmany = loops_of(x, out, axes);
      s.in = base_of(x);
      s.out = base_of(out);
      s.in_elem = s.out_elem = x.element_size();
      TENFERRO_TRY_VOID(run_step<R>(ctx, s, elements, cache));
      break;
    }
    case Kind::kR2C: {
      Step s;
      s.type = Type::kR2c;
      s.dims = dims_of(x, out, axes.last(1));
      s.howmany = loops_of(x, out, axes.last(1));
      s.in = base_of(x);
      s.out = base_of(out);
      s.in_elem = x.element_size();
      s.out_elem = out.element_size();
      TENFERRO_TRY_VOID(run_step<R>(ctx, s, elements, cache));
      if (!others.empty()) {
        Step t;
        t.type = Type::kDft;
        t.sign = FFTW_FORWARD;
        t.dims = dims_of(out, out, others);
        t.howmany = loops_of(out, out, others);
        t.in = t.out = base_of(out);
        t.in_elem = t.out_elem = out.element_size();
        TENFERRO_TRY_VOID(run_step<R>(ctx, t, elements, cache));
      }
      break;
    }
    case Kind::kC2R: {
      TENFERRO_TRY(Tensor tmp, alloc_like(x.dtype(), x.shape(), x, pool));
      if (others.empty()) {
        TENFERRO_TRY_VOID(cpu::copy_into(ctx, x, tmp));
      } else {
        Step t;
        t.type = Type::kDft;
        t.sign = FFTW_BACKWARD;
        t.dims = dims_of(x, tmp, others);
        t.howmany = loops_of(x, tmp, others);
        t.in = base_of(x);
        t.out = base_of(tmp);
        t.in_elem = t.out_elem = x.element_size();
        TENFERRO_TRY_VOID(run_step<R>(ctx, t, elements, cache));
      }
      Step s;
      s.type = Type::kC2r;
      s.sign = FFTW_BACKWARD;
      s.dims = dims_of(tmp, out, axes.last(1), spec.last_length);
      s.howmany = loops_of(tmp, out, axes.last(1));
      s.in = base_of(tmp);
      s.out = base_of(out);
      s.in_elem = tmp.element_size();
      s.out_elem = out.element_size();
      TENFERRO_TRY_VOID(run_step<R>(ctx, s, elements, cache));
      break;
    }
  }
  const double scale = scale_of(spec.kind, spec.norm, n);
  if (scale != 1.0) scale_all<R>(ctx, out, static_cast<R>(scale));
  return out;
}

}  // namespace

Result<Tensor> fft(const CpuExecutionContext& ctx, const Tensor& x, const FftSpec& spec, const PoolPtr& pool,
                   PlanCache* plans) {
  if (!x.defined()) return fft_error(ErrorCode::kInvalidArgument, "undefined tensor");
  TENFERRO_TRY(FftResultType rt, result_type(x.dtype(), x.shape(), spec));
  const bool single = x.dtype() == DType::kF32 || x.dtype() == DType::kC64;
  if (single) return transform<float>(ctx, x, spec, rt, pool, plans);
  return transform<double>(ctx, x, spec, rt, pool, plans);
}

}  // namespace tenferro::fft
