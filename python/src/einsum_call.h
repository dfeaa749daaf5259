#pragma once
// How the binding plans and runs one einsum call (module.cc), and the einsum entry point
// that serves repeated small calls from a per-engine call cache (einsum_call.cc).

#include <pybind11/pybind11.h>

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine.h"
#include "tenferro/core/function_ref.h"
#include "tenferro/einsum/path.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::python {

namespace py = pybind11;

// Note [Python fast path]: a call's fixed cost is what small-tensor users feel, so a plan
// whose work is below kInlineFlops runs on the calling thread with the GIL held and a
// sequential context (no executor entry, no GIL hand-off: each costs more than such a
// product); larger ones release the GIL and enter the engine's domain with all its
// threads. `tenferro.einsum` itself is a C function (Note [Python call cache]): numpy's
// string form with ndarray operands of one supported dtype, whose plan is inline and
// seen before, runs without any Python-level code; every other call goes on to the
// Python layer (promotion, array-likes, interleaved form, out=, threads=, eager tensors),
// which plans and runs through the functions below.
constexpr double kInlineFlops = 16384;

/// The path policy of numpy's `optimize` argument: "greedy" | "optimal" | "treesa" |
/// "left-to-right" | a list of index tuples. ValueError for anything else.
einsum::PathPolicy path_policy(const py::object& optimize, size_t operands);

/// The plan for `subscripts` over `operands` through the engine's plan cache, for the
/// memory order the operands fit (einsum::preferred_operand_order, Note [Row-major
/// operands] in einsum.cc). Releases the GIL only for a plan-cache miss. Raises the
/// translated tenferro error for bad subscripts or shapes.
std::shared_ptr<const einsum::EinsumPlan> plan_for(Engine& e, std::string_view subscripts,
                                                   std::span<const Tensor> operands, DType dtype,
                                                   const einsum::PathPolicy& policy);

/// Runs `body` the way Note [Python fast path] says for `plan`: on the calling thread with
/// a sequential context and the GIL held below kInlineFlops, else with the GIL released
/// in the engine's domain with all its threads. The one place that decision is made.
Result<void> run_plan_body(Engine& e, const einsum::EinsumPlan& plan,
                           FunctionRef<Result<void>(const cpu::CpuExecutionContext&)> body);

/// Runs `plan` on `operands` into `dst`, or into a new `result` when `dst` is null:
/// inline with the GIL held below kInlineFlops, else with the GIL released on the engine's
/// domain; the workspace comes from the engine's WorkspacePool.
Result<void> execute(Engine& e, const std::shared_ptr<const einsum::EinsumPlan>& plan, std::span<const Tensor> operands,
                     Tensor* dst, Tensor& result);

/// The numpy result for `t`: an array over its buffer, or a numpy scalar for rank 0.
py::object scalar_or_array(const Tensor& t);

/// Binds `make_einsum(general, default_engine, doc) -> einsum`: the C entry point that
/// serves cached calls itself and passes every other call, arguments unchanged, to
/// `general` (the Python layer's einsum); `default_engine()` gives the engine of calls
/// without `engine=`.
void bind_einsum_entry(py::module_& m);

}  // namespace tenferro::python
