#pragma once
/// \file
/// Extension operations: the carrier for op families outside the core vocabulary
/// (einsum, linalg, fft, user families), with explicit effects and aliases.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/program/ops.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

class ProgramBuilder;
class Value;

/// Access of an effect to a resource.
enum class EffectAccess : uint8_t { kRead, kWrite };
/// An observable effect beyond returned values: `access` to the typed resource `kind`
/// (e.g. "rng", "host_callback", "external_buffer") named `name`. Effects on different
/// resources are independent.
struct Effect {
  std::string kind;
  std::string name;
  EffectAccess access = EffectAccess::kRead;
  friend bool operator==(const Effect&, const Effect&) = default;
};

/// How an extension output relates to memory of its inputs (spec "Effects and aliases").
enum class AliasKind : uint8_t {
  kFresh,          ///< a new value
  kViewOf,         ///< may share memory with input `input` (read-only view)
  kMustAlias,      ///< is input `input` updated in place (needs functionalization)
  kExternalAlias,  ///< aliases external memory named `external`
};
struct Alias {
  AliasKind kind = AliasKind::kFresh;
  int32_t input = -1;
  std::string external;
  friend bool operator==(const Alias&, const Alias&) = default;
};
std::string_view alias_kind_name(AliasKind k) noexcept;

/// Result of ExtensionOp::lower_to_core.
struct LoweringOutcome {
  enum class Kind : uint8_t { kLowered, kNeedsSpecialization, kUnsupported };
  Kind kind = Kind::kUnsupported;
  std::vector<Value> values;  ///< kLowered: one per extension output
  std::string reason;         ///< kNeedsSpecialization: what is needed; kUnsupported: why
};

/// One extension operation instance (a family id plus an immutable payload). Implement
/// every pure virtual: effects and aliases have no default, so an extension can never
/// silently be treated as pure. Instances are immutable and shared between programs;
/// every method must be thread-safe.
class ExtensionOp {
 public:
  virtual ~ExtensionOp() = default;
  /// Stable family identity, e.g. "einsum", "test.scale".
  virtual std::string_view family_id() const = 0;
  /// Hash of the payload (equal payloads hash equally).
  virtual uint64_t payload_hash() const = 0;
  /// Exact payload equality; `other` has the same family id.
  virtual bool payload_equal(const ExtensionOp& other) const = 0;
  /// Payload in text form (must parse back through the family's ExtensionRegistry entry
  /// to an equal payload). Must not contain a newline.
  virtual std::string payload_text() const = 0;
  /// Declared effects (empty for a pure op; the declaration is mandatory).
  virtual std::vector<Effect> effects() const = 0;
  /// One alias declaration per output.
  virtual std::vector<Alias> aliases() const = 0;
  /// Output types from input types. May append shape guards like core inference.
  virtual Result<std::vector<ValueType>> infer(std::span<const ValueType> inputs, std::span<const SymbolInfo> symbols,
                                               std::vector<PendingGuard>& guards) const = 0;
  /// Optional lowering: emits core ops only (the builder is in lowering mode and rejects
  /// extension ops) and returns one value per output. Default: kUnsupported.
  virtual Result<LoweringOutcome> lower_to_core(ProgramBuilder& builder, std::span<const Value> inputs) const;
  /// Optional reference evaluation for the interpreter (naive loops). Default: kUnsupported
  /// (the interpreter then tries lower_to_core).
  virtual Result<std::vector<Tensor>> evaluate_reference(std::span<const Tensor> inputs) const;
  /// Optional output pruning (a pure semantic rewrite used by the compiler): an op that
  /// computes only the outputs with `used[i]`, or nullptr when it cannot prune.
  virtual std::shared_ptr<const ExtensionOp> prune_outputs(std::span<const bool> used) const;
};

/// Explicit table of extension families for the text parser: family id -> a function
/// that rebuilds an op from its payload text. Owned by the caller, never global.
class ExtensionRegistry {
 public:
  using Parser = std::function<Result<std::shared_ptr<const ExtensionOp>>(std::string_view payload)>;
  /// Errors: kInvalidArgument when the family is already registered.
  Result<void> add(std::string family_id, Parser parser);
  const Parser* find(std::string_view family_id) const;

 private:
  std::map<std::string, Parser, std::less<>> parsers_;
};

}  // namespace tenferro::program
