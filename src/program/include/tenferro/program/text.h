#pragma once
/// \file
/// The text form of semantic programs: a readable, stable format with an exact round
/// trip (parse(print(p)) is structurally equal to p, with the same fingerprint, names
/// and provenance). Grammar: Note [Program text] in text.cc.

#include <span>
#include <string>
#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/program/program.h"

namespace tenferro::program {

/// Prints `program` (values numbered %0, %1, ... in print order). Thread-safe.
std::string print_program(const SemanticProgram& program);
/// Prints a value type: `f64[n, 3]`, `bool[]`.
std::string print_type(const ValueType& type, std::span<const SymbolInfo> symbols);

/// Parses a program. Extension ops are rebuilt through `registry` (nullptr: none
/// allowed); binding inputs take `bindings` in order (types checked). Errors: kParse
/// with "line L, column C" for malformed text; the builder's typed errors (kCompile, with
/// constraint ids) for invalid ops, prefixed with the line. With
/// `placeholder_bindings`, binding inputs beyond `bindings` get read-only zero tensors of
/// their declared type, one element broadcast (stride 0), so no shape allocates (for
/// checking or compiling a program without its data; never use the result for
/// evaluation).
Result<CompiledGraph> parse_program(std::string_view text, const ExtensionRegistry* registry = nullptr,
                                    std::span<const Tensor> bindings = {}, bool placeholder_bindings = false);

}  // namespace tenferro::program
