// The matrix exponential of eager tensors (Note [Matrix exponential]).

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "tenferro/eager/autograd.h"
#include "tenferro/linalg_eager/linalg_eager.h"
#include "tenferro/linalg_ir/linalg_op.h"

namespace tenferro::eager::linalg {

namespace {

// Note [Matrix exponential]: scaling and squaring with a diagonal Padé approximant
// (Higham, "The scaling and squaring method for the matrix exponential revisited", SIAM
// J. Matrix Anal. Appl. 26(4), 2005; the choice is linalg::expm_scaling, shared with the
// kernel). With t the largest 1-norm over the batch, the
// lowest degree m whose θ_m bounds t is used directly; past the largest degree's θ, A
// is divided by 2^s so that t / 2^s <= θ_max and the approximant squared s times. θ_m
// bounds the backward error of r_m to the unit roundoff (Higham's Table 2.3: degrees 3,
// 5, 7, 9, 13 for double, 3, 5, 7 for single precision). r_m(A) = q_m(A)^-1 p_m(A) with
// p_m(x) = sum_j c_j x^j, c_j = (2m - j)! m! / ((2m)! j! (m - j)!), q_m(x) = p_m(-x):
// with U the odd and V the even terms, r_m = (V - U)^-1 (V + U); degree 13 evaluates U
// and V with the powers A^2, A^4, A^6 only (six products in all, as in the paper).
// Every step is an eager operation (matmul, solve, scalar multiple, add) that records
// for AD, so the derivative is that of the approximant computed (as JAX's expm), which
// matches the exact Fréchet derivative to the same order. One (m, s) for the whole
// batch: items of smaller norm are squared more often than they need (accuracy of the
// largest item's scale). The choice reads the norm on the host, so a
// traced value runs the kernel's expm instead (tenferro::linalg::expm, the same
// algorithm choosing (m, s) per run) and records the linalg family's expm op, whose AD
// rule is the exact Fréchet derivative.
// sum_k coef_k * terms_k (at least one term).
Result<EagerTensor> combine(const Context& c, std::span<const std::pair<double, EagerTensor>> terms, DType dtype) {
  EagerTensor sum;
  for (const auto& [coef, t] : terms) {
    TENFERRO_TRY(EagerTensor k, c.scalar(coef, dtype));
    TENFERRO_TRY(EagerTensor term, c.mul(t, k));
    if (!sum.defined()) {
      sum = std::move(term);
    } else {
      TENFERRO_TRY(sum, c.add(sum, term));
    }
  }
  return sum;
}

// The largest 1-norm (column sum of |a_ij|) over the batch of `a`, read on the host.
Result<double> largest_one_norm(const Context& c, const EagerTensor& a) {
  const Context q = c.no_grad();
  TENFERRO_TRY(EagerTensor mag, q.abs(a));
  TENFERRO_TRY(EagerTensor columns, q.sum(mag, {a.rank() - 2}));
  TENFERRO_TRY(EagerTensor top, q.amax(columns));
  TENFERRO_TRY(Tensor host, to_host(top));
  TENFERRO_TRY(const c128 v, host.get_as_c128({}));
  return v.real();
}

}  // namespace

Result<EagerTensor> expm(const Context& c, const EagerTensor& a) {
  if (!a.defined()) return usage_error(ErrorCode::kInvalidArgument, "expm", "undefined tensor");
  if (a.rank() < 2 || a.shape()[a.rank() - 1] != a.shape()[a.rank() - 2]) {
    return usage_error(ErrorCode::kInvalidShape, "expm",
                       "needs square matrices in the last two axes, got shape " + format_dims(a.shape()));
  }
  const DType dtype = a.dtype();
  if (!is_inexact(dtype)) {
    return usage_error(ErrorCode::kDTypeMismatch, "expm",
                       "needs a floating or complex dtype, got " + std::string(dtype_name(dtype)));
  }
  if (a.ad_node() != nullptr && a.ad_node()->traced) {
    // A traced value: the kernel's expm (the same algorithm, choosing the degree and
    // scaling per run), recorded as the linalg family's expm op, whose rule is the
    // Fréchet derivative.
    const EagerTensor* ins[] = {&a};
    TENFERRO_TRY(std::vector<EagerTensor> out,
                 c.run_native(
                     ins, "expm", a.numel() * a.shape()[a.rank() - 1],
                     [&](cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool,
                         std::vector<Tensor>& o) -> Result<void> {
                       TENFERRO_TRY(Tensor x, tenferro::linalg::expm(ctx, a.tensor(), pool));
                       o = {std::move(x)};
                       return ok();
                     },
                     [&]() -> Context::ProgramForm {
                       return [](program::ProgramBuilder& b,
                                 std::span<const program::Value> v) -> Result<std::vector<program::Value>> {
                         linalg_ir::Payload p;
                         p.kind = linalg_ir::Kind::kExpm;
                         return linalg_ir::emit_linalg(b, p, v);
                       };
                     }));
    return out.at(0);
  }
  const int64_t n = a.shape()[a.rank() - 1];
  if (a.numel() == 0) return c.contiguous(a);
  TENFERRO_TRY(const double norm, largest_one_norm(c, a));
  const bool single = dtype == DType::kF32 || dtype == DType::kC64;
  const tenferro::linalg::ExpmScaling choice = tenferro::linalg::expm_scaling(norm, single);  // the kernel's choice
  const int s = choice.squarings, degree = choice.degree;
  const std::vector<double> coef = tenferro::linalg::pade_coefficients(degree);
  auto cj = [&](int j) { return coef[static_cast<size_t>(j)]; };
  EagerTensor x = a;
  if (s > 0) {
    TENFERRO_TRY(EagerTensor scale, c.scalar(std::ldexp(1.0, -s), dtype));
    TENFERRO_TRY(x, c.mul(a, scale));
  }
  // The identity of x's shape (batch axes broadcast).
  TENFERRO_TRY(EagerTensor rows, c.iota({n, n}, 0));
  TENFERRO_TRY(EagerTensor cols, c.iota({n, n}, 1));
  TENFERRO_TRY(EagerTensor diag, c.eq(rows, cols));
  TENFERRO_TRY(EagerTensor eye, c.astype(diag, dtype));
  TENFERRO_TRY(eye, c.broadcast_to(eye, a.shape()));
  TENFERRO_TRY(EagerTensor x2, c.matmul(x, x));
  EagerTensor u, v;
  using Term = std::pair<double, EagerTensor>;
  if (degree == 13) {
    TENFERRO_TRY(EagerTensor x4, c.matmul(x2, x2));
    TENFERRO_TRY(EagerTensor x6, c.matmul(x4, x2));
    const Term hi_u[] = {{cj(13), x6}, {cj(11), x4}, {cj(9), x2}};
    TENFERRO_TRY(EagerTensor inner_u, combine(c, hi_u, dtype));
    TENFERRO_TRY(inner_u, c.matmul(x6, inner_u));
    const Term lo_u[] = {{1.0, inner_u}, {cj(7), x6}, {cj(5), x4}, {cj(3), x2}, {cj(1), eye}};
    TENFERRO_TRY(EagerTensor odd, combine(c, lo_u, dtype));
    TENFERRO_TRY(u, c.matmul(x, odd));
    const Term hi_v[] = {{cj(12), x6}, {cj(10), x4}, {cj(8), x2}};
    TENFERRO_TRY(EagerTensor inner_v, combine(c, hi_v, dtype));
    TENFERRO_TRY(inner_v, c.matmul(x6, inner_v));
    const Term lo_v[] = {{1.0, inner_v}, {cj(6), x6}, {cj(4), x4}, {cj(2), x2}, {cj(0), eye}};
    TENFERRO_TRY(v, combine(c, lo_v, dtype));
  } else {
    // Even powers I, A^2, A^4, ... up to A^(m - 1).
    std::vector<EagerTensor> even{eye, x2};
    while (static_cast<int>(even.size()) * 2 <= degree) {
      TENFERRO_TRY(EagerTensor next, c.matmul(even.back(), x2));
      even.push_back(std::move(next));
    }
    std::vector<Term> odd_terms, even_terms;
    for (int j = 0; j <= degree; ++j) {
      (j % 2 == 1 ? odd_terms : even_terms).emplace_back(cj(j), even[static_cast<size_t>(j / 2)]);
    }
    TENFERRO_TRY(EagerTensor odd, combine(c, odd_terms, dtype));
    TENFERRO_TRY(u, c.matmul(x, odd));
    TENFERRO_TRY(v, combine(c, even_terms, dtype));
  }
  TENFERRO_TRY(EagerTensor den, c.sub(v, u));
  TENFERRO_TRY(EagerTensor num, c.add(v, u));
  TENFERRO_TRY(EagerTensor r, solve(c, den, num));
  for (int k = 0; k < s; ++k) {
    TENFERRO_TRY(r, c.matmul(r, r));
  }
  return r;
}

Result<EagerTensor> expm(const EagerTensor& a) {
  if (!a.defined()) return usage_error(ErrorCode::kInvalidArgument, "expm", "undefined tensor");
  return expm(Context::of(a), a);
}

}  // namespace tenferro::eager::linalg
