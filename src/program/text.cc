#include "tenferro/program/text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>

namespace tenferro::program {

// Note [Program text]: one item per line inside `program { ... }`:
//   symbol NAME [<= BOUND]
//   symbol NAME = max(0, EXTENT)        (derived symbol, Note [Derived symbols])
//   %N = input "NAME" : TYPE            (argument input)
//   %N = binding "NAME" : TYPE          (binding input; tensor supplied to the parser)
//   %N = OP(%A, %B) {key=value, ...} : TYPE [loc("PROVENANCE")]
//   %N, %M = extension "FAMILY" "PAYLOAD"(%A) {effects=[...], aliases=[...]} : TYPE, TYPE [loc(...)]
//   guard EXTENT (==|<=) EXTENT "CONSTRAINT"
//   output %A, %B
// TYPE is `dtype[e0, e1, ...]`; an extent is an integer polynomial over symbols
// (`2*n + 1`). Attribute values are integers, integer lists `[1, 2]`, extent lists,
// dtype / direction / reduce names, or a literal `f64[2]{1.5, -2}` (column-major
// elements; complex `(re, im)`; `nan`, `inf`). Floats print with enough digits to round
// trip. Comments run from `#` to the end of a line. Values are renumbered in print
// order; the numbering is not semantic (Note [Program identity]).

namespace {

std::string s(int64_t v) { return std::to_string(v); }

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string format_double(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  std::string out = buf;
  // Make floats recognizable as such (1 -> 1.0) for readers; the parser accepts both.
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

std::string format_element(const Literal& l, int64_t i) {
  const uint8_t* p = l.bytes.data() + static_cast<size_t>(i * dtype_size(l.dtype));
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (l.dtype) {
    case DType::kBool: return get(bool{}) ? "true" : "false";
    case DType::kI32: return s(get(int32_t{}));
    case DType::kI64: return s(get(int64_t{}));
    case DType::kF32: return format_double(static_cast<double>(get(float{})), 9);
    case DType::kF64: return format_double(get(double{}), 17);
    case DType::kC64: {
      const c64 v = get(c64{});
      return "(" + format_double(static_cast<double>(v.real()), 9) + ", " + format_double(static_cast<double>(v.imag()), 9) + ")";
    }
    case DType::kC128: {
      const c128 v = get(c128{});
      return "(" + format_double(v.real(), 17) + ", " + format_double(v.imag(), 17) + ")";
    }
  }
  return "?";
}

std::string int_list(std::span<const int64_t> v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(s(v[i]));
  return out + "]";
}

std::string extent_list(std::span<const Extent> v, std::span<const SymbolInfo> syms) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out.append(i ? ", " : "").append(v[i].to_string(syms));
  return out + "]";
}

std::string format_literal(const Literal& l) {
  std::string out(dtype_name(l.dtype));
  out += int_list(l.shape);
  out += "{";
  for (int64_t i = 0; i < l.element_count(); ++i) out.append(i ? ", " : "").append(format_element(l, i));
  return out + "}";
}

std::string format_attr(AttrKey k, const Attrs& a, std::span<const SymbolInfo> syms) {
  return std::visit(
      [&](const auto* f) -> std::string {
        using F = std::remove_cvref_t<decltype(*f)>;
        if constexpr (std::is_same_v<F, std::vector<int64_t>>) {
          return int_list(*f);
        } else if constexpr (std::is_same_v<F, std::vector<Extent>>) {
          return extent_list(*f, syms);
        } else if constexpr (std::is_same_v<F, int64_t>) {
          return s(*f);
        } else if constexpr (std::is_same_v<F, DType>) {
          return std::string(dtype_name(*f));
        } else if constexpr (std::is_same_v<F, CompareDirection>) {
          return std::string(compare_direction_name(*f));
        } else if constexpr (std::is_same_v<F, ReduceKind>) {
          return std::string(reduce_kind_name(*f));
        } else {
          return *f ? format_literal(**f) : "none";
        }
      },
      attr_field(a, k));
}

}  // namespace

std::string print_type(const ValueType& type, std::span<const SymbolInfo> symbols) {
  return std::string(dtype_name(type.dtype)).append(extent_list(type.shape, symbols));
}

std::string print_program(const SemanticProgram& p) {
  std::unordered_map<ValueRef, int64_t> num;
  int64_t next = 0;
  auto name = [&](ValueRef v) { return std::string("%").append(s(num.at(v))); };
  const auto syms = p.symbols();
  std::string out = "program {\n";
  for (const SymbolInfo& sym : syms) {
    out.append("  symbol ").append(sym.name);
    if (sym.max0_of) {
      out.append(" = max(0, ").append(sym.max0_of->to_string(syms)).append(")");
    } else if (sym.upper_bound) {
      out.append(" <= ").append(s(*sym.upper_bound));
    }
    out += "\n";
  }
  for (const InputInfo& in : p.inputs()) {
    num[in.value] = next++;
    out.append("  ").append(name(in.value)).append(in.binding ? " = binding " : " = input ").append(quote(in.name));
    out.append(" : ").append(print_type(p.type(in.value), syms)).append("\n");
  }
  for (const Operation& op : p.ops()) {
    std::string lhs;
    for (ValueRef r : op.results()) {
      num[r] = next++;
      lhs.append(lhs.empty() ? "" : ", ").append(name(r));
    }
    out.append("  ").append(lhs).append(" = ");
    std::string attrs;
    if (const ExtensionOp* ext = op.extension()) {
      out.append("extension ").append(quote(ext->family_id())).append(" ").append(quote(ext->payload_text()));
      attrs = "effects=[";
      const auto effects = ext->effects();
      for (size_t i = 0; i < effects.size(); ++i) {
        attrs.append(i ? ", " : "").append(effects[i].access == EffectAccess::kRead ? "read " : "write ");
        attrs.append(effects[i].kind).append(":").append(effects[i].name);
      }
      attrs += "], aliases=[";
      const auto aliases = ext->aliases();
      for (size_t i = 0; i < aliases.size(); ++i) {
        attrs.append(i ? ", " : "").append(alias_kind_name(aliases[i].kind));
        if (aliases[i].kind == AliasKind::kViewOf || aliases[i].kind == AliasKind::kMustAlias) attrs.append("(").append(s(aliases[i].input)).append(")");
        if (aliases[i].kind == AliasKind::kExternalAlias) attrs.append("(").append(quote(aliases[i].external)).append(")");
      }
      attrs += "]";
    } else {
      out.append(op_name(op.code()));
      for (AttrKey k : op_schema(op.code()).keys) {
        attrs.append(attrs.empty() ? "" : ", ").append(attr_key_name(k)).append("=").append(format_attr(k, op.attrs(), syms));
      }
    }
    out += "(";
    for (size_t i = 0; i < op.operands().size(); ++i) out.append(i ? ", " : "").append(name(op.operands()[i]));
    out += ")";
    if (!attrs.empty()) out.append(" {").append(attrs).append("}");
    out += " : ";
    for (size_t i = 0; i < op.results().size(); ++i) out.append(i ? ", " : "").append(print_type(p.type(op.results()[i]), syms));
    if (!op.provenance().empty()) out.append(" loc(").append(quote(op.provenance())).append(")");
    out += "\n";
  }
  for (const ShapeGuard& g : p.guards()) {
    out.append("  guard ").append(g.lhs.to_string(syms)).append(g.equality ? " == " : " <= ").append(g.rhs.to_string(syms));
    out.append(" ").append(quote(g.constraint)).append("\n");
  }
  out += "  output ";
  for (size_t i = 0; i < p.outputs().size(); ++i) out.append(i ? ", " : "").append(name(p.outputs()[i]));
  out += "\n}\n";
  return out;
}

// ---- Parser ------------------------------------------------------------------------------------

namespace {

class Parser {
 public:
  Parser(std::string_view text, const ExtensionRegistry* registry, std::span<const Tensor> bindings, bool placeholders)
      : text_(text), registry_(registry), bindings_(bindings), placeholders_(placeholders) {}

  Result<CompiledGraph> run() {
    TENFERRO_TRY_VOID(expect_word("program"));
    TENFERRO_TRY_VOID(expect('{'));
    std::vector<Value> outputs;
    bool have_output = false;
    while (true) {
      skip();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      if (at_end()) return err("unexpected end of text (missing '}')");
      line_start_ = pos_;
      if (peek() == '%') {
        TENFERRO_TRY_VOID(definition());
        continue;
      }
      TENFERRO_TRY(std::string word, identifier());
      if (word == "symbol") {
        TENFERRO_TRY(std::string name, identifier());
        std::optional<int64_t> bound;
        if (try_consume("=")) {  // derived: `= max(0, EXTENT)`
          if (symbols_.count(name)) return err("symbol " + name + " is already declared");
          TENFERRO_TRY_VOID(expect_word("max"));
          TENFERRO_TRY_VOID(expect('('));
          TENFERRO_TRY(int64_t zero, integer());
          if (zero != 0) return err("a derived symbol is max(0, EXTENT)");
          TENFERRO_TRY_VOID(expect(','));
          TENFERRO_TRY(Extent def, extent());
          TENFERRO_TRY_VOID(expect(')'));
          TENFERRO_TRY(Extent e, wrap(b_.max0(def, name)));
          symbols_[name] = e;
          continue;
        }
        if (try_consume("<=")) {
          TENFERRO_TRY(int64_t b, integer());
          bound = b;
        }
        TENFERRO_TRY(Extent e, wrap(b_.symbol(name, bound)));
        symbols_[name] = e;
      } else if (word == "guard") {
        TENFERRO_TRY(Extent lhs, extent());
        bool eq;
        if (try_consume("==")) {
          eq = true;
        } else if (try_consume("<=")) {
          eq = false;
        } else {
          return err("expected '==' or '<=' in guard");
        }
        TENFERRO_TRY(Extent rhs, extent());
        TENFERRO_TRY(std::string constraint, string());
        TENFERRO_TRY_VOID(wrap(b_.guard(lhs, rhs, eq, constraint)));
      } else if (word == "output") {
        if (have_output) return err("a second output line");
        have_output = true;
        do {
          TENFERRO_TRY(Value v, value_ref());
          outputs.push_back(v);
        } while (try_consume(","));
      } else {
        return err("unknown item '" + word + "'");
      }
    }
    skip();
    if (!at_end()) return err("text after the closing '}'");
    if (!have_output) return err("missing output line");
    if (next_binding_ != bindings_.size()) {
      return Error(ErrorStage::kCompile, ErrorCode::kInvalidArgument, "parse_program",
                   s(static_cast<int64_t>(bindings_.size())) + " binding tensors given for " + s(static_cast<int64_t>(next_binding_)) + " binding inputs");
    }
    return wrap(b_.finish(outputs));
  }

 private:
  // -- lexing
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }
  std::pair<int64_t, int64_t> line_col(size_t at) const {
    int64_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }
  Error err(const std::string& msg) const {
    const auto [l, c] = line_col(pos_);
    return Error(ErrorStage::kUsage, ErrorCode::kParse, "parse_program", "line " + s(l) + ", column " + s(c) + ": " + msg);
  }
  template <class T>
  Result<T> wrap(Result<T> r) const {
    if (r) return r;
    const auto [l, c] = line_col(line_start_);
    (void)c;
    const Error& e = r.error();
    return Error(e.stage(), e.code(), e.op(), "line " + s(l) + ": " + e.message());
  }
  Result<void> wrap(Result<void> r) const {
    if (r) return r;
    const auto [l, c] = line_col(line_start_);
    (void)c;
    const Error& e = r.error();
    return Error(e.stage(), e.code(), e.op(), "line " + s(l) + ": " + e.message());
  }
  bool try_consume(std::string_view tok) {
    skip();
    if (text_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  Result<void> expect(char c) {
    skip();
    if (peek() != c) return err(std::string("expected '") + c + "'");
    ++pos_;
    return {};
  }
  Result<void> expect_word(std::string_view w) {
    TENFERRO_TRY(std::string got, identifier());
    if (got != w) return err("expected '" + std::string(w) + "', got '" + got + "'");
    return {};
  }
  Result<std::string> identifier() {
    skip();
    const size_t b = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.')) ++pos_;
    if (b == pos_) return err("expected an identifier");
    return std::string(text_.substr(b, pos_ - b));
  }
  Result<int64_t> integer() {
    skip();
    const size_t b = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    int64_t v = 0;
    const char* first = text_.data() + b + (b < text_.size() && text_[b] == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(first, text_.data() + pos_, v);
    if (ec != std::errc() || p != text_.data() + pos_) {
      pos_ = b;
      return err("expected an integer");
    }
    return v;
  }
  Result<std::string> string() {
    skip();
    if (peek() != '"') return err("expected a string");
    ++pos_;
    std::string out;
    while (true) {
      if (at_end()) return err("unterminated string");
      char c = text_[pos_++];
      if (c == '"') break;
      if (c == '\\') {
        if (at_end()) return err("unterminated string");
        c = text_[pos_++];
        if (c == 'n') c = '\n';
      }
      out += c;
    }
    return out;
  }
  Result<std::vector<int64_t>> int_list() {
    TENFERRO_TRY_VOID(expect('['));
    std::vector<int64_t> out;
    if (try_consume("]")) return out;
    do {
      TENFERRO_TRY(int64_t v, integer());
      out.push_back(v);
    } while (try_consume(","));
    TENFERRO_TRY_VOID(expect(']'));
    return out;
  }
  // extent := term (('+'|'-') term)*; term := factor ('*' factor)*; factor := int | name | '(' extent ')'
  Result<Extent> factor() {
    skip();
    if (try_consume("(")) {
      // Nesting is bounded so hostile text cannot exhaust the stack.
      if (++extent_depth_ > kMaxExtentDepth) return err("extent nests deeper than " + s(kMaxExtentDepth) + " levels");
      TENFERRO_TRY(Extent e, extent());
      TENFERRO_TRY_VOID(expect(')'));
      --extent_depth_;
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(peek()))) {
      TENFERRO_TRY(int64_t v, integer());
      return Extent::exact(v);
    }
    const size_t at = pos_;
    TENFERRO_TRY(std::string name, identifier());
    auto it = symbols_.find(name);
    if (it == symbols_.end()) {
      pos_ = at;
      return err("undeclared symbol '" + name + "'");
    }
    return it->second;
  }
  Result<Extent> term() {
    TENFERRO_TRY(Extent e, factor());
    while (try_consume("*")) {
      TENFERRO_TRY(Extent f, factor());
      e = e * f;
    }
    return e;
  }
  Result<Extent> extent() {
    skip();
    bool neg = false;
    if (peek() == '-') {
      ++pos_;
      neg = true;
    }
    TENFERRO_TRY(Extent e, term());
    if (neg) e = Extent::exact(0) - e;
    while (true) {
      skip();
      if (try_consume("+")) {
        TENFERRO_TRY(Extent t, term());
        e = e + t;
      } else if (peek() == '-') {
        ++pos_;
        TENFERRO_TRY(Extent t, term());
        e = e - t;
      } else {
        return e;
      }
    }
  }
  Result<std::vector<Extent>> extent_list() {
    TENFERRO_TRY_VOID(expect('['));
    std::vector<Extent> out;
    if (try_consume("]")) return out;
    do {
      TENFERRO_TRY(Extent e, extent());
      out.push_back(std::move(e));
    } while (try_consume(","));
    TENFERRO_TRY_VOID(expect(']'));
    return out;
  }
  Result<DType> dtype() {
    const size_t at = pos_;
    TENFERRO_TRY(std::string name, identifier());
    auto d = parse_dtype(name);
    if (!d) {
      pos_ = at;
      return err("unknown dtype '" + name + "'");
    }
    return *d;
  }
  Result<ValueType> type() {
    TENFERRO_TRY(DType d, dtype());
    TENFERRO_TRY(auto sh, extent_list());
    return ValueType{d, std::move(sh)};
  }
  Result<double> real_number() {
    skip();
    const size_t b = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' || text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    const std::string tok(text_.substr(b, pos_ - b));
    if (tok == "nan" || tok == "-nan") return std::nan("");
    if (tok == "inf") return HUGE_VAL;
    if (tok == "-inf") return -HUGE_VAL;
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (tok.empty() || end != tok.c_str() + tok.size()) {
      pos_ = b;
      return err("expected a number");
    }
    return v;
  }
  Result<Literal> literal() {
    TENFERRO_TRY(DType d, dtype());
    TENFERRO_TRY(auto shape, int_list());
    TENFERRO_TRY_VOID(expect('{'));
    Literal l;
    l.dtype = d;
    l.shape = shape;
    auto append = [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      l.bytes.insert(l.bytes.end(), b, b + n);
    };
    if (!try_consume("}")) {
      do {
        skip();
        if (d == DType::kBool) {
          TENFERRO_TRY(std::string w, identifier());
          if (w != "true" && w != "false") return err("expected true or false");
          const bool v = w == "true";
          append(&v, 1);
        } else if (d == DType::kI32 || d == DType::kI64) {
          TENFERRO_TRY(int64_t v, integer());
          if (d == DType::kI32) {
            if (v < INT32_MIN || v > INT32_MAX) return err("i32 literal out of range");
            const auto w = static_cast<int32_t>(v);
            append(&w, 4);
          } else {
            append(&v, 8);
          }
        } else if (is_complex(d)) {
          TENFERRO_TRY_VOID(expect('('));
          TENFERRO_TRY(double re, real_number());
          TENFERRO_TRY_VOID(expect(','));
          TENFERRO_TRY(double im, real_number());
          TENFERRO_TRY_VOID(expect(')'));
          if (d == DType::kC64) {
            const c64 v(static_cast<float>(re), static_cast<float>(im));
            append(&v, sizeof(v));
          } else {
            const c128 v(re, im);
            append(&v, sizeof(v));
          }
        } else {
          TENFERRO_TRY(double v, real_number());
          if (d == DType::kF32) {
            const auto f = static_cast<float>(v);
            append(&f, 4);
          } else {
            append(&v, 8);
          }
        }
      } while (try_consume(","));
      TENFERRO_TRY_VOID(expect('}'));
    }
    int64_t n = 1;
    for (int64_t e : shape) {
      if (e < 0 || __builtin_mul_overflow(n, e, &n)) return err("invalid literal shape");
    }
    int64_t want_bytes = 0;
    if (__builtin_mul_overflow(n, dtype_size(d), &want_bytes) || static_cast<int64_t>(l.bytes.size()) != want_bytes) {
      return err("literal shape " + s(n) + " elements but " + s(static_cast<int64_t>(l.bytes.size()) / dtype_size(d)) + " values");
    }
    return l;
  }
  Result<Value> value_ref() {
    skip();
    if (peek() != '%') return err("expected a value (%N)");
    ++pos_;
    const size_t at = pos_;
    TENFERRO_TRY(int64_t id, integer());
    auto it = values_.find(id);
    if (it == values_.end()) {
      pos_ = at;
      return err("undefined value %" + s(id));
    }
    return it->second;
  }
  Result<int64_t> new_value_name() {
    skip();
    if (peek() != '%') return err("expected a value name (%N)");
    ++pos_;
    const size_t at = pos_;
    TENFERRO_TRY(int64_t id, integer());
    if (values_.count(id)) {
      pos_ = at;
      return err("value %" + s(id) + " is defined twice");
    }
    return id;
  }

  Result<void> check_types(std::span<const Value> vals, std::span<const ValueType> declared, size_t at) {
    if (vals.size() != declared.size()) {
      pos_ = at;
      return err("declared " + s(static_cast<int64_t>(declared.size())) + " result types for " + s(static_cast<int64_t>(vals.size())) + " results");
    }
    for (size_t i = 0; i < vals.size(); ++i) {
      TENFERRO_TRY(ValueType t, b_.type(vals[i]));
      if (!(t == declared[i])) {
        pos_ = at;
        return err("declared type " + print_type(declared[i], b_.symbols()) + " but the op infers " + print_type(t, b_.symbols()));
      }
    }
    return {};
  }

  Result<void> definition() {
    std::vector<int64_t> names;
    do {
      TENFERRO_TRY(int64_t id, new_value_name());
      names.push_back(id);
    } while (try_consume(","));
    TENFERRO_TRY_VOID(expect('='));
    skip();
    const size_t word_at = pos_;
    TENFERRO_TRY(std::string word, identifier());
    std::vector<Value> results;
    if (word == "input" || word == "binding") {
      if (names.size() != 1) return err("an input defines one value");
      TENFERRO_TRY(std::string name, string());
      TENFERRO_TRY_VOID(expect(':'));
      TENFERRO_TRY(ValueType t, type());
      if (word == "input") {
        TENFERRO_TRY(Value v, wrap(b_.input(t, name)));
        results.push_back(v);
      } else {
        Tensor tensor;
        if (next_binding_ < bindings_.size()) {
          tensor = bindings_[next_binding_++];
        } else if (placeholders_) {
          Shape sh;
          for (const Extent& e : t.shape) {
            if (!e.is_exact() || e.exact_value() < 0) return err("binding '" + name + "' needs an exact shape");
            sh.push_back(e.exact_value());
          }
          // Note [Placeholder bindings]: one zero element broadcast to the declared
          // shape (stride 0 on every axis): the program checks and compiles with the
          // binding's type and values, and a declared shape of any size costs no memory
          // (a zero-filled buffer would allocate, and touch, the whole tensor).
          TENFERRO_TRY(Tensor zero, Tensor::zeros(t.dtype, Dims{}));
          TENFERRO_TRY(tensor, zero.broadcast_to(Dims(sh)));
        } else {
          return err("binding input '" + name + "' has no tensor (give it with --binding on the command line or in the bindings argument of parse_program)");
        }
        ValueType have{tensor.dtype(), {}};
        for (int64_t e : tensor.shape()) have.shape.push_back(Extent::exact(e));
        if (!(have == t)) return err("binding '" + name + "' is declared " + print_type(t, b_.symbols()) + " but its tensor is " + print_type(have, b_.symbols()));
        TENFERRO_TRY(Value v, wrap(b_.capture(tensor, name)));
        results.push_back(v);
      }
      values_[names[0]] = results[0];
      return {};
    }
    std::shared_ptr<const ExtensionOp> ext;
    std::optional<OpCode> code;
    std::string fam;
    if (word == "extension") {
      TENFERRO_TRY(fam, string());
      TENFERRO_TRY(std::string payload, string());
      const ExtensionRegistry::Parser* parse = registry_ ? registry_->find(fam) : nullptr;
      if (!parse) return err("extension family '" + fam + "' is not in the registry");
      TENFERRO_TRY(ext, wrap((*parse)(payload)));
    } else {
      code = parse_op_name(word);
      if (!code) {
        pos_ = word_at;
        return err("unknown op '" + word + "'");
      }
    }
    TENFERRO_TRY_VOID(expect('('));
    std::vector<Value> operands;
    if (!try_consume(")")) {
      do {
        TENFERRO_TRY(Value v, value_ref());
        operands.push_back(v);
      } while (try_consume(","));
      TENFERRO_TRY_VOID(expect(')'));
    }
    Attrs attrs;
    std::vector<std::string> seen;
    std::string effects_text, aliases_text;
    if (try_consume("{")) {
      do {
        const size_t key_at = (skip(), pos_);
        TENFERRO_TRY(std::string key, identifier());
        TENFERRO_TRY_VOID(expect('='));
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
          pos_ = key_at;
          return err("attribute '" + key + "' given twice");
        }
        seen.push_back(key);
        if (ext) {
          if (key != "effects" && key != "aliases") {
            pos_ = key_at;
            return err("extension ops take only effects= and aliases=, got '" + key + "'");
          }
          skip();
          const size_t b = pos_;
          int depth = 0;
          while (!at_end()) {
            const char c = text_[pos_];
            if (c == '"') {
              TENFERRO_TRY_VOID(string().transform([](const std::string&) {}));
              continue;
            }
            if (c == '[' || c == '(') ++depth;
            if (c == ']' || c == ')') --depth;
            ++pos_;
            if (depth == 0) break;
          }
          (key == "effects" ? effects_text : aliases_text) = std::string(text_.substr(b, pos_ - b));
          continue;
        }
        TENFERRO_TRY_VOID(attribute(*code, key, key_at, attrs));
      } while (try_consume(","));
      TENFERRO_TRY_VOID(expect('}'));
    }
    TENFERRO_TRY_VOID(expect(':'));
    const size_t types_at = (skip(), pos_);
    std::vector<ValueType> declared;
    do {
      TENFERRO_TRY(ValueType t, type());
      declared.push_back(std::move(t));
    } while (try_consume(","));
    std::string loc;
    if (try_consume("loc(")) {
      TENFERRO_TRY(loc, string());
      TENFERRO_TRY_VOID(expect(')'));
    }
    b_.set_provenance(loc);
    if (ext) {
      // Declarations in the text must match what the op declares (they are derived).
      std::string want_e = "[", want_a = "[";
      const auto effects = ext->effects();
      for (size_t i = 0; i < effects.size(); ++i) {
        want_e.append(i ? ", " : "").append(effects[i].access == EffectAccess::kRead ? "read " : "write ").append(effects[i].kind).append(":").append(effects[i].name);
      }
      const auto aliases = ext->aliases();
      for (size_t i = 0; i < aliases.size(); ++i) {
        want_a.append(i ? ", " : "").append(alias_kind_name(aliases[i].kind));
        if (aliases[i].kind == AliasKind::kViewOf || aliases[i].kind == AliasKind::kMustAlias) want_a.append("(").append(s(aliases[i].input)).append(")");
        if (aliases[i].kind == AliasKind::kExternalAlias) want_a.append("(").append(quote(aliases[i].external)).append(")");
      }
      want_e += "]";
      want_a += "]";
      if (!effects_text.empty() && effects_text != want_e) return err("effects " + effects_text + " differ from the op's declaration " + want_e);
      if (!aliases_text.empty() && aliases_text != want_a) return err("aliases " + aliases_text + " differ from the op's declaration " + want_a);
      TENFERRO_TRY(results, wrap(b_.extension(ext, operands)));
    } else {
      TENFERRO_TRY(Value v, wrap(b_.op(*code, operands, std::move(attrs))));
      results.push_back(v);
    }
    b_.set_provenance({});
    TENFERRO_TRY_VOID(check_types(results, declared, types_at));
    if (results.size() != names.size()) return err("op has " + s(static_cast<int64_t>(results.size())) + " results, " + s(static_cast<int64_t>(names.size())) + " names given");
    for (size_t i = 0; i < names.size(); ++i) values_[names[i]] = results[i];
    return {};
  }

  // An enum value by its text name (names(i) for i in [0, count)). Defined before its use
  // in attribute()'s generic lambda, where clang would not instantiate a later template.
  template <class E>
  Result<E> named(int count, std::string_view (*names)(E) noexcept, const char* what) {
    const size_t at = (skip(), pos_);
    TENFERRO_TRY(std::string w, identifier());
    for (int i = 0; i < count; ++i) {
      if (names(static_cast<E>(i)) == w) return static_cast<E>(i);
    }
    pos_ = at;
    return err(std::string("unknown ") + what + " '" + w + "'");
  }

  Result<void> attribute(OpCode code, const std::string& key, size_t key_at, Attrs& a) {
    const auto& keys = op_schema(code).keys;
    std::optional<AttrKey> k;
    for (AttrKey c : keys) {
      if (attr_key_name(c) == key) k = c;
    }
    if (!k) {
      pos_ = key_at;
      return err("op " + std::string(op_name(code)) + " has no attribute '" + key + "'");
    }
    return std::visit(
        [&](auto* f) -> Result<void> {
          using F = std::remove_pointer_t<decltype(f)>;
          if constexpr (std::is_same_v<F, std::vector<int64_t>>) {
            TENFERRO_TRY(*f, int_list());
          } else if constexpr (std::is_same_v<F, std::vector<Extent>>) {
            TENFERRO_TRY(*f, extent_list());
          } else if constexpr (std::is_same_v<F, int64_t>) {
            TENFERRO_TRY(*f, integer());
          } else if constexpr (std::is_same_v<F, DType>) {
            TENFERRO_TRY(*f, dtype());
          } else if constexpr (std::is_same_v<F, CompareDirection>) {
            TENFERRO_TRY(*f, named<CompareDirection>(6, compare_direction_name, "compare direction"));
          } else if constexpr (std::is_same_v<F, ReduceKind>) {
            TENFERRO_TRY(*f, named<ReduceKind>(4, reduce_kind_name, "reduce kind"));
          } else {
            TENFERRO_TRY(Literal l, literal());
            *f = std::move(l);
          }
          return {};
        },
        attr_field(a, *k));
  }

  std::string_view text_;
  const ExtensionRegistry* registry_;
  std::span<const Tensor> bindings_;
  bool placeholders_ = false;
  size_t next_binding_ = 0;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  ProgramBuilder b_;
  std::map<std::string, Extent> symbols_;
  static constexpr int kMaxExtentDepth = 64;
  int extent_depth_ = 0;
  std::map<int64_t, Value> values_;
};

}  // namespace

Result<CompiledGraph> parse_program(std::string_view text, const ExtensionRegistry* registry,
                                    std::span<const Tensor> bindings, bool placeholder_bindings) {
  Parser p(text, registry, bindings, placeholder_bindings);
  return p.run();
}

}  // namespace tenferro::program
