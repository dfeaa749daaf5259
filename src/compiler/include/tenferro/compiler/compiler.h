#pragma once
/// \file
/// Tracing and target-independent compilation (ARCHITECTURE §2 `compiler`):
/// TraceContext -> TracedGraph -> GraphCompiler -> CompiledGraph, a fixed pass
/// pipeline, custom SemanticTransforms, a bounded compile cache and explain().

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/program/program.h"

namespace tenferro::compiler {

using program::CompiledGraph;
using program::Extent;
using program::ExtensionOp;
using program::Value;
using program::ValueType;

/// An immutable traced graph: the frozen, not yet optimized program and its bindings.
class TracedGraph {
 public:
  const CompiledGraph& graph() const noexcept { return graph_; }
  const program::SemanticProgram& program() const noexcept { return *graph_.program; }

 private:
  friend class TraceContext;
  friend class GraphCompiler;
  explicit TracedGraph(CompiledGraph g) : graph_(std::move(g)) {}
  CompiledGraph graph_;
};

/// Called for every extension op traced (e.g. to validate payloads or fill a trace-time
/// parsing cache); an error aborts that emission.
using ExtensionTraceHook = std::function<Result<void>(const ExtensionOp& op, std::span<const ValueType> inputs)>;

/// Mutable graph construction for frontends. Owns its builder; values are its tokens.
/// Tensors enter only explicitly: as argument inputs, as captures (bindings), or as
/// small constants through constant() with its size policy. Not thread-safe.
class TraceContext {
 public:
  TraceContext() = default;
  Result<Extent> symbol(std::string name, std::optional<int64_t> upper_bound = std::nullopt) {
    return builder_.symbol(std::move(name), upper_bound);
  }
  Result<Value> input(ValueType type, std::string name = {}) { return builder_.input(std::move(type), std::move(name)); }
  /// A binding input holding `tensor` (kept in the graph's bindings, never in the program).
  Result<Value> capture(Tensor tensor, std::string name = {}) { return builder_.capture(std::move(tensor), std::move(name)); }
  /// Constantizes a host tensor into a literal. Errors: kInvalidArgument when it has more
  /// than `max_elements` elements (use capture()).
  Result<Value> constant(const Tensor& tensor, int64_t max_elements = 256);
  Result<Value> op(program::OpCode code, std::span<const Value> operands, program::Attrs attrs = {}) {
    return builder_.op(code, operands, std::move(attrs));
  }
  Result<Value> op(program::OpCode code, std::initializer_list<Value> operands, program::Attrs attrs = {}) {
    return builder_.op(code, operands, std::move(attrs));
  }
  /// Emits an extension op after the trace hook (when set) accepted it.
  Result<std::vector<Value>> extension(std::shared_ptr<const ExtensionOp> op, std::span<const Value> operands);
  void set_extension_hook(ExtensionTraceHook hook) { hook_ = std::move(hook); }
  /// Inlines another traced graph explicitly (graphs never merge implicitly).
  Result<std::vector<Value>> import(const TracedGraph& graph, std::span<const Value> arguments) {
    return builder_.import(graph.graph(), arguments);
  }
  void set_provenance(std::string provenance) { builder_.set_provenance(std::move(provenance)); }
  Result<ValueType> type(Value v) const { return builder_.type(v); }
  /// Freezes the trace (atomic, like ProgramBuilder::finish).
  Result<TracedGraph> finish(std::span<const Value> outputs);
  Result<TracedGraph> finish(std::initializer_list<Value> outputs) {
    return finish(std::span<const Value>(outputs.begin(), outputs.size()));
  }

 private:
  program::ProgramBuilder builder_;
  ExtensionTraceHook hook_;
};

/// A custom compiler transform: reads a program, returns a new validated one (built
/// through a ProgramBuilder, so it is validated by construction). It must not change the
/// input signature (inputs, their order and roles) or the number and types of outputs.
/// Its id and config hash are part of the compile cache key. Thread-safe.
class SemanticTransform {
 public:
  virtual ~SemanticTransform() = default;
  virtual std::string_view id() const = 0;
  virtual uint64_t config_hash() const { return 0; }
  virtual Result<CompiledGraph> apply(const CompiledGraph& input) const = 0;
};

/// The passes of the fixed pipeline, in order (Note [Compiler pipeline] in compiler.cc).
enum class PassId : uint8_t { kNormalize, kInfer, kEffects, kCanonicalize, kCse, kDce, kPruneExtensions, kValidate };
inline constexpr int kPassCount = 8;
std::string_view pass_name(PassId pass) noexcept;

/// What a pass did: the rewritten graph and one line per change.
struct PassResult {
  CompiledGraph graph;
  std::vector<std::string> changes;
};
/// Runs one pass of the fixed pipeline on `graph` (used by tests and explain()).
Result<PassResult> run_pass(PassId pass, const CompiledGraph& graph);

/// Options of a compilation; all of it is part of the compile cache key.
struct CompilerOptions {
  bool canonicalize = true;  ///< identity removal, folding, exact algebraic simplification
  bool cse = true;
  bool dce = true;
  bool prune_extension_outputs = true;
  /// Custom transforms, run in order after canonicalization (Note [Compiler pipeline]).
  std::vector<std::shared_ptr<const SemanticTransform>> transforms;
  std::string key() const;
};

/// The result of explain(): the compiled graph plus a readable report.
struct CompileReport {
  CompiledGraph graph;
  std::string text;  ///< per pass what changed, then each op with its provenance
};

/// The pure semantic compiler with a bounded compile cache (LRU, keyed by traced
/// fingerprint + options, exact structural equality inside a fingerprint bucket).
/// Thread-safe. Compilation is deterministic.
class GraphCompiler {
 public:
  explicit GraphCompiler(size_t capacity = 128) : capacity_(capacity) {}
  struct Stats {
    int64_t hits = 0, misses = 0, evictions = 0, entries = 0, retained_bytes = 0;
    size_t capacity = 0;
  };
  /// Compiles (or returns the cached result for a structurally equal traced program and
  /// equal options). The result carries `traced`'s own bindings. Errors: those of the
  /// passes and transforms (kCompile), kInvalidArgument when a transform changes the
  /// signature.
  Result<CompiledGraph> compile(const TracedGraph& traced, const CompilerOptions& options = {});
  /// Compiles without the cache and reports what each pass changed.
  Result<CompileReport> explain(const TracedGraph& traced, const CompilerOptions& options = {}) const;
  /// Compiles an already frozen graph (e.g. parsed from text).
  Result<CompiledGraph> compile(const CompiledGraph& graph, const CompilerOptions& options = {});
  Result<CompileReport> explain(const CompiledGraph& graph, const CompilerOptions& options = {}) const;
  Stats stats() const;
  void clear();

 private:
  friend struct CompilerTestHook;
  struct Entry {
    std::shared_ptr<const program::SemanticProgram> traced;
    std::string options_key;
    std::shared_ptr<const program::SemanticProgram> compiled;
  };
  program::Fingerprint key_fingerprint(const program::SemanticProgram& p) const;
  Result<CompileReport> run_pipeline(const CompiledGraph& graph, const CompilerOptions& options, bool report) const;

  mutable std::mutex mu_;
  size_t capacity_;
  std::list<Entry> lru_;  // most recent first
  std::optional<program::Fingerprint> forced_fingerprint_;
  Stats stats_;
};

/// Test-only: make every program hash to `fp` inside `compiler`'s cache, so lookups must
/// be resolved by exact structural equality.
struct CompilerTestHook {
  static void force_fingerprint(GraphCompiler& c, program::Fingerprint fp) { c.forced_fingerprint_ = fp; }
};

}  // namespace tenferro::compiler
