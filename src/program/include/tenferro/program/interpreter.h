#pragma once
/// \file
/// The reference interpreter: evaluates any frozen program on host tensors with naive,
/// obviously correct loops (Note [Core op semantics] in ops.cc defines each op). It is
/// the oracle for the compiler, the runtime and the engines; it is not fast.

#include <span>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/program/program.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

/// Evaluates `program` on `arguments` (one tensor per argument input, in input order;
/// host tensors of any layout) with `bindings` for its binding inputs. Returns one new
/// compact column-major tensor per output. Shapes are bound and every guard checked
/// before any op runs (SemanticProgram::bind_shapes). Extension ops run their
/// evaluate_reference, or their core lowering when that is kUnsupported. Errors:
/// kInvalidArgument (counts, null tensors), kDTypeMismatch, kShapeMismatch (inputs and
/// guards), kOutOfRange (bounds), kInvalidArgument at completion for integer division
/// by zero or a negative integer exponent. Thread-safe (no shared state).
Result<std::vector<Tensor>> interpret(const SemanticProgram& program, std::span<const Tensor> arguments,
                                      const ProgramBindings& bindings = {});
/// Same, with the graph's own bindings.
Result<std::vector<Tensor>> interpret(const CompiledGraph& graph, std::span<const Tensor> arguments);

}  // namespace tenferro::program
