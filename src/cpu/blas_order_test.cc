// A process that links BLIS before OpenBLAS (its own link line, as a user's program
// might): BLIS's BLAS and cblas symbols win, so the provider called "openblas" is not
// OpenBLAS. The probe reports it and plans that provider as slow; dot_general's values
// do not depend on it (Note [BLAS symbol order] in caps.cc).

#include <gtest/gtest.h>

#include <string>

#include "tenferro/cpu/caps.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/engine.h"

namespace tenferro::cpu {
namespace {

TEST(BlasOrder, BlisLinkedFirstIsReportedAndPlannedAsSlow) {
  const CpuCaps caps = CpuCaps::probe();
  EXPECT_NE(caps.blas_symbols_elsewhere.find("blis"), std::string::npos) << caps.blas_symbols_elsewhere;
  EXPECT_FALSE(caps.openblas_tuned);
  EXPECT_FALSE(caps.openblas_avx512);
  EXPECT_NE(caps.describe().find("WARNING"), std::string::npos) << caps.describe();
}

TEST(BlasOrder, ProductsKeepTheirValues) {
  auto engine = CpuEngine::create({}).value();
  for (const int64_t n : {5, 64, 300}) {
    const Tensor a = Tensor::random_normal(DType::kF64, {n, n + 1}, 1).value();
    const Tensor b = Tensor::random_normal(DType::kF64, {n + 1, n}, 2).value();
    DotDims dims;
    dims.lhs_contracting = {1};
    dims.rhs_contracting = {0};
    for (const GemmProvider p : {GemmProvider::kAuto, GemmProvider::kOpenBlas, GemmProvider::kBlis}) {
      DotOptions opt;
      opt.provider = p;
      Tensor c;
      ASSERT_TRUE(engine->run(0, ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
        TENFERRO_TRY(c, dot_general(ctx, a, b, dims, opt));
        return ok();
      }));
      for (int64_t i = 0; i < n; i += 7)
        for (int64_t j = 0; j < n; j += 5) {
          long double want = 0;
          for (int64_t k = 0; k <= n; ++k)
            want += static_cast<long double>(a.get<double>({i, k}).value()) * b.get<double>({k, j}).value();
          EXPECT_NEAR(c.get<double>({i, j}).value(), static_cast<double>(want), 1e-12 * static_cast<double>(n + 1));
        }
    }
  }
}

}  // namespace
}  // namespace tenferro::cpu
