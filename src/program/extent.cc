#include "tenferro/program/extent.h"

#include <algorithm>
#include <limits>

namespace tenferro::program {

// Note [Symbolic extents]: an extent is an integer polynomial over program symbols in a
// canonical form (monomials sorted by their sorted symbol lists, zero coefficients
// dropped, the constant apart). Canonical forms make equality decide provable equality
// without a solver; anything the algebra cannot prove (n == m for distinct symbols) is
// turned by op inference into a shape guard that is evaluated before execution. Inputs
// may only carry exact extents or single symbols, so binding concrete input shapes
// assigns every symbol directly (ProgramBuilder::input), except derived symbols, which
// follow from their definitions (Note [Derived symbols]).

namespace {
constexpr uint64_t kMixedOwner = std::numeric_limits<uint64_t>::max();

uint64_t merge_owner(uint64_t a, uint64_t b) {
  if (a == 0) return b;
  if (b == 0 || a == b) return a;
  return kMixedOwner;
}
}  // namespace

Extent Extent::symbol(int32_t index, uint64_t owner) {
  Extent e;
  e.terms_.push_back(Term{{index}, 1});
  e.owner_ = owner;
  return e;
}

std::optional<int32_t> Extent::as_symbol() const noexcept {
  if (constant_ != 0 || terms_.size() != 1 || terms_[0].coeff != 1 || terms_[0].syms.size() != 1) return std::nullopt;
  return terms_[0].syms[0];
}

std::vector<int32_t> Extent::symbols() const {
  std::vector<int32_t> out;
  for (const Term& t : terms_) out.insert(out.end(), t.syms.begin(), t.syms.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Extent::normalize() {
  std::sort(terms_.begin(), terms_.end(), [](const Term& a, const Term& b) { return a.syms < b.syms; });
  std::vector<Term> merged;
  for (Term& t : terms_) {
    if (!merged.empty() && merged.back().syms == t.syms) {
      if (__builtin_add_overflow(merged.back().coeff, t.coeff, &merged.back().coeff)) overflow_ = true;
    } else {
      merged.push_back(std::move(t));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(), [](const Term& t) { return t.coeff == 0; }),
               merged.end());
  terms_ = std::move(merged);
  if (terms_.empty() && owner_ != kMixedOwner) owner_ = 0;
}

Extent Extent::combine(const Extent& a, const Extent& b, int64_t sign) {
  Extent r;
  r.owner_ = merge_owner(a.owner_, b.owner_);
  r.overflow_ = a.overflow_ || b.overflow_;
  int64_t bc = b.constant_;
  if (sign < 0 && __builtin_mul_overflow(bc, int64_t{-1}, &bc)) r.overflow_ = true;
  if (__builtin_add_overflow(a.constant_, bc, &r.constant_)) r.overflow_ = true;
  r.terms_ = a.terms_;
  for (Term t : b.terms_) {
    if (sign < 0 && __builtin_mul_overflow(t.coeff, int64_t{-1}, &t.coeff)) r.overflow_ = true;
    r.terms_.push_back(std::move(t));
  }
  r.normalize();
  return r;
}

Extent operator+(const Extent& a, const Extent& b) { return Extent::combine(a, b, 1); }
Extent operator-(const Extent& a, const Extent& b) { return Extent::combine(a, b, -1); }

Extent operator*(const Extent& a, const Extent& b) {
  Extent r;
  r.owner_ = merge_owner(a.owner_, b.owner_);
  r.overflow_ = a.overflow_ || b.overflow_;
  if (__builtin_mul_overflow(a.constant_, b.constant_, &r.constant_)) r.overflow_ = true;
  auto scaled = [&](const Extent::Term& t, int64_t c) {
    Extent::Term out = t;
    if (__builtin_mul_overflow(t.coeff, c, &out.coeff)) r.overflow_ = true;
    return out;
  };
  // Note [Extent size cap]: shape polynomials of real programs have a handful of terms;
  // a product past kMaxTerms terms or kMaxDegree symbols per term is marked overflowed
  // (builders reject it with kOverflow) instead of being expanded, so hostile text such
  // as a 14th power of a 12-symbol sum cannot take unbounded time and memory.
  constexpr size_t kMaxTerms = 256, kMaxDegree = 16;
  size_t degree = 0;
  for (const auto& ta : a.terms_) degree = std::max(degree, ta.syms.size());
  size_t degree_b = 0;
  for (const auto& tb : b.terms_) degree_b = std::max(degree_b, tb.syms.size());
  if (a.terms_.size() * b.terms_.size() + a.terms_.size() + b.terms_.size() > kMaxTerms ||
      degree + degree_b > kMaxDegree) {
    r.overflow_ = true;
    r.terms_ = a.terms_.empty() ? b.terms_ : a.terms_;  // symbolic, flagged: never evaluated
    return r;
  }
  for (const auto& t : a.terms_) r.terms_.push_back(scaled(t, b.constant_));
  for (const auto& t : b.terms_) r.terms_.push_back(scaled(t, a.constant_));
  for (const auto& ta : a.terms_) {
    for (const auto& tb : b.terms_) {
      Extent::Term t;
      t.syms = ta.syms;
      t.syms.insert(t.syms.end(), tb.syms.begin(), tb.syms.end());
      std::sort(t.syms.begin(), t.syms.end());
      if (__builtin_mul_overflow(ta.coeff, tb.coeff, &t.coeff)) r.overflow_ = true;
      r.terms_.push_back(std::move(t));
    }
  }
  r.normalize();
  return r;
}

Extent Extent::substitute(std::span<const Extent> map) const {
  Extent out = Extent::exact(constant_);
  out.overflow_ = overflow_;
  for (const Term& t : terms_) {
    Extent term = Extent::exact(t.coeff);
    for (int32_t s : t.syms) term = term * map[static_cast<size_t>(s)];
    out = out + term;
  }
  return out;
}

bool operator==(const Extent& a, const Extent& b) noexcept {
  return a.constant_ == b.constant_ && a.terms_ == b.terms_ && a.overflow_ == b.overflow_;
}

Extent product(std::span<const Extent> extents) {
  Extent r = Extent::exact(1);
  for (const Extent& e : extents) r = r * e;
  return r;
}

Extent Extent::positive_part() const {
  Extent out;
  out.constant_ = std::max<int64_t>(constant_, 0);
  out.owner_ = owner_;
  out.overflow_ = overflow_;
  for (const Term& t : terms_) {
    if (t.coeff > 0) out.terms_.push_back(t);
  }
  if (out.terms_.empty() && owner_ != kMixedOwner) out.owner_ = 0;
  return out;
}

bool Extent::nonnegative_coefficients() const noexcept {
  if (constant_ < 0) return false;
  for (const Term& t : terms_) {
    if (t.coeff < 0) return false;
  }
  return true;
}

// Note [Derived symbols]: some extents are not polynomials of the input extents; the
// one core inference needs is max(0, p), e.g. interior padding of an axis of extent d,
// which has max(0, d + (d-1)*interior) elements besides low + high (d = 0 gives none,
// where the polynomial would give -interior). Such a value becomes a *derived symbol*
// z = max(0, p): appended to the symbol table after the symbols p mentions, so that
// binding concrete shapes assigns the input symbols first and then every derived symbol
// in table order (SemanticProgram::bind_shapes). The algebra treats z as an opaque
// symbol: equal polynomials over z are still provably equal, and the same definition
// always yields the same symbol (reuse below), so two pads of one axis agree. Programs
// carry the definitions in their encoding (fingerprints), text (`symbol _z0 = max(0,
// 2*n - 1)`), imports and compiler rebuilds re-derive them in order.
Extent max0(const Extent& p, std::vector<SymbolInfo>& symbols, std::string_view wanted) {
  if (p.is_exact()) return Extent::exact(std::max<int64_t>(p.exact_value(), 0));
  if (p.nonnegative_coefficients() || p.overflowed()) return p;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i].max0_of && *symbols[i].max0_of == p) return Extent::symbol(static_cast<int32_t>(i), p.owner());
  }
  auto in_use = [&](const std::string& n) {
    return std::any_of(symbols.begin(), symbols.end(), [&](const SymbolInfo& si) { return si.name == n; });
  };
  std::string name(wanted);
  for (int64_t k = 0; name.empty() || in_use(name); ++k) {
    name = "_z";
    name.append(std::to_string(k));
  }
  SymbolInfo info;
  info.name = std::move(name);
  if (auto ub = p.positive_part().upper_bound(symbols)) info.upper_bound = std::max<int64_t>(*ub, 0);
  info.max0_of = p;
  symbols.push_back(std::move(info));
  return Extent::symbol(static_cast<int32_t>(symbols.size() - 1), p.owner());
}

std::optional<int64_t> Extent::evaluate(std::span<const int64_t> values) const noexcept {
  int64_t acc = constant_;
  for (const Term& t : terms_) {
    int64_t v = t.coeff;
    for (int32_t s : t.syms) {
      if (s < 0 || static_cast<size_t>(s) >= values.size()) return std::nullopt;
      if (__builtin_mul_overflow(v, values[static_cast<size_t>(s)], &v)) return std::nullopt;
    }
    if (__builtin_add_overflow(acc, v, &acc)) return std::nullopt;
  }
  return acc;
}

std::optional<int64_t> Extent::upper_bound(std::span<const SymbolInfo> symbols) const noexcept {
  std::vector<int64_t> bounds(symbols.size(), 0);
  for (const Term& t : terms_) {
    if (t.coeff < 0) return std::nullopt;
    for (int32_t s : t.syms) {
      if (s < 0 || static_cast<size_t>(s) >= symbols.size()) return std::nullopt;
      const auto& b = symbols[static_cast<size_t>(s)].upper_bound;
      if (!b) return std::nullopt;
      bounds[static_cast<size_t>(s)] = *b;
    }
  }
  return evaluate(bounds);
}

std::string Extent::to_string(std::span<const SymbolInfo> symbols) const {
  auto name = [&](int32_t s) {
    return s >= 0 && static_cast<size_t>(s) < symbols.size() ? symbols[static_cast<size_t>(s)].name
                                                             : std::string("$").append(std::to_string(s));
  };
  std::string out;
  // Highest degree first, then the constant: "2*n*m + n - 1".
  std::vector<const Term*> order;
  for (const Term& t : terms_) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const Term* a, const Term* b) { return a->syms.size() > b->syms.size(); });
  for (const Term* t : order) {
    int64_t c = t->coeff;
    if (out.empty()) {
      if (c < 0) out += "-";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    const uint64_t mag = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    std::string body;
    if (mag != 1) body = std::to_string(mag);
    for (int32_t s : t->syms) {
      if (!body.empty()) body += "*";
      body += name(s);
    }
    out += body;
  }
  if (out.empty()) return std::to_string(constant_);
  if (constant_ > 0) out.append(" + ").append(std::to_string(constant_));
  if (constant_ < 0) out.append(" - ").append(std::to_string(0 - static_cast<uint64_t>(constant_)));
  return out;
}

namespace {
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
}  // namespace

void Extent::encode(std::vector<uint8_t>& out) const {
  put_u64(out, static_cast<uint64_t>(constant_));
  put_u64(out, terms_.size());
  for (const Term& t : terms_) {
    put_u64(out, static_cast<uint64_t>(t.coeff));
    put_u64(out, t.syms.size());
    for (int32_t s : t.syms) put_u64(out, static_cast<uint64_t>(s));
  }
}

}  // namespace tenferro::program
