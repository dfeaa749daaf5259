// The matrix exponential and its Fréchet derivative on the CPU kernels (Note [Matrix
// exponential kernel]).

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/kernels.h"
#include "tenferro/linalg/linalg.h"

namespace tenferro::linalg {

using detail::alloc_items;
using detail::batch_dims;
using detail::check_same_dtype;
using detail::with_matrix;

namespace {

// Note [Matrix exponential kernel]: scaling and squaring with a diagonal Padé approximant
// (Higham, "The scaling and squaring method for the matrix exponential revisited", SIAM
// J. Matrix Anal. Appl. 26(4), 2005), the algorithm of the eager expm (Note [Matrix
// exponential] in linalg_eager/expm.cc) on the kernels: with t the largest 1-norm over
// the batch, the lowest degree m whose θ_m bounds t (degrees 3, 5, 7, 9, 13 for double,
// 3, 5, 7 for single precision, Higham's Table 2.3), else degree m_max with A / 2^s,
// s = ceil(log2(t / θ_max)), and s squarings. r_m = (V - U)^-1 (V + U) with U the odd
// and V the even terms of the Padé numerator; degree 13 uses A^2, A^4, A^6 only. The
// batched products are dot_general calls, the solve linalg::solve; every intermediate
// is a compact tensor of one layout (alloc_items'), so linear combinations are flat
// loops. The Fréchet derivative L(A, E) (the derivative of expm at A in direction E) is
// the top-right block of expm([[A, E], [0, A]]) (Higham's block identity), computed by
// this kernel on the 2n x 2n matrices.
struct Degree {
  int m;
  double theta;
};
constexpr Degree kDoubleDegrees[] = {
    {3, 1.495585217958292e-2}, {5, 2.539398330063230e-1}, {7, 9.504178996162932e-1},
    {9, 2.097847961257068e0},  {13, 5.371920351148152e0},
};
constexpr Degree kSingleDegrees[] = {{3, 4.258730016922831e-1}, {5, 1.880152677804762e0}, {7, 3.925724783138660e0}};

// `v` in T's precision (real part, for complex T).
template <class T>
T from_double(double v) {
  using Real = decltype(std::abs(T{}));
  return T(static_cast<Real>(v));
}

template <class T>
T* data_of(const Tensor& t) {
  return static_cast<T*>(t.storage()->data()) + t.offset();
}

template <class T>
class Expm {
 public:
  Expm(const CpuExecutionContext& ctx, const PoolPtr& pool, Dims batch, int64_t n, DType dt)
      : ctx_(ctx), pool_(pool), batch_(batch.span()), n_(n), dt_(dt) {
    const int64_t b = static_cast<int64_t>(batch_.size());
    for (int64_t i = 0; i < b; ++i) {
      dims_.lhs_batch.push_back(i);
      dims_.rhs_batch.push_back(i);
    }
    dims_.lhs_contracting.push_back(b + 1);
    dims_.rhs_contracting.push_back(b);
  }

  Result<Tensor> alloc() const { return alloc_items(dt_, batch_, n_, n_, pool_); }

  // `t` in alloc_items' layout (itself when it already is).
  Result<Tensor> uniform(const Tensor& t) const {
    if (t.layout() == cpu::dot_general_result_layout(with_matrix(batch_, n_, n_), batch_.size())) return t;
    TENFERRO_TRY(Tensor u, alloc());
    TENFERRO_TRY_VOID(cpu::copy_into(ctx_, t, u));
    return u;
  }

  Result<Tensor> mm(const Tensor& l, const Tensor& r) const {
    TENFERRO_TRY(Tensor p, cpu::dot_general(ctx_, l, r, dims_, {}, pool_));
    return uniform(p);
  }

  // sum_k c_k t_k + eye * I (inputs in the uniform layout).
  Result<Tensor> combine(std::initializer_list<std::pair<double, const Tensor*>> terms, double eye) const {
    TENFERRO_TRY(Tensor out, alloc());
    T* o = data_of<T>(out);
    const int64_t count = out.numel();
    std::fill(o, o + count, T(0));
    for (const auto& [c, t] : terms) {
      const T* s = data_of<T>(*t);
      const T k = from_double<T>(c);
      for (int64_t i = 0; i < count; ++i) o[i] += k * s[i];
    }
    add_eye(out, eye);
    return out;
  }

  void add_eye(const Tensor& t, double eye) const {
    if (eye == 0.0) return;
    T* o = data_of<T>(t);
    const int64_t items = t.numel() / std::max<int64_t>(1, n_ * n_);
    for (int64_t it = 0; it < items; ++it)
      for (int64_t i = 0; i < n_; ++i) o[it * n_ * n_ + i * n_ + i] += from_double<T>(eye);
  }

  int64_t n() const noexcept { return n_; }

 private:
  const CpuExecutionContext& ctx_;
  const PoolPtr& pool_;
  Shape batch_;
  int64_t n_;
  DType dt_;
  cpu::DotDims dims_;
};

template <class T>
Result<Tensor> expm_typed(const CpuExecutionContext& ctx, const Tensor& a, const PoolPtr& pool) {
  using Real = decltype(std::abs(T{}));
  const int64_t n = a.dim(a.rank() - 1);
  const Expm<T> e(ctx, pool, batch_dims(a), n, a.dtype());
  TENFERRO_TRY(Tensor x, e.alloc());
  TENFERRO_TRY_VOID(cpu::copy_into(ctx, a, x));
  if (x.numel() == 0) return x;
  // The largest 1-norm over the batch (column sums of |x|; items are column-major).
  T* xp = data_of<T>(x);
  const int64_t items = x.numel() / (n * n);
  double norm = 0;
  bool finite = true;
  for (int64_t it = 0; it < items; ++it) {
    for (int64_t j = 0; j < n; ++j) {
      double col = 0;
      for (int64_t i = 0; i < n; ++i) col += static_cast<double>(std::abs(xp[it * n * n + j * n + i]));
      finite = finite && std::isfinite(col);
      norm = std::max(norm, col);
    }
  }
  const ExpmScaling choice =
      expm_scaling(finite ? norm : std::numeric_limits<double>::quiet_NaN(), std::is_same_v<Real, float>);
  const int s = choice.squarings, degree = choice.degree;
  if (s > 0) {
    const T k = from_double<T>(std::ldexp(1.0, -s));
    for (int64_t i = 0; i < x.numel(); ++i) xp[i] *= k;
  }
  const std::vector<double> c = pade_coefficients(degree);
  auto cj = [&](int j) { return c[static_cast<size_t>(j)]; };
  TENFERRO_TRY(Tensor x2, e.mm(x, x));
  Tensor u, v;
  if (degree == 13) {
    TENFERRO_TRY(Tensor x4, e.mm(x2, x2));
    TENFERRO_TRY(Tensor x6, e.mm(x4, x2));
    TENFERRO_TRY(Tensor hu, e.combine({{cj(13), &x6}, {cj(11), &x4}, {cj(9), &x2}}, 0.0));
    TENFERRO_TRY(Tensor iu, e.mm(x6, hu));
    TENFERRO_TRY(Tensor odd, e.combine({{1.0, &iu}, {cj(7), &x6}, {cj(5), &x4}, {cj(3), &x2}}, cj(1)));
    TENFERRO_TRY(u, e.mm(x, odd));
    TENFERRO_TRY(Tensor hv, e.combine({{cj(12), &x6}, {cj(10), &x4}, {cj(8), &x2}}, 0.0));
    TENFERRO_TRY(Tensor iv, e.mm(x6, hv));
    TENFERRO_TRY(v, e.combine({{1.0, &iv}, {cj(6), &x6}, {cj(4), &x4}, {cj(2), &x2}}, cj(0)));
  } else {
    // Even powers A^2, A^4, ... up to A^(m - 1) (I enters through the diagonal).
    std::vector<Tensor> even{Tensor(), x2};
    while (static_cast<int>(even.size()) * 2 <= degree) {
      TENFERRO_TRY(Tensor next, e.mm(even.back(), x2));
      even.push_back(std::move(next));
    }
    TENFERRO_TRY(Tensor odd, e.combine({}, cj(1)));
    TENFERRO_TRY(v, e.combine({}, cj(0)));
    T* op = data_of<T>(odd);
    T* vp = data_of<T>(v);
    for (int j = 2; j <= degree; ++j) {
      const T* p = data_of<T>(even[static_cast<size_t>(j / 2)]);
      T* dst = j % 2 == 1 ? op : vp;
      const T k = from_double<T>(cj(j));
      for (int64_t i = 0; i < x.numel(); ++i) dst[i] += k * p[i];
    }
    TENFERRO_TRY(u, e.mm(x, odd));
  }
  TENFERRO_TRY(Tensor den, e.combine({{1.0, &v}, {-1.0, &u}}, 0.0));
  TENFERRO_TRY(Tensor num, e.combine({{1.0, &v}, {1.0, &u}}, 0.0));
  TENFERRO_TRY(Tensor r, solve(ctx, den, num, {}, pool));
  TENFERRO_TRY(r, e.uniform(r));
  for (int k = 0; k < s; ++k) {
    TENFERRO_TRY(r, e.mm(r, r));
  }
  return r;
}

// L(A, E): the top-right block of expm([[A, E], [0, A]]) per item.
template <class T>
Result<Tensor> frechet_typed(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& e, const PoolPtr& pool) {
  const int64_t n = a.dim(a.rank() - 1), n2 = 2 * n;
  const Expm<T> small(ctx, pool, batch_dims(a), n, a.dtype()), big(ctx, pool, batch_dims(a), n2, a.dtype());
  TENFERRO_TRY(const Tensor ua, small.uniform(a));
  TENFERRO_TRY(const Tensor ue, small.uniform(e));
  TENFERRO_TRY(Tensor m, big.combine({}, 0.0));
  const T* ap = data_of<T>(ua);
  const T* ep = data_of<T>(ue);
  T* mp = data_of<T>(m);
  const int64_t items = n == 0 ? 0 : ua.numel() / (n * n);
  for (int64_t it = 0; it < items; ++it) {
    const T* ai = ap + it * n * n;
    const T* ei = ep + it * n * n;
    T* mi = mp + it * n2 * n2;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        mi[j * n2 + i] = ai[j * n + i];
        mi[(j + n) * n2 + i] = ei[j * n + i];
        mi[(j + n) * n2 + i + n] = ai[j * n + i];
      }
  }
  TENFERRO_TRY(const Tensor x, expm_typed<T>(ctx, m, pool));
  TENFERRO_TRY(const Tensor ux, big.uniform(x));
  TENFERRO_TRY(Tensor out, small.alloc());
  const T* xp = data_of<T>(ux);
  T* op = data_of<T>(out);
  for (int64_t it = 0; it < items; ++it)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) op[it * n * n + j * n + i] = xp[it * n2 * n2 + (j + n) * n2 + i];
  return out;
}

Result<void> check_expm_input(const Tensor& a, const char* op) {
  if (!a.defined()) return usage_error(ErrorCode::kInvalidArgument, op, "undefined tensor");
  if (!is_inexact(a.dtype())) {
    return usage_error(ErrorCode::kDTypeMismatch, op,
                       "needs f32, f64, c64 or c128, got " + std::string(dtype_name(a.dtype())));
  }
  if (a.rank() < 2 || a.dim(a.rank() - 1) != a.dim(a.rank() - 2)) {
    return usage_error(ErrorCode::kInvalidShape, op,
                       "needs square matrices in the last two axes, got shape " + format_dims(a.shape()));
  }
  return ok();
}

}  // namespace

ExpmScaling expm_scaling(double norm, bool single_precision) noexcept {
  const std::span<const Degree> degrees =
      single_precision ? std::span<const Degree>(kSingleDegrees) : std::span<const Degree>(kDoubleDegrees);
  ExpmScaling r{degrees.back().m, 0};
  if (!std::isfinite(norm)) return r;  // the values propagate
  for (const Degree& d : degrees) {
    if (norm <= d.theta) return {d.m, 0};
  }
  r.squarings = std::max(0, static_cast<int>(std::ceil(std::log2(norm / degrees.back().theta))));
  return r;
}

std::vector<double> pade_coefficients(int m) {
  std::vector<double> c(static_cast<size_t>(std::max(m, 0)) + 1, 1.0);
  for (int j = 1; j <= m; ++j) {
    c[static_cast<size_t>(j)] = c[static_cast<size_t>(j) - 1] * static_cast<double>(m - j + 1) /
                                (static_cast<double>(j) * static_cast<double>(2 * m - j + 1));
  }
  return c;
}

Result<Tensor> expm(const CpuExecutionContext& ctx, const Tensor& a, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(check_expm_input(a, "expm"));
  switch (a.dtype()) {
    case DType::kF32: return expm_typed<float>(ctx, a, pool);
    case DType::kF64: return expm_typed<double>(ctx, a, pool);
    case DType::kC64: return expm_typed<c64>(ctx, a, pool);
    default: return expm_typed<c128>(ctx, a, pool);
  }
}

Result<Tensor> expm_frechet(const CpuExecutionContext& ctx, const Tensor& a, const Tensor& e, const PoolPtr& pool) {
  TENFERRO_TRY_VOID(check_expm_input(a, "expm_frechet"));
  TENFERRO_TRY_VOID(check_same_dtype(a, e, "expm_frechet"));
  if (e.shape() != a.shape()) {
    return usage_error(ErrorCode::kShapeMismatch, "expm_frechet",
                       "needs E of A's shape " + format_dims(a.shape()) + ", got " + format_dims(e.shape()));
  }
  switch (a.dtype()) {
    case DType::kF32: return frechet_typed<float>(ctx, a, e, pool);
    case DType::kF64: return frechet_typed<double>(ctx, a, e, pool);
    case DType::kC64: return frechet_typed<c64>(ctx, a, e, pool);
    default: return frechet_typed<c128>(ctx, a, e, pool);
  }
}

}  // namespace tenferro::linalg
