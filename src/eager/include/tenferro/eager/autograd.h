#pragma once
/// \file
/// Eager reverse-mode AD (ARCHITECTURE `eager`; Note [Eager tape] in autograd.cc).
///
///     EagerTensor x = requires_grad(rt->from_values<double>({2, 2}, {...}).value()).value();
///     EagerTensor loss = sum(matmul(x, x).value()).value();
///     backward(loss).value();
///     EagerTensor g = grad_of(x);   // d loss / d x
///
/// A call records only when an input requires grad and its context has grad enabled
/// (Context::no_grad() turns recording off); an untraced call builds nothing. Each
/// record holds the program expression of its op, its direct reverse rule where it has
/// one, and its operands (so saved values survive dropped forward handles). backward()
/// runs the direct rules as eager operations when every record on the path has one;
/// otherwise it replays the records into a program, takes its gradient with the
/// runtime's AdContext (ad::AdContext::grad: the rules of the program path, cached by
/// program fingerprint) and runs it as a prepared graph (BackwardRoute).

#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tenferro/ad/ad.h"
#include "tenferro/eager/eager.h"
#include "tenferro/program/program.h"

namespace tenferro::eager {

/// One record of the eager tape. A leaf (made by requires_grad) has no build function and
/// accumulates its gradient; an op record re-emits its operation into a program over its
/// saved operands. Immutable after creation except a leaf's gradient (mutex-guarded).
struct AdNode {
  using Build = std::function<Result<program::Value>(program::ProgramBuilder&, std::span<const program::Value>)>;
  /// A direct reverse rule: sets `input_cts[i]` to the cotangent of input i (left
  /// undefined where input i does not require grad) from the output's cotangent `ct`,
  /// with eager operations of `ctx` (grad disabled).
  using Vjp = std::function<Result<void>(const Context& ctx, const AdNode& node, const EagerTensor& ct,
                                         std::span<EagerTensor> input_cts)>;
  Build build;                      ///< empty for a leaf
  Vjp vjp;                          ///< empty when the op has no direct rule (backward replays)
  std::vector<EagerTensor> inputs;  ///< the saved operands
  std::string op;                   ///< the op's name, for errors
  std::string unsupported;          ///< non-empty: why this op cannot be differentiated
  mutable std::mutex mu;            ///< guards `grad`
  EagerTensor grad;                 ///< a leaf's accumulated gradient (undefined until a backward)
  bool traced = false;              ///< depends on a trace_input: every result records (Note [Eager trace])
  bool leaf() const noexcept { return !build && unsupported.empty(); }
  AdNode() = default;
  AdNode(const AdNode&) = delete;
  AdNode& operator=(const AdNode&) = delete;
  /// Tears down the records only this one keeps alive without recursion (Note [Tape
  /// teardown]): a chain of a million records is freed in a loop, not a million nested
  /// destructor calls.
  ~AdNode();
};

/// A tensor sharing `x`'s storage that requires grad: a new leaf. Errors:
/// kInvalidArgument (undefined), kDTypeMismatch (an integer or bool dtype).
Result<EagerTensor> requires_grad(const EagerTensor& x);
/// A leaf for tracing a computation into a program (program_of): like requires_grad but
/// for any dtype, and every result computed from it records, integer and bool results
/// and calls under Context::no_grad() included, so the records hold the whole
/// computation (Note [Eager trace]). Errors: kInvalidArgument (undefined).
Result<EagerTensor> trace_input(const EagerTensor& x);
/// The program the records from `inputs` to `outputs` describe: `inputs` (leaves made
/// by trace_input or requires_grad, distinct) are its argument inputs in this order,
/// `outputs` its outputs; every record re-emits its op, and tensors without a record
/// (and leaves not in `inputs`) are captured as binding inputs (their values, shared).
/// Errors: kInvalidArgument (an input that is not a leaf, or repeated), kUnsupported (a
/// record without a program form, naming it).
Result<program::CompiledGraph> program_of(std::span<const EagerTensor> outputs, std::span<const EagerTensor> inputs);

/// True when `x` is a leaf or the result of a recorded op.
inline bool requires_grad_of(const EagerTensor& x) noexcept { return x.ad_node() != nullptr; }
/// `x` without its record (same storage; a constant for AD).
EagerTensor detach(const EagerTensor& x);

/// How a reverse pass computes gradients (Note [Eager direct backward] in autograd.cc).
enum class BackwardRoute : uint8_t {
  kAuto,    ///< direct when every record on the path has a direct rule, else replay
  kDirect,  ///< the records' direct rules run as eager operations (kUnsupported if one has none)
  kReplay,  ///< the program path: the tape replays into a program, AdContext::grad/vjp, prepared run
};
/// The route a reverse pass takes and why.
struct BackwardDecision {
  BackwardRoute route = BackwardRoute::kAuto;
  std::string reason;
};
/// The one decision of the route (pure): `op_without_direct_rule` names the first record
/// on the path that has no direct rule, or is null when all have one. A kDirect request
/// that cannot be met answers kReplay with the reason (the caller reports kUnsupported).
BackwardDecision decide_backward_route(BackwardRoute requested, const char* op_without_direct_rule);
/// The route backward(loss, {}, requested) would take. Errors: those of backward's walk
/// (kInvalidArgument when loss does not require grad, kUnsupported).
Result<BackwardDecision> explain_backward(const EagerTensor& loss, BackwardRoute requested = BackwardRoute::kAuto);

/// Accumulates d loss / d leaf into every leaf `loss` depends on. `loss` must be a real
/// scalar (f32/f64, rank 0) unless `seed` (the cotangent, of loss's dtype and shape) is
/// given. Gradients add to what earlier backward calls left. The record is kept (backward
/// may run again). Errors (kUsage): kInvalidArgument (loss does not require grad, a seed
/// of the wrong shape), kDTypeMismatch (a non-scalar loss without seed), kUnsupported (an
/// op without an AD rule on the path, naming it); the transform's and the run's errors.
/// Nothing is accumulated on error. Stored gradients are column-major contiguous. `route`: see
/// BackwardRoute; every route gives the same gradients up to rounding.
Result<void> backward(const EagerTensor& loss, const EagerTensor& seed = {},
                      BackwardRoute route = BackwardRoute::kAuto);
/// The accumulated gradient of a leaf (undefined before any backward reached it).
EagerTensor grad_of(const EagerTensor& leaf);
/// Clears a leaf's accumulated gradient.
void zero_grad(const EagerTensor& leaf);

/// A function of eager tensors to one eager tensor (for the functional transforms).
/// The transforms nest: where an input is itself recorded (an enclosing transform, a
/// tensor that requires grad, a trace) or f closes over a recorded tensor, their results
/// are recorded too, so grad of grad is the second derivative (Note [Nested functional
/// transforms] in autograd.cc).
using EagerFn = std::function<Result<EagerTensor>(std::span<const EagerTensor>)>;
/// d f / d xs at `xs` for a real scalar f, without touching any accumulator: `f` runs on
/// fresh leaves sharing the storage of `xs`. Entries of integer or bool dtype get an
/// undefined tensor; inputs f's output does not depend on get zeros, also when it depends
/// on none (a constant f: no error, unlike backward). Errors: those of f and backward.
Result<std::vector<EagerTensor>> grad(const EagerFn& f, std::span<const EagerTensor> xs,
                                      BackwardRoute route = BackwardRoute::kAuto);
/// (f(xs), vjp) with vjp[i] = <ct, d f / d xs[i]> (the adjoint of the Jacobian applied to
/// `ct`; Note [Complex cotangents] in ad/transforms.cc); zeros for inputs f does not
/// depend on. Errors: kInvalidArgument (ct undefined or not of f's dtype and shape),
/// those of f and backward.
Result<std::pair<EagerTensor, std::vector<EagerTensor>>> vjp(const EagerFn& f, std::span<const EagerTensor> xs,
                                                             const EagerTensor& ct,
                                                             BackwardRoute route = BackwardRoute::kAuto);
/// (f(xs), J v): forward-mode derivative along `vs` (one tangent per x of an inexact
/// dtype, undefined entries for the others); zeros when f depends on none of `xs`.
/// Errors: kInvalidArgument (a tangent count, dtype or shape that does not match).
Result<std::pair<EagerTensor, EagerTensor>> jvp(const EagerFn& f, std::span<const EagerTensor> xs,
                                                std::span<const EagerTensor> vs);

}  // namespace tenferro::eager
