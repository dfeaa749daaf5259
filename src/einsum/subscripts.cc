#include "tenferro/einsum/subscripts.h"

#include <algorithm>
#include <map>

namespace tenferro::einsum {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

Error parse_error(size_t pos, std::string what) {
  return usage_error(ErrorCode::kParse, "einsum", what + " at byte " + s(static_cast<int64_t>(pos)));
}

// Decodes one UTF-8 code point at `pos`; returns its length, 0 when malformed.
size_t decode_utf8(std::string_view t, size_t pos, int32_t* cp) {
  const auto b0 = static_cast<unsigned char>(t[pos]);
  size_t len = 0;
  int32_t v = 0;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    v = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    v = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    v = b0 & 0x07;
  } else {
    return 0;
  }
  if (pos + len > t.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(t[pos + k]);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3F);
  }
  // Overlong forms and surrogates are not code points.
  if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
      (v >= 0xD800 && v <= 0xDFFF)) {
    return 0;
  }
  *cp = v;
  return len;
}

void append_utf8(std::string& out, int32_t cp) {
  const auto u = static_cast<uint32_t>(cp);
  if (u < 0x80) {
    out.push_back(static_cast<char>(u));
  } else if (u < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (u >> 6)));
    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
  } else if (u < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (u >> 12)));
    out.push_back(static_cast<char>(0x80 | ((u >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (u >> 18)));
    out.push_back(static_cast<char>(0x80 | ((u >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((u >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (u & 0x3F)));
  }
}

bool is_space(int32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

Result<Subscripts> parse_subscripts(std::string_view text) {
  Subscripts out;
  Term cur;
  bool in_output = false;
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t cp = 0;
    const size_t len = decode_utf8(text, pos, &cp);
    if (len == 0) return parse_error(pos, "invalid UTF-8");
    if (is_space(cp)) {
      pos += len;
      continue;
    }
    if (cp == ',') {
      if (in_output) return parse_error(pos, "',' in the output term");
      out.inputs.push_back(std::move(cur));
      cur = Term{};
      pos += 1;
      continue;
    }
    if (cp == '-') {
      if (pos + 1 >= text.size() || text[pos + 1] != '>') return parse_error(pos, "'-' not followed by '>'");
      if (in_output) return parse_error(pos, "a second \"->\"");
      out.inputs.push_back(std::move(cur));
      cur = Term{};
      in_output = true;
      pos += 2;
      continue;
    }
    if (cp == '>') return parse_error(pos, "'>' without '-'");
    if (cp == '.') {
      if (text.substr(pos, 3) != "...") return parse_error(pos, "'.' that does not start \"...\"");
      if (cur.ellipsis >= 0) return parse_error(pos, "a second ellipsis in one term");
      cur.ellipsis = static_cast<int32_t>(cur.labels.size());
      pos += 3;
      continue;
    }
    cur.labels.push_back(cp);
    pos += len;
  }
  if (in_output) {
    out.output = std::move(cur);
  } else {
    out.inputs.push_back(std::move(cur));
  }
  return out;
}

int64_t EinsumSpec::extent(Label label) const {
  auto it = std::lower_bound(extents.begin(), extents.end(), std::make_pair(label, int64_t{0}),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  return it != extents.end() && it->first == label ? it->second : 0;
}

namespace {

Result<EinsumSpec> finish(std::vector<std::vector<Label>> inputs, std::optional<std::vector<Label>> output,
                          std::span<const Shape> shapes, int64_t max_ellipsis) {
  EinsumSpec spec;
  std::map<Label, int64_t> extent;
  std::map<Label, int64_t> count;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& labels = inputs[i];
    const Shape& shape = shapes[i];
    for (size_t a = 0; a < labels.size(); ++a) {
      const Label l = labels[a];
      const int64_t e = shape[a];
      count[l]++;
      auto [it, fresh] = extent.emplace(l, e);
      if (!fresh && it->second != e) {
        if (it->second == 1) {
          it->second = e;
        } else if (e != 1) {
          return usage_error(ErrorCode::kShapeMismatch, "einsum",
                             "label '" + format_label(l) + "' has extent " + s(it->second) +
                                 " in one place and " + s(e) + " in operand " + s(static_cast<int64_t>(i)) +
                                 " (axis " + s(static_cast<int64_t>(a)) + ")");
        }
      }
    }
  }
  if (output) {
    for (Label l : *output) {
      if (!extent.count(l)) {
        return usage_error(ErrorCode::kInvalidArgument, "einsum",
                           "output label '" + format_label(l) + "' occurs in no operand");
      }
    }
    spec.output = std::move(*output);
  } else {
    // numpy: ellipsis dimensions first, then the labels occurring exactly once, sorted.
    for (int64_t k = max_ellipsis; k >= 1; --k) spec.output.push_back(static_cast<Label>(-k));
    for (const auto& [l, c] : count) {
      if (l >= 0 && c == 1) spec.output.push_back(l);
    }
  }
  spec.inputs = std::move(inputs);
  spec.extents.assign(extent.begin(), extent.end());
  return spec;
}

Result<void> check_count(size_t terms, size_t shapes) {
  if (terms != shapes) {
    return usage_error(ErrorCode::kInvalidArgument, "einsum",
                       "the subscripts have " + s(static_cast<int64_t>(terms)) + " operand terms but " +
                           s(static_cast<int64_t>(shapes)) + " operands were given");
  }
  return ok();
}

}  // namespace

Result<EinsumSpec> resolve(const Subscripts& subscripts, std::span<const Shape> shapes) {
  TENFERRO_TRY_VOID(check_count(subscripts.inputs.size(), shapes.size()));
  std::vector<std::vector<Label>> inputs;
  int64_t max_ell = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Term& t = subscripts.inputs[i];
    const int64_t rank = shapes[i].ssize();
    for (int64_t e : shapes[i]) {
      if (e < 0) {
        return usage_error(ErrorCode::kInvalidShape, "einsum",
                           "operand " + s(static_cast<int64_t>(i)) + " has a negative extent " + s(e));
      }
    }
    const int64_t named = static_cast<int64_t>(t.labels.size());
    if ((t.ellipsis < 0 && named != rank) || (t.ellipsis >= 0 && named > rank)) {
      return usage_error(ErrorCode::kInvalidShape, "einsum",
                         "operand " + s(static_cast<int64_t>(i)) + " has rank " + s(rank) + " but its term names " +
                             s(named) + " axes" + (t.ellipsis >= 0 ? " plus an ellipsis" : ""));
    }
    std::vector<Label> labels;
    const int64_t n_ell = t.ellipsis >= 0 ? rank - named : 0;
    max_ell = std::max(max_ell, n_ell);
    for (int64_t a = 0; a <= named; ++a) {
      if (a == t.ellipsis) {
        for (int64_t k = n_ell; k >= 1; --k) labels.push_back(static_cast<Label>(-k));
      }
      if (a < named) labels.push_back(t.labels[static_cast<size_t>(a)]);
    }
    inputs.push_back(std::move(labels));
  }
  std::optional<std::vector<Label>> output;
  if (subscripts.output) {
    const Term& t = *subscripts.output;
    std::vector<Label> labels;
    const int64_t named = static_cast<int64_t>(t.labels.size());
    for (int64_t a = 0; a <= named; ++a) {
      if (a == t.ellipsis) {
        for (int64_t k = max_ell; k >= 1; --k) labels.push_back(static_cast<Label>(-k));
      }
      if (a < named) labels.push_back(t.labels[static_cast<size_t>(a)]);
    }
    output = std::move(labels);
  }
  return finish(std::move(inputs), std::move(output), shapes, max_ell);
}

Result<EinsumSpec> make_spec(const std::vector<std::vector<Label>>& inputs, const std::vector<Label>& output,
                             std::span<const Shape> shapes) {
  TENFERRO_TRY_VOID(check_count(inputs.size(), shapes.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (static_cast<int64_t>(inputs[i].size()) != shapes[i].ssize()) {
      return usage_error(ErrorCode::kInvalidShape, "einsum",
                         "operand " + s(static_cast<int64_t>(i)) + " has rank " + s(shapes[i].ssize()) + " but " +
                             s(static_cast<int64_t>(inputs[i].size())) + " labels");
    }
    for (Label l : inputs[i]) {
      if (l < 0) return usage_error(ErrorCode::kInvalidArgument, "einsum", "label " + s(l) + " is negative");
    }
  }
  for (Label l : output) {
    if (l < 0) return usage_error(ErrorCode::kInvalidArgument, "einsum", "output label " + s(l) + " is negative");
  }
  return finish(inputs, output, shapes, 0);
}

std::string format_label(Label label) {
  if (label < 0) return std::string("..").append(s(-label - 1));
  std::string out;
  if (label < 0x110000 && !(label >= 0xD800 && label <= 0xDFFF) && label >= 0x21 && label != ',' && label != '-' &&
      label != '>' && label != '.') {
    append_utf8(out, label);
  } else {
    out = std::string("#").append(s(label));
  }
  return out;
}

std::string format_spec(const EinsumSpec& spec) {
  std::string out;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (i > 0) out.push_back(',');
    for (Label l : spec.inputs[i]) out.append(format_label(l));
  }
  out.append("->");
  for (Label l : spec.output) out.append(format_label(l));
  return out;
}

}  // namespace tenferro::einsum
