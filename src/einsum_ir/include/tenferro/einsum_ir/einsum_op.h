#pragma once
/// \file
/// The einsum extension family in programs: an N-ary einsum as one extension op
/// (payload: subscripts and path algorithm), its type inference with symbolic extents,
/// its text form and its lowering to core ops (Note [Einsum lowering] in einsum_op.cc).
/// Engines run it natively through their extension module (cpu_runtime's einsum module);
/// the reference interpreter and engines without a module run the lowering.

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/einsum/path.h"
#include "tenferro/program/extension.h"
#include "tenferro/program/program.h"

namespace tenferro::einsum {

/// The family id of einsum extension ops.
inline constexpr std::string_view kEinsumFamily = "einsum";

/// One einsum op: numpy subscripts (explicit or implicit output, ellipsis, UTF-8 labels)
/// and its contraction path: a deterministic path algorithm (greedy, optimal or
/// left-to-right; searched when an engine prepares the op for concrete shapes) or an
/// explicit tree (kExplicit: the path a caller chose, e.g. by TreeSA). Immutable.
class EinsumOp final : public program::ExtensionOp {
 public:
  /// Validates the subscripts (parse_subscripts). Errors: kParse; kInvalidArgument for
  /// kTreeSA (not deterministic) or kExplicit (use make_explicit).
  static Result<std::shared_ptr<const EinsumOp>> make(std::string subscripts,
                                                      PathAlgorithm algorithm = PathAlgorithm::kGreedy);
  /// An op with an explicit path: `tree` over the subscripts' operands (leaves = their
  /// count, leaves - 1 steps, each contracting two earlier nodes not yet consumed).
  /// Errors: kParse (subscripts), kInvalidArgument (a tree that does not fit).
  static Result<std::shared_ptr<const EinsumOp>> make_explicit(std::string subscripts, ContractionTree tree);
  const std::string& subscripts() const noexcept { return subscripts_; }
  PathAlgorithm algorithm() const noexcept { return algorithm_; }
  /// The explicit path (kExplicit only; empty otherwise).
  const ContractionTree& tree() const noexcept { return tree_; }
  /// The path policy engines plan with.
  PathPolicy policy() const;

  std::string_view family_id() const override { return kEinsumFamily; }
  uint64_t payload_hash() const override;
  bool payload_equal(const ExtensionOp& other) const override;
  /// "SUBSCRIPTS;ALGORITHM", e.g. "ij,jk->ik;greedy", or for an explicit path
  /// "SUBSCRIPTS;explicit:A-B,C-D,..." with the tree's steps as node ids (SSA form:
  /// "ij,jk,kl->il;explicit:1-2,0-3").
  std::string payload_text() const override;
  std::vector<program::Effect> effects() const override { return {}; }
  std::vector<program::Alias> aliases() const override { return {program::Alias{}}; }
  /// Operands of one dtype; every label's extents equal, or exact 1 (broadcast). Symbolic
  /// extents that cannot be decided become shape guards. Errors (kCompile): those of
  /// resolve, kDTypeMismatch.
  Result<std::vector<program::ValueType>> infer(std::span<const program::ValueType> inputs,
                                                std::span<const program::SymbolInfo> symbols,
                                                std::vector<program::PendingGuard>& guards) const override;
  /// Transposes, diagonals, broadcasts, reduces and a dot_general per step of the path;
  /// bool operands run as i64 counts tested for nonzero. kNeedsSpecialization for
  /// symbolic extents; kUnsupported for an output that repeats a label.
  Result<program::LoweringOutcome> lower_to_core(program::ProgramBuilder& builder,
                                                 std::span<const program::Value> inputs) const override;

 private:
  EinsumOp(std::string subscripts, PathAlgorithm algorithm, ContractionTree tree)
      : subscripts_(std::move(subscripts)), algorithm_(algorithm), tree_(std::move(tree)) {}
  std::string subscripts_;
  PathAlgorithm algorithm_;
  ContractionTree tree_;
};

/// Parses an einsum payload ("SUBSCRIPTS;ALGORITHM" or "SUBSCRIPTS;explicit:A-B,...").
/// Errors: kParse, those of make and make_explicit.
Result<std::shared_ptr<const EinsumOp>> parse_einsum_payload(std::string_view payload);

/// Adds the einsum family to a text-format registry. Errors: kInvalidArgument when the
/// registry already has it.
Result<void> register_einsum_family(program::ExtensionRegistry& registry);

/// Emits `subscripts` over `operands` into `builder` (one result).
Result<program::Value> emit_einsum(program::ProgramBuilder& builder, std::string subscripts,
                                   std::span<const program::Value> operands,
                                   PathAlgorithm algorithm = PathAlgorithm::kGreedy);
/// Emits with `policy`'s path: its algorithm, or its explicit tree for kExplicit.
/// Errors: those of make / make_explicit (kTreeSA: pass the tree it found as explicit).
Result<program::Value> emit_einsum(program::ProgramBuilder& builder, std::string subscripts,
                                   std::span<const program::Value> operands, const PathPolicy& policy);

}  // namespace tenferro::einsum
