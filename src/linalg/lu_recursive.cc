// The recursive LU factorization with partial pivoting on the engine's GEMM (Note
// [Recursive LU] in common.h).

#include <cstdint>
#include <utility>

#include "common.h"
#include "tenferro/cpu/dot_general.h"

namespace tenferro::linalg::detail {

namespace {

// Columns of the panels LAPACK's getrf factors, and rows of the triangles its trsm
// solves (Note [Recursive LU]).
constexpr int64_t kLuLeaf = 64;

template <class T>
class RecursiveLu {
 public:
  RecursiveLu(const cpu::CpuExecutionContext& ctx, int64_t m, T* a, int64_t lda, lint* ipiv) noexcept
      : ctx_(ctx), m_(m), a_(a), lda_(lda), ipiv_(ipiv) {}

  // Factors columns [c0, c0 + n) over rows [c0, m) (pivots ipiv[c0 .. c0 + n), rows
  // swapped within these columns only). Returns LAPACK's info: the first zero pivot
  // (1-based, absolute), or 0.
  Result<lint> factor(int64_t c0, int64_t n) {
    if (n <= kLuLeaf) {
      const cpu::OpenBlasThreads one(1);  // the panel on this thread (Note [Recursive LU])
      lint info = Lapack<T>::getrf(static_cast<lint>(m_ - c0), static_cast<lint>(n), &at(c0, c0),
                                   static_cast<lint>(lda_), ipiv_ + c0);
      for (int64_t j = c0; j < c0 + n; ++j) ipiv_[j] += static_cast<lint>(c0);
      return info != 0 ? info + static_cast<lint>(c0) : 0;
    }
    const int64_t n1 = n / 2, n2 = n - n1, c1 = c0 + n1;
    TENFERRO_TRY(lint info, factor(c0, n1));
    swap_rows(c0, c1, c1, c1 + n2);
    TENFERRO_TRY_VOID(solve_lower(c0, n1, c1, n2));
    if (m_ > c1) TENFERRO_TRY_VOID(subtract_product(c1, c0, m_ - c1, n1, c1, n2));
    TENFERRO_TRY(lint info2, factor(c1, n2));
    swap_rows(c1, c1 + n2, c0, c1);
    return info != 0 ? info : info2;
  }

  // The columns [c0, n) right of a wide matrix's factored k = c0 columns: swaps, then
  // U's rows by the triangular solve with L.
  Result<void> finish_wide(int64_t k, int64_t n) {
    swap_rows(0, k, k, n);
    return solve_lower(0, k, k, n - k);
  }

 private:
  T& at(int64_t i, int64_t j) const noexcept { return a_[i + j * lda_]; }

  // Applies the swaps of ipiv[k0 .. k1) to columns [c0, c1), one column at a time.
  void swap_rows(int64_t k0, int64_t k1, int64_t c0, int64_t c1) noexcept {
    for (int64_t c = c0; c < c1; ++c) {
      T* col = &at(0, c);
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t p = ipiv_[k] - 1;
        if (p != k) std::swap(col[k], col[p]);
      }
    }
  }

  // B := L^{-1} B with L the unit lower triangle at (r0, r0) of extent nl and B the
  // nl x nb block at (r0, b0): halves of L recursively, the coupling by a product.
  Result<void> solve_lower(int64_t r0, int64_t nl, int64_t b0, int64_t nb) {
    if (nl <= kLuLeaf) {
      const cpu::OpenBlasThreads one(1);
      Lapack<T>::trsm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<lint>(nl), static_cast<lint>(nb),
                      &at(r0, r0), static_cast<lint>(lda_), &at(r0, b0), static_cast<lint>(lda_));
      return ok();
    }
    const int64_t h = nl / 2;
    TENFERRO_TRY_VOID(solve_lower(r0, h, b0, nb));
    TENFERRO_TRY_VOID(subtract_product(r0 + h, r0, nl - h, h, b0, nb));
    return solve_lower(r0 + h, nl - h, b0, nb);
  }

  // C -= A B with C the rows x cols block at (r0, c0), A the rows x k block at (r0, ka)
  // and B the k x cols block at (ka, c0): one dot_general call (the engine's GEMM).
  Result<void> subtract_product(int64_t r0, int64_t ka, int64_t rows, int64_t k, int64_t c0, int64_t cols) {
    if (rows == 0 || cols == 0 || k == 0) return ok();
    TENFERRO_TRY(Tensor lhs, view(r0, ka, rows, k));
    TENFERRO_TRY(Tensor rhs, view(ka, c0, k, cols));
    TENFERRO_TRY(Tensor out, view(r0, c0, rows, cols));
    cpu::DotDims dims;
    dims.lhs_contracting = {1};
    dims.rhs_contracting = {0};
    cpu::DotOptions opt;
    opt.alpha = -1.0;
    opt.beta = 1.0;
    return cpu::dot_general_into(ctx_, lhs, rhs, dims, opt, out);
  }

  // A handle over the rows x cols block at (r0, c0), on its own borrowed storage (the
  // blocks of one call never overlap).
  Result<Tensor> view(int64_t r0, int64_t c0, int64_t rows, int64_t cols) const {
    const int64_t elems = (cols - 1) * lda_ + rows;
    auto storage = ExternalStorage::foreign(&at(r0, c0), elems * static_cast<int64_t>(sizeof(T)), nullptr, true);
    Layout layout{Shape{rows, cols}, Strides{1, lda_}, 0};
    return Tensor::from_storage(kDTypeOf<T>, std::move(storage), std::move(layout));
  }

  const cpu::CpuExecutionContext& ctx_;
  int64_t m_;
  T* a_;
  int64_t lda_;
  lint* ipiv_;
};

}  // namespace

template <class T>
Result<lint> recursive_lu(const cpu::CpuExecutionContext& ctx, int64_t m, int64_t n, T* a, int64_t lda, lint* ipiv) {
  const int64_t k = std::min(m, n);
  RecursiveLu<T> lu(ctx, m, a, lda, ipiv);
  if (k == 0) return lint{0};
  TENFERRO_TRY(lint info, lu.factor(0, k));
  if (n > k) TENFERRO_TRY_VOID(lu.finish_wide(k, n));
  return info;
}

template Result<lint> recursive_lu<float>(const cpu::CpuExecutionContext&, int64_t, int64_t, float*, int64_t, lint*);
template Result<lint> recursive_lu<double>(const cpu::CpuExecutionContext&, int64_t, int64_t, double*, int64_t, lint*);
template Result<lint> recursive_lu<c64>(const cpu::CpuExecutionContext&, int64_t, int64_t, c64*, int64_t, lint*);
template Result<lint> recursive_lu<c128>(const cpu::CpuExecutionContext&, int64_t, int64_t, c128*, int64_t, lint*);

}  // namespace tenferro::linalg::detail
