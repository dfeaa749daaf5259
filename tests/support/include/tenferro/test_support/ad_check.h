#pragma once
// Test-only: derivative checks for the AD suites (not installed): JVP against central
// finite differences and VJP against JVP through the adjoint identity
// <vjp(u), v> = <u, jvp(v)> (Re sum conj(a) b), evaluated by the reference interpreter.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tenferro/ad/ad.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/test_support/index.h"
#include "tenferro/test_support/strided.h"

namespace tenferro::test_support {

/// The exact-shape program type of `d` with extents `s`.
inline program::ValueType vt(DType d, const std::vector<int64_t>& s) {
  program::ValueType t{d, {}};
  for (int64_t e : s) t.shape.push_back(program::Extent::exact(e));
  return t;
}

// ---- tensor helpers (test oracle side) --------------------------------------------------------------

inline std::vector<c128> values(const Tensor& t) {
  std::vector<c128> out;
  for_each_index(t.shape(), [&](const Index& i) { out.push_back(t.get_as_c128(Dims(std::span<const int64_t>(i))).value()); });
  return out;
}

inline Tensor make(DType d, const Shape& s, const std::vector<c128>& v) {
  auto cast = [&]<class T>() {
    std::vector<T> x;
    for (const c128& z : v) {
      if constexpr (std::is_same_v<T, c64>) {
        x.emplace_back(static_cast<float>(z.real()), static_cast<float>(z.imag()));
      } else if constexpr (std::is_same_v<T, c128>) {
        x.push_back(z);
      } else {
        x.push_back(static_cast<T>(z.real()));
      }
    }
    return Tensor::from_col_major<T>(Dims(s), std::move(x)).value();
  };
  switch (d) {
    case DType::kF32: return cast.template operator()<float>();
    case DType::kF64: return cast.template operator()<double>();
    case DType::kC64: return cast.template operator()<c64>();
    case DType::kC128: return cast.template operator()<c128>();
    case DType::kI32: return cast.template operator()<int32_t>();
    case DType::kI64: return cast.template operator()<int64_t>();
    case DType::kBool: return cast.template operator()<bool>();
  }
  return Tensor();
}

inline Tensor axpy(const Tensor& x, double h, const Tensor& v) {
  std::vector<c128> a = values(x), b = values(v);
  for (size_t i = 0; i < a.size(); ++i) a[i] += h * b[i];
  return make(x.dtype(), x.shape(), a);
}

// Re sum conj(a) b
inline double inner(const Tensor& a, const Tensor& b) {
  std::vector<c128> x = values(a), y = values(b);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (std::conj(x[i]) * y[i]).real();
  return s;
}

inline double max_abs(const std::vector<c128>& v) {
  double m = 0;
  for (const c128& z : v) m = std::max(m, std::abs(z));
  return m;
}

inline Tensor random_like(std::mt19937_64& rng, DType d, const Shape& s) {
  return strided_random(rng, d, s, -1.0, 1.0);
}

inline std::vector<Tensor> run(const program::CompiledGraph& g, const std::vector<Tensor>& args) {
  auto r = program::interpret(g, args);
  EXPECT_TRUE(r) << r.error().to_string() << "\n" << program::print_program(*g.program);
  return r ? *r : std::vector<Tensor>{};
}

struct Tolerance {
  double fd = 1e-6;     // relative, JVP vs central differences
  double adjoint = 1e-10;  // relative, <vjp(u), v> vs <u, jvp(v)>
};

inline Tolerance tolerance_for(const program::CompiledGraph& g) {
  bool single = false;
  for (const auto& in : g.program->inputs()) {
    const DType d = g.program->type(in.value).dtype;
    single = single || d == DType::kF32 || d == DType::kC64;
  }
  for (const auto& v : g.program->outputs()) {
    const DType d = g.program->type(v).dtype;
    single = single || d == DType::kF32 || d == DType::kC64;
  }
  return single ? Tolerance{2e-2, 1e-4} : Tolerance{};
}

// Checks JVP against central differences and VJP against JVP for `g` at `xs`.
inline void check_derivatives(const ad::AdContext& ctx, const program::CompiledGraph& g, const std::vector<Tensor>& xs, uint64_t seed,
                       const std::string& what) {
  SCOPED_TRACE(what);
  const auto& p = *g.program;
  std::mt19937_64 rng(seed);
  const Tolerance tol = tolerance_for(g);
  auto jvp = ctx.jvp(g);
  ASSERT_TRUE(jvp) << jvp.error().to_string() << "\n" << program::print_program(p);
  auto vjp = ctx.vjp(g);
  ASSERT_TRUE(vjp) << vjp.error().to_string() << "\n" << program::print_program(p);

  std::vector<size_t> active;
  std::vector<Tensor> vs;
  size_t a = 0;
  for (const auto& in : p.inputs()) {
    if (in.binding) continue;
    const DType d = p.type(in.value).dtype;
    if (is_inexact(d)) {
      active.push_back(a);
      vs.push_back(random_like(rng, d, xs[a].shape()));
    }
    ++a;
  }
  std::vector<Tensor> jargs = xs;
  jargs.insert(jargs.end(), vs.begin(), vs.end());
  const std::vector<Tensor> jout = run(*jvp, jargs);
  const std::vector<Tensor> y = run(g, xs);
  ASSERT_FALSE(jout.empty());
  const size_t nout = p.outputs().size();
  // Primal outputs unchanged.
  for (size_t k = 0; k < nout; ++k) EXPECT_EQ(values(jout[k]), values(y[k])) << "primal output " << k;
  // Central differences.
  const bool single = tol.fd > 1e-3;
  const double h = single ? 1e-2 : 1e-6;
  std::vector<Tensor> xp = xs, xm = xs;
  for (size_t i = 0; i < active.size(); ++i) {
    xp[active[i]] = axpy(xs[active[i]], h, vs[i]);
    xm[active[i]] = axpy(xs[active[i]], -h, vs[i]);
  }
  const std::vector<Tensor> yp = run(g, xp), ym = run(g, xm);
  size_t t = nout;
  std::vector<size_t> inexact_out;
  for (size_t k = 0; k < nout; ++k) {
    if (!is_inexact(p.type(p.outputs()[k]).dtype)) continue;
    inexact_out.push_back(k);
    const std::vector<c128> dy = values(jout[t++]);
    const std::vector<c128> fp = values(yp[k]), fm = values(ym[k]);
    const double scale = 1.0 + max_abs(dy);
    for (size_t i = 0; i < dy.size(); ++i) {
      const c128 fd = (fp[i] - fm[i]) / (2 * h);
      EXPECT_LE(std::abs(fd - dy[i]), tol.fd * scale * (single ? 1.0 : 10.0))
          << "output " << k << " element " << i << ": jvp " << dy[i] << " vs finite difference " << fd << "\n"
          << program::print_program(p);
    }
  }
  // Adjoint identity.
  std::vector<Tensor> us;
  for (size_t k : inexact_out) us.push_back(random_like(rng, p.type(p.outputs()[k]).dtype, y[k].shape()));
  std::vector<Tensor> vargs = xs;
  vargs.insert(vargs.end(), us.begin(), us.end());
  const std::vector<Tensor> vout = run(*vjp, vargs);
  ASSERT_EQ(vout.size(), nout + active.size());
  for (size_t k = 0; k < nout; ++k) EXPECT_EQ(values(vout[k]), values(y[k])) << "vjp primal output " << k;
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < active.size(); ++i) lhs += inner(vout[nout + i], vs[i]);
  for (size_t j = 0; j < inexact_out.size(); ++j) rhs += inner(us[j], jout[nout + j]);
  EXPECT_NEAR(lhs, rhs, tol.adjoint * (1.0 + std::abs(lhs)) * 10) << program::print_program(p);
}

}  // namespace tenferro::test_support
