#pragma once
/// \file
/// Symbolic extents of program values: exact, bounded and unknown extents and a small
/// polynomial expression algebra over named symbols (Note [Symbolic extents]).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tenferro::program {

struct SymbolInfo;

/// One extent: an integer polynomial over the symbols of one builder (or program).
/// Exact extents are constant polynomials. Equality is structural on the canonical form
/// (sorted monomials, no zero coefficients), so it decides whether two extents are
/// provably equal for every symbol value: `n * 3 == 3 * n`, `n + m - n == m`.
///
/// An extent made from a symbol remembers the builder that issued it; mixing extents of
/// two builders gives an extent that every builder rejects (typed error at use).
/// Value type; cheap to copy when exact (no allocation).
class Extent {
 public:
  /// The exact extent 0.
  Extent() = default;
  /// An exact extent.
  static Extent exact(int64_t value) noexcept {
    Extent e;
    e.constant_ = value;
    return e;
  }
  bool is_exact() const noexcept { return terms_.empty(); }
  /// The value of an exact extent (precondition: is_exact()).
  int64_t exact_value() const noexcept { return constant_; }
  /// If this extent is exactly one symbol with coefficient 1, that symbol's index.
  std::optional<int32_t> as_symbol() const noexcept;
  /// Indices of the symbols this extent mentions, sorted, unique.
  std::vector<int32_t> symbols() const;

  /// The terms with positive coefficients and max(constant, 0): an upper bound of this
  /// extent for every value of its (non-negative) symbols.
  Extent positive_part() const;
  /// True when no coefficient and not the constant is negative (so the extent is >= 0
  /// for all non-negative symbol values).
  bool nonnegative_coefficients() const noexcept;

  /// Evaluates with `values[s]` for symbol s. nullopt on int64 overflow.
  std::optional<int64_t> evaluate(std::span<const int64_t> values) const noexcept;
  /// The largest value this extent can take when every symbol lies in [0, bound], or
  /// nullopt when a symbol is unbounded or a coefficient is negative.
  std::optional<int64_t> upper_bound(std::span<const SymbolInfo> symbols) const noexcept;

  friend Extent operator+(const Extent& a, const Extent& b);
  friend Extent operator-(const Extent& a, const Extent& b);
  friend Extent operator*(const Extent& a, const Extent& b);
  friend bool operator==(const Extent& a, const Extent& b) noexcept;

  /// Replaces symbol s by `map[s]` (precondition: map covers every symbol used).
  Extent substitute(std::span<const Extent> map) const;

  /// Text form: `3`, `n`, `2*n*m + n - 1` (symbols by name from `symbols`).
  std::string to_string(std::span<const SymbolInfo> symbols) const;

  /// Appends a canonical byte encoding (used by fingerprints and exact equality).
  void encode(std::vector<uint8_t>& out) const;

  /// The builder identity this extent's symbols belong to (0: exact, no owner).
  uint64_t owner() const noexcept { return owner_; }
  /// True when a coefficient overflowed int64 while building this extent (builders
  /// reject such extents with kOverflow).
  bool overflowed() const noexcept { return overflow_; }

  /// A symbol extent (used by ProgramBuilder and the text parser; `owner` tags it).
  static Extent symbol(int32_t index, uint64_t owner);

 private:
  struct Term {
    std::vector<int32_t> syms;  // sorted, with repetition (n*n = {n, n})
    int64_t coeff = 0;
    friend bool operator==(const Term&, const Term&) = default;
  };
  static Extent combine(const Extent& a, const Extent& b, int64_t sign);
  void normalize();

  int64_t constant_ = 0;
  std::vector<Term> terms_;  // sorted by syms, nonzero coefficients
  uint64_t owner_ = 0;
  bool overflow_ = false;
};

/// The product of extents (exact 1 for an empty list).
Extent product(std::span<const Extent> extents);

/// A symbol of one program: a name and an optional inclusive upper bound. A symbol with
/// a bound is a *bounded* extent, one without an *unknown* extent. A *derived* symbol
/// (`max0_of` set) is not bound by an input: its value is max(0, definition), where the
/// definition mentions earlier symbols only (Note [Derived symbols]); its bound follows
/// from the definition's.
struct SymbolInfo {
  std::string name;
  std::optional<int64_t> upper_bound{};
  std::optional<Extent> max0_of{};
  friend bool operator==(const SymbolInfo&, const SymbolInfo&) = default;
};

/// max(0, p) as an extent of the table `symbols` (p's symbols index it): exact when p is
/// exact; p itself when no coefficient of p is negative; otherwise a derived symbol with
/// definition p, reused when `symbols` already holds one with that definition, else
/// appended (named `name` when given and not in use, else `_z<k>`, the first such name
/// not in use). The result carries p's owner.
Extent max0(const Extent& p, std::vector<SymbolInfo>& symbols, std::string_view name = {});

}  // namespace tenferro::program
