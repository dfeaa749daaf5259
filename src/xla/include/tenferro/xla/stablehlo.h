#pragma once
/// \file
/// Lowering of compiled graphs to StableHLO text (ARCHITECTURE §2, module `xla`): an MLIR
/// module with one `func.func` whose body is StableHLO ops in MLIR's generic form, for
/// consumers such as XLA (PJRT), IREE or JAX's tooling. Design: docs/design/0012-stablehlo.md.
///
/// Core ops lower one-to-one where StableHLO has the op and to short exact sequences
/// where it does not (column-major reshape, conj, extract_diag/embed_diag, tril/triu);
/// extension ops lower through a family lowering installed in StableHloLowerings (fft)
/// or through the extension's own core lowering (einsum); anything else is a typed
/// kUnsupported error naming the op. Shapes are static: a program with symbolic extents
/// is lowered for the input shapes given in the options.

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/dtype.h"
#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"
#include "tenferro/program/extension.h"
#include "tenferro/program/program.h"

namespace tenferro::xla {

/// A static tensor type: element type and extents (row-major in StableHLO's sense: the
/// extents are the program value's, in the same axis order).
struct TensorType {
  DType dtype = DType::kF64;
  std::vector<int64_t> shape;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// The MLIR spelling of a type: `tensor<2x3xf64>`, `tensor<complex<f32>>`, `tensor<4xi1>`.
std::string type_text(const TensorType& type);

/// An SSA value of the function being emitted (its name, e.g. "%7" or "%arg0", and type).
struct HloValue {
  std::string name;
  TensorType type;
};

/// Writes the body of one function: numbered SSA values, one op per line, in MLIR's
/// generic op form. Used by the core lowering and by family lowerings. Not thread-safe
/// (one per lowering). Every method writes exactly the ops it names; none fails (the
/// caller has checked types).
class Emitter {
 public:
  /// `%N = "stablehlo.NAME"(operands) {attrs} : (operand types) -> result type`. `attrs`
  /// is the text between the braces (empty: no attribute dictionary).
  HloValue op(std::string_view name, std::span<const HloValue> operands, std::string_view attrs,
              const TensorType& result);
  HloValue op(std::string_view name, std::initializer_list<HloValue> operands, std::string_view attrs,
              const TensorType& result) {
    return op(name, std::span<const HloValue>(operands.begin(), operands.size()), attrs, result);
  }
  /// A constant of `type` with every element `value` (real part for real types; `!= 0`
  /// for bool; integers truncated).
  HloValue splat(const TensorType& type, c128 value);
  /// A constant of `type` from column-major `bytes` (dtype_size(type.dtype) per
  /// element). With a rank-0 `type` and a non-empty `splat_shape`: that one element
  /// repeated over `splat_shape`.
  HloValue literal(const TensorType& type, const uint8_t* bytes, std::span<const int64_t> splat_shape = {});
  /// `x` with its axes permuted (result axis i = operand axis perm[i]); `x` itself for
  /// the identity.
  HloValue transpose(const HloValue& x, std::span<const int64_t> perm);
  /// `x` converted to `dtype` (`x` itself when it already has it). Complex to real keeps
  /// the real part; anything to bool is `!= 0` (the semantics of the core op convert).
  HloValue convert(const HloValue& x, DType dtype);
  /// A reduce-like op with a one-op body: `%N = "stablehlo.NAME"(operands) ({ ^bb0(a, b):
  /// BODY(a, b) }) {attrs}`, where BODY is the stablehlo op `body` on scalars of
  /// `element` (add, multiply, maximum, minimum, or).
  HloValue with_body(std::string_view name, std::span<const HloValue> operands, std::string_view body, DType element,
                     std::string_view attrs, const TensorType& result);

  /// The positions that sort `x` along `dimension` (an i64 tensor of x's shape): a stable
  /// `stablehlo.sort` of x and an iota whose comparator is x's less-than with NaN last
  /// (floating types), keeping the iota (the core op argsort).
  HloValue sort_positions(const HloValue& x, int64_t dimension);

  /// The text written so far (the function body, indented, without the return).
  const std::string& text() const noexcept { return body_; }

 private:
  std::string fresh();
  // One op line: `result_name = "stablehlo.NAME"(operands)REGION {attrs} : (...) -> result`.
  void write(const std::string& result_name, std::string_view name, std::span<const HloValue> operands,
             std::string_view region, std::string_view attrs, const TensorType& result);
  std::string body_;
  int64_t next_ = 0;
};

/// `array<i64: 1, 0>` (empty: `array<i64>`).
std::string i64_array(std::span<const int64_t> v);
/// `[1, 0]` (for the fields of #stablehlo.dot / gather / scatter attributes).
std::string dim_list(std::span<const int64_t> v);

/// How one extension family's ops become StableHLO: emits the op's results for its
/// operands (one HloValue per result, of the types the program infers). Returns
/// kUnsupported for payloads it cannot lower.
using ExtensionLowering = std::function<Result<std::vector<HloValue>>(Emitter& emitter, const program::ExtensionOp& op,
                                                                      std::span<const HloValue> operands,
                                                                      std::span<const TensorType> results)>;

/// An explicit table of family lowerings (family id -> lowering), owned by the caller;
/// never global. Families that lower to core ops need no entry.
class StableHloLowerings {
 public:
  /// Errors: kInvalidArgument when the family already has a lowering.
  Result<void> add(std::string family_id, ExtensionLowering lowering);
  const ExtensionLowering* find(std::string_view family_id) const;

 private:
  std::map<std::string, ExtensionLowering, std::less<>> lowerings_;
};

/// Options of lower_to_stablehlo.
struct StableHloOptions {
  std::string module_name = "tenferro";  ///< `module @NAME`
  std::string function_name = "main";    ///< `func.func public @NAME`
  /// One shape per program input, in input order (bindings included), binding the
  /// program's symbols; every shape guard is checked. Empty: every extent of the program
  /// must be exact.
  std::vector<Shape> input_shapes;
  /// false: binding inputs are function arguments like the others (the caller passes the
  /// binding tensors, see StableHloModule::argument_is_binding). true: their tensors are
  /// embedded as constants and the function takes only the argument inputs.
  bool inline_bindings = false;
  /// Family lowerings consulted before an extension's own core lowering (nullptr: none).
  const StableHloLowerings* lowerings = nullptr;
};

/// A lowered module.
struct StableHloModule {
  std::string text;  ///< the MLIR module
  /// One entry per function argument: true when it is a binding input (its tensor is in
  /// CompiledGraph::bindings, in order).
  std::vector<bool> argument_is_binding;
  std::vector<TensorType> argument_types;
  std::vector<TensorType> result_types;
};

/// Lowers `graph` to a StableHLO module whose function takes the program's inputs (all,
/// or the argument inputs with inline_bindings) and returns its outputs, with the core
/// ops' semantics (Note [Core op semantics] in ops.cc; where StableHLO leaves a result
/// implementation-defined — integer division by zero, out-of-range float-to-integer
/// conversion — the consumer's rule applies). Thread-safe.
/// Errors: those of SemanticProgram::bind_shapes (kPrepare: input shape count, a guard, a
/// bound); kUnsupported (kCompile stage) for a program with symbolic extents and no
/// input shapes, and for an extension op with neither a family lowering nor a core
/// lowering (the message names the family and payload); kInvalidArgument for empty or
/// non-identifier module/function names and for inline_bindings without binding
/// tensors; kOverflow for an inlined binding of more than 2^24 elements.
Result<StableHloModule> lower_to_stablehlo(const program::CompiledGraph& graph, const StableHloOptions& options = {});

}  // namespace tenferro::xla
