#pragma once
/// \file
/// Einsum notation (numpy semantics): parsing, ellipsis expansion, implicit output and
/// extent resolution. Part of the planning core, which depends on `core` only.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/core/shape.h"

namespace tenferro::einsum {

/// A label: a Unicode code point (text notation) or any non-negative integer (integer
/// API). Negative labels are reserved for ellipsis dimensions: the k-th dimension from
/// the right of an ellipsis is label -(k + 1), so ellipsis dimensions of different
/// operands broadcast against each other right-aligned, as in numpy.
using Label = int32_t;

/// One operand's (or the output's) subscripts as written: labels in order, and the
/// position in `labels` before which the ellipsis dimensions go (-1 when there is none).
struct Term {
  std::vector<Label> labels;
  int32_t ellipsis = -1;
};

/// Parsed notation: one term per operand and the output term when "->" is present.
struct Subscripts {
  std::vector<Term> inputs;
  std::optional<Term> output;
};

/// Parses numpy einsum notation: terms separated by ',', an optional "->" and output
/// term, "..." for an ellipsis (at most one per term), ASCII whitespace ignored. The text
/// is UTF-8 and every other code point is a label (so "αβ,βγ->αγ" has three labels).
/// Errors (kParse, naming the byte position): invalid UTF-8, a lone '.', '-' without
/// '>', a second "->", a second ellipsis in one term, ',' in the output, no operands.
Result<Subscripts> parse_subscripts(std::string_view text);

/// A resolved einsum: each operand's label per axis (ellipsis expanded), the output
/// labels, and the extent of every label.
struct EinsumSpec {
  std::vector<std::vector<Label>> inputs;
  std::vector<Label> output;
  /// (label, extent) sorted by label. An extent is the broadcast of the operands'
  /// extents for that label: all equal, or 1 where an operand broadcasts.
  std::vector<std::pair<Label, int64_t>> extents;

  /// Extent of `label` (which must occur in the spec).
  int64_t extent(Label label) const;
};

/// Expands ellipses against the operand ranks, derives the implicit output (numpy: the
/// ellipsis dimensions, then the labels that occur exactly once, sorted) and resolves
/// extents. Errors: kInvalidArgument (operand count differs from the term count, an
/// output label that no operand has), kInvalidShape (term length vs rank), kShapeMismatch
/// (two extents of one label that differ and are not 1).
Result<EinsumSpec> resolve(const Subscripts& subscripts, std::span<const Shape> shapes);

/// Integer-label API: operand labels per axis and output labels given directly (no
/// ellipsis; labels must be >= 0). Same errors as resolve.
Result<EinsumSpec> make_spec(const std::vector<std::vector<Label>>& inputs, const std::vector<Label>& output,
                             std::span<const Shape> shapes);

/// A label as text: the UTF-8 code point, "..k" for ellipsis dimension k.
std::string format_label(Label label);
/// "ab,bc->ac"-style text of a spec (ellipsis dimensions written as "..k").
std::string format_spec(const EinsumSpec& spec);

}  // namespace tenferro::einsum
