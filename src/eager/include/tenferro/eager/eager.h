#pragma once
/// \file
/// The eager API: placement-bound tensors with operators and numpy-style functions that
/// run at once (ARCHITECTURE §5 "Eager fast path"; spec 000 "Placement-bound eager API",
/// "Eager single-operation cost contract"; spec 004). Design: docs/design/0006-eager.md.
///
///     auto rt = tenferro::eager::EagerRuntime::create().value();
///     EagerTensor a = rt->from_host(...).value(), b = ...;
///     EagerTensor c = a + b;                                   // throws on error
///     Result<EagerTensor> d = einsum("ij,jk->ik", {a, b});     // returns errors
///
/// Functions return Result<EagerTensor>; the C++ operators throw tenferro::Exception
/// wrapping the same typed Error (ARCHITECTURE §3.2). Mixed dtypes are an error (no
/// silent promotion; convert with astype). Axes may be negative (counted from the end).

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/function_ref.h"
#include "tenferro/core/result.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/einsum/path.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::einsum {
class PlanCache;
}
namespace tenferro::fft {
class PlanCache;
}
namespace tenferro::ad {
class AdContext;
}

namespace tenferro::eager {

// The core vocabulary, so `using namespace tenferro::eager;` alone is enough for eager
// code (`using namespace tenferro;` as well would make `einsum` ambiguous with the
// namespace tenferro::einsum).
using tenferro::c128;
using tenferro::c64;
using tenferro::Dims;
using tenferro::DType;
using tenferro::Error;
using tenferro::ErrorCode;
using tenferro::ErrorStage;
using tenferro::Exception;
using tenferro::ok;
using tenferro::Result;
using tenferro::Shape;
using tenferro::Tensor;

/// The reverse-mode AD record of a tensor (defined by the AD module; eager tensors carry
/// an empty slot until AD records into it).
struct AdNode;

/// An explicit CPU execution domain for runtime.on(...).
struct CpuPlacement {
  static constexpr CpuPlacement domain(int32_t id) noexcept { return CpuPlacement{id}; }
  int32_t id = 0;
};

/// How a call without an explicit placement chooses its CPU domain.
enum class CpuAffinityPolicy : uint8_t {
  /// The domain holding the most logical input bytes; ties go to the smaller domain id;
  /// inputs of unknown affinity do not count; none counted: the runtime's default domain.
  kDominantInputBytes,
  /// As kDominantInputBytes, but inputs of two different domains are an error.
  kRequireSingleDomain,
};

/// Configuration of EagerRuntime::create.
struct EagerConfig {
  /// The CPU engine to create (default: one domain per NUMA node of the allowed CPUs).
  cpu::CpuEngineConfig engine{};
  /// The runtime's configuration (plan cache for promoted calls, determinism, fallback).
  runtime::RuntimeConfig runtime{};
  /// Register the CPU's native einsum module (without it eager einsum is promoted to a
  /// prepared graph of its core lowering).
  bool einsum_module = true;
  /// Register the CPU's native linalg module (promoted programs with linalg ops, which
  /// backward builds when it differentiates linalg calls, need it).
  bool linalg_module = true;
  /// Register the CPU's native fft module (promoted programs with transforms need it).
  bool fft_module = true;
  CpuAffinityPolicy affinity = CpuAffinityPolicy::kDominantInputBytes;
  /// The domain of calls with no input affinity; empty: the engine's first domain.
  std::optional<int32_t> default_domain{};
  /// Calls with less work than this (elements, or multiply-adds for contractions) run
  /// inline on the calling thread without an executor entry (Note [Eager entry]).
  int64_t inline_work = int64_t{1} << 15;
  /// Capacity of the eager einsum plan cache (path search per subscripts and shapes).
  int64_t einsum_plan_capacity = 256;
  /// Capacity of the eager FFT plan cache (FFTW plans per layout; fft::PlanCache).
  int64_t fft_plan_capacity = 64;
};

/// Options of EagerRuntime::adopt (an existing runtime and target engine).
struct AdoptOptions {
  CpuAffinityPolicy affinity = CpuAffinityPolicy::kDominantInputBytes;
  std::optional<int32_t> default_domain{};
  int64_t inline_work = int64_t{1} << 15;
  int64_t einsum_plan_capacity = 256;
  int64_t fft_plan_capacity = 64;
};

/// Counters of eager calls (relaxed; exact once calls have returned).
struct EagerMetrics {
  int64_t fast_inline = 0;     ///< single-op calls run on the calling thread, no executor entry
  int64_t fast_entered = 0;    ///< single-op calls with one executor entry
  int64_t fast_session = 0;    ///< single-op calls inside a session (its entry)
  int64_t views = 0;           ///< metadata-only calls (views), no kernel
  int64_t promoted = 0;        ///< calls promoted to a one-node prepared graph
  int64_t programs_built = 0;  ///< programs built by promotions
  int64_t sessions = 0;
};

/// How one eager call runs (Note [Eager entry]).
enum class Entry : uint8_t {
  kInline,   ///< on the calling thread with a sequential context: no executor entry
  kEnter,    ///< one executor entry into the domain (the op may fan out)
  kSession,  ///< inside the caller's session (its one entry)
  kPromote,  ///< a one-node prepared graph through the runtime (plan cache, schedule)
};
struct EntryDecision {
  Entry entry = Entry::kInline;
  const char* reason = "";
};
/// The one decision of how a call runs. `direct`: the target engine has a direct provider
/// for the op and the op is one operation there (a native op, or one core op);
/// `in_session`: the call runs through a session's context; `work`: elements or
/// multiply-adds; `inline_work`: the threshold below which a call runs inline.
EntryDecision decide_entry(bool direct, bool in_session, int64_t work, int64_t inline_work) noexcept;

class EagerRuntime;
class Context;

/// An eager tensor: a physical Tensor (shared, immutable storage) + its runtime handle +
/// its CPU domain affinity + an (empty) AD slot. Cheap to copy. The runtime handle keeps
/// the runtime alive; storage never holds the runtime (ARCHITECTURE §3.6). Thread-safe
/// to share; never written in place.
class EagerTensor {
 public:
  EagerTensor() = default;
  bool defined() const noexcept { return rt_ != nullptr; }
  /// The physical tensor (shares storage; a CPU tensor is host memory).
  const Tensor& tensor() const noexcept { return t_; }
  DType dtype() const noexcept { return t_.dtype(); }
  const Shape& shape() const noexcept { return t_.shape(); }
  int64_t rank() const noexcept { return t_.rank(); }
  int64_t numel() const noexcept { return t_.numel(); }
  /// The CPU domain the storage was produced in, or empty when unknown (adopted host
  /// tensors without a placement).
  std::optional<int32_t> domain() const noexcept {
    return domain_ < 0 ? std::nullopt : std::optional<int32_t>(domain_);
  }
  /// cpu_domain(d) for a known domain, else cpu_default().
  Placement placement() const noexcept {
    return domain_ < 0 ? Placement::cpu_default() : Placement::cpu_domain(domain_);
  }
  /// The owning runtime (null for an undefined tensor).
  EagerRuntime* runtime() const noexcept { return rt_.get(); }
  /// The AD record (empty until the AD module records one).
  const std::shared_ptr<AdNode>& ad_node() const noexcept { return ad_; }
  void set_ad_node(std::shared_ptr<AdNode> node) noexcept { ad_ = std::move(node); }
  /// numpy-like text of the values ("tensor(f64, [2, 2]) [[1, 2], [3, 4]]").
  std::string to_string() const;

 private:
  friend class EagerRuntime;
  friend class Context;
  friend struct Detail;
  EagerTensor(Tensor&& t, std::shared_ptr<EagerRuntime> rt, int32_t domain) noexcept
      : t_(std::move(t)), rt_(std::move(rt)), domain_(domain) {}
  EagerTensor(const Tensor& t, std::shared_ptr<EagerRuntime> rt, int32_t domain) noexcept
      : t_(t), rt_(std::move(rt)), domain_(domain) {}
  Tensor t_;
  std::shared_ptr<EagerRuntime> rt_;
  int32_t domain_ = -1;
  std::shared_ptr<AdNode> ad_;
};

std::ostream& operator<<(std::ostream& os, const EagerTensor& t);

/// numpy-style dot_general dimensions for Context::dot_general.
struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contract, rhs_contract;
};

/// A placement-bound eager context: every eager operation as a method. Made by
/// EagerRuntime::on (explicit domain), EagerRuntime::context / Context::of (affinity
/// policy) and sessions. Cheap to copy; every call checks the runtime's configuration
/// epoch and refreshes its resolved provider slots after a reconfiguration. Thread-safe
/// (a session context only inside its session).
///
/// Errors of every operation (stage kUsage unless stated): kInvalidArgument (undefined
/// tensor, wrong operand count), kRuntimeMismatch (a tensor of another runtime),
/// kDTypeMismatch (mixed or unsupported dtypes), kShapeMismatch (shapes that do not
/// broadcast or contract), kOutOfRange (axes, domains), the op's own errors; completion
/// errors from kernels (e.g. integer division by zero). Nothing is written on error.
class Context {
 public:
  /// The default context of `t`'s runtime (affinity policy). Precondition: t.defined().
  static Context of(const EagerTensor& t) noexcept;

  EagerRuntime& runtime() const noexcept { return *rt_; }
  /// The explicit domain, or empty (affinity policy).
  std::optional<int32_t> placement() const noexcept {
    return domain_ < 0 ? std::nullopt : std::optional<int32_t>(domain_);
  }
  bool in_session() const noexcept { return session_ != nullptr; }
  /// A copy that does not record AD (reserved: the AD module reads it).
  Context no_grad() const noexcept {
    Context c = *this;
    c.grad_ = false;
    return c;
  }
  bool grad_enabled() const noexcept { return grad_; }

  // ---- elementwise unary (program semantics, Note [Core op semantics] in ops.cc) ----
  Result<EagerTensor> neg(const EagerTensor& x) const;
  Result<EagerTensor> abs(const EagerTensor& x) const;
  Result<EagerTensor> sign(const EagerTensor& x) const;
  Result<EagerTensor> exp(const EagerTensor& x) const;
  Result<EagerTensor> log(const EagerTensor& x) const;
  Result<EagerTensor> expm1(const EagerTensor& x) const;
  Result<EagerTensor> log1p(const EagerTensor& x) const;
  Result<EagerTensor> sin(const EagerTensor& x) const;
  Result<EagerTensor> cos(const EagerTensor& x) const;
  Result<EagerTensor> tanh(const EagerTensor& x) const;
  Result<EagerTensor> sqrt(const EagerTensor& x) const;
  Result<EagerTensor> rsqrt(const EagerTensor& x) const;
  Result<EagerTensor> conj(const EagerTensor& x) const;
  /// Real/imaginary part: a view for complex tensors; real(x) of a real tensor is x,
  /// imag(x) of a real tensor is zeros.
  Result<EagerTensor> real(const EagerTensor& x) const;
  Result<EagerTensor> imag(const EagerTensor& x) const;

  // ---- elementwise binary, numpy broadcasting, equal dtypes ----
  Result<EagerTensor> add(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> sub(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> mul(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> div(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> rem(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> pow(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> maximum(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> minimum(const EagerTensor& x, const EagerTensor& y) const;
  /// The angle of the point (x, y) in [-pi, pi], C's atan2(y, x) (numpy's arctan2), of
  /// f32 or f64 tensors (kDTypeMismatch otherwise). Its derivative is NaN at the origin.
  Result<EagerTensor> atan2(const EagerTensor& y, const EagerTensor& x) const;
  /// Comparisons (bool result).
  Result<EagerTensor> eq(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> ne(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> lt(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> le(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> gt(const EagerTensor& x, const EagerTensor& y) const;
  Result<EagerTensor> ge(const EagerTensor& x, const EagerTensor& y) const;
  /// pred ? on_true : on_false (pred bool; all three broadcast).
  Result<EagerTensor> where(const EagerTensor& pred, const EagerTensor& on_true, const EagerTensor& on_false) const;
  /// min(max(x, lo), hi), NaN-propagating (lo/hi broadcast).
  Result<EagerTensor> clamp(const EagerTensor& x, const EagerTensor& lo, const EagerTensor& hi) const;
  /// Explicit dtype conversion (the only way dtypes change).
  Result<EagerTensor> astype(const EagerTensor& x, DType dtype) const;

  // ---- creation (outputs live in this context's domain) ----
  /// A tensor of `shape` filled with `value` (converted to `dtype`).
  Result<EagerTensor> full(Dims shape, c128 value, DType dtype = DType::kF64) const;
  Result<EagerTensor> zeros(Dims shape, DType dtype = DType::kF64) const;
  Result<EagerTensor> ones(Dims shape, DType dtype = DType::kF64) const;
  /// A 0-d tensor.
  Result<EagerTensor> scalar(c128 value, DType dtype = DType::kF64) const;
  /// Index values along `axis` of `shape` (the program's iota).
  Result<EagerTensor> iota(Dims shape, int64_t axis, DType dtype = DType::kI64) const;

  // ---- views (metadata only; share storage) and data movement ----
  Result<EagerTensor> permute(const EagerTensor& x, Dims perm) const;
  /// All axes reversed (numpy's x.T).
  Result<EagerTensor> transpose(const EagerTensor& x) const;
  /// Axes `a` and `b` swapped.
  Result<EagerTensor> transpose(const EagerTensor& x, int64_t a, int64_t b) const;
  /// Column-major element order (the library's convention, as the program's reshape;
  /// numpy's order='F'). A view when the layout allows, else a compact copy. One extent
  /// may be -1.
  Result<EagerTensor> reshape(const EagerTensor& x, Dims shape) const;
  /// numpy broadcasting view (stride 0).
  Result<EagerTensor> broadcast_to(const EagerTensor& x, Dims shape) const;
  /// The program's broadcast_in_dim: operand axis i becomes result axis dims[i].
  Result<EagerTensor> broadcast_in_dim(const EagerTensor& x, Dims shape, Dims dims) const;
  /// Axis `axis` from `start` to `stop` (exclusive) by `step` (> 0).
  Result<EagerTensor> slice(const EagerTensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
  /// The program's slice over every axis.
  Result<EagerTensor> slice(const EagerTensor& x, Dims start, Dims limit, Dims stride) const;
  /// Reversal of `axes` (a view).
  Result<EagerTensor> flip(const EagerTensor& x, Dims axes) const;
  /// The diagonal of axes (a, b) as the last axis... numpy's diagonal (a view).
  Result<EagerTensor> diagonal(const EagerTensor& x, int64_t a = 0, int64_t b = 1) const;
  /// A compact column-major copy.
  Result<EagerTensor> contiguous(const EagerTensor& x) const;
  /// Slice of `sizes` at `starts` (i64/i32 0-d tensors; clamped into range).
  Result<EagerTensor> dynamic_slice(const EagerTensor& x, std::span<const EagerTensor> starts, Dims sizes) const;
  /// x with `update` written at `starts` (clamped); a new tensor.
  Result<EagerTensor> dynamic_update_slice(const EagerTensor& x, const EagerTensor& update,
                                           std::span<const EagerTensor> starts) const;
  Result<EagerTensor> concatenate(std::span<const EagerTensor> parts, int64_t axis) const;
  Result<EagerTensor> concatenate(std::initializer_list<EagerTensor> parts, int64_t axis) const {
    return concatenate(std::span<const EagerTensor>(parts.begin(), parts.size()), axis);
  }
  /// Pads with the 0-d `value` (low/high may be negative: cropping; interior >= 0).
  Result<EagerTensor> pad(const EagerTensor& x, const EagerTensor& value, Dims low, Dims high, Dims interior) const;
  /// x indexed along `axis` by the integer tensor `indices` (clamped into range).
  Result<EagerTensor> gather(const EagerTensor& x, const EagerTensor& indices, int64_t axis) const;
  /// x with `updates` added at `indices` along `axis` (out-of-range indices skipped).
  Result<EagerTensor> scatter_add(const EagerTensor& x, const EagerTensor& indices, const EagerTensor& updates,
                                  int64_t axis) const;
  /// A diagonal matrix from `v` along `axis` (the program's embed_diag).
  Result<EagerTensor> embed_diag(const EagerTensor& v, int64_t axis = 0) const;
  /// Lower/upper triangle of the last two axes (diagonal offset k).
  Result<EagerTensor> tril(const EagerTensor& x, int64_t k = 0) const;
  Result<EagerTensor> triu(const EagerTensor& x, int64_t k = 0) const;
  /// The int64 positions along `axis` (negative counts from the end) that sort x
  /// ascending: numpy's argsort with kind='stable' (ties keep their order, NaN last); no
  /// derivative. Errors: kOutOfRange (axis), kDTypeMismatch (complex).
  Result<EagerTensor> argsort(const EagerTensor& x, int64_t axis = -1) const;
  /// x sorted along `axis` (numpy's sort): x gathered at argsort's positions, so the
  /// gradient flows back to where each element came from. Errors as argsort.
  Result<EagerTensor> sort(const EagerTensor& x, int64_t axis = -1) const;

  // ---- reductions (no axes: all axes) ----
  Result<EagerTensor> sum(const EagerTensor& x, Dims axes = {}, bool keep_dims = false) const;
  Result<EagerTensor> prod(const EagerTensor& x, Dims axes = {}, bool keep_dims = false) const;
  Result<EagerTensor> amax(const EagerTensor& x, Dims axes = {}, bool keep_dims = false) const;
  Result<EagerTensor> amin(const EagerTensor& x, Dims axes = {}, bool keep_dims = false) const;
  /// Floating and complex dtypes only (kDTypeMismatch otherwise).
  Result<EagerTensor> mean(const EagerTensor& x, Dims axes = {}, bool keep_dims = false) const;

  // ---- contractions ----
  /// numpy matmul: 1-D operands promoted and squeezed, batch axes broadcast.
  Result<EagerTensor> matmul(const EagerTensor& a, const EagerTensor& b) const;
  /// The program's dot_general: result axes are batch, lhs free, rhs free.
  Result<EagerTensor> dot_general(const EagerTensor& lhs, const EagerTensor& rhs, const DotDims& dims) const;
  /// N-ary einsum in numpy notation ("ij,jk->ik"; implicit output "ij,jk"; "..."
  /// ellipsis). Runs the target engine's native einsum module when registered, else is
  /// promoted to a prepared graph of the einsum's core lowering (Note [Eager einsum]).
  Result<EagerTensor> einsum(std::string_view subscripts, std::span<const EagerTensor> operands) const;
  Result<EagerTensor> einsum(std::string_view subscripts, std::initializer_list<EagerTensor> operands) const {
    return einsum(subscripts, std::span<const EagerTensor>(operands.begin(), operands.size()));
  }
  /// As above, with the contraction path `policy` chooses: an algorithm (greedy, the
  /// default; optimal; TreeSA; left-to-right) or an explicit path (PathAlgorithm::kExplicit),
  /// part of the eager plan cache's key. The record for AD and tracing names the einsum
  /// only (its gradient einsums plan their own paths). Errors: as above, the path's
  /// (kInvalidArgument for an explicit path that does not fit the operands, kUnsupported
  /// from kOptimal past its operand limit), and kUnsupported for a policy other than the
  /// default when the target has no native einsum module (a promoted einsum plans with
  /// its lowering's algorithm, which would ignore the policy).
  Result<EagerTensor> einsum(std::string_view subscripts, std::span<const EagerTensor> operands,
                             const einsum::PathPolicy& policy) const;

  /// Any core op with explicit attributes (validated by program inference), e.g. for ops
  /// without a named method. Not for kConstant or kExtension.
  Result<EagerTensor> core(program::OpCode code, std::span<const EagerTensor> operands, program::Attrs attrs) const;

  /// Runs `f` with a session context of this context's domain (default domain when none
  /// is set): one executor entry for every op issued through the session context.
  /// Errors before `f` runs: kReentered (called inside an entered context or session),
  /// kContended (another thread holds a session of that domain), kUnsupported (the
  /// target engine has no direct CPU provider). Otherwise `f`'s result.
  Result<void> with_session(FunctionRef<Result<void>(Context&)> f) const;

  /// What an extension family's native entry point computes: results into `outputs`,
  /// on an entered context of the chosen domain, drawing from that domain's pool.
  using NativeFn = FunctionRef<Result<void>(cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool,
                                            std::vector<Tensor>& outputs)>;
  /// The eager entry of an extension family whose operations have no program op (yet):
  /// checks `inputs` as every operation does (defined, this runtime), chooses the domain
  /// (Note [Eager placement]), and runs `f` once on the target's CPU engine in that
  /// domain: inline below the inline-work threshold, inside the current session, else
  /// with one executor entry (kInner). The tensors `f` returns become EagerTensors in the
  /// chosen domain. `work` is the operation's estimated multiply-adds. Errors: those of
  /// placement, kUnsupported when the target engine has no direct CPU provider (nothing
  /// falls back to another engine), and f's errors.
  Result<std::vector<EagerTensor>> run_native(std::span<const EagerTensor* const> inputs, const char* op, int64_t work,
                                              NativeFn f) const;
  /// The program form of a native call, for the AD tape (Note [Eager tape]): emits the
  /// family's program op(s) over program values of the inputs and returns one value per
  /// output of the native function, in its order; an invalid Value (or a shorter list)
  /// for a result it does not express (an integer rank): a program that needs that
  /// result is then a typed kUnsupported. Owns what it captures.
  using ProgramForm = std::function<Result<std::vector<program::Value>>(program::ProgramBuilder&,
                                                                        std::span<const program::Value>)>;
  /// run_native whose results can be differentiated: when the call records (an input
  /// requires grad, grad enabled), `form()` is called once and every inexact result
  /// records its output of the form. Untraced calls never call `form`.
  Result<std::vector<EagerTensor>> run_native(std::span<const EagerTensor* const> inputs, const char* op, int64_t work,
                                              NativeFn f, FunctionRef<ProgramForm()> form) const;

 private:
  friend class EagerRuntime;
  friend struct Detail;
  Context(EagerRuntime* rt, int32_t domain) noexcept : rt_(rt), domain_(domain) {}
  EagerRuntime* rt_ = nullptr;
  std::shared_ptr<EagerRuntime> keep_;  // set by EagerRuntime::on/context
  int32_t domain_ = -1;
  cpu::CpuExecutionContext* session_ = nullptr;
  bool grad_ = true;
};

/// How EagerRuntime::import brings a tensor of another runtime.
enum class ImportMode : uint8_t {
  kShare,  ///< share the storage (host memory is compatible between CPU runtimes)
  kCopy,   ///< a compact copy made in this runtime's default domain
};

/// An eager runtime: a Runtime with a target engine (the CPU engine when created here)
/// plus the eager state (resolved provider slots per configuration epoch, einsum plan
/// cache, sessions, metrics). Thread-safe. Create with EagerRuntime::create.
class EagerRuntime : public std::enable_shared_from_this<EagerRuntime> {
 public:
  /// Creates a runtime with a new CPU engine registered (and, unless disabled, the CPU
  /// einsum module). Errors: the engine's and runtime's configuration errors;
  /// kConfiguration/kOutOfRange for a default domain the engine lacks.
  static Result<std::shared_ptr<EagerRuntime>> create(EagerConfig config = {});
  /// Eager calls over an existing runtime, targeting its registered engine `engine`
  /// (spec 004: implementations are selected from that engine, never from build
  /// options). A CPU engine gets the direct fast path; any other engine runs every call
  /// as a promoted prepared graph on that engine (typed kUnsupported when it cannot).
  /// Errors: kOutOfRange (unknown engine or default domain), kInvalidArgument (null).
  static Result<std::shared_ptr<EagerRuntime>> adopt(std::shared_ptr<runtime::Runtime> runtime,
                                                     runtime::EngineId engine, AdoptOptions options = {});
  ~EagerRuntime();
  EagerRuntime(const EagerRuntime&) = delete;
  EagerRuntime& operator=(const EagerRuntime&) = delete;

  runtime::Runtime& runtime() const noexcept { return *runtime_; }
  const std::shared_ptr<runtime::Runtime>& shared_runtime() const noexcept { return runtime_; }
  runtime::EngineId engine() const noexcept { return engine_; }
  std::span<const int32_t> domains() const noexcept { return domains_; }
  int32_t default_domain() const noexcept { return default_domain_; }
  CpuAffinityPolicy affinity() const noexcept { return affinity_; }

  /// A context bound to CPU domain `p.id` (unknown domains fail on each call with
  /// kOutOfRange). Inputs are read where they are; outputs live in that domain.
  Context on(CpuPlacement p);
  /// A context that applies the affinity policy per call.
  Context context();
  /// Runs `f` in a session of the default domain (Context::with_session).
  Result<void> with_session(FunctionRef<Result<void>(Context&)> f);

  /// Adopts a host tensor without copying; its affinity is `placement`'s domain, or
  /// unknown. Errors: kInvalidArgument (null handle), kUnsupported (non-host tensor),
  /// kOutOfRange (unknown domain).
  Result<EagerTensor> from_host(Tensor tensor, std::optional<CpuPlacement> placement = std::nullopt);
  /// Builds from row-major (C order, numpy's default) values.
  template <PresetScalar T>
  Result<EagerTensor> from_values(Dims shape, std::span<const T> row_major) {
    TENFERRO_TRY(Tensor t, Tensor::from_row_major<T>(shape, row_major));
    return from_host(std::move(t));
  }
  template <PresetScalar T>
  Result<EagerTensor> from_values(Dims shape, std::initializer_list<T> row_major) {
    return from_values<T>(shape, std::span<const T>(row_major.begin(), row_major.size()));
  }
  /// Reads a .npy file (Errors: kIo, kParse, those of read_npy).
  Result<EagerTensor> read_npy(const std::string& path);
  /// A tensor of another (or this) runtime made usable here: shared storage (kShare) or
  /// a copy (kCopy). Errors: kInvalidArgument (undefined tensor).
  Result<EagerTensor> import(const EagerTensor& t, ImportMode mode = ImportMode::kShare);

  EagerMetrics metrics() const;
  /// The AD rule sets and transform cache backward() uses (the standard rules installed;
  /// install more before recording from several threads: installation is not
  /// synchronized with transforms).
  ad::AdContext& ad_context() noexcept { return *ad_; }
  /// Statistics of the eager einsum plan cache.
  struct EinsumCacheStats {
    int64_t hits = 0, misses = 0, evictions = 0, entries = 0, retained_bytes = 0;
  };
  EinsumCacheStats einsum_cache_stats() const;
  void clear_einsum_cache();
  /// The FFTW plans eager transforms reuse (bounded; stats() and clear() there).
  /// Thread-safe.
  fft::PlanCache& fft_plans() const noexcept { return *fft_plans_; }

  struct Slots;
  struct Counters;

 private:
  friend class Context;
  friend struct Detail;
  EagerRuntime();
  const Slots& slots();  // refreshed when the runtime's epoch changed

  std::shared_ptr<runtime::Runtime> runtime_;
  runtime::EngineId engine_{};
  std::vector<int32_t> domains_;
  int32_t default_domain_ = 0;
  CpuAffinityPolicy affinity_ = CpuAffinityPolicy::kDominantInputBytes;
  int64_t inline_work_ = 0;
  std::unique_ptr<einsum::PlanCache> einsum_plans_;
  std::unique_ptr<fft::PlanCache> fft_plans_;
  std::unique_ptr<Counters> counters_;
  std::unique_ptr<ad::AdContext> ad_;
  std::atomic<const Slots*> slots_{nullptr};
  std::mutex slots_mu_;
  std::vector<std::unique_ptr<const Slots>> all_slots_;  // one per epoch seen (kept: readers hold raw pointers)
};

/// Writes `t` as a .npy file. Errors: kIo, kInvalidArgument (undefined tensor).
Result<void> write_npy(const std::string& path, const EagerTensor& t);
/// The physical host tensor (shared storage, no copy). Errors: kInvalidArgument
/// (undefined), kUnsupported (not host memory).
Result<Tensor> to_host(const EagerTensor& t);
/// Element `index` (row-major multi-index over the shape) as c128, for tests and
/// printing. Errors: kOutOfRange.
Result<c128> item(const EagerTensor& t, Dims index = {});

/// The domain chosen for a call (Note [Eager placement]): `explicit_domain` when >= 0;
/// else the policy over the inputs' (domain, logical bytes), domain < 0 meaning unknown
/// affinity. Errors: kInvalidArgument (kRequireSingleDomain with mixed domains).
struct InputAffinity {
  int32_t domain = -1;
  int64_t bytes = 0;
};
Result<int32_t> choose_domain(std::span<const InputAffinity> inputs, CpuAffinityPolicy policy,
                              int32_t default_domain, int32_t explicit_domain = -1);

// ---- free functions: the default context of the first operand (Context::of) ----
#define TENFERRO_EAGER_UNARY(name) \
  inline Result<EagerTensor> name(const EagerTensor& x) { return Context::of(x).name(x); }
TENFERRO_EAGER_UNARY(neg)
TENFERRO_EAGER_UNARY(abs)
TENFERRO_EAGER_UNARY(sign)
TENFERRO_EAGER_UNARY(exp)
TENFERRO_EAGER_UNARY(log)
TENFERRO_EAGER_UNARY(expm1)
TENFERRO_EAGER_UNARY(log1p)
TENFERRO_EAGER_UNARY(sin)
TENFERRO_EAGER_UNARY(cos)
TENFERRO_EAGER_UNARY(tanh)
TENFERRO_EAGER_UNARY(sqrt)
TENFERRO_EAGER_UNARY(rsqrt)
TENFERRO_EAGER_UNARY(conj)
TENFERRO_EAGER_UNARY(real)
TENFERRO_EAGER_UNARY(imag)
TENFERRO_EAGER_UNARY(transpose)
TENFERRO_EAGER_UNARY(contiguous)
#undef TENFERRO_EAGER_UNARY
#define TENFERRO_EAGER_BINARY(name) \
  inline Result<EagerTensor> name(const EagerTensor& x, const EagerTensor& y) { return Context::of(x).name(x, y); }
TENFERRO_EAGER_BINARY(add)
TENFERRO_EAGER_BINARY(sub)
TENFERRO_EAGER_BINARY(mul)
TENFERRO_EAGER_BINARY(div)
TENFERRO_EAGER_BINARY(rem)
TENFERRO_EAGER_BINARY(pow)
TENFERRO_EAGER_BINARY(maximum)
TENFERRO_EAGER_BINARY(minimum)
TENFERRO_EAGER_BINARY(atan2)
TENFERRO_EAGER_BINARY(eq)
TENFERRO_EAGER_BINARY(ne)
TENFERRO_EAGER_BINARY(lt)
TENFERRO_EAGER_BINARY(le)
TENFERRO_EAGER_BINARY(gt)
TENFERRO_EAGER_BINARY(ge)
TENFERRO_EAGER_BINARY(matmul)
#undef TENFERRO_EAGER_BINARY
#define TENFERRO_EAGER_REDUCE(name)                                                              \
  inline Result<EagerTensor> name(const EagerTensor& x, Dims axes = {}, bool keep_dims = false) { \
    return Context::of(x).name(x, axes, keep_dims);                                              \
  }
TENFERRO_EAGER_REDUCE(sum)
TENFERRO_EAGER_REDUCE(prod)
TENFERRO_EAGER_REDUCE(amax)
TENFERRO_EAGER_REDUCE(amin)
TENFERRO_EAGER_REDUCE(mean)
#undef TENFERRO_EAGER_REDUCE
inline Result<EagerTensor> where(const EagerTensor& p, const EagerTensor& t, const EagerTensor& f) {
  return Context::of(p).where(p, t, f);
}
inline Result<EagerTensor> clamp(const EagerTensor& x, const EagerTensor& lo, const EagerTensor& hi) {
  return Context::of(x).clamp(x, lo, hi);
}
inline Result<EagerTensor> astype(const EagerTensor& x, DType d) { return Context::of(x).astype(x, d); }
inline Result<EagerTensor> permute(const EagerTensor& x, Dims perm) { return Context::of(x).permute(x, perm); }
inline Result<EagerTensor> transpose(const EagerTensor& x, int64_t a, int64_t b) {
  return Context::of(x).transpose(x, a, b);
}
inline Result<EagerTensor> reshape(const EagerTensor& x, Dims shape) { return Context::of(x).reshape(x, shape); }
inline Result<EagerTensor> broadcast_to(const EagerTensor& x, Dims shape) {
  return Context::of(x).broadcast_to(x, shape);
}
inline Result<EagerTensor> slice(const EagerTensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1) {
  return Context::of(x).slice(x, axis, start, stop, step);
}
inline Result<EagerTensor> flip(const EagerTensor& x, Dims axes) { return Context::of(x).flip(x, axes); }
inline Result<EagerTensor> diagonal(const EagerTensor& x, int64_t a = 0, int64_t b = 1) {
  return Context::of(x).diagonal(x, a, b);
}
inline Result<EagerTensor> tril(const EagerTensor& x, int64_t k = 0) { return Context::of(x).tril(x, k); }
inline Result<EagerTensor> triu(const EagerTensor& x, int64_t k = 0) { return Context::of(x).triu(x, k); }
inline Result<EagerTensor> dot_general(const EagerTensor& l, const EagerTensor& r, const DotDims& d) {
  return Context::of(l).dot_general(l, r, d);
}
inline Result<EagerTensor> slice(const EagerTensor& x, Dims start, Dims limit, Dims stride) {
  return Context::of(x).slice(x, start, limit, stride);
}
inline Result<EagerTensor> broadcast_in_dim(const EagerTensor& x, Dims shape, Dims dims) {
  return Context::of(x).broadcast_in_dim(x, shape, dims);
}
inline Result<EagerTensor> dynamic_slice(const EagerTensor& x, std::span<const EagerTensor> starts, Dims sizes) {
  return Context::of(x).dynamic_slice(x, starts, sizes);
}
inline Result<EagerTensor> dynamic_update_slice(const EagerTensor& x, const EagerTensor& update,
                                                std::span<const EagerTensor> starts) {
  return Context::of(x).dynamic_update_slice(x, update, starts);
}
/// Errors as Context::concatenate, plus kInvalidArgument for no parts.
inline Result<EagerTensor> concatenate(std::span<const EagerTensor> parts, int64_t axis) {
  if (parts.empty() || !parts[0].defined()) {
    return usage_error(ErrorCode::kInvalidArgument, "concatenate", "no operands (or an undefined first operand)");
  }
  return Context::of(parts[0]).concatenate(parts, axis);
}
inline Result<EagerTensor> concatenate(std::initializer_list<EagerTensor> parts, int64_t axis) {
  return concatenate(std::span<const EagerTensor>(parts.begin(), parts.size()), axis);
}
inline Result<EagerTensor> pad(const EagerTensor& x, const EagerTensor& value, Dims low, Dims high, Dims interior) {
  return Context::of(x).pad(x, value, low, high, interior);
}
inline Result<EagerTensor> gather(const EagerTensor& x, const EagerTensor& indices, int64_t axis) {
  return Context::of(x).gather(x, indices, axis);
}
inline Result<EagerTensor> scatter_add(const EagerTensor& x, const EagerTensor& indices, const EagerTensor& updates,
                                       int64_t axis) {
  return Context::of(x).scatter_add(x, indices, updates, axis);
}
inline Result<EagerTensor> argsort(const EagerTensor& x, int64_t axis = -1) { return Context::of(x).argsort(x, axis); }
inline Result<EagerTensor> sort(const EagerTensor& x, int64_t axis = -1) { return Context::of(x).sort(x, axis); }
inline Result<EagerTensor> embed_diag(const EagerTensor& v, int64_t axis = 0) {
  return Context::of(v).embed_diag(v, axis);
}
/// Errors as Context::einsum, plus kInvalidArgument for no operands.
Result<EagerTensor> einsum(std::string_view subscripts, std::span<const EagerTensor> operands);
inline Result<EagerTensor> einsum(std::string_view subscripts, std::initializer_list<EagerTensor> operands) {
  return einsum(subscripts, std::span<const EagerTensor>(operands.begin(), operands.size()));
}

// ---- operators: throw tenferro::Exception wrapping the typed Error ----
EagerTensor operator+(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator-(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator*(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator/(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator-(const EagerTensor& x);
EagerTensor operator<(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator<=(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator>(const EagerTensor& x, const EagerTensor& y);
EagerTensor operator>=(const EagerTensor& x, const EagerTensor& y);
/// With a scalar: the scalar becomes a 0-d tensor of the tensor's dtype (an explicit
/// literal conversion, not tensor promotion).
EagerTensor operator+(const EagerTensor& x, double s);
EagerTensor operator-(const EagerTensor& x, double s);
EagerTensor operator*(const EagerTensor& x, double s);
EagerTensor operator/(const EagerTensor& x, double s);
EagerTensor operator+(double s, const EagerTensor& x);
EagerTensor operator-(double s, const EagerTensor& x);
EagerTensor operator*(double s, const EagerTensor& x);
EagerTensor operator/(double s, const EagerTensor& x);

}  // namespace tenferro::eager
