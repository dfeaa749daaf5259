#pragma once
// Private to the eager module: the per-epoch provider slots, counters, and the call
// helpers every operation uses (begin -> direct or promote -> wrap).

#include <atomic>
#include <memory>
#include <utility>

#include "tenferro/core/small_vector.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/eager/eager.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/program/program.h"

namespace tenferro::eager {

// Resolved once per configuration epoch of the runtime (Note [Eager slots]).
struct EagerRuntime::Slots {
  uint64_t epoch = 0;
  std::shared_ptr<cpu::CpuEngine> cpu;  // the target's direct provider (a CPU engine), or null
  bool einsum_native = false;           // the CPU einsum module is registered for the target
};

struct EagerRuntime::Counters {
  std::atomic<int64_t> fast_inline{0}, fast_entered{0}, fast_session{0}, views{0}, promoted{0}, programs_built{0},
      sessions{0};
  std::unique_ptr<std::atomic<bool>[]> session_busy;  // one per domain (index into domains_)
};

// One resolved call: runtime, slots, chosen domain, session context, owner handle.
struct Call {
  EagerRuntime* rt = nullptr;
  const EagerRuntime::Slots* slots = nullptr;
  int32_t domain = 0;
  cpu::CpuExecutionContext* session = nullptr;
  const std::shared_ptr<EagerRuntime>* owner = nullptr;
};

using Builder = FunctionRef<Result<program::Value>(program::ProgramBuilder&, std::span<const program::Value>)>;
using DirectFn = FunctionRef<Result<Tensor>(cpu::CpuExecutionContext&, const std::shared_ptr<HostBufferPool>&)>;

struct Detail {
  // Validates the operands (defined, same runtime as the context), refreshes the slots,
  // chooses the domain (Note [Eager placement]).
  static Result<Call> begin(const Context& c, std::span<const EagerTensor* const> inputs, const char* op);
  static Result<Call> begin(const Context& c, std::initializer_list<const EagerTensor*> inputs, const char* op) {
    return begin(c, std::span<const EagerTensor* const>(inputs.begin(), inputs.size()), op);
  }
  // Runs one operation as decide_entry says (Note [Eager entry]): `f` on the target's
  // direct provider when `native` and the target has one, else promoted: `build` over
  // `inputs` as a one-node prepared graph (Note [Eager promotion]).
  static Result<Tensor> execute(const Call& call, bool native, int64_t work, DirectFn f, std::span<const Tensor> inputs,
                                Builder build, const char* op);
  static Result<Tensor> promote(const Call& call, std::span<const Tensor> inputs, Builder build, const char* op);
  static std::shared_ptr<EagerRuntime> owner(const Call& call) {
    return call.owner != nullptr ? *call.owner : call.rt->shared_from_this();
  }
  static EagerTensor wrap(const Call& call, Tensor&& t) { return EagerTensor(std::move(t), owner(call), call.domain); }
  // A view of x: same storage, same affinity.
  static EagerTensor view(const Call& call, const EagerTensor& x, Tensor&& t) {
    call.rt->counters_->views.fetch_add(1, std::memory_order_relaxed);
    return EagerTensor(std::move(t), owner(call), x.domain_);
  }
  static const Tensor& physical(const EagerTensor& t) noexcept { return t.t_; }
  // Mutable access for the tape's gradient accumulation (Note [Gradient accumulation]).
  static Tensor& physical_mut(EagerTensor& t) noexcept { return t.t_; }
  // Whether a call records onto the tape (Note [Eager tape]): grad enabled and an input
  // that requires grad. Nothing else is looked at, so an untraced call pays a few loads.
  static bool tracing(const Context& c, std::span<const EagerTensor* const> inputs) noexcept {
    for (const EagerTensor* t : inputs) {
      if (t->ad_ && (c.grad_ || t->ad_->traced)) return true;
    }
    return false;
  }
  static bool tracing(const Context& c, std::initializer_list<const EagerTensor*> inputs) noexcept {
    return tracing(c, std::span<const EagerTensor* const>(inputs.begin(), inputs.size()));
  }
  // Attaches a record to a successful inexact result: `build` re-emits the op over
  // program values of `inputs` (it must own everything it captures).
  // `vjp`: the op's direct reverse rule, if it has one (Note [Eager direct backward]).
  static Result<EagerTensor> record(Result<EagerTensor> r, std::span<const EagerTensor* const> inputs, const char* op,
                                    AdNode::Build build, AdNode::Vjp vjp = {});
  static Result<EagerTensor> record(Result<EagerTensor> r, std::initializer_list<const EagerTensor*> inputs,
                                    const char* op, AdNode::Build build, AdNode::Vjp vjp = {}) {
    return record(std::move(r), std::span<const EagerTensor* const>(inputs.begin(), inputs.size()), op,
                  std::move(build), std::move(vjp));
  }
  // Records every inexact result k of a multi-output op as output k of `form`.
  static void record_outputs(std::vector<EagerTensor>& results, std::span<const EagerTensor* const> inputs,
                             const char* op, Context::ProgramForm form);
  // Marks the results of an op that has no program form (and so no AD rule yet); `why`
  // replaces the default reason a backward through them reports.
  static void record_unsupported(std::vector<EagerTensor>& results, std::span<const EagerTensor* const> inputs,
                                 const char* op, std::string why = {});
  static EagerRuntime::Counters& counters(EagerRuntime& rt) noexcept { return *rt.counters_; }
  static einsum::PlanCache& einsum_plans(EagerRuntime& rt) noexcept { return *rt.einsum_plans_; }
  static Context session_context(const Context& c, int32_t domain, cpu::CpuExecutionContext* ctx) {
    Context s = c;
    s.domain_ = domain;
    s.session_ = ctx;
    return s;
  }
};

}  // namespace tenferro::eager
