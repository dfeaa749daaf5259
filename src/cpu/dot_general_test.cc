// dot_general against a naive index-space reference on random configurations: batch,
// contracting and free dims in random positions, strided/flipped/sliced operands,
// conj flags, alpha/beta, `_into` destinations with random layouts, every provider.

#include "tenferro/cpu/dot_general.h"

#include <gtest/gtest.h>

#include "tenferro/test_support/index.h"
#include "tenferro/test_support/strided.h"

#include <algorithm>
#include <complex>
#include <random>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "gemm.h"
#include "tenferro/cpu/dot_route.h"
#include "tenferro/cpu/elementwise.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {
namespace {

using test_support::for_each_index;
using test_support::Index;

// Routing assertions plan for explicit capabilities (Note [dot_general planner]), so
// they hold on every machine; the values are checked on this machine's own route.
// kReferenceCaps: AVX-512 usable, BLIS and OpenBLAS both tuned.
CpuCaps reference_caps(IsaLevel isa = IsaLevel::kAvx512, bool blis_tuned = true, bool openblas_tuned = true) {
  CpuCaps c;
  c.detected_isa = isa;
  c.built_isa = IsaLevel::kAvx512;
  c.blis_arch = blis_tuned ? "zen3" : "generic";
  c.blis_tuned = blis_tuned;
  c.openblas_core = openblas_tuned ? "Haswell" : "Prescott";
  c.openblas_tuned = openblas_tuned;
  c.openblas_threaded = true;
  return c;
}
const CpuCaps kReferenceCaps = reference_caps();

// The route dot_general plans for these operands into `out` on `threads` threads with `caps`.
DotRoute planned(const CpuCaps& caps, int threads, const Tensor& lhs, const Tensor& rhs, const Tensor& out,
                 const DotDims& dims, const DotOptions& opt = {}) {
  const DotProblem p = dot_problem(lhs.dtype(), lhs.layout(), rhs.layout(), out.layout(), dims, opt).value();
  const DotSettings st{effective_batch_settings(CpuExecutionContext::sequential(), opt), threads};
  return plan_dot(p, caps, st).value();
}


Tensor strided_operand(std::mt19937_64& rng, DType d, const Shape& shape) {
  return test_support::strided_random(rng, d, shape, -2, 2);
}

struct Config {
  Shape lhs_shape, rhs_shape;
  DotDims dims;
};

// Random dims: nb batch, nk contracting, lf / rf free, extents 1..5 (sometimes larger
// to reach the BLAS paths), placed at random axis positions.
Config random_config(std::mt19937_64& rng) {
  const int nb = static_cast<int>(rng() % 3), nk = static_cast<int>(rng() % 3);
  const int lf = static_cast<int>(rng() % 3), rf = static_cast<int>(rng() % 3);
  const bool big = rng() % 3 == 0;
  auto extent = [&] { return static_cast<int64_t>(1 + rng() % (big ? 24 : 5)); };
  std::vector<int64_t> be, ke;
  for (int i = 0; i < nb; ++i) be.push_back(big ? 1 + static_cast<int64_t>(rng() % 3) : extent());
  for (int i = 0; i < nk; ++i) ke.push_back(extent());
  Config c;
  // Roles per lhs axis: 0 batch, 1 contracting, 2 free; positions shuffled.
  struct Slot {
    int role;
    int index;
    int64_t extent;
  };
  std::vector<Slot> ls, rs;
  for (int i = 0; i < nb; ++i) ls.push_back({0, i, be[static_cast<size_t>(i)]}), rs.push_back({0, i, be[static_cast<size_t>(i)]});
  for (int i = 0; i < nk; ++i) ls.push_back({1, i, ke[static_cast<size_t>(i)]}), rs.push_back({1, i, ke[static_cast<size_t>(i)]});
  for (int i = 0; i < lf; ++i) ls.push_back({2, i, extent()});
  for (int i = 0; i < rf; ++i) rs.push_back({2, i, extent()});
  std::shuffle(ls.begin(), ls.end(), rng);
  std::shuffle(rs.begin(), rs.end(), rng);
  c.dims.lhs_batch.resize(static_cast<size_t>(nb));
  c.dims.rhs_batch.resize(static_cast<size_t>(nb));
  c.dims.lhs_contracting.resize(static_cast<size_t>(nk));
  c.dims.rhs_contracting.resize(static_cast<size_t>(nk));
  for (size_t a = 0; a < ls.size(); ++a) {
    c.lhs_shape.push_back(ls[a].extent);
    if (ls[a].role == 0) c.dims.lhs_batch[static_cast<size_t>(ls[a].index)] = static_cast<int64_t>(a);
    if (ls[a].role == 1) c.dims.lhs_contracting[static_cast<size_t>(ls[a].index)] = static_cast<int64_t>(a);
  }
  for (size_t a = 0; a < rs.size(); ++a) {
    c.rhs_shape.push_back(rs[a].extent);
    if (rs[a].role == 0) c.dims.rhs_batch[static_cast<size_t>(rs[a].index)] = static_cast<int64_t>(a);
    if (rs[a].role == 1) c.dims.rhs_contracting[static_cast<size_t>(rs[a].index)] = static_cast<int64_t>(a);
  }
  return c;
}

// Naive reference over the full index space, in complex<long double>. The operands are
// first copied into dense column-major long double arrays (conjugated when asked); then
// every output element sums its products with offsets walked by strides, so a term costs
// one multiply-add (no per-term allocation or checked element access). `mag` gets each
// element's sum of |re| + |im| over its terms (the error scale).
std::vector<std::complex<long double>> reference(const Tensor& lhs, const Tensor& rhs, const Config& c, bool cl,
                                                 bool cr, const Shape& out_shape, std::vector<long double>* mag) {
  using LD = long double;
  const int64_t n_out = element_count(out_shape);
  std::vector<std::complex<LD>> out(static_cast<size_t>(n_out));
  mag->assign(static_cast<size_t>(n_out), 0);
  const auto col_strides = [](const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (size_t i = 1; i < s.size(); ++i) st[i] = st[i - 1] * s[i - 1];
    return st;
  };
  const auto dense = [&](const Tensor& t, bool conj) {
    const std::vector<int64_t> st = col_strides(t.shape());
    std::vector<LD> re(static_cast<size_t>(t.numel())), im(re.size());
    for_each_index(t.shape(), [&](const Index& idx) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * st[k];
      const c128 x = t.get_as_c128(idx).value();
      re[static_cast<size_t>(off)] = x.real();
      im[static_cast<size_t>(off)] = conj ? -x.imag() : x.imag();
    });
    return std::pair<std::vector<LD>, std::vector<LD>>(std::move(re), std::move(im));
  };
  const auto [lre, lim] = dense(lhs, cl);
  const auto [rre, rim] = dense(rhs, cr);
  const std::vector<int64_t> lst = col_strides(lhs.shape()), rst = col_strides(rhs.shape());
  // Per output axis and per contracted axis: the step of each operand's offset.
  std::vector<int64_t> o_l, o_r, k_l, k_r;
  Shape kshape;
  const size_t nb = c.dims.lhs_batch.size();
  for (size_t b = 0; b < nb; ++b) {
    o_l.push_back(lst[static_cast<size_t>(c.dims.lhs_batch[b])]);
    o_r.push_back(rst[static_cast<size_t>(c.dims.rhs_batch[b])]);
  }
  const auto is_in = [](const auto& v, int64_t a) { return std::find(v.begin(), v.end(), a) != v.end(); };
  for (size_t a = 0; a < lhs.shape().size(); ++a) {
    const auto ia = static_cast<int64_t>(a);
    if (!is_in(c.dims.lhs_batch, ia) && !is_in(c.dims.lhs_contracting, ia)) o_l.push_back(lst[a]), o_r.push_back(0);
  }
  for (size_t a = 0; a < rhs.shape().size(); ++a) {
    const auto ia = static_cast<int64_t>(a);
    if (!is_in(c.dims.rhs_batch, ia) && !is_in(c.dims.rhs_contracting, ia)) o_l.push_back(0), o_r.push_back(rst[a]);
  }
  for (size_t i = 0; i < c.dims.lhs_contracting.size(); ++i) {
    kshape.push_back(lhs.shape()[static_cast<size_t>(c.dims.lhs_contracting[i])]);
    k_l.push_back(lst[static_cast<size_t>(c.dims.lhs_contracting[i])]);
    k_r.push_back(rst[static_cast<size_t>(c.dims.rhs_contracting[i])]);
  }
  const int64_t n_k = element_count(kshape);
  std::vector<int64_t> oi(out_shape.size(), 0), ki(kshape.size(), 0);
  int64_t lo = 0, ro = 0;
  for (int64_t lin = 0; lin < n_out; ++lin) {  // column-major: the first axis fastest
    LD ar = 0, ai = 0, m = 0;
    int64_t l = lo, r = ro;
    std::fill(ki.begin(), ki.end(), 0);
    for (int64_t t = 0; t < n_k; ++t) {
      const LD xr = lre[static_cast<size_t>(l)], xi = lim[static_cast<size_t>(l)];
      const LD yr = rre[static_cast<size_t>(r)], yi = rim[static_cast<size_t>(r)];
      const LD pr = xr * yr - xi * yi, pi = xr * yi + xi * yr;
      ar += pr;
      ai += pi;
      m += std::fabs(pr) + std::fabs(pi);  // at most sqrt(2) |p|: no square root per term
      for (size_t k = 0; k < ki.size(); ++k) {
        l += k_l[k], r += k_r[k];
        if (++ki[k] < kshape[k]) break;
        l -= k_l[k] * kshape[k], r -= k_r[k] * kshape[k];
        ki[k] = 0;
      }
    }
    out[static_cast<size_t>(lin)] = std::complex<LD>(ar, ai);
    (*mag)[static_cast<size_t>(lin)] = m;
    for (size_t k = 0; k < oi.size(); ++k) {
      lo += o_l[k], ro += o_r[k];
      if (++oi[k] < out_shape[k]) break;
      lo -= o_l[k] * out_shape[k], ro -= o_r[k] * out_shape[k];
      oi[k] = 0;
    }
  }
  return out;
}

// A real f64 product `out` = lhs . rhs (alpha 1, beta 0) against the reference.
void expect_real_product(const Tensor& lhs, const Tensor& rhs, const Config& c, const Tensor& out) {
  std::vector<long double> mag;
  auto ref = reference(lhs, rhs, c, false, false, out.shape(), &mag);
  int64_t lin = 0;
  for_each_index(out.shape(), [&](const Index& oi) {
    EXPECT_NEAR(out.get_as_c128(oi).value().real(), static_cast<double>(ref[static_cast<size_t>(lin)].real()),
                1e-12 * static_cast<double>(mag[static_cast<size_t>(lin)] + 1))
        << "lhs " << format_dims(lhs.shape()) << " rhs " << format_dims(rhs.shape()) << " at " << format_dims(oi);
    ++lin;
  });
}

TEST(DotGeneral, MatchesNaiveOnRandomConfigurations) {
  std::mt19937_64 rng(20261129);
  auto executor = make_tbb_executor(2).value();
  const DType dtypes[] = {DType::kF64, DType::kF32, DType::kC128, DType::kC64, DType::kI64, DType::kI32};
  const GemmProvider providers[] = {GemmProvider::kAuto, GemmProvider::kOpenBlas, GemmProvider::kBlis,
                                    GemmProvider::kNaive};
  // Every automatic route is planned under each BLAS trust combination (Note [CPU
  // capabilities]), whatever this machine's libraries run: the values never change.
  std::vector<CpuCaps> caps_variants;
  for (int v = 0; v < 4; ++v) {
    CpuCaps caps = host_caps();
    caps.blis_tuned = v & 1;
    caps.openblas_tuned = v & 2;
    caps_variants.push_back(caps);
  }
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const CpuCaps* caps = &caps_variants[static_cast<size_t>(trial / 6) % caps_variants.size()];
    const DType d = dtypes[trial % 6];
    Config c = random_config(rng);
    Tensor lhs = strided_operand(rng, d, c.lhs_shape);
    Tensor rhs = strided_operand(rng, d, c.rhs_shape);
    DotOptions opt;
    opt.provider = providers[rng() % 4];
    opt.batch_policy = static_cast<BatchPolicy>(rng() % 5);
    if (opt.provider == GemmProvider::kOpenBlas && opt.batch_policy == BatchPolicy::kOuterParallel) opt.batch_policy = BatchPolicy::kSequential;
    if (opt.batch_policy == BatchPolicy::kWholeBatchVendor && (is_integral(d) || opt.provider == GemmProvider::kOpenBlas ||
                                                                opt.provider == GemmProvider::kNaive)) {
      opt.batch_policy = BatchPolicy::kProviderItems;
    }
    opt.conj_lhs = is_complex(d) && rng() % 2;
    opt.conj_rhs = is_complex(d) && rng() % 2;
    const bool into = rng() % 2;
    if (is_integral(d)) {
      opt.alpha = static_cast<double>(static_cast<int>(rng() % 3) - 1);
      opt.beta = into ? static_cast<double>(static_cast<int>(rng() % 3) - 1) : 0.0;
    } else {
      opt.alpha = is_complex(d) ? c128(0.5, -1.25) : c128(1.5, 0);
      opt.beta = into && rng() % 2 ? (is_complex(d) ? c128(-0.5, 0.75) : c128(0.25, 0)) : c128(0, 0);
    }
    const Shape out_shape = dot_general_shape(c.lhs_shape, c.rhs_shape, c.dims).value();
    Tensor out;
    Tensor before;
    Result<void> status;
    const ParallelMode mode = rng() % 2 ? ParallelMode::kInner : ParallelMode::kSequential;
    if (into) {
      out = strided_operand(rng, d, out_shape);
      out = out.contiguous().value().permute([&] {
        Index p(out_shape.size());
        for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>(i);
        return p;
      }()).value();
      if (out.rank() > 1 && rng() % 2) {
        // A transposed destination view of a fresh buffer.
        Shape t = out_shape;
        std::reverse(t.begin(), t.end());
        Index rev(out_shape.size());
        for (size_t i = 0; i < rev.size(); ++i) rev[i] = static_cast<int64_t>(rev.size() - 1 - i);
        out = Tensor::random_uniform(d, t, rng(), -1, 1).value().permute(rev).value();
      }
      before = out.clone().value();
      const bool use_scratch = rng() % 2;
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), mode, 2, {}, caps);
        if (use_scratch) {
          // A first call warms the scratch buffers (Note [Dot scratch]); the second reuses them.
          DotScratch scratch;
          Tensor warm = before.clone().value();
          status = dot_general_into(ctx, lhs, rhs, c.dims, opt, warm, nullptr, &scratch);
          if (status) status = dot_general_into(ctx, lhs, rhs, c.dims, opt, out, nullptr, &scratch);
        } else {
          status = dot_general_into(ctx, lhs, rhs, c.dims, opt, out);
        }
      });
    } else {
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), mode, 2, {}, caps);
        auto r = dot_general(ctx, lhs, rhs, c.dims, opt);
        if (r) out = *r; else status = r.error();
      });
    }
    ASSERT_TRUE(status.has_value()) << status.error().to_string();
    ASSERT_EQ(out.shape(), out_shape);
    std::vector<long double> mag;
    auto ref = reference(lhs, rhs, c, opt.conj_lhs, opt.conj_rhs, out_shape, &mag);
    const double eps = (d == DType::kF32 || d == DType::kC64) ? 1e-5 : is_integral(d) ? 0 : 1e-12;
    int64_t lin = 0;
    for_each_index(out_shape, [&](const Index& oi) {
      (void)oi;
      ++lin;
    });
    lin = 0;
    for_each_index(out_shape, [&](const Index& oi) {
      std::complex<long double> want = std::complex<long double>(opt.alpha.real(), opt.alpha.imag()) * ref[static_cast<size_t>(lin)];
      long double m = std::abs(std::complex<long double>(opt.alpha.real(), opt.alpha.imag())) * mag[static_cast<size_t>(lin)];
      if (into && opt.beta != c128(0)) {
        const c128 b = before.get_as_c128(oi).value();
        want += std::complex<long double>(opt.beta.real(), opt.beta.imag()) * std::complex<long double>(b.real(), b.imag());
        m += std::abs(b) * std::abs(opt.beta);
      }
      const c128 got = out.get_as_c128(oi).value();
      const long double err = std::abs(std::complex<long double>(got.real(), got.imag()) - want);
      ASSERT_LE(static_cast<double>(err), eps * static_cast<double>(m + 1))
          << "trial " << trial << " dtype " << dtype_name(d) << " provider " << gemm_provider_name(opt.provider)
          << " lhs " << format_dims(c.lhs_shape) << " rhs " << format_dims(c.rhs_shape) << " at " << format_dims(oi);
      ++lin;
      ++checked;
    });
  }
  EXPECT_GT(checked, 5000);
}

TEST(DotGeneral, ProvidersCallTheirOwnLibraries) {
  EXPECT_NE(detail::library_of(detail::openblas_symbol()).find("openblas"), std::string::npos)
      << detail::library_of(detail::openblas_symbol());
  EXPECT_NE(detail::library_of(detail::blis_symbol()).find("blis"), std::string::npos)
      << detail::library_of(detail::blis_symbol());
  // OpenBLAS 0.3.21 has no ?gemm_batch_: the whole-batch vendor call must be BLIS's.
  EXPECT_NE(detail::library_of(detail::blis_batch_symbol()).find("blis"), std::string::npos)
      << detail::library_of(detail::blis_batch_symbol());
}

// Short-side products (M or N <= 32, K >= 64; Note [Short-side products]) in every
// operand orientation, with a strided (every second row) operand, on one and two threads (the BLIS route
// splits the longer side over the workers), against the naive reference.
TEST(DotGeneral, ShortSideProductsInEveryOrientation) {
  auto executor = make_tbb_executor(2).value();
  // The first two reach parallel_min_flops, so two threads split their long side.
  // The last splits its contraction over two threads (Note [Split-K products]).
  const int64_t sizes[][3] = {{700, 7, 120}, {5, 900, 128}, {33, 32, 129}, {1, 40, 300}, {19, 19, 2300}};
  int cases = 0;
  for (const auto& mnk : sizes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    for (int orient = 0; orient < 8; ++orient) {
      // lhs [m, k] or [k, m]; rhs [k, n] or [n, k]; bit 2: lhs sliced from a wider tensor.
      const bool lt = orient & 1, rt = orient & 2, sliced = orient & 4;
      Config c;
      c.lhs_shape = lt ? Shape{k, m} : Shape{m, k};
      c.rhs_shape = rt ? Shape{n, k} : Shape{k, n};
      c.dims.lhs_contracting = {lt ? 0 : 1};
      c.dims.rhs_contracting = {rt ? 1 : 0};
      Tensor lhs;
      if (sliced) {
        // Every second row of a taller tensor: no unit stride on axis 0.
        Shape tall = c.lhs_shape;
        tall[0] *= 2;
        lhs = Tensor::random_normal(DType::kF64, tall, 11 + static_cast<uint64_t>(orient)).value();
        lhs = lhs.slice(0, 0, tall[0], 2).value();
      } else {
        lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 11 + static_cast<uint64_t>(orient)).value();
      }
      Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 97 + static_cast<uint64_t>(orient)).value();
      for (int threads : {1, 2}) {
        SCOPED_TRACE("orientation " + std::to_string(orient) + " threads " + std::to_string(threads));
        Tensor out;
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
          out = dot_general(ctx, lhs, rhs, c.dims, DotOptions{}).value();
        });
        ASSERT_EQ(out.shape(), (Shape{m, n}));
        expect_real_product(lhs, rhs, c, out);
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 80);
}

// Note [Contraction order]: contracting pairs listed against the larger operand's memory
// order are reordered so that only the smaller operand is packed; the result matches the
// naive reference. The DotScratch shows which operand was packed.
TEST(DotGeneral, ContractionOrderPacksTheSmallerOperand) {
  auto executor = make_tbb_executor(2).value();
  // lhs [m 6, k1 5, k2 7] column-major; rhs [k2 7, k1 5, n 40] column-major: the pairs
  // (k1, k2) merge in lhs order only, (k2, k1) in rhs order only.
  for (const bool rhs_big : {true, false}) {
    Config c;
    const int64_t n = rhs_big ? 40 : 2;
    c.lhs_shape = {6, 5, 7};
    c.rhs_shape = {7, 5, n};
    c.dims.lhs_contracting = {1, 2};
    c.dims.rhs_contracting = {1, 0};
    const Tensor lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 3).value();
    const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 4).value();
    const Shape out_shape{6, n};
    Tensor out = Tensor::zeros(DType::kF64, out_shape).value();
    DotScratch scratch;
    Result<void> st;
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kSequential, 1);
      DotOptions opt;
      opt.provider = GemmProvider::kOpenBlas;
      st = dot_general_into(ctx, lhs, rhs, c.dims, opt, out, nullptr, &scratch);
    });
    ASSERT_TRUE(st.has_value()) << st.error().to_string();
    // 6*35 = 210 lhs elements against 35*n rhs elements.
    DotOptions opt;
    opt.provider = GemmProvider::kOpenBlas;
    const DotRoute route = planned(kReferenceCaps, 1, lhs, rhs, out, c.dims, opt);
    EXPECT_EQ(route.pack_lhs, rhs_big) << "rhs_big " << rhs_big;
    EXPECT_EQ(route.pack_rhs, !rhs_big) << "rhs_big " << rhs_big;
    expect_real_product(lhs, rhs, c, out);
  }
}

// Note [Contraction order], when the larger operand does not merge in any order: a
// partner of similar size keeps the order that merges it (one pack); a much smaller
// partner follows the larger operand's order (both packed, the large one in memory
// order). Both against the reference.
TEST(DotGeneral, ContractionOrderWhenTheLargerOperandIsPacked) {
  struct Case {
    Shape lhs, rhs;  // lhs [k1, m, k2], rhs as given
    DotDims dims;
    bool rhs_packed;
  };
  Case cases[2];
  cases[0].lhs = {5, 10, 7};  // 350 elements, k1 and k2 around m
  cases[0].rhs = {5, 7, 8};   // 280 elements, [k1, k2, n]: merges in its own order
  cases[0].dims.lhs_contracting = {0, 2};
  cases[0].dims.rhs_contracting = {0, 1};
  cases[0].rhs_packed = false;
  cases[1].lhs = {5, 100, 7};  // 3500 elements
  cases[1].rhs = {7, 5, 2};    // 70 elements, [k2, k1, n]
  cases[1].dims.lhs_contracting = {0, 2};
  cases[1].dims.rhs_contracting = {1, 0};
  cases[1].rhs_packed = true;
  for (const Case& cs : cases) {
    Config c;
    c.lhs_shape = cs.lhs;
    c.rhs_shape = cs.rhs;
    c.dims = cs.dims;
    const Tensor lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 13).value();
    const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 14).value();
    const Shape out_shape = dot_general_shape(c.lhs_shape, c.rhs_shape, c.dims).value();
    Tensor out = Tensor::zeros(DType::kF64, out_shape).value();
    DotScratch scratch;
    DotOptions opt;
    opt.provider = GemmProvider::kOpenBlas;
    auto ctx = CpuExecutionContext::sequential();
    ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, opt, out, nullptr, &scratch).has_value());
    const DotRoute route = planned(kReferenceCaps, 1, lhs, rhs, out, c.dims, opt);
    EXPECT_TRUE(route.pack_lhs) << format_dims(cs.lhs);
    EXPECT_EQ(route.pack_rhs, cs.rhs_packed) << format_dims(cs.lhs);
    expect_real_product(lhs, rhs, c, out);
  }
}

// Note [Batch-fastest operands]: with the batch label fastest in memory (column-major
// [b, i, j]) and two threads (outer-parallel BLIS items), the operands are packed once
// instead of handing BLIS doubly strided matrices; the result matches the reference.
TEST(DotGeneral, BatchFastestOperandsArePackedForBlis) {
  auto executor = make_tbb_executor(2).value();
  Config c;
  c.lhs_shape = {32, 40, 36};  // [b, i, j]
  c.rhs_shape = {32, 36, 44};  // [b, j, k]
  c.dims.lhs_batch = {0};
  c.dims.rhs_batch = {0};
  c.dims.lhs_contracting = {2};
  c.dims.rhs_contracting = {1};
  const Tensor lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 21).value();
  const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 22).value();
  // The destination with its batch label fastest too.
  Tensor out = Tensor::zeros(DType::kF64, {32, 40, 44}).value();
  DotScratch scratch;
  Result<void> st;
  executor->install([&] {
    CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
    st = dot_general_into(ctx, lhs, rhs, c.dims, DotOptions{}, out, nullptr, &scratch);
  });
  ASSERT_TRUE(st.has_value()) << st.error().to_string();
  // With an L2 too small for the lane kernel's slices (Note [Batch-lane thresholds]),
  // which these operands would otherwise take.
  CpuCaps caps = kReferenceCaps;
  caps.l2_bytes = 8 << 10;
  const DotRoute route = planned(caps, 2, lhs, rhs, out, c.dims);
  EXPECT_EQ(route.provider, GemmProvider::kBlis) << describe(route);
  EXPECT_TRUE(route.pack_lhs);
  EXPECT_TRUE(route.pack_rhs);
  EXPECT_TRUE(route.pack_out);
  expect_real_product(lhs, rhs, c, out);
}

// Note [Split free groups]: an operand whose free labels sit on both sides of the
// contracted ones is not packed when the other side is short (<= 64): its free labels
// become an inner run plus batch dimensions. Checked on both sides, on one and two
// threads (outer-parallel items), against the reference; a long other side packs.
TEST(DotGeneral, SplitFreeGroupsInsteadOfPacking) {
  auto executor = make_tbb_executor(2).value();
  struct Case {
    bool rhs_side;
    int64_t other;  // the other operand's free extent
    bool split;
  };
  for (const Case cs : {Case{true, 24, true}, Case{false, 24, true}, Case{true, 100, false}}) {
    Config c;
    if (cs.rhs_side) {
      c.lhs_shape = {cs.other, 40};  // [m, k]
      c.rhs_shape = {20, 40, 50};    // [n1, k, n2]: free labels around k
      c.dims.lhs_contracting = {1};
      c.dims.rhs_contracting = {1};
    } else {
      c.lhs_shape = {20, 40, 50};    // [m1, k, m2]
      c.rhs_shape = {40, cs.other};  // [k, n]
      c.dims.lhs_contracting = {1};
      c.dims.rhs_contracting = {0};
    }
    const Tensor lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 5).value();
    const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 6).value();
    const Shape out_shape = dot_general_shape(c.lhs_shape, c.rhs_shape, c.dims).value();
    for (int threads : {1, 2}) {
      Tensor out = Tensor::zeros(DType::kF64, out_shape).value();
      DotScratch scratch;
      Result<void> st;
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
        st = dot_general_into(ctx, lhs, rhs, c.dims, DotOptions{}, out, nullptr, &scratch);
      });
      ASSERT_TRUE(st.has_value()) << st.error().to_string();
      const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, c.dims);
      const bool packed = cs.rhs_side ? route.pack_rhs : route.pack_lhs;
      const bool split = cs.rhs_side ? route.split_rhs_free : route.split_lhs_free;
      EXPECT_EQ(packed, !cs.split) << "rhs_side " << cs.rhs_side << " other " << cs.other << " threads " << threads;
      EXPECT_EQ(split, cs.split) << describe(route);
      SCOPED_TRACE("rhs_side " + std::to_string(cs.rhs_side) + " threads " + std::to_string(threads));
      expect_real_product(lhs, rhs, c, out);
    }
  }
}

// Plain loops for a row vector times a row-major matrix (the C row accumulates rows of
// B), for real and conjugated complex operands, with alpha and beta.
TEST(DotGeneral, PlainLoopRowVectorTimesRowMajorMatrix) {
  for (const DType d : {DType::kF64, DType::kC128}) {
    for (const bool conj : {false, true}) {
      if (conj && d == DType::kF64) continue;
      Config c;
      c.lhs_shape = {1, 11};
      c.rhs_shape = {11, 37};
      c.dims.lhs_contracting = {1};
      c.dims.rhs_contracting = {0};
      const Tensor lhs = Tensor::random_normal(d, c.lhs_shape, 8).value();
      // rhs [k, n] with n contiguous: a transposed column-major [n, k].
      const Tensor rhs = Tensor::random_normal(d, {37, 11}, 9).value().permute({1, 0}).value();
      const Shape out_shape{1, 37};
      Tensor out = Tensor::random_normal(d, out_shape, 10).value();
      const Tensor before = out.clone().value();
      DotOptions opt;
      opt.provider = GemmProvider::kNaive;
      opt.conj_lhs = conj;
      opt.conj_rhs = conj;
      opt.alpha = c128(0.5, d == DType::kC128 ? -1.0 : 0.0);
      opt.beta = c128(-0.25, 0);
      auto ctx = CpuExecutionContext::sequential();
      ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, opt, out).has_value());
      std::vector<long double> mag;
      auto ref = reference(lhs, rhs, c, conj, conj, out_shape, &mag);
      for (int64_t j = 0; j < 37; ++j) {
        const std::complex<long double> alpha(opt.alpha.real(), opt.alpha.imag());
        const c128 b = before.get_as_c128({0, j}).value();
        const std::complex<long double> want =
            alpha * ref[static_cast<size_t>(j)] + std::complex<long double>(-0.25L) * std::complex<long double>(b.real(), b.imag());
        const c128 got = out.get_as_c128({0, j}).value();
        EXPECT_NEAR(got.real(), static_cast<double>(want.real()), 1e-12 * static_cast<double>(mag[static_cast<size_t>(j)] + 2));
        EXPECT_NEAR(got.imag(), static_cast<double>(want.imag()), 1e-12 * static_cast<double>(mag[static_cast<size_t>(j)] + 2));
      }
    }
  }
}

// Note [Thin transposed products]: C (m x n, column-major) = A B with k, n <= 32 and A's
// contraction contiguous. Directly through the plain-loop entry (every remainder of the
// 4-row quads and 8-column blocks, alpha, beta, A with a gap between rows) and through
// Runs lhs . rhs into `out` on `threads` workers and checks that no operand was packed
// (and, when asked, no scratch destination used), then the values.
void expect_in_place_product(CpuDomainExecutor& executor, const Config& cfg, const Tensor& lhs, const Tensor& rhs,
                             int threads, Tensor& out, bool direct_out) {
  DotScratch scratch;
  executor.install([&] {
    CpuExecutionContext ctx(&executor, ParallelMode::kInner, threads);
    ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, cfg.dims, DotOptions{}, out, nullptr, &scratch));
  });
  const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, cfg.dims);
  EXPECT_FALSE(route.pack_lhs) << describe(route);
  EXPECT_FALSE(route.pack_rhs) << describe(route);
  if (direct_out) {
    EXPECT_FALSE(route.pack_out) << describe(route);
  }
  expect_real_product(lhs, rhs, cfg, out);
}

// Elements of `out` (written as alpha . lhs rhs + beta . `before`, with opt's conj
// flags; `before` unread when beta is 0) farther than eps x (|alpha| sum |a b| + |beta|
// |before| + 1) from the long-double reference, or not a number; `first` gets the
// first such index.
int64_t alpha_beta_mismatches(const Tensor& lhs, const Tensor& rhs, const Config& c, const DotOptions& opt,
                              const Tensor& before, const Tensor& out, double eps, std::string* first) {
  std::vector<long double> mag;
  const auto ref = reference(lhs, rhs, c, opt.conj_lhs, opt.conj_rhs, out.shape(), &mag);
  const std::complex<long double> alpha(opt.alpha.real(), opt.alpha.imag()), beta(opt.beta.real(), opt.beta.imag());
  int64_t lin = 0, bad = 0;
  for_each_index(out.shape(), [&](const Index& oi) {
    // beta == 0 never reads the destination: a NaN there must not reach the result.
    const c128 b = beta == std::complex<long double>{} ? c128{} : before.get_as_c128(oi).value();
    const c128 got = out.get_as_c128(oi).value();
    const std::complex<long double> want = alpha * ref[static_cast<size_t>(lin)] + beta * std::complex<long double>(b.real(), b.imag());
    const long double bound = std::abs(alpha) * mag[static_cast<size_t>(lin)] + std::abs(beta) * std::abs(b) + 1;
    // Written so that a NaN result counts as a mismatch.
    if (!(static_cast<double>(std::abs(std::complex<long double>(got.real(), got.imag()) - want)) <=
          eps * static_cast<double>(bound))) {
      if (bad++ == 0) *first = format_dims(oi);
    }
    ++lin;
  });
  return bad;
}

// Fills `out` (any layout) with NaN: a destination a beta = 0 product must never read.
Result<void> fill_nan(Tensor& out) {
  TENFERRO_TRY(const Tensor nan,
               Tensor::full(out.dtype(), out.shape(), c128(std::numeric_limits<double>::quiet_NaN(), 0)));
  return copy_into(CpuExecutionContext::sequential(), nan, out);
}

// A random rows x cols matrix, column-major or (row_major) row-major.
Tensor random_matrix(std::mt19937_64& rng, DType d, int64_t rows, int64_t cols, bool row_major) {
  return row_major ? Tensor::random_normal(d, {cols, rows}, rng()).value().permute({1, 0}).value()
                   : Tensor::random_normal(d, {rows, cols}, rng()).value();
}

// dot_general_into(lhs, rhs) into `out` on `threads` workers of `executor`, then
// alpha_beta_mismatches against `out` as it was before (-1, with the error in `first`,
// when the call fails).
int64_t mismatches_after_call(CpuDomainExecutor& executor, int threads, const Tensor& lhs, const Tensor& rhs,
                              const Config& c, const DotOptions& opt, Tensor& out, double eps, std::string* first,
                              const CpuCaps* caps = nullptr) {
  const Tensor before = out.clone().value();
  Result<void> st;
  executor.install([&] {
    CpuExecutionContext ctx(&executor, ParallelMode::kInner, threads, BatchSettings{}, caps);
    st = dot_general_into(ctx, lhs, rhs, c.dims, opt, out);
  });
  if (!st.has_value()) {
    *first = st.error().to_string();
    return -1;
  }
  return alpha_beta_mismatches(lhs, rhs, c, opt, before, out, eps, first);
}

// `opt` applied on two threads to an m x k lhs and a rhs [n, k] (rhs_k_last) or [k, n],
// both strided, into a random destination, checked by alpha_beta_mismatches.
// `caps`: planning capabilities (default: the host's); `out_col_major`: a column-major
// destination (default: row-major).
void expect_two_thread_product(CpuDomainExecutor& executor, std::mt19937_64& rng, DType d, int64_t m, int64_t n,
                               int64_t k, bool rhs_k_last, const DotOptions& opt, const CpuCaps* caps = nullptr,
                               bool out_col_major = false) {
  Config c;
  c.lhs_shape = {m, k};
  c.rhs_shape = rhs_k_last ? Shape{n, k} : Shape{k, n};
  c.dims.lhs_contracting = {1};
  c.dims.rhs_contracting = {rhs_k_last ? 1 : 0};
  const Tensor lhs = strided_operand(rng, d, c.lhs_shape);
  const Tensor rhs = strided_operand(rng, d, c.rhs_shape);
  Tensor out = out_col_major ? Tensor::random_normal(d, {n, m}, rng()).value().permute({1, 0}).value()
                             : Tensor::random_normal(d, {m, n}, rng()).value();
  const Tensor before = out.clone().value();
  executor.install([&] {
    CpuExecutionContext ctx(&executor, ParallelMode::kInner, 2, BatchSettings{}, caps);
    ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, opt, out));
  });
  const double eps = (d == DType::kF32 || d == DType::kC64) ? 1e-5 : 1e-12;
  std::string first;
  EXPECT_EQ(alpha_beta_mismatches(lhs, rhs, c, opt, before, out, eps, &first), 0)
      << dtype_name(d) << " m " << m << " n " << n << " k " << k << " first at " << first;
}

// Batch-fastest operands into a destination whose rows are contiguous (on AVX-512 builds
// without tuned BLIS: the small f64 kernel, with both operands packed once for it), on
// one and two threads; every strip remainder of m.
TEST(DotGeneral, BatchFastestOperandsArePackedForTheSmallKernel) {
  auto executor = make_tbb_executor(2).value();
  for (const int64_t m : {8, 21, 64}) {
    for (int threads : {1, 2}) {
      Config c;
      c.lhs_shape = {32, m, 36};  // [b, i, j], b fastest
      c.rhs_shape = {32, 36, 44};  // [b, j, k], b fastest
      c.dims.lhs_batch = {0};
      c.dims.rhs_batch = {0};
      c.dims.lhs_contracting = {2};
      c.dims.rhs_contracting = {1};
      const Tensor lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 31 + static_cast<uint64_t>(m)).value();
      const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 32).value();
      // [b, i, k] stored as column-major [i, k, b].
      Tensor out = Tensor::random_normal(DType::kF64, {m, 44, 32}, 33).value().permute({2, 0, 1}).value();
      const Tensor before = out.clone().value();
      DotOptions opt;
      opt.alpha = -0.5;
      opt.beta = 2.0;
      DotScratch scratch;
      Result<void> st;
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
        st = dot_general_into(ctx, lhs, rhs, c.dims, opt, out, nullptr, &scratch);
      });
      ASSERT_TRUE(st.has_value()) << st.error().to_string();
      // Which route serves these products depends on the CPU (whether BLIS runs tuned
      // kernels for it, the ISA): only the values are asserted.
      std::string first;
      EXPECT_EQ(alpha_beta_mismatches(lhs, rhs, c, opt, before, out, 1e-12, &first), 0)
          << "m " << m << " threads " << threads << " first at " << first;
    }
  }
}

// Note [Batch-lane products]: batch items one element apart in every operand, as
// vector lanes. Lane runs of one batch label and of two that merge, with another batch
// label walked item by item; lane counts with a masked last vector; every register-block
// remainder of m and n; strided rows, columns and contraction (sliced and permuted
// views); alpha and beta; the row-block and column-block orders; one and two threads;
// every ISA level the machine has. Values against the long-double reference.
TEST(DotGeneral, BatchLaneProductsMatchTheReference) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(2026);
  struct Case {
    Shape run;     // the lane run's labels, fastest first
    int64_t walk;  // a batch label stored after the matrices: walked item by item
    int64_t m, n, k;
  };
  // {8} with 40 rows / 30 columns (row blocks outermost) and 30 rows / 50 columns
  // (column blocks outermost): one vector, its rows / columns in parts on two threads;
  // 5 x 5 x 4000: one vector on two threads with too few rows for parts.
  const Case cases[] = {{{32}, 1, 9, 7, 13},   {{20}, 2, 4, 6, 70},  {{8, 4}, 3, 5, 1, 3}, {{16}, 1, 1, 11, 2},
                        {{36}, 1, 13, 3, 129}, {{4, 6}, 2, 3, 5, 1}, {{12}, 1, 2, 40, 5},  {{8}, 1, 40, 30, 60},
                        {{8}, 1, 30, 50, 60},  {{28}, 1, 6, 5, 9},   {{8}, 1, 5, 5, 4000}};
  for (const DType dtype : {DType::kF64, DType::kF32})
    for (const Case& cs : cases) {
      const int64_t width = dtype == DType::kF64 ? 8 : 16;  // AVX-512 vectors (the reference capabilities)
      const double eps = dtype == DType::kF64 ? 1e-12 : 2e-6;
      const int64_t nr = static_cast<int64_t>(cs.run.size());
      // Stored as lhs [run..., i, 2j, w] (j a step-2 slice), rhs [run..., k, j, w], out
      // [run..., i, k, w]; viewed as [run..., w, i, j], [run..., w, j, k], [run..., w, i, k].
      auto stored = [&](int64_t a, int64_t b) {
        Shape sh = cs.run;
        for (int64_t e : {a, b, cs.walk}) sh.push_back(e);
        return sh;
      };
      auto view = [&](bool swap) {
        SmallVector<int64_t, 8> p;
        for (int64_t i = 0; i < nr; ++i) p.push_back(i);
        p.push_back(nr + 2);
        p.push_back(swap ? nr + 1 : nr);
        p.push_back(swap ? nr : nr + 1);
        return p;  // a Dims over it must not outlive it: Dims(view(...).span()) in one expression
      };
      const Tensor lhs = Tensor::random_normal(dtype, stored(cs.m, 2 * cs.k), rng())
                             .value()
                             .slice(nr + 1, 0, 2 * cs.k, 2)
                             .value()
                             .permute(Dims(view(false).span()))
                             .value();
      const Tensor rhs =
          Tensor::random_normal(dtype, stored(cs.n, cs.k), rng()).value().permute(Dims(view(true).span())).value();
      Config c;
      c.lhs_shape = lhs.shape();
      c.rhs_shape = rhs.shape();
      for (int64_t i = 0; i <= nr; ++i) {
        c.dims.lhs_batch.push_back(i);
        c.dims.rhs_batch.push_back(i);
      }
      c.dims.lhs_contracting = {nr + 2};
      c.dims.rhs_contracting = {nr + 1};
      for (int threads : {1, 2}) {
        for (bool scaled : {false, true}) {
          Tensor out =
              Tensor::random_normal(dtype, stored(cs.m, cs.n), rng()).value().permute(Dims(view(false).span())).value();
          DotOptions opt;
          if (scaled) {
            opt.alpha = -0.75;
            opt.beta = 1.5;
          }
          std::string first;
          EXPECT_EQ(mismatches_after_call(*executor, threads, lhs, rhs, c, opt, out, eps, &first), 0)
              << dtype_name(dtype) << " run " << format_dims(cs.run) << " m " << cs.m << " n " << cs.n << " k " << cs.k
              << " threads " << threads << " first at " << first;
        }
      }
      // The planner with the reference capabilities takes the lane kernel for the whole
      // lane run (both labels when two merge) wherever it fills its vectors well enough.
      const Tensor out = Tensor::zeros(dtype, stored(cs.m, cs.n)).value().permute(Dims(view(false).span())).value();
      const DotRoute route = planned(kReferenceCaps, 1, lhs, rhs, out, c.dims);
      int64_t run = 1;
      for (int64_t e : cs.run) run *= e;
      const int64_t padded = (run + width - 1) / width * width;
      if (run >= width && 4 * padded <= 5 * run) {
        EXPECT_EQ(route.kernel, DotKernel::kBatchLanes) << describe(route);
        EXPECT_EQ(route.lanes, run) << describe(route);
        EXPECT_FALSE(route.pack_lhs || route.pack_rhs || route.pack_out) << describe(route);
      } else {
        EXPECT_NE(route.kernel, DotKernel::kBatchLanes) << describe(route);
      }
      if (run == width && cs.walk == 1 && cs.m >= 24 &&
          cs.m * cs.n * cs.k >= 65536) {  // one vector: its rows or columns in parts on two threads
        const DotRoute two = planned(kReferenceCaps, 2, lhs, rhs, out, c.dims);
        EXPECT_GT(two.lane_parts, 1) << describe(two);
      }
    }
}

// dot_general on products with a side of 1 in every layout the matrix-vector kernel
// takes ('ij,j->i' with A column-major, row-major or row-strided; 'j,jk->k', where the
// rhs is the long operand; a dot product; a batch), x and y strided, alpha and beta, on
// one and two threads (pieces of rows; the contraction in parts for 40 x 2000); against
// the long-double reference. The planner with the
// reference capabilities takes the kernel where its form fits (Note [Matrix-vector
// thresholds]).
TEST(DotGeneral, MatrixVectorProductsMatchTheReference) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(1205);
  DotDims mv;  // [M, K] x [K] -> [M]
  mv.lhs_contracting = {1};
  mv.rhs_contracting = {0};
  DotDims vm;  // [K] x [K, N] -> [N]
  vm.lhs_contracting = {0};
  vm.rhs_contracting = {0};
  DotDims batched;  // [B, M, K] x [B, K] -> [B, M]
  batched.lhs_batch = {0};
  batched.rhs_batch = {0};
  batched.lhs_contracting = {2};
  batched.rhs_contracting = {1};
  auto vec = [&](DType d, int64_t n, bool strided) {
    const Tensor t = Tensor::random_normal(d, {strided ? 2 * n : n}, rng()).value();
    return strided ? t.slice(0, 0, 2 * n, 2).value() : t;
  };
  // layout 0: column-major [M, K]; 1: row-major; 2: rows of a wider row-major array.
  auto matrix = [&](DType d, int64_t m, int64_t k, int layout) {
    if (layout == 0) return Tensor::random_normal(d, {m, k}, rng()).value();
    const Tensor t = Tensor::random_normal(d, {layout == 2 ? k + 5 : k, m}, rng()).value().permute({1, 0}).value();
    return layout == 2 ? t.slice(1, 0, k, 1).value() : t;
  };
  int64_t taken = 0;
  for (const DType d : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
    const double eps = d == DType::kF64 || d == DType::kC128 ? 1e-13 : 2e-6;
    const int64_t sizes[][2] = {{3, 40}, {17, 5}, {200, 33}, {1100, 64}, {40, 2000}, {130, 2}};
    for (const auto& mk : sizes) {
      const int64_t m = mk[0], k = mk[1];
      for (int layout = 0; layout < 3; ++layout) {
        for (int form = 0; form < 4; ++form) {
          Tensor lhs, rhs, out;
          Config c;
          bool fits = false;  // the kernel's form for this layout (Note [Matrix-vector thresholds])
          if (form == 0) {    // 'ij,j->i'
            lhs = matrix(d, m, k, layout);
            rhs = vec(d, k, layout == 2);
            out = vec(d, m, layout == 1);
            c.dims = mv;
            fits = layout == 0 ? m >= 16 : k >= 8;
          } else if (form == 1) {  // 'j,jk->k' (the rhs [K, N] is the long operand)
            lhs = vec(d, k, layout == 1);
            rhs = matrix(d, m, k, layout).permute({1, 0}).value();
            out = vec(d, m, layout == 2);
            c.dims = vm;
            fits = layout == 0 ? m >= 16 : k >= 8;
          } else if (form == 2) {  // a dot product
            lhs = vec(d, k, layout == 1);
            rhs = vec(d, k, layout == 2);
            out = Tensor::random_normal(d, {}, rng()).value();
            c.dims = vm;
            fits = k >= 8;   // at least one of the two has a unit stride: the row form with m = 1
          } else {           // a batch of 3 'ij,j->i'
            const Tensor t = Tensor::random_normal(d, {m, k, 3}, rng()).value();
            lhs = t.permute({2, 0, 1}).value();
            rhs = Tensor::random_normal(d, {k, 3}, rng()).value().permute({1, 0}).value();
            out = Tensor::random_normal(d, {3, m}, rng()).value();
            c.dims = batched;
            fits = m >= 16;
          }
          c.lhs_shape = lhs.shape();
          c.rhs_shape = rhs.shape();
          for (int threads : {1, 2}) {
            for (bool scaled : {false, true}) {
              if (is_complex(d) && scaled != (threads == 2)) continue;  // half the pairs (oracle time)
              DotOptions opt;
              if (scaled) {
                opt.alpha = is_complex(d) ? c128(-0.75, 0.5) : c128(-0.75, 0);
                opt.beta = is_complex(d) ? c128(1.5, -0.25) : c128(1.5, 0);
              }
              // Complex: every pair of conj flags over the layouts and forms.
              opt.conj_lhs = is_complex(d) && (layout + form) % 2 == 1;
              opt.conj_rhs = is_complex(d) && (layout + 2 * form) % 4 >= 2;
              std::string first;
              EXPECT_EQ(mismatches_after_call(*executor, threads, lhs, rhs, c, opt, out, eps, &first), 0)
                  << dtype_name(d) << " m " << m << " k " << k << " layout " << layout << " form " << form
                  << " threads " << threads << " conj " << opt.conj_lhs << opt.conj_rhs << " first at " << first;
            }
          }
          const DotRoute route = planned(kReferenceCaps, 2, lhs, rhs, out, c.dims);
          if (fits && (form == 2 ? k : m * k) >= 1024) {  // multiply-adds per product
            EXPECT_EQ(route.kernel, DotKernel::kMatVec)
                << describe(route) << " m " << m << " k " << k << " layout " << layout << " form " << form;
            EXPECT_FALSE(route.pack_lhs || route.pack_rhs || route.pack_out) << describe(route);
            if (m == 40 && form < 2) {
              EXPECT_EQ(route.split, DotSplit::kSplitK) << describe(route);
            }
            if (m == 1100 && form < 2) {
              EXPECT_EQ(route.split, DotSplit::kPieces) << describe(route);
            }
            taken += route.kernel == DotKernel::kMatVec;
          } else {
            EXPECT_NE(route.kernel, DotKernel::kMatVec)
                << describe(route) << " m " << m << " k " << k << " layout " << layout << " form " << form;
          }
        }
      }
    }
  }
  EXPECT_GT(taken, 20);
}

// Note [Few-vector products] through dot_general: 'ik,kj->ij' with 2 to 7 columns (the
// lhs long) and 'ik,kj->ij' with 2 to 7 rows (the rhs long, C^T = B^T A^T), the long
// operand with rows or columns contiguous, the short one in either order, one and two
// threads (pieces of rows; a contraction in parts for few rows), alpha and beta, c128
// with two vectors and conj flags; against the long-double reference, and the planner's
// choice with reference capabilities.
TEST(DotGeneral, FewVectorProductsMatchTheReference) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(1207);
  Config c;
  c.dims.lhs_contracting = {1};
  c.dims.rhs_contracting = {0};
  auto matrix = [&](DType d, int64_t rows, int64_t cols, bool row_major) {
    return random_matrix(rng, d, rows, cols, row_major);
  };
  struct Case {
    DType dtype;
    int64_t m, k, n;
    DotSplit split;  // at two threads
  };
  int64_t taken = 0;
  for (const Case& e :
       {Case{DType::kF64, 1100, 130, 3, DotSplit::kPieces}, Case{DType::kF64, 100, 3000, 5, DotSplit::kSplitK},
        Case{DType::kF32, 700, 200, 7, DotSplit::kPieces}, Case{DType::kF64, 900, 100, 2, DotSplit::kPieces},
        Case{DType::kC128, 600, 150, 2, DotSplit::kPieces}, Case{DType::kC128, 600, 150, 4, DotSplit::kPieces},
        Case{DType::kC64, 1000, 150, 3, DotSplit::kPieces}}) {
    const double eps = e.dtype == DType::kF32 || e.dtype == DType::kC64 ? 2e-6 : 1e-13;
    for (bool long_rhs : {false, true})
      for (bool long_rows : {false, true})
        for (bool short_rows : {false, true}) {
          // long_rhs: [n, k] x [k, m] -> [n, m]; else [m, k] x [k, n] -> [m, n].
          const Tensor lhs = long_rhs ? matrix(e.dtype, e.n, e.k, short_rows) : matrix(e.dtype, e.m, e.k, long_rows);
          const Tensor rhs = long_rhs ? matrix(e.dtype, e.k, e.m, !long_rows) : matrix(e.dtype, e.k, e.n, !short_rows);
          Tensor out = Tensor::random_normal(e.dtype, long_rhs ? Shape{e.n, e.m} : Shape{e.m, e.n}, rng()).value();
          c.lhs_shape = lhs.shape();
          c.rhs_shape = rhs.shape();
          for (int threads : {1, 2}) {
            DotOptions opt;
            opt.alpha = c128(-0.75, 0);
            opt.beta = threads == 2 ? c128(1.5, 0) : c128(0, 0);
            opt.conj_lhs = is_complex(e.dtype) && long_rows;
            opt.conj_rhs = is_complex(e.dtype) && short_rows;
            std::string first;
            EXPECT_EQ(mismatches_after_call(*executor, threads, lhs, rhs, c, opt, out, eps, &first), 0)
                << dtype_name(e.dtype) << " m " << e.m << " k " << e.k << " n " << e.n << " long rhs " << long_rhs
                << " threads " << threads << " first at " << first;
            const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, c.dims, opt);
            EXPECT_EQ(route.kernel, DotKernel::kMatVec) << describe(route);
            EXPECT_EQ(route.transposed, long_rhs) << describe(route);
            EXPECT_FALSE(route.pack_lhs || route.pack_rhs || route.pack_out) << describe(route);
            if (threads == 2) {
              EXPECT_EQ(route.split, e.split) << describe(route);
            }
            taken += route.kernel == DotKernel::kMatVec;
          }
        }
  }
  EXPECT_EQ(taken, 7 * 2 * 2 * 2 * 2);
}

// Note [Matrix-vector contraction levels]: products whose contraction does not merge
// (numpy's 'abc,ac->b', 'abcd,bd->ac', 'abcd,bdn->acn' on C-order arrays, and with the
// long operand as the rhs) walk the contraction's outer loops around the kernel, after
// splitting the lhs rows where they do not merge either; every dtype (complex with conj
// flags), one and two threads, alpha and beta (0 over NaN, and 1); against the
// long-double reference, and the planner's choice with reference capabilities.
TEST(DotGeneral, MatrixVectorProductsWalkTheirContractionLoops) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(1208);
  // A C-order (row-major) tensor of `shape`.
  auto c_order = [&](DType d, const Shape& shape) {
    Shape rev;
    for (size_t i = shape.size(); i-- > 0;) rev.push_back(shape[i]);
    std::vector<int64_t> perm(shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
    return Tensor::random_normal(d, rev, rng()).value().permute(Dims(perm)).value();
  };
  struct Case {
    const char* what;
    Shape lhs, rhs;
    DotDims dims;
    bool rhs_long, split;
  };
  auto dims = [](std::initializer_list<int64_t> lc, std::initializer_list<int64_t> rc) {
    DotDims d;
    for (const int64_t v : lc) d.lhs_contracting.push_back(v);
    for (const int64_t v : rc) d.rhs_contracting.push_back(v);
    return d;
  };
  const Case cases[] = {
      {"abc,ac->b", {40, 96, 48}, {40, 48}, dims({0, 2}, {0, 1}), false, false},
      {"ac,abc->b", {40, 48}, {40, 96, 48}, dims({0, 1}, {0, 2}), true, false},
      {"abcd,bd->ac", {6, 20, 70, 24}, {20, 24}, dims({1, 3}, {0, 1}), false, true},
      {"abcd,bdn->acn", {6, 20, 70, 24}, {20, 24, 3}, dims({1, 3}, {0, 1}), false, true},
      {"abcde,bd->ace", {3, 5, 10, 30, 40}, {5, 30}, dims({1, 3}, {0, 1}), false, true},
      {"abcd,dba->c (three loops)", {8, 6, 70, 30}, {30, 6, 8}, dims({0, 1, 3}, {2, 1, 0}), false, false},
      {"bd,abcd->ac", {20, 24}, {6, 20, 70, 24}, dims({0, 1}, {1, 3}), true, true},
      {"bdn,abcd->nac", {20, 24, 3}, {6, 20, 70, 24}, dims({0, 1}, {1, 3}), true, true},
  };
  int64_t taken = 0;
  for (const DType d : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
    const double eps = d == DType::kF64 || d == DType::kC128 ? 1e-13 : 2e-6;
    for (const Case& e : cases) {
      if (is_complex(d) && std::string(e.what).find('n') != std::string::npos) continue;  // complex: 1 or 2 vectors
      const Tensor lhs = c_order(d, e.lhs), rhs = c_order(d, e.rhs);
      Config c;
      c.lhs_shape = lhs.shape();
      c.rhs_shape = rhs.shape();
      c.dims = e.dims;
      const Shape out_shape = dot_general_shape(lhs.shape(), rhs.shape(), e.dims).value();
      for (int threads : {1, 2}) {
        for (const bool beta_zero : {true, false}) {
          Tensor out = c_order(d, out_shape);
          DotOptions opt;
          opt.alpha = is_complex(d) ? c128(0.5, -1.0) : c128(-1.25, 0);
          opt.beta = beta_zero ? c128(0, 0) : c128(1, 0);
          opt.conj_lhs = is_complex(d) && threads == 2;
          opt.conj_rhs = is_complex(d) && beta_zero;
          if (beta_zero) {
            ASSERT_TRUE(fill_nan(out));
          }
          std::string first;
          EXPECT_EQ(mismatches_after_call(*executor, threads, lhs, rhs, c, opt, out, eps, &first), 0)
              << e.what << " " << dtype_name(d) << " threads " << threads << " first at " << first;
          const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, c.dims, opt);
          EXPECT_EQ(route.kernel, DotKernel::kMatVec) << e.what << ": " << describe(route);
          EXPECT_TRUE(route.k_walk) << e.what << ": " << describe(route);
          EXPECT_EQ(route.transposed, e.rhs_long) << e.what << ": " << describe(route);
          EXPECT_EQ(e.rhs_long ? route.split_rhs_free : route.split_lhs_free, e.split)
              << e.what << ": " << describe(route);
          EXPECT_FALSE(route.pack_lhs || route.pack_rhs || route.pack_out) << describe(route);
          taken += route.kernel == DotKernel::kMatVec;
        }
      }
    }
  }
  EXPECT_GT(taken, 50);
}

// Broadcast (stride-0) operands can describe products whose multiply-add count exceeds
// int64 while every tensor's element count fits: planning them is defined (the UBSan
// build traps on signed overflow), batched or not, with or without a batch run.
TEST(DotGeneral, HugeBroadcastProductsPlanWithoutOverflow) {
  const int64_t big = int64_t{1} << 30;
  const Tensor one = Tensor::ones(DType::kF64, {1, 1}).value();
  const Tensor a = one.broadcast_to({big, big}).value();
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  const CpuExecutionContext& ctx = CpuExecutionContext::sequential();
  auto r = explain_dot_general(ctx, a, a, mm);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(r->m, big);
  const Tensor one3 = Tensor::ones(DType::kF64, {1, 1, 1}).value();
  const Tensor b3 = one3.broadcast_to({8, big / 8, big}).value();
  DotDims bm;
  bm.lhs_batch = {0};
  bm.rhs_batch = {0};
  bm.lhs_contracting = {2};
  bm.rhs_contracting = {1};
  const Tensor c3 = one3.broadcast_to({8, big, big / 8}).value();
  auto rb = explain_dot_general(ctx, b3, c3, bm);
  ASSERT_TRUE(rb.has_value()) << rb.error().to_string();
  EXPECT_EQ(rb->batch, 8);
}

// Note [Lane-first results]: dot_general's own result follows batch-fastest operands
// when the lane kernel computes it, and keeps the usual layout otherwise.
TEST(DotGeneral, OwnResultOfBatchLaneProductsIsLaneFirst) {
  const Tensor lhs = Tensor::random_normal(DType::kF64, {16, 6, 5}, 41).value();  // [b, i, j], b fastest
  const Tensor rhs = Tensor::random_normal(DType::kF64, {16, 5, 7}, 42).value();  // [b, j, k]
  Config c;
  c.lhs_shape = lhs.shape();
  c.rhs_shape = rhs.shape();
  c.dims.lhs_batch = {0};
  c.dims.rhs_batch = {0};
  c.dims.lhs_contracting = {2};
  c.dims.rhs_contracting = {1};
  const CpuExecutionContext& ctx = CpuExecutionContext::sequential();
  const Tensor out = dot_general(ctx, lhs, rhs, c.dims).value();
  const bool lanes = explain_dot_general(ctx, lhs, rhs, c.dims).value().kernel == DotKernel::kBatchLanes;
  EXPECT_EQ(dot_general_own_layout(ctx, lhs, rhs, c.dims).value(), out.layout());
  if (lanes) {
    EXPECT_EQ(out.strides()[0], 1);
    EXPECT_EQ(out.strides()[1], 16);
    EXPECT_EQ(out.strides()[2], 96);
  } else {
    EXPECT_EQ(out.layout(), dot_general_result_layout(out.shape(), 1));
  }
  std::vector<long double> mag;
  const auto ref = reference(lhs, rhs, c, false, false, out.shape(), &mag);
  int64_t lin = 0;
  for_each_index(out.shape(), [&](const Index& oi) {
    EXPECT_NEAR(out.get_as_c128(oi).value().real(), static_cast<double>(ref[static_cast<size_t>(lin)].real()),
                1e-12 * static_cast<double>(mag[static_cast<size_t>(lin)] + 1));
    ++lin;
  });
  // c128 has no lane kernel: the usual layout.
  const Tensor outz =
      dot_general(ctx, convert(ctx, lhs, DType::kC128).value(), convert(ctx, rhs, DType::kC128).value(), c.dims)
          .value();
  EXPECT_EQ(outz.layout(), dot_general_result_layout(outz.shape(), 1));
}

// Row-major batched products ('bij,bjk->bik' on C-order arrays): the small kernel takes
// C^T = B^T A^T in place (no operand packed, no scratch destination), on one and two
// threads, every strip remainder (8- and 16-row strips) of n, alpha and beta.
TEST(DotGeneral, RowMajorBatchedProductsInPlace) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(1129);
  int cases = 0;
  for (const int64_t n : {4, 5, 8, 13, 16, 29, 64}) {
    for (const int64_t m : {1, 3, 7, 64}) {
      for (const int64_t k : {1, 9, 64}) {
        const int64_t batch = 3;
        Config c;
        c.lhs_shape = {batch, m, k};
        c.rhs_shape = {batch, k, n};
        c.dims.lhs_batch = {0};
        c.dims.rhs_batch = {0};
        c.dims.lhs_contracting = {2};
        c.dims.rhs_contracting = {1};
        // C order: column-major storage of the reversed shape, viewed back. The small kernel
        // serves these (C^T = B^T A^T); OpenBLAS would take them unpacked as well.
        const Tensor lhs = Tensor::random_normal(DType::kF64, {k, m, batch}, rng()).value().permute({2, 1, 0}).value();
        const Tensor rhs = Tensor::random_normal(DType::kF64, {n, k, batch}, rng()).value().permute({2, 1, 0}).value();
        Tensor out = Tensor::random_normal(DType::kF64, {n, m, batch}, rng()).value().permute({2, 1, 0}).value();
        const Tensor before = out.clone().value();
        DotOptions opt;
        opt.alpha = 1.5;
        opt.beta = (cases % 2 == 0) ? 0.0 : -0.75;
        const int threads = 1 + cases % 2;
        DotScratch scratch;
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
          ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, opt, out, nullptr, &scratch));
        });
        const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, c.dims, opt);
        EXPECT_FALSE(route.pack_lhs) << "m " << m << " n " << n << " k " << k << ": " << describe(route);
        EXPECT_FALSE(route.pack_rhs) << "m " << m << " n " << n << " k " << k;
        EXPECT_FALSE(route.pack_out) << "m " << m << " n " << n << " k " << k;
        std::string first;
        EXPECT_EQ(alpha_beta_mismatches(lhs, rhs, c, opt, before, out, 1e-12, &first), 0)
            << "m " << m << " n " << n << " k " << k << " threads " << threads << " first at " << first;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 84);
}

// Note [Column-split products]: at two threads a product with N >= M above
// parallel_min_flops and a longer side of at least 4K runs as one BLIS call per worker
// on its own columns; a taller one, or one with a long contraction (64 x 64 x 129),
// stays on OpenBLAS's threads. Every floating dtype, conj flags, alpha/beta into an
// existing destination and strided operands, against the long-double reference.
TEST(DotGeneral, ColumnSplitProductsMatchTheReference) {
  std::mt19937_64 rng(1130);
  auto executor = make_tbb_executor(2).value();
  const int64_t shapes[][3] = {{37, 301, 50}, {301, 37, 50}, {8, 4099, 17}, {64, 64, 129}};
  for (const DType d : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
    for (const auto& mnk : shapes) {
      const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
      ASSERT_GE(m * n * k, int64_t{1} << 19);  // above parallel_min_flops: two threads run it
      DotOptions opt;
      opt.conj_lhs = is_complex(d);
      opt.alpha = is_complex(d) ? c128(0.5, -1.25) : c128(1.5, 0);
      opt.beta = is_complex(d) ? c128(-0.5, 0.75) : c128(0.25, 0);
      expect_two_thread_product(*executor, rng, d, m, n, k, /*rhs_k_last=*/true, opt);
    }
  }
}

// Note [Complex products on BLIS's Zen kernels]: c128 products on one thread with BLIS on
// a Zen configuration and OpenBLAS on 512-bit kernels run on BLIS (planned with those
// capabilities, so the route runs on any machine): column- and row-major operands and
// destinations, conj flags, alpha and beta, against the long-double reference. Two
// threads, c64, another BLIS configuration or a product past kZenComplexMaxFlops keep
// OpenBLAS; the parallel threshold counts a complex multiply-add four times (Note
// [Parallel work]).
TEST(DotGeneral, ComplexProductsOnBlisZenKernels) {
  std::mt19937_64 rng(1211);
  auto executor = make_tbb_executor(2).value();
  CpuCaps caps = host_caps();
  caps.blis_arch = "zen3";
  caps.blis_tuned = caps.blis_zen = true;
  caps.openblas_core = "Cooperlake";
  caps.openblas_tuned = caps.openblas_avx512 = true;
  Config c;
  c.dims.lhs_contracting = {1};
  c.dims.rhs_contracting = {0};
  auto matrix = [&](DType d, int64_t rows, int64_t cols, bool row_major) {
    return random_matrix(rng, d, rows, cols, row_major);
  };
  auto route_of = [&](int threads, const Tensor& lhs, const Tensor& rhs, const CpuCaps& with) {
    CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads, BatchSettings{}, &with);
    return explain_dot_general(ctx, lhs, rhs, c.dims).value();
  };
  const int64_t shapes[][3] = {{37, 53, 29}, {128, 128, 128}, {300, 17, 200}};
  for (const auto& mnk : shapes) {
    for (int layout = 0; layout < 4; ++layout) {
      const Tensor lhs = matrix(DType::kC128, mnk[0], mnk[2], layout & 1);
      const Tensor rhs = matrix(DType::kC128, mnk[2], mnk[1], layout & 2);
      Tensor out = matrix(DType::kC128, mnk[0], mnk[1], layout == 1);
      c.lhs_shape = lhs.shape();
      c.rhs_shape = rhs.shape();
      const DotRoute route = route_of(1, lhs, rhs, caps);
      EXPECT_EQ(route.provider, GemmProvider::kBlis) << describe(route);
      EXPECT_NE(describe(route).find("Zen kernels"), std::string::npos) << describe(route);
      DotOptions opt;
      opt.conj_lhs = layout & 1;
      opt.conj_rhs = layout & 2;
      opt.alpha = c128(-0.75, 0.5);
      opt.beta = layout == 3 ? c128(0, 0) : c128(0.25, 1.0);
      std::string first;
      EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, c, opt, out, 1e-13, &first, &caps), 0)
          << mnk[0] << " x " << mnk[1] << " x " << mnk[2] << " layout " << layout << " first at " << first;
    }
  }
  const Tensor a = Tensor::zeros(DType::kC128, {256, 256}).value();
  EXPECT_EQ(route_of(2, a, a, caps).provider, GemmProvider::kOpenBlas);  // two threads
  const Tensor a64 = Tensor::zeros(DType::kC64, {256, 256}).value();
  EXPECT_EQ(route_of(1, a64, a64, caps).provider, GemmProvider::kOpenBlas);  // c64: not measured
  const Tensor big = Tensor::zeros(DType::kC128, {1100, 1000}).value(),
               big_rhs = Tensor::zeros(DType::kC128, {1000, 1000}).value();
  EXPECT_EQ(route_of(1, big, big_rhs, caps).provider, GemmProvider::kOpenBlas);  // past 2^30 multiply-adds
  CpuCaps skx = caps;
  skx.blis_arch = "skx";
  skx.blis_zen = false;
  EXPECT_EQ(route_of(1, a, a, skx).provider, GemmProvider::kOpenBlas);
  // 64^3 c128 (2^18 complex multiply-adds, 2^20 real) takes both threads; f64 stays on one.
  const Tensor z64 = Tensor::zeros(DType::kC128, {64, 64}).value(), d64 = Tensor::zeros(DType::kF64, {64, 64}).value();
  EXPECT_EQ(route_of(2, z64, z64, caps).threads, 2) << describe(route_of(2, z64, z64, caps));
  EXPECT_EQ(route_of(2, d64, d64, caps).threads, 1);
}

// Note [OpenBLAS pieces]: OpenBLAS products on two threads run as one-thread OpenBLAS calls
// on pieces of the long side (rows: 2 and 3 pieces, split unevenly; columns: 2), with
// strided operands, conj, alpha and beta into an existing destination, every floating
// dtype, against the long-double reference.
TEST(DotGeneral, OpenBlasPiecesMatchTheReference) {
  std::mt19937_64 rng(1201);
  auto executor = make_tbb_executor(2).value();
  const int64_t shapes[][3] = {{560, 40, 64}, {1600, 34, 40}, {40, 300, 80}};
  for (const DType d : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
    for (const auto& mnk : shapes) {
      const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
      DotOptions opt;
      opt.conj_rhs = is_complex(d);
      opt.alpha = is_complex(d) ? c128(-0.75, 0.5) : c128(2.0, 0);
      opt.beta = is_complex(d) ? c128(0.25, 1.0) : c128(-1.0, 0);
      expect_two_thread_product(*executor, rng, d, m, n, k, /*rhs_k_last=*/false, opt);
    }
  }
  // Pieces of C's outer side where it is wide enough, else of the longer side, into
  // row- and column-major destinations; planned with capabilities that keep OpenBLAS
  // (its 512-bit kernels, an untuned BLIS) so the pieces run on any machine.
  CpuCaps caps = host_caps();
  caps.openblas_avx512 = true;
  caps.blis_tuned = false;
  struct Case {
    int64_t m, n;
    bool col_major, columns;
  };
  for (const Case& e : {Case{1040, 520, true, true}, Case{1040, 520, false, false}, Case{520, 1040, false, false},
                        Case{1040, 260, true, false}}) {
    const DType d = DType::kF64;
    Layout out = Layout::col_major(Shape{e.m, e.n});
    if (!e.col_major) out.strides = Strides{e.n, 1};
    Config c;
    c.dims.lhs_contracting = {1};
    c.dims.rhs_contracting = {0};
    const Tensor lhs = Tensor::zeros(d, {e.m, 64}).value(), rhs = Tensor::zeros(d, {64, e.n}).value();
    CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2, BatchSettings{}, &caps);
    const DotRoute route = explain_dot_general(ctx, lhs, rhs, c.dims, {}, &out).value();
    SCOPED_TRACE(describe(route));
    ASSERT_EQ(route.kernel, DotKernel::kOpenBlas);
    ASSERT_EQ(route.split, DotSplit::kPieces);
    EXPECT_EQ(route.split_columns, e.columns);
    DotOptions opt;
    opt.alpha = c128(1.5, 0);
    opt.beta = c128(-0.5, 0);
    expect_two_thread_product(*executor, rng, d, e.m, e.n, 64, /*rhs_k_last=*/false, opt, &caps, e.col_major);
  }
}

// dot_general at 1 and 2 threads (the long side split over the workers), against long
// double sums.
TEST(DotGeneral, ThinTransposedProducts) {
  std::mt19937_64 rng(41);
  std::normal_distribution<double> nd;
  for (const int64_t m : {4, 5, 6, 7, 9, 64, 67}) {
    for (const int64_t n : {1, 3, 8, 9, 19, 32}) {
      for (const int64_t k : {1, 5, 19, 32}) {
        for (const double beta : {0.0, -0.5}) {
          const int64_t lda = k + 3;  // A[i, p] at i * lda + p
          std::vector<double> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
          for (auto* v : {&a, &b, &c})
            for (double& x : *v) x = nd(rng);
          const std::vector<double> c0 = c;
          // B row-major for odd n (rsb = n, csb = 1), column-major otherwise.
          const bool brow = n % 2 == 1;
          const detail::GemmArgs<double> g{m, n, k, 1.5, a.data(), lda, 1, false,
                                           b.data(), brow ? n : 1, brow ? 1 : k, false, beta, c.data(), 1, m};
          detail::gemm_naive<double>(kernel_isa(host_caps()), g);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              long double acc = 0, mag = 0;
              for (int64_t p = 0; p < k; ++p) {
                const long double t = static_cast<long double>(a[static_cast<size_t>(i * lda + p)]) *
                                      b[static_cast<size_t>(brow ? p * n + j : p + j * k)];
                acc += t;
                mag += std::fabs(t);
              }
              const long double want = 1.5L * acc + beta * static_cast<long double>(c0[static_cast<size_t>(i + j * m)]);
              ASSERT_NEAR(c[static_cast<size_t>(i + j * m)], static_cast<double>(want), 1e-13 * static_cast<double>(mag + 2))
                  << "m " << m << " n " << n << " k " << k << " beta " << beta << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
  // Through dot_general: lhs [k, m] column-major (contraction contiguous), tensor-train
  // and narrow shapes, into a column-major destination.
  auto executor = make_tbb_executor(2).value();
  const int64_t sizes[][3] = {{2185, 19, 19}, {1001, 7, 30}, {64, 32, 32}, {999, 24, 3}};
  for (const auto& mnk : sizes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    Config c;
    c.lhs_shape = {k, m};
    c.rhs_shape = {k, n};
    c.dims.lhs_contracting = {0};
    c.dims.rhs_contracting = {0};
    const Tensor lhs = Tensor::random_normal(DType::kF64, c.lhs_shape, 5).value();
    const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, 6).value();
    for (int threads : {1, 2}) {
      SCOPED_TRACE("m " + std::to_string(m) + " threads " + std::to_string(threads));
      Tensor out = Tensor::random_normal(DType::kF64, {m, n}, 7).value();
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
        ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, DotOptions{}, out));
      });
      expect_real_product(lhs, rhs, c, out);
    }
  }
}

// One product C[m, n] = A B with A stored [m, k] (column-major) or, with `a_rows`,
// [k, m] (row-major as a matrix), and B [k, n].
Config single_product(int64_t m, int64_t n, int64_t k, bool a_rows) {
  Config cfg;
  cfg.lhs_shape = a_rows ? Shape{k, m} : Shape{m, k};
  cfg.rhs_shape = {k, n};
  cfg.dims.lhs_contracting = {a_rows ? 0 : 1};
  cfg.dims.rhs_contracting = {0};
  return cfg;
}

// Note [Short-contraction products]: through dot_general, a short contraction against
// many columns with A column-major (used in place) or row-major (packed column-major),
// 1 and 2 threads (pieces of whole column blocks), against the naive reference; and a
// batch of small products (each naming the next one as a prefetch hint) sequentially
// and outer-parallel.
TEST(DotGeneral, ShortContractionProductsMatchTheReference) {
  auto executor = make_tbb_executor(2).value();
  const int64_t sizes[][3] = {{203, 301, 11}, {64, 97, 32}, {9, 40, 30}, {144, 1728, 12}};
  for (const auto& e : sizes) {
    const int64_t m = e[0], n = e[1], k = e[2];
    for (const bool a_rows : {false, true}) {
      const Config cfg = single_product(m, n, k, a_rows);
      const Tensor lhs = Tensor::random_normal(DType::kF64, cfg.lhs_shape, 21).value();
      const Tensor rhs = Tensor::random_normal(DType::kF64, cfg.rhs_shape, 22).value();
      for (const int threads : {1, 2}) {
        SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " A row-major " + std::to_string(a_rows) +
                     " threads " + std::to_string(threads));
        Tensor out = Tensor::random_normal(DType::kF64, {m, n}, 23).value();
        DotScratch scratch;
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
          ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, cfg.dims, DotOptions{}, out, nullptr, &scratch));
        });
        const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, cfg.dims);
        EXPECT_EQ(route.pack_lhs, a_rows) << describe(route);  // only a row-major A is packed
        EXPECT_FALSE(route.pack_rhs);
        expect_real_product(lhs, rhs, cfg, out);
      }
    }
  }
  // Batches: lhs [b, m, k], rhs [b, k, n] -> [b, m, n], products of 37 x 12 x 9.
  Config cfg;
  cfg.lhs_shape = {37, 9, 5};
  cfg.rhs_shape = {9, 12, 5};
  cfg.dims.lhs_batch = {2};
  cfg.dims.rhs_batch = {2};
  cfg.dims.lhs_contracting = {1};
  cfg.dims.rhs_contracting = {0};
  const Tensor lhs = Tensor::random_normal(DType::kF64, cfg.lhs_shape, 24).value();
  const Tensor rhs = Tensor::random_normal(DType::kF64, cfg.rhs_shape, 25).value();
  for (const int threads : {1, 2}) {
    Tensor out = Tensor::random_normal(DType::kF64, {5, 37, 12}, 26).value();
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
      ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, cfg.dims, DotOptions{}, out));
    });
    expect_real_product(lhs, rhs, cfg, out);
  }
}

// Note [Transposed short-contraction products]: a row-major C = A B with A tall and
// row-major and B small with its rows contiguous runs as C^T = B^T A^T on the wide
// kernel (nothing packed), 1 and 2 threads, beta 0 over NaN and beta 1; against the
// long-double reference. Below the limits (K < 8, a C in L2, B's columns contiguous)
// another route.
TEST(DotGeneral, TransposedShortContractionProducts) {
  auto executor = make_tbb_executor(2).value();
  Config c;
  c.dims.lhs_contracting = {1};
  c.dims.rhs_contracting = {0};
  auto row_major = [](int64_t rows, int64_t cols, uint64_t seed) {
    return Tensor::random_normal(DType::kF64, {cols, rows}, seed).value().permute({1, 0}).value();
  };
  const int64_t sizes[][3] = {{20000, 12, 12}, {11001, 24, 30}, {16400, 9, 8}};
  for (const auto& e : sizes) {
    const int64_t m = e[0], k = e[1], n = e[2];
    const Tensor lhs = row_major(m, k, 31), rhs = row_major(k, n, 32);
    c.lhs_shape = lhs.shape();
    c.rhs_shape = rhs.shape();
    for (const int threads : {1, 2}) {
      for (const bool beta_zero : {true, false}) {
        Tensor out = row_major(m, n, 33);
        DotOptions opt;
        opt.alpha = c128(1.25, 0);
        opt.beta = beta_zero ? c128(0, 0) : c128(1, 0);
        if (beta_zero) {
          const Tensor nan =
              Tensor::full(DType::kF64, out.shape(), c128(std::numeric_limits<double>::quiet_NaN(), 0)).value();
          ASSERT_TRUE(copy_into(CpuExecutionContext::sequential(), nan, out));
        }
        std::string first;
        EXPECT_EQ(mismatches_after_call(*executor, threads, lhs, rhs, c, opt, out, 1e-13, &first), 0)
            << "m " << m << " k " << k << " n " << n << " threads " << threads << " first at " << first;
        const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, c.dims, opt);
        EXPECT_EQ(route.kernel, DotKernel::kWide) << describe(route);
        EXPECT_TRUE(route.transposed) << describe(route);
        EXPECT_FALSE(route.pack_lhs || route.pack_rhs || route.pack_out) << describe(route);
      }
    }
  }
  Tensor out = row_major(20000, 12, 34);
  auto kernel = [&](const Tensor& lhs, const Tensor& rhs, const Tensor& o) {
    return planned(kReferenceCaps, 1, lhs, rhs, o, c.dims).kernel;
  };
  EXPECT_NE(kernel(row_major(20000, 4, 35), row_major(4, 12, 36), out), DotKernel::kWide);  // K < 8
  const Tensor small_out = row_major(2000, 12, 37);
  EXPECT_NE(kernel(row_major(2000, 12, 38), row_major(12, 12, 39), small_out), DotKernel::kWide);  // C in L2
  const Tensor b_cols = Tensor::random_normal(DType::kF64, {12, 12}, 40).value();                  // column-major B
  EXPECT_NE(kernel(row_major(20000, 12, 41), b_cols, out), DotKernel::kWide);
}

// Note [Pack order]: a rhs whose free labels split around its contraction is packed;
// with a short leading contracted axis and a unit-stride free run it is packed N-fastest,
// unless it is wide with a short contraction (N >= 4096, 32 <= K <= 512), where the GEMM
// is faster on a K-fastest B.
// The planner's pack form is asserted (reference capabilities); values against long-double sums.
TEST(DotGeneral, WideRhsIsPackedContractionFastest) {
  const int64_t M = 100, K1 = 6, K2 = 8, N1 = 16;
  for (const int64_t n2 : {int64_t{8}, int64_t{300}}) {
    const int64_t N = N1 * n2;  // K = K1 * K2 = 48
    SCOPED_TRACE("N " + std::to_string(N));
    const Tensor lhs = Tensor::random_normal(DType::kF64, {M, K1, K2}, 51).value();
    // Memory [n1 | k1 k2 | n2], viewed as [k1, k2, n1, n2].
    const Tensor mem = Tensor::random_normal(DType::kF64, {N1, K1, K2, n2}, 52).value();
    const Tensor rhs = mem.permute(Dims{1, 2, 0, 3}).value();
    DotDims dims;
    dims.lhs_contracting = {1, 2};
    dims.rhs_contracting = {0, 1};
    Tensor out = Tensor::zeros(DType::kF64, {M, N1, n2}).value();
    DotScratch scratch;
    auto ctx = CpuExecutionContext::sequential();
    ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, dims, DotOptions{}, out, nullptr, &scratch));
    const DotRoute route = planned(kReferenceCaps, 1, lhs, rhs, out, dims);
    ASSERT_TRUE(route.pack_rhs) << describe(route);
    EXPECT_EQ(route.rhs_n_first, N < 4096) << describe(route);
    for (int64_t i = 0; i < M; i += 7)
      for (int64_t a = 0; a < N1; a += 5)
        for (int64_t b = 0; b < n2; b += 3) {
          long double acc = 0, mag = 0;
          for (int64_t p = 0; p < K1; ++p)
            for (int64_t q = 0; q < K2; ++q) {
              const long double t = static_cast<long double>(lhs.get<double>({i, p, q}).value()) * rhs.get<double>({p, q, a, b}).value();
              acc += t;
              mag += std::fabs(t);
            }
          ASSERT_NEAR(out.get<double>({i, a, b}).value(), static_cast<double>(acc), 1e-13 * static_cast<double>(mag + 1));
        }
  }
}

// Through dot_general: outputs of 2^22 elements and more from short contractions, A
// column-major (in place) or row-major (packed), A small (column blocks outermost) or
// B small (row tiles outermost), at 2 threads (the kernel's route) and at 1 (OpenBLAS);
// every fifth element of C (a diagonal pattern that meets every tile, row and column)
// against long-double sums.
TEST(DotGeneral, StreamedOutputProductsMatchTheReference) {
  auto executor = make_tbb_executor(2).value();
  const int64_t sizes[][3] = {{40, 104900, 33}, {70001, 61, 40}};
  for (const auto& e : sizes) {
    const int64_t m = e[0], n = e[1], k = e[2];
    ASSERT_GE(m * n, int64_t{1} << 22);
    for (const bool a_rows : {false, true}) {
      const Config cfg = single_product(m, n, k, a_rows);
      const Tensor lhs = Tensor::random_normal(DType::kF64, cfg.lhs_shape, 31).value();
      const Tensor rhs = Tensor::random_normal(DType::kF64, cfg.rhs_shape, 32).value();
      const auto* pa = static_cast<const double*>(lhs.storage()->data());
      const auto* pb = static_cast<const double*>(rhs.storage()->data());
      for (const int threads : {1, 2}) {
        SCOPED_TRACE("m " + std::to_string(m) + " A row-major " + std::to_string(a_rows) + " threads " + std::to_string(threads));
        Tensor out = Tensor::zeros(DType::kF64, {m, n}).value();
        DotScratch scratch;
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
          ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, cfg.dims, DotOptions{}, out, nullptr, &scratch));
        });
        if (threads > 1) {
          const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, cfg.dims);
          EXPECT_EQ(route.kernel, DotKernel::kStreamedOutput) << describe(route);
          EXPECT_EQ(route.pack_lhs, a_rows);  // the kernel takes A column-major only
        }
        const auto* pc = static_cast<const double*>(out.storage()->data());
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t i = (5 - j % 5) % 5; i < m; i += 5) {
            long double acc = 0, mag = 0;
            for (int64_t p = 0; p < k; ++p) {
              const long double t = static_cast<long double>(pa[a_rows ? p + i * k : i + p * m]) * pb[p + j * k];
              acc += t;
              mag += std::fabs(t);
            }
            ASSERT_NEAR(pc[i + j * m], static_cast<double>(acc), 1e-13 * static_cast<double>(mag + 1)) << "at " << i << "," << j;
          }
        }
      }
    }
  }
}

// alpha op(A) op(B) + beta C for a 2-D product at `samples` random entries of C, in long
// double, against `out`; `before` is C before the call. Counts the entries off by more
// than eps times the sum of magnitudes (a NaN counts).
int64_t sampled_mismatches(std::mt19937_64& rng, const Tensor& lhs, const Tensor& rhs, const DotOptions& opt,
                           const Tensor& before, const Tensor& out, int samples, double eps) {
  using LC = std::complex<long double>;
  const int64_t m = lhs.shape()[0], k = lhs.shape()[1], n = rhs.shape()[1];
  auto at = [](const Tensor& t, int64_t i, int64_t j, bool conj) {
    const c128 v = t.get_as_c128({i, j}).value();
    return LC(v.real(), conj ? -v.imag() : v.imag());
  };
  const LC alpha(opt.alpha.real(), opt.alpha.imag()), beta(opt.beta.real(), opt.beta.imag());
  int64_t bad = 0;
  for (int s = 0; s < samples; ++s) {
    const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    LC sum = 0;
    long double mag = 0;
    for (int64_t p = 0; p < k; ++p) {
      const LC t = at(lhs, i, p, opt.conj_lhs) * at(rhs, p, j, opt.conj_rhs);
      sum += t;
      mag += std::abs(t);
    }
    const LC b = at(before, i, j, false);
    const LC want = alpha * sum + beta * b;
    const LC got = at(out, i, j, false);
    const long double bound = std::abs(alpha) * mag + std::abs(beta) * std::abs(b) + 1;
    bad += !(std::abs(got - want) <= eps * bound);
  }
  return bad;
}

// Note [Complex products on the blocked kernel] and the f32 blocked route, through
// dot_general: capabilities where the planner picks the blocked kernel (AVX-512,
// OpenBLAS with 256-bit kernels), f32, c64 and c128 (complex from 2^31 multiply-adds:
// Note [Planar complex thresholds]; their C checked at sampled entries), conjugated
// operands, complex alpha and beta, strided operands, 1 and 2 threads; against
// long-double sums. On a machine without AVX-512 the same route falls back to OpenBLAS
// (values still checked).
TEST(DotGeneral, BlockedRouteForF32AndComplexMatchesTheReference) {
  CpuCaps caps = host_caps();
  caps.detected_isa = IsaLevel::kAvx512;
  caps.max_isa = IsaLevel::kAvx512;
  caps.openblas_tuned = true;
  caps.openblas_avx512 = false;
  caps.blis_tuned = false;
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(1132);
  for (const DType d : {DType::kF32, DType::kC64, DType::kC128}) {
    for (const int threads : {1, 2}) {
      for (const bool conj : {false, true}) {
        if (conj && d == DType::kF32) continue;
        const bool cplx = d != DType::kF32;
        if (cplx && conj != (threads == 2)) continue;  // large products: one of each
        const int64_t m = cplx ? 2050 : 130, n = cplx ? 1030 : 150, k = cplx ? 1024 : 200;
        Config c;
        c.lhs_shape = {m, k};
        c.rhs_shape = {k, n};
        c.dims.lhs_contracting = {1};
        c.dims.rhs_contracting = {0};
        const Tensor lhs = strided_operand(rng, d, c.lhs_shape);
        const Tensor rhs = strided_operand(rng, d, c.rhs_shape);
        Tensor out = Tensor::random_normal(d, {m, n}, rng()).value();
        const Tensor before = out.clone().value();
        DotOptions opt;
        opt.conj_lhs = conj;
        opt.conj_rhs = conj && threads == 2;
        opt.alpha = cplx ? c128(0.5, -1.25) : c128(0.5, 0);
        opt.beta = cplx ? c128(-0.75, 0.5) : c128(-0.75, 0);
        opt.parallel_min_flops = 1;  // both threads on this size
        SCOPED_TRACE(std::string(dtype_name(d)) + " threads " + std::to_string(threads) + " conj " + std::to_string(conj));
        const DotRoute route = planned(caps, threads, lhs, rhs, out, c.dims, opt);
        EXPECT_EQ(route.kernel, DotKernel::kBlocked) << describe(route);
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads, {}, &caps);
          ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, opt, out));
        });
        const double eps = (d == DType::kC128) ? 1e-12 : 2e-5;
        if (cplx) {
          EXPECT_EQ(sampled_mismatches(rng, lhs, rhs, opt, before, out, 3000, eps), 0);
        } else {
          std::string first;
          EXPECT_EQ(alpha_beta_mismatches(lhs, rhs, c, opt, before, out, eps, &first), 0) << "first at " << first;
        }
      }
    }
  }
}

// Note [Short complex products]: the short complex kernel under each vector ISA level
// this machine has (AVX2, AVX-512), c64 and c128, A and C column-major with gaps between
// columns, B strided or transposed, conjugated operands, complex alpha, beta 0 (a NaN
// destination never read) or complex, row tails, one to three trailing columns, a
// contraction past one chunk of 128, narrow A held in registers, and two threads in
// pieces of rows or of columns; against long-double sums.
TEST(DotGeneral, ShortComplexKernelMatchesTheReference) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(4242);
  struct Case {
    int64_t m, n, k;
    int threads;
  };
  int runs = 0;
  for (const IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    CpuCaps caps = host_caps();
    if (caps.detected_isa < isa) continue;
    caps.max_isa = isa;
    // The planner's other inputs fixed, so the route is the same on every machine: the
    // configuration the kernel is chosen for (OpenBLAS with 256-bit kernels) and an L2 of
    // 1 MiB (a smaller one sends the few-vector cases with a longer contraction to the
    // matrix-vector kernel).
    caps.openblas_tuned = true;
    caps.openblas_avx512 = false;
    caps.blis_tuned = false;
    caps.l2_bytes = int64_t{1} << 20;
    for (const DType d : {DType::kC64, DType::kC128}) {
      for (const Case& cs :
           {Case{37, 5, 3, 1}, Case{300, 4, 4, 1}, Case{33, 7, 2, 1}, Case{64, 2, 300, 1}, Case{45, 9, 17, 1},
            Case{1000, 3, 40, 2}, Case{40, 500, 8, 2},
            // A in registers (Note [Narrow complex products]) at AVX2 and AVX-512.
            Case{2, 300, 2, 1}, Case{4, 100, 4, 1}, Case{3, 70, 3, 1}, Case{2, 50, 8, 1}, Case{4, 500, 2, 2},
            // A few vectors against an A beyond L2 with a short contraction (Note [Short
            // complex thresholds]: not the matrix-vector kernel).
            Case{70001, 2, 2, 1}, Case{20003, 3, 16, 2}}) {
        if (isa == IsaLevel::kAvx2 && cs.k > 16) continue;  // Note [Short complex thresholds]
        for (int variant = 0; variant < 4; ++variant) {
          const bool conj_lhs = variant & 1, conj_rhs = variant & 2, beta_zero = variant == 2;
          Config c;
          c.lhs_shape = {cs.m, cs.k};
          c.rhs_shape = {cs.k, cs.n};
          c.dims.lhs_contracting = {1};
          c.dims.rhs_contracting = {0};
          const Tensor lhs = Tensor::random_normal(d, {cs.m + 3, cs.k}, rng()).value().slice(0, 0, cs.m, 1).value();
          const Tensor rhs =
              variant == 3 ? random_matrix(rng, d, cs.k, cs.n, true) : strided_operand(rng, d, c.rhs_shape);
          Tensor out = Tensor::random_normal(d, {cs.m + 5, cs.n}, rng()).value().slice(0, 0, cs.m, 1).value();
          if (beta_zero) {
            ASSERT_TRUE(fill_nan(out));
          }
          DotOptions opt;
          opt.conj_lhs = conj_lhs;
          opt.conj_rhs = conj_rhs;
          opt.alpha = c128(0.75, -0.5);
          opt.beta = beta_zero ? c128(0, 0) : c128(-0.5, 1.25);
          opt.parallel_min_flops = 1;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(d)) + " " + std::to_string(cs.m) +
                       "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k) + " variant " + std::to_string(variant));
          const DotRoute route = planned(caps, cs.threads, lhs, rhs, out, c.dims, opt);
          EXPECT_EQ(route.kernel, DotKernel::kComplexShort) << describe(route);
          if (cs.threads > 1) {
            EXPECT_EQ(route.split, DotSplit::kPieces) << describe(route);
          }
          std::string first;
          const double eps = d == DType::kC128 ? 1e-12 : 2e-5;
          EXPECT_EQ(mismatches_after_call(*executor, cs.threads, lhs, rhs, c, opt, out, eps, &first, &caps), 0)
              << "first at " << first;
          ++runs;
        }
      }
      // A column-major C against a row-major A (its contraction contiguous) and a narrow
      // B: C^T = B^T A^T with B^T in registers and C^T's rows strided (Note [Narrow
      // complex products]): gates on a C-ordered state's fastest axes, one and two qubits,
      // beta zero (a NaN destination) or not, conjugated or not, columns past one block.
      // (A of more than kComplexShortPackedA elements: a smaller one is packed for the plain form.)
      for (const Case& cs : {Case{3001, 2, 2, 1}, Case{1503, 4, 4, 1}, Case{517, 3, 8, 1}, Case{40001, 2, 2, 2}}) {
        const int64_t rows_per_vector = (isa == IsaLevel::kAvx512 ? 64 : 32) / dtype_size(d);
        if (!detail::narrow_takes(cs.n, cs.k, rows_per_vector)) continue;
        for (int variant = 0; variant < 3; ++variant) {
          Config ct;
          ct.lhs_shape = {cs.m, cs.k};
          ct.rhs_shape = {cs.k, cs.n};
          ct.dims.lhs_contracting = {1};
          ct.dims.rhs_contracting = {0};
          const Tensor lhs = random_matrix(rng, d, cs.m, cs.k, true);
          const Tensor rhs = random_matrix(rng, d, cs.k, cs.n, variant == 1);
          Tensor out = Tensor::random_normal(d, {cs.m, cs.n}, rng()).value();  // column-major
          DotOptions opt;
          opt.alpha = c128(0.5, -0.75);
          opt.beta = variant == 0 ? c128(0, 0) : c128(0.25, 1.5);
          opt.conj_lhs = variant == 2;
          opt.conj_rhs = variant != 0;
          opt.parallel_min_flops = 1;
          if (variant == 0) {
            ASSERT_TRUE(fill_nan(out));
          }
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(d)) + " strided C^T " +
                       std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k) + " variant " +
                       std::to_string(variant));
          const DotRoute route = planned(caps, cs.threads, lhs, rhs, out, ct.dims, opt);
          EXPECT_EQ(route.kernel, DotKernel::kComplexShort) << describe(route);
          EXPECT_TRUE(route.transposed) << describe(route);
          std::string first;
          const double eps = d == DType::kC128 ? 1e-12 : 2e-5;
          EXPECT_EQ(mismatches_after_call(*executor, cs.threads, lhs, rhs, ct, opt, out, eps, &first, &caps), 0)
              << "first at " << first;
        }
      }
      // A small row-major A against a long B (a gate as the lhs): packed column-major.
      {
        Config cg;
        cg.lhs_shape = {4, 3};
        cg.rhs_shape = {3, 5001};
        cg.dims.lhs_contracting = {1};
        cg.dims.rhs_contracting = {0};
        const Tensor lhs = random_matrix(rng, d, 4, 3, true);
        const Tensor rhs = random_matrix(rng, d, 3, 5001, false);
        Tensor out = Tensor::random_normal(d, {4, 5001}, rng()).value();
        DotOptions opt;
        opt.alpha = c128(1.0, 0.5);
        opt.beta = c128(0.5, 0.0);
        opt.conj_lhs = true;
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(d)) + " packed small A");
        const DotRoute route = planned(caps, 1, lhs, rhs, out, cg.dims, opt);
        EXPECT_EQ(route.kernel, DotKernel::kComplexShort) << describe(route);
        EXPECT_TRUE(route.pack_lhs) << describe(route);
        std::string first;
        const double eps = d == DType::kC128 ? 1e-12 : 2e-5;
        EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, cg, opt, out, eps, &first, &caps), 0)
            << "first at " << first;
      }
      // A row-major C: the kernel on C^T = B^T A^T, with B as given when its rows are
      // contiguous and packed [n, k] when not; A's rows or its contraction contiguous
      // (a gate on a C-ordered state's fastest axis, as the row-major einsum plan meets it).
      for (const bool b_rows : {true, false}) {
        for (const bool a_rows : {true, false}) {
          const int64_t m = 3001, n = 2, k = 2;
          Config ct;
          ct.lhs_shape = {m, k};
          ct.rhs_shape = {k, n};
          ct.dims.lhs_contracting = {1};
          ct.dims.rhs_contracting = {0};
          const Tensor lhs = a_rows ? random_matrix(rng, d, m, k, true) : random_matrix(rng, d, m, k, false);
          const Tensor rhs = random_matrix(rng, d, k, n, b_rows);
          Tensor out = Tensor::random_normal(d, {n, m}, rng()).value().permute({1, 0}).value();  // row-major
          DotOptions opt;
          opt.alpha = c128(0.5, 0.25);
          opt.beta = c128(-1.5, 0.5);
          opt.conj_lhs = b_rows;
          opt.conj_rhs = a_rows;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(d)) + " transposed, B rows " +
                       std::to_string(b_rows) + ", A rows " + std::to_string(a_rows));
          const DotRoute route = planned(caps, 1, lhs, rhs, out, ct.dims, opt);
          EXPECT_EQ(route.kernel, DotKernel::kComplexShort) << describe(route);
          EXPECT_TRUE(route.transposed) << describe(route);
          EXPECT_EQ(route.pack_rhs, !b_rows) << describe(route);
          EXPECT_FALSE(route.pack_lhs || route.pack_out) << describe(route);
          std::string first;
          const double eps = d == DType::kC128 ? 1e-12 : 2e-5;
          EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, ct, opt, out, eps, &first, &caps), 0)
              << "first at " << first;
        }
      }
      // Groups that do not merge ('akb,kn->abn' with a and b split by k; a permuted
      // destination): packed compact for the kernel.
      Config c;
      c.lhs_shape = {5, 3, 7};
      c.rhs_shape = {3, 4};
      c.dims.lhs_contracting = {1};
      c.dims.rhs_contracting = {0};
      const Tensor lhs = Tensor::random_normal(d, c.lhs_shape, rng()).value();
      const Tensor rhs = Tensor::random_normal(d, c.rhs_shape, rng()).value();
      Tensor out = Tensor::random_normal(d, {5, 4, 7}, rng()).value().permute({0, 2, 1}).value();
      DotOptions opt;
      opt.alpha = c128(0.5, 0.25);
      opt.beta = c128(1.5, -0.5);
      const DotRoute route = planned(caps, 1, lhs, rhs, out, c.dims, opt);
      EXPECT_EQ(route.kernel, DotKernel::kComplexShort) << describe(route);
      EXPECT_TRUE(route.pack_lhs && route.pack_out) << describe(route);
      std::string first;
      const double eps = d == DType::kC128 ? 1e-12 : 2e-5;
      EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, c, opt, out, eps, &first, &caps), 0)
          << "first at " << first;
    }
  }
  EXPECT_GT(runs, 0);
}

// Note [OpenBLAS matrix-vector calls]: real products with one column or one row forced
// onto OpenBLAS run ?gemv: A (or B) in either BLAS form, the vector contiguous or
// strided, C column- or row-major (a row-major C swaps the roles), alpha, beta 0 on a
// NaN destination or not, f64 and f32; against long-double sums.
TEST(DotGeneral, OpenBlasMatrixVectorCallsMatchTheReference) {
  auto executor = make_tbb_executor(1).value();
  std::mt19937_64 rng(99);
  int runs = 0;
  for (const DType d : {DType::kF64, DType::kF32}) {
    const double eps = d == DType::kF64 ? 1e-12 : 2e-5;
    for (const auto& [m, n, k] :
         {std::tuple{int64_t{37}, int64_t{1}, int64_t{5}}, std::tuple{int64_t{1}, int64_t{41}, int64_t{3}},
          std::tuple{int64_t{300}, int64_t{1}, int64_t{64}}, std::tuple{int64_t{1}, int64_t{500}, int64_t{2}}}) {
      for (int variant = 0; variant < 8; ++variant) {
        const bool a_rows = variant & 1, b_rows = variant & 2, c_rows = variant & 4;
        Config c;
        c.lhs_shape = {m, k};
        c.rhs_shape = {k, n};
        c.dims.lhs_contracting = {1};
        c.dims.rhs_contracting = {0};
        // A strided vector operand: every second element of a larger one.
        const Tensor lhs = m == 1 && a_rows
                               ? Tensor::random_normal(d, {1, 2 * k}, rng()).value().slice(1, 0, 2 * k, 2).value()
                               : random_matrix(rng, d, m, k, a_rows);
        const Tensor rhs = n == 1 && b_rows
                               ? Tensor::random_normal(d, {2 * k, 1}, rng()).value().slice(0, 0, 2 * k, 2).value()
                               : random_matrix(rng, d, k, n, b_rows);
        Tensor out = c_rows ? Tensor::random_normal(d, {n, m}, rng()).value().permute({1, 0}).value()
                            : Tensor::random_normal(d, {m, n}, rng()).value();
        const bool beta_zero = variant % 3 == 0;
        if (beta_zero) {
          ASSERT_TRUE(fill_nan(out));
        }
        DotOptions opt;
        opt.provider = GemmProvider::kOpenBlas;
        opt.alpha = c128(-0.75, 0);
        opt.beta = beta_zero ? c128(0, 0) : c128(1.5, 0);
        SCOPED_TRACE(std::string(dtype_name(d)) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + " variant " + std::to_string(variant));
        std::string first;
        EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, c, opt, out, eps, &first), 0) << "first at " << first;
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 64);
}

// The narrow kernel (Note [Narrow products]) through dot_general at each ISA level this
// machine has (AVX2, AVX-512), f64 and f32: a small A (one or two vectors of rows, each
// contraction length it holds) against B's columns contiguous (points stored point by
// point) or its rows contiguous, A column-major, row-major or a strided slice, C dense
// (one run through the stack tile, column blocks past one tile) or with gaps between
// columns (masked stores), beta 0 (a NaN destination never read) or not, alpha, two
// threads in pieces of columns; C^T = B^T A^T for a small B against a row-major C; A
// whose groups do not merge (packed). Against long-double sums.
TEST(DotGeneral, NarrowKernelMatchesTheReference) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(777);
  int runs = 0;
  for (const IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    CpuCaps caps = host_caps();
    if (caps.detected_isa < isa) continue;
    caps.max_isa = isa;
    caps.openblas_tuned = true;
    caps.openblas_avx512 = false;
    caps.blis_tuned = false;
    caps.l2_bytes = int64_t{1} << 20;
    for (const DType d : {DType::kF64, DType::kF32}) {
      const int64_t rpv = (isa == IsaLevel::kAvx512 ? 64 : 32) / dtype_size(d);
      const double eps = d == DType::kF64 ? 1e-12 : 2e-5;
      struct Case {
        int64_t m, n, k;
        int threads;
      };
      std::vector<Case> cases;
      // Half a vector of rows (256-bit vectors at AVX-512 too) and more, full vectors included.
      std::vector<int64_t> rows{2, 3, 4, 8, rpv - 1, rpv, rpv + 1, 2 * rpv};
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      for (const int64_t m : rows) {
        for (const int64_t k : {2, 3, 4, 5, 8}) {
          // Note [Narrow thresholds]: f64 over two vectors only below 8 rows.
          if (!detail::narrow_takes(m, k, rpv) || (d == DType::kF64 && m > rpv && m >= 8)) continue;
          cases.push_back({m, 200, k, 1});
          cases.push_back({m, 1001, k, k == 3 ? 2 : 1});
        }
      }
      cases.push_back({3, 70001, 3, 2});
      for (const Case& cs : cases) {
        for (int variant = 0; variant < 6; ++variant) {
          // variant: bit 0 B's rows contiguous (else its columns), bit 1 beta 0 on NaN,
          // variant 4 and 5: C with gaps between columns; A's layout cycles.
          const bool b_rows = variant & 1, beta_zero = variant & 2, gaps = variant >= 4;
          Config c;
          c.lhs_shape = {cs.m, cs.k};
          c.rhs_shape = {cs.k, cs.n};
          c.dims.lhs_contracting = {1};
          c.dims.rhs_contracting = {0};
          const Tensor lhs = variant % 3 == 0   ? random_matrix(rng, d, cs.m, cs.k, false)
                             : variant % 3 == 1 ? random_matrix(rng, d, cs.m, cs.k, true)
                                                : strided_operand(rng, d, c.lhs_shape);
          const Tensor rhs = random_matrix(rng, d, cs.k, cs.n, b_rows);
          Tensor out = gaps ? Tensor::random_normal(d, {cs.m + 3, cs.n}, rng()).value().slice(0, 0, cs.m, 1).value()
                            : Tensor::random_normal(d, {cs.m, cs.n}, rng()).value();
          if (beta_zero) {
            ASSERT_TRUE(fill_nan(out));
          }
          DotOptions opt;
          opt.alpha = c128(0.75, 0);
          opt.beta = beta_zero ? c128(0, 0) : c128(-1.25, 0);
          opt.parallel_min_flops = 1;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(d)) + " " + std::to_string(cs.m) +
                       "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k) + " variant " + std::to_string(variant));
          const DotRoute route = planned(caps, cs.threads, lhs, rhs, out, c.dims, opt);
          EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
          EXPECT_FALSE(route.transposed || route.pack_rhs || route.pack_out) << describe(route);
          if (cs.threads > 1) {
            EXPECT_EQ(route.split, DotSplit::kPieces) << describe(route);
          }
          std::string first;
          EXPECT_EQ(mismatches_after_call(*executor, cs.threads, lhs, rhs, c, opt, out, eps, &first, &caps), 0)
              << "first at " << first;
          ++runs;
        }
      }
      // C^T = B^T A^T: a long A whose contraction is contiguous (points stored point by
      // point) against a small B, C row-major; B as given or not merging (packed).
      for (const bool b_split : {false, true}) {
        const int64_t m = 2003, n = 3, k = 3;
        Config ct;
        ct.lhs_shape = {m, k};
        ct.rhs_shape = b_split ? Shape{n, k} : Shape{k, n};
        ct.dims.lhs_contracting = {1};
        ct.dims.rhs_contracting = {b_split ? int64_t{1} : int64_t{0}};
        const Tensor lhs = random_matrix(rng, d, m, k, true);
        const Tensor rhs = random_matrix(rng, d, ct.rhs_shape[0], ct.rhs_shape[1], false);
        Tensor out = Tensor::random_normal(d, {n, m}, rng()).value().permute({1, 0}).value();  // row-major
        DotOptions opt;
        opt.alpha = c128(-0.5, 0);
        opt.beta = c128(2.0, 0);
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(d)) + " transposed");
        const DotRoute route = planned(caps, 1, lhs, rhs, out, ct.dims, opt);
        EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
        EXPECT_TRUE(route.transposed) << describe(route);
        std::string first;
        EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, ct, opt, out, eps, &first, &caps), 0)
            << "first at " << first;
      }
      // A B whose free group does not merge ('ik,kab->iab' with B row-major): packed [k, n];
      // a contraction that merges in one operand only ('ikl,klj->ij', C row-major: C^T =
      // B^T A^T with the other operand packed).
      {
        Config cb;
        cb.lhs_shape = {3, 2};
        cb.rhs_shape = {2, 40, 30};
        cb.dims.lhs_contracting = {1};
        cb.dims.rhs_contracting = {0};
        const Tensor lhs = Tensor::random_normal(d, cb.lhs_shape, rng()).value();
        const Tensor rhs = Tensor::random_normal(d, {30, 40, 2}, rng()).value().permute({2, 1, 0}).value();
        Tensor out = Tensor::random_normal(d, {3, 40, 30}, rng()).value();
        DotOptions opt;
        opt.beta = c128(0.5, 0);
        const DotRoute route = planned(caps, 1, lhs, rhs, out, cb.dims, opt);
        EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
        EXPECT_TRUE(route.pack_rhs) << describe(route);
        std::string first;
        EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, cb, opt, out, eps, &first, &caps), 0)
            << "first at " << first;
        Config ck;
        ck.lhs_shape = {700, 2, 2};
        ck.rhs_shape = {2, 2, 3};
        ck.dims.lhs_contracting = {1, 2};
        ck.dims.rhs_contracting = {0, 1};
        const Tensor lk = Tensor::random_normal(d, {2, 2, 700}, rng()).value().permute({2, 1, 0}).value();
        const Tensor rk = Tensor::random_normal(d, ck.rhs_shape, rng()).value();
        Tensor ok = Tensor::random_normal(d, {3, 700}, rng()).value().permute({1, 0}).value();  // row-major
        const DotRoute rt = planned(caps, 1, lk, rk, ok, ck.dims, opt);
        EXPECT_EQ(rt.kernel, DotKernel::kNarrow) << describe(rt);
        EXPECT_TRUE(rt.transposed && (rt.pack_lhs || rt.pack_rhs)) << describe(rt);
        EXPECT_EQ(mismatches_after_call(*executor, 1, lk, rk, ck, opt, ok, eps, &first, &caps), 0)
            << "first at " << first;
      }
      // An A whose groups do not merge ('akb,kn->abn', a and b split by k): packed.
      Config c;
      c.lhs_shape = {2, 3, 2};
      c.rhs_shape = {3, 500};
      c.dims.lhs_contracting = {1};
      c.dims.rhs_contracting = {0};
      const Tensor lhs = Tensor::random_normal(d, c.lhs_shape, rng()).value();
      const Tensor rhs = random_matrix(rng, d, 3, 500, false);
      Tensor out = Tensor::random_normal(d, {2, 2, 500}, rng()).value();
      DotOptions opt;
      opt.alpha = c128(1.5, 0);
      const DotRoute route = planned(caps, 1, lhs, rhs, out, c.dims, opt);
      EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
      EXPECT_TRUE(route.pack_lhs) << describe(route);
      std::string first;
      EXPECT_EQ(mismatches_after_call(*executor, 1, lhs, rhs, c, opt, out, eps, &first, &caps), 0)
          << "first at " << first;
    }
  }
  EXPECT_GT(runs, 0);
}

// Through dot_general: large f64 products (one and two threads: lanes with their own
// panels), C column- and row-major, strided operands, a DotScratch that keeps the
// workspace between calls.
TEST(DotGeneral, BlockedProductsMatchTheReference) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(77);
  DotScratch scratch;
  for (const auto& mnk : {std::array<int64_t, 3>{210, 100, 270}, std::array<int64_t, 3>{600, 40, 70}}) {
    for (int threads : {1, 2}) {
      for (bool row_major_out : {false, true}) {
        Config c;
        c.lhs_shape = {mnk[0], mnk[2]};
        c.rhs_shape = {mnk[2], mnk[1]};
        c.dims.lhs_contracting = {1};
        c.dims.rhs_contracting = {0};
        const Tensor lhs = strided_operand(rng, DType::kF64, c.lhs_shape);
        const Tensor rhs = Tensor::random_normal(DType::kF64, c.rhs_shape, rng()).value();
        Tensor out = row_major_out
                         ? Tensor::random_normal(DType::kF64, {mnk[1], mnk[0]}, rng()).value().permute({1, 0}).value()
                         : Tensor::random_normal(DType::kF64, {mnk[0], mnk[1]}, rng()).value();
        const Tensor before = out.clone().value();
        DotOptions opt;
        opt.alpha = 0.5;
        opt.beta = -1.0;
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
          ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, c.dims, opt, out, nullptr, &scratch));
        });
        const DotRoute route = planned(kReferenceCaps, threads, lhs, rhs, out, c.dims, opt);
        EXPECT_EQ(route.kernel, DotKernel::kBlocked) << describe(route);
        std::string first;
        EXPECT_EQ(alpha_beta_mismatches(lhs, rhs, c, opt, before, out, 1e-12, &first), 0)
            << "m " << mnk[0] << " threads " << threads << " row-major C " << row_major_out << " first at " << first;
      }
    }
  }
}

// Note [Outer products]: K = 1 through dot_general, C column-major (streaming stores for
// outputs of 8 MiB or more, a line per iteration, columns at every 16-byte alignment),
// row-major (the roles swapped) and with beta (no streaming), f64 and f32, one and two
// threads: every element against the product of its two factors.
TEST(DotGeneral, OuterProductsMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  struct Case {
    int64_t m, n;
    DType dtype;
    bool row_major;
    int64_t pad;  // C = rows [pad, pad + m) of a column-major [m + 2 pad, n] buffer
    double beta;
  };
  const Case cases[] = {{1031, 1029, DType::kF64, false, 1, 0.0}, {1031, 1029, DType::kF64, true, 0, 0.0},
                        {2053, 1030, DType::kF32, false, 3, 0.0}, {2053, 1030, DType::kF32, true, 0, 0.0},
                        {1031, 1029, DType::kF64, false, 0, 0.5}, {37, 45, DType::kF64, false, 1, 0.0},
                        {37, 45, DType::kF32, false, 0, -2.0}};
  for (const Case& c : cases) {
    const Tensor lhs = Tensor::random_normal(c.dtype, {c.m, 1}, 41).value();
    const Tensor rhs = Tensor::random_normal(c.dtype, {1, c.n}, 42).value();
    DotDims dims;
    dims.lhs_contracting = {1};
    dims.rhs_contracting = {0};
    for (const int threads : {1, 2}) {
      SCOPED_TRACE("m " + std::to_string(c.m) + " " + std::string(dtype_name(c.dtype)) + " row-major " +
                   std::to_string(c.row_major) + " beta " + std::to_string(c.beta) + " threads " + std::to_string(threads));
      Tensor out;
      if (c.row_major) {
        out = Tensor::random_normal(c.dtype, {c.n, c.m}, 43).value().permute(Dims{1, 0}).value();
      } else {
        out = Tensor::random_normal(c.dtype, {c.m + 2 * c.pad, c.n}, 43).value().slice(0, c.pad, c.pad + c.m, 1).value();
      }
      const bool f64 = c.dtype == DType::kF64;
      auto at = [&](const Tensor& t, int64_t e) {
        return f64 ? static_cast<const double*>(t.storage()->data())[e] : static_cast<const float*>(t.storage()->data())[e];
      };
      auto at_ij = [&](const Tensor& t, int64_t i, int64_t j) { return at(t, t.offset() + i * t.strides()[0] + j * t.strides()[1]); };
      std::vector<double> before(static_cast<size_t>(c.m * c.n));
      for (int64_t j = 0; j < c.n; ++j)
        for (int64_t i = 0; i < c.m; ++i) before[static_cast<size_t>(i + j * c.m)] = at_ij(out, i, j);
      DotOptions opt;
      opt.beta = c128(c.beta, 0.0);
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
        ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, dims, opt, out));
      });
      const double tol = f64 ? 1e-15 : 1e-6;
      int64_t wrong = 0;
      for (int64_t j = 0; j < c.n; ++j) {
        for (int64_t i = 0; i < c.m; ++i) {
          const double got = at_ij(out, i, j);
          const double want = at(lhs, i) * at(rhs, j) + c.beta * before[static_cast<size_t>(i + j * c.m)];
          if (std::fabs(got - want) > tol * (std::fabs(want) + 1) && ++wrong <= 3) {
            ADD_FAILURE() << "at " << i << "," << j << ": " << got << " vs " << want;
          }
        }
      }
      ASSERT_EQ(wrong, 0);
    }
  }
}

// Through dot_general: a tall operand (column- or row-major) against a narrow one
// with a long contraction, the tall side as lhs (C column-major) or rhs (C row-major,
// the transposed form), 1 and 2 threads (the tall side split in pieces of up to 48 rows): no
// operand is packed (a row-major tall side takes the narrow one as rows in a workspace,
// Note [Streamed row-major products]) and the result is the naive one.
TEST(DotGeneral, StreamedTallProductsPackNothing) {
  auto executor = make_tbb_executor(2).value();
  const int64_t sizes[][3] = {{465, 21, 396}, {101, 8, 64}, {700, 32, 67}};
  for (const auto& e : sizes) {
    const int64_t tall = e[0], narrow = e[1], k = e[2];
    for (int orient = 0; orient < 4; ++orient) {
      const bool tall_rhs = orient >= 2, k_fastest = orient % 2;
      Config cfg;
      // Tensors are column-major: the tall operand [k, t] (k fastest) or [t, k] (t
      // fastest); the narrow one [k, s].
      const Shape tall_shape = k_fastest ? Shape{k, tall} : Shape{tall, k};
      const int64_t tall_k = k_fastest ? 0 : 1;
      cfg.lhs_shape = tall_rhs ? Shape{k, narrow} : tall_shape;
      cfg.rhs_shape = tall_rhs ? tall_shape : Shape{k, narrow};
      cfg.dims.lhs_contracting = {tall_rhs ? 0 : tall_k};
      cfg.dims.rhs_contracting = {tall_rhs ? tall_k : 0};
      const Tensor lhs = Tensor::random_normal(DType::kF64, cfg.lhs_shape, 11).value();
      const Tensor rhs = Tensor::random_normal(DType::kF64, cfg.rhs_shape, 12).value();
      for (const int threads : {1, 2}) {
        SCOPED_TRACE("tall " + std::to_string(tall) + " orient " + std::to_string(orient) + " threads " +
                     std::to_string(threads));
        // The destination with the tall side fastest ([t, s], or a transposed view [s, t]),
        // or with the narrow side fastest (the kernel writes C's rows at a stride).
        for (const bool tall_fastest : {true, false}) {
          Tensor out = tall_fastest ? Tensor::random_normal(DType::kF64, {tall, narrow}, 13).value()
                                    : Tensor::random_normal(DType::kF64, {narrow, tall}, 13).value();
          if (tall_rhs == tall_fastest) out = out.permute(Dims{1, 0}).value();
          expect_in_place_product(*executor, cfg, lhs, rhs, threads, out, true);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Through dot_general: tensor-train steps E'[r, c] = sum_{l,s} L[l, r, s] T[c, s, l]
// (the site tensor's contracted labels around its free one), in both operand orders
// (the transposed form when the lhs is the operand contiguous along its free side), a
// batch, 1 and 2 threads (the contraction split) and row- or column-major
// destinations: no operand is packed, and the result is the naive one. A contraction
// of five loops that merge nowhere takes the packing route and is still right.
TEST(DotGeneral, ShortSideProductsWalkTheContractionInPlace) {
  auto executor = make_tbb_executor(2).value();
  auto in_place = [&](const Config& cfg, const Tensor& lhs, const Tensor& rhs, int threads, Tensor& out) {
    expect_in_place_product(*executor, cfg, lhs, rhs, threads, out, false);
  };
  const int64_t shapes[][3] = {{19, 19, 40}, {16, 13, 24}, {7, 32, 100}};
  for (const auto& e : shapes) {
    const int64_t d = e[0], c = e[1], ph = e[2];
    for (const bool swap : {false, true}) {
      for (const int64_t batch : {int64_t{1}, int64_t{3}}) {
        Config cfg;
        // L [l, r, s, b] and T [c, s, l, b].
        const Shape ls{d, d, ph, batch}, ts{c, ph, d, batch};
        cfg.lhs_shape = swap ? ts : ls;
        cfg.rhs_shape = swap ? ls : ts;
        if (!swap) {
          cfg.dims.lhs_contracting = {0, 2};
          cfg.dims.rhs_contracting = {2, 1};
        } else {
          cfg.dims.lhs_contracting = {2, 1};
          cfg.dims.rhs_contracting = {0, 2};
        }
        cfg.dims.lhs_batch = {3};
        cfg.dims.rhs_batch = {3};
        const Tensor lhs = Tensor::random_normal(DType::kF64, cfg.lhs_shape, 11).value();
        const Tensor rhs = Tensor::random_normal(DType::kF64, cfg.rhs_shape, 12).value();
        const Shape out_shape = dot_general_shape(cfg.lhs_shape, cfg.rhs_shape, cfg.dims).value();
        for (const int threads : {1, 2}) {
          for (const bool row_major : {false, true}) {
            SCOPED_TRACE("d " + std::to_string(d) + " swap " + std::to_string(swap) + " batch " +
                         std::to_string(batch) + " threads " + std::to_string(threads) + " row-major " +
                         std::to_string(row_major));
            Tensor out = row_major ? Tensor::zeros(DType::kF64, {out_shape[2], out_shape[1], out_shape[0]})
                                         .value()
                                         .permute({2, 1, 0})
                                         .value()
                                   : Tensor::zeros(DType::kF64, out_shape).value();
            in_place(cfg, lhs, rhs, threads, out);
          }
        }
      }
    }
  }
  // lm's batched products: the lhs interleaves free and contracted axes [k2, f1, k1, f2,
  // b] (no row stride either: the kernel takes its rows from an offset table), the rhs
  // is [n1, n2, k1, k2, b]; register mode (the contraction fits in L1).
  {
    Config lm;
    lm.lhs_shape = {4, 4, 4, 4, 20};
    lm.rhs_shape = {4, 4, 4, 4, 20};
    lm.dims.lhs_contracting = {2, 0};
    lm.dims.rhs_contracting = {2, 3};
    lm.dims.lhs_batch = {4};
    lm.dims.rhs_batch = {4};
    const Tensor lhs = Tensor::random_normal(DType::kF64, lm.lhs_shape, 15).value();
    const Tensor rhs = Tensor::random_normal(DType::kF64, lm.rhs_shape, 16).value();
    for (const int threads : {1, 2}) {
      Tensor out = Tensor::zeros(DType::kF64, dot_general_shape(lm.lhs_shape, lm.rhs_shape, lm.dims).value()).value();
      in_place(lm, lhs, rhs, threads, out);
    }
  }
  // Five contracted axes in opposite orders: no loops merge, more than kMaxKLevels.
  Config cfg;
  cfg.lhs_shape = {8, 3, 3, 3, 3, 3};
  cfg.rhs_shape = {3, 3, 3, 3, 3, 8};
  cfg.dims.lhs_contracting = {1, 2, 3, 4, 5};
  cfg.dims.rhs_contracting = {4, 3, 2, 1, 0};
  const Tensor lhs = Tensor::random_normal(DType::kF64, cfg.lhs_shape, 13).value();
  const Tensor rhs = Tensor::random_normal(DType::kF64, cfg.rhs_shape, 14).value();
  Tensor out = Tensor::zeros(DType::kF64, {8, 8}).value();
  auto ctx = CpuExecutionContext::sequential();
  ASSERT_TRUE(dot_general_into(ctx, lhs, rhs, cfg.dims, DotOptions{}, out));
  expect_real_product(lhs, rhs, cfg, out);
}

// dot_general on two workers of `executor` (an inner-parallel context).
Result<Tensor> dot_on_two_threads(CpuDomainExecutor& executor, const Tensor& lhs, const Tensor& rhs, const DotDims& dims,
                                  const DotOptions& opt) {
  std::optional<Result<Tensor>> got;
  executor.install([&] {
    CpuExecutionContext ctx(&executor, ParallelMode::kInner, 2);
    got = dot_general(ctx, lhs, rhs, dims, opt);
  });
  return std::move(*got);
}

// Every batch policy gives the naive result on a batch whose dimensions do not merge
// (a sliced middle batch axis) with conjugated complex operands in both layouts.
TEST(DotGeneral, EveryBatchPolicyOnNonMergeableBatches) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(7);
  for (DType d : {DType::kF64, DType::kC128, DType::kF32, DType::kC64}) {
    // lhs [b0, m, b1, k] with b0 x b1 batch; rhs [k, n, b1, b0] (permuted storage).
    Tensor lhs = Tensor::random_uniform(d, {3, 5, 8, 7}, rng(), -1, 1).value().slice(2, 0, 8, 2).value();
    Tensor rhs = Tensor::random_uniform(d, {7, 4, 6, 3}, rng(), -1, 1).value().permute({0, 2, 1, 3}).value();
    DotDims dims;
    dims.lhs_batch = {0, 2};
    dims.rhs_batch = {3, 2};
    dims.lhs_contracting = {3};
    dims.rhs_contracting = {0};
    for (int p = 0; p < 5; ++p) {
      for (bool conj : {false, true}) {
        DotOptions opt;
        opt.batch_policy = static_cast<BatchPolicy>(p);
        opt.conj_lhs = conj;
        opt.conj_rhs = !conj;
        opt.alpha = is_complex(d) ? c128(0.5, 2) : c128(-1.5, 0);
        const Result<Tensor> got = dot_on_two_threads(*executor, lhs, rhs, dims, opt);
        ASSERT_TRUE(got.has_value()) << got.error().to_string();
        const Tensor res = got.value();
        // out[b0, b1, m, n] = alpha * sum_k cj(lhs[b0, m, b1, k]) cj(rhs[k, n, b1, b0])
        for_each_index(res.shape(), [&](const Index& i) {
          std::complex<long double> acc = 0;
          for (int64_t k = 0; k < 7; ++k) {
            c128 x = lhs.get_as_c128({i[0], i[2], i[1], k}).value();
            c128 y = rhs.get_as_c128({k, i[3], i[1], i[0]}).value();
            if (opt.conj_lhs) x = std::conj(x);
            if (opt.conj_rhs) y = std::conj(y);
            acc += std::complex<long double>(x.real(), x.imag()) * std::complex<long double>(y.real(), y.imag());
          }
          acc *= std::complex<long double>(opt.alpha.real(), opt.alpha.imag());
          const c128 g = res.get_as_c128(i).value();
          const double tol = (d == DType::kF32 || d == DType::kC64) ? 1e-5 : 1e-13;
          ASSERT_NEAR(g.real(), static_cast<double>(acc.real()), tol * 10) << batch_policy_name(*opt.batch_policy);
          ASSERT_NEAR(g.imag(), static_cast<double>(acc.imag()), tol * 10) << batch_policy_name(*opt.batch_policy);
        });
      }
    }
  }
}

// Note [Untuned BLIS]: batches above the tiny threshold under the automatic provider run
// BLIS where it has tuned kernels and one-thread OpenBLAS calls where it does not (this
// test runs whichever route the machine takes). Operands strided in both dimensions
// (not in a BLAS form: OpenBLAS needs them packed, BLIS takes them as they are), conj,
// alpha, every floating dtype, outer-parallel and sequential batches on two threads.
TEST(DotGeneral, AutomaticBatchesOnEitherBlisBuild) {
  auto executor = make_tbb_executor(2).value();
  std::mt19937_64 rng(11);
  for (DType d : {DType::kF64, DType::kC128, DType::kF32, DType::kC64}) {
    // lhs [m, b, k] every second row of m; rhs [n, k, b] with k strided by 2 as well.
    Tensor lhs = Tensor::random_uniform(d, {2 * 37, 5, 41}, rng(), -1, 1).value().slice(0, 0, 2 * 37, 2).value();
    Tensor rhs = Tensor::random_uniform(d, {33, 2 * 41, 5}, rng(), -1, 1).value().slice(1, 0, 2 * 41, 2).value();
    DotDims dims;
    dims.lhs_batch = {1};
    dims.rhs_batch = {2};
    dims.lhs_contracting = {2};
    dims.rhs_contracting = {1};
    for (BatchPolicy policy : {BatchPolicy::kOuterParallel, BatchPolicy::kSequential, BatchPolicy::kAuto}) {
      DotOptions opt;
      opt.batch_policy = policy;
      opt.conj_lhs = is_complex(d);
      opt.alpha = is_complex(d) ? c128(0.5, -1) : c128(2, 0);
      opt.tiny_flops = 1;  // never the plain loops: the providers are under test
      opt.tiny_flops_blis = 1;
      const Result<Tensor> got = dot_on_two_threads(*executor, lhs, rhs, dims, opt);
      ASSERT_TRUE(got.has_value()) << got.error().to_string();
      const Tensor res = got.value();
      ASSERT_EQ(res.shape(), Shape({5, 37, 33}));
      const double tol = (d == DType::kF32 || d == DType::kC64) ? 2e-4 : 1e-12;
      for_each_index(res.shape(), [&](const Index& i) {
        std::complex<long double> acc = 0;
        for (int64_t k = 0; k < 41; ++k) {
          c128 x = lhs.get_as_c128({i[1], i[0], k}).value();
          const c128 y = rhs.get_as_c128({i[2], k, i[0]}).value();
          if (opt.conj_lhs) x = std::conj(x);
          acc += std::complex<long double>(x.real(), x.imag()) * std::complex<long double>(y.real(), y.imag());
        }
        acc *= std::complex<long double>(opt.alpha.real(), opt.alpha.imag());
        const c128 g = res.get_as_c128(i).value();
        ASSERT_NEAR(g.real(), static_cast<double>(acc.real()), tol) << dtype_name(d) << " " << batch_policy_name(policy);
        ASSERT_NEAR(g.imag(), static_cast<double>(acc.imag()), tol) << dtype_name(d) << " " << batch_policy_name(policy);
      });
    }
  }
}

// A contraction with only batch dimensions is an elementwise product (with conj,
// alpha and beta) under every policy, including into a strided destination.
TEST(DotGeneral, AllBatchContractionIsElementwise) {
  auto ctx = CpuExecutionContext::sequential();
  Tensor x = Tensor::random_uniform(DType::kC128, {4, 3}, 1, -1, 1).value();
  Tensor y = Tensor::random_uniform(DType::kC128, {3, 4}, 2, -1, 1).value();
  DotDims dims;
  dims.lhs_batch = {1, 0};
  dims.rhs_batch = {0, 1};
  for (int p = 0; p < 5; ++p) {
    Tensor out = Tensor::random_uniform(DType::kC128, {4, 3}, 3, -1, 1).value().transpose().value();
    Tensor before = out.clone().value();
    DotOptions opt;
    opt.batch_policy = static_cast<BatchPolicy>(p);
    opt.conj_lhs = true;
    opt.alpha = c128(2, -1);
    opt.beta = c128(0.5, 0.25);
    ASSERT_TRUE(dot_general_into(ctx, x, y, dims, opt, out).has_value());
    for_each_index(out.shape(), [&](const Index& i) {
      const c128 want = opt.alpha * std::conj(x.get<c128>({i[1], i[0]}).value()) * y.get<c128>({i[0], i[1]}).value() +
                        opt.beta * before.get<c128>(i).value();
      const c128 got = out.get<c128>(i).value();
      EXPECT_NEAR(got.real(), want.real(), 1e-14);
      EXPECT_NEAR(got.imag(), want.imag(), 1e-14);
    });
  }
}

TEST(DotGeneral, WholeBatchVendorRejectsRoutesWithoutABatchEntryPoint) {
  auto ctx = CpuExecutionContext::sequential();
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  Tensor out = Tensor::full(DType::kI64, {2, 2}, c128(7, 0)).value();
  Tensor a = Tensor::ones(DType::kI64, {2, 3}).value();
  Tensor b = Tensor::ones(DType::kI64, {3, 2}).value();
  DotOptions opt;
  opt.batch_policy = BatchPolicy::kWholeBatchVendor;
  auto r = dot_general_into(ctx, a, b, mm, opt, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(out.get<int64_t>({1, 1}).value(), 7);  // nothing written
  opt.provider = GemmProvider::kOpenBlas;
  EXPECT_EQ(dot_general(ctx, Tensor::ones(DType::kF64, {2, 3}).value(), Tensor::ones(DType::kF64, {3, 2}).value(),
                        mm, opt)
                .error()
                .code(),
            ErrorCode::kUnsupported);
}

TEST(DotGeneral, TypedErrorsBeforeWriting) {
  auto ctx = CpuExecutionContext::sequential();
  Tensor a = Tensor::ones(DType::kF64, {2, 3}).value();
  Tensor b = Tensor::ones(DType::kF64, {4, 5}).value();
  DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  EXPECT_EQ(dot_general(ctx, a, b, d).error().code(), ErrorCode::kShapeMismatch);
  d.rhs_contracting = {2};
  EXPECT_EQ(dot_general(ctx, a, b, d).error().code(), ErrorCode::kOutOfRange);
  DotDims rep;
  rep.lhs_contracting = {1, 1};
  rep.rhs_contracting = {0, 1};
  EXPECT_EQ(dot_general(ctx, a, a, rep).error().code(), ErrorCode::kInvalidArgument);
  DotDims len;
  len.lhs_batch = {0};
  EXPECT_EQ(dot_general(ctx, a, a, len).error().code(), ErrorCode::kInvalidArgument);
  Tensor f = Tensor::ones(DType::kF32, {3, 2}).value();
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  EXPECT_EQ(dot_general(ctx, a, f, mm).error().code(), ErrorCode::kDTypeMismatch);
  Tensor c = Tensor::ones(DType::kF64, {3, 2}).value();
  Tensor out = Tensor::full(DType::kF64, {2, 3}, c128(7, 0)).value();
  EXPECT_EQ(dot_general_into(ctx, a, c, mm, {}, out).error().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(out.get<double>({1, 2}).value(), 7.0);
  DotOptions bad;
  bad.alpha = c128(1, 1);
  Tensor good = Tensor::zeros(DType::kF64, {2, 2}).value();
  EXPECT_EQ(dot_general_into(ctx, a, c, mm, bad, good).error().code(), ErrorCode::kInvalidArgument);
  DotOptions two;
  two.alpha = 2.0;  // bool scalars are 0 or 1
  DotDims vv;
  vv.lhs_contracting = {0};
  vv.rhs_contracting = {0};
  Tensor flag = Tensor::zeros(DType::kBool, {}).value();
  EXPECT_EQ(dot_general_into(ctx, Tensor::ones(DType::kBool, {2}).value(), Tensor::ones(DType::kBool, {2}).value(),
                             vv, two, flag)
                .error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(flag.get<bool>({}).value());
}

// Note [Tiny matrix shortcut] in dot_general_into: tiny products written through any
// destination layout (column-major, row-major, strided with an offset), against a naive
// sum; with beta != 0 the destination is read (the general route); a shared destination
// is refused before any write.
TEST(DotGeneral, TinyProductsIntoAnyDestinationLayout) {
  auto ctx = CpuExecutionContext::sequential();
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  uint64_t seed = 1;
  for (DType dt : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
    for (int64_t m = 1; m <= 3; ++m) {
      for (int64_t k = 1; k <= 3; ++k) {
        for (int64_t n = 1; n <= 3; ++n) {
          Tensor a = Tensor::random_normal(dt, {m, k}, seed++).value();
          Tensor b = Tensor::random_normal(dt, {k, n}, seed++).value().transpose().value().contiguous().value()
                         .transpose().value();  // row-major rhs
          for (int layout = 0; layout < 3; ++layout) {
            for (double beta : {0.0, 1.0}) {
              Tensor big = Tensor::full(dt, {4 * m * n + 1}, c128(0.5, 0)).value();
              std::shared_ptr<Storage> storage = big.storage();
              big = Tensor();
              Layout l = Layout::col_major({m, n});
              if (layout == 1) l.strides = {n, 1};
              if (layout == 2) {
                l.strides = {2, 2 * m};
                l.offset = 1;
              }
              Tensor out = Tensor::from_storage(dt, std::move(storage), l).value();
              DotOptions o;
              o.beta = beta;
              ASSERT_TRUE(dot_general_into(ctx, a, b, mm, o, out));
              for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = 0; j < n; ++j) {
                  c128 want = beta * c128(0.5, 0);
                  for (int64_t q = 0; q < k; ++q) want += a.get_as_c128({i, q}).value() * b.get_as_c128({q, j}).value();
                  const c128 got = out.get_as_c128({i, j}).value();
                  const double tol = (dt == DType::kF32 || dt == DType::kC64) ? 1e-5 : 1e-13;
                  EXPECT_NEAR(got.real(), want.real(), tol * (1 + std::abs(want)))
                      << dtype_name(dt) << " " << m << "x" << k << "x" << n << " layout " << layout << " beta " << beta;
                  EXPECT_NEAR(got.imag(), want.imag(), tol * (1 + std::abs(want)));
                }
              }
              if (layout == 2) {  // the element before the offset is untouched
                EXPECT_EQ(Tensor::from_storage(dt, out.storage(), Layout::col_major({1})).value().get_as_c128({0}).value(),
                          c128(0.5, 0));
              }
            }
          }
          Tensor shared = Tensor::full(dt, {m, n}, c128(3, 0)).value();
          Tensor other = shared;
          EXPECT_EQ(dot_general_into(ctx, a, b, mm, {}, shared).error().code(), ErrorCode::kNotExclusive);
          EXPECT_EQ(other.get_as_c128({0, 0}).value(), c128(3, 0));
        }
      }
    }
  }
}

// Note [Tiny matrix shortcut]: the direct loop in each of its orders (down columns for
// column-major lhs and result, along rows for row-major rhs and result, element by
// element otherwise) at sizes up to the threshold and just past it (the planned route),
// every dtype, operands column-major, row-major and strided views, results through
// dot_general (its own layout) and into row-major destinations: values against a naive
// long-double sum, and against the planned route (shortcut_flops = 0) for the same call.
TEST(DotGeneral, ShortcutLoopOrdersMatchANaiveSum) {
  auto ctx = CpuExecutionContext::sequential();
  DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  const int64_t limit = ctx.batch().shortcut_flops;
  ASSERT_GE(limit, 27);
  uint64_t seed = 100;
  // An operand [r, c] in one of three forms: column-major, row-major, every second
  // element of a larger column-major tensor (neither stride 1).
  auto operand = [&](DType dt, int64_t r, int64_t c, int form) {
    if (form == 0) return Tensor::random_normal(dt, {r, c}, seed++).value();
    if (form == 1) {
      return Tensor::random_normal(dt, {c, r}, seed++).value().transpose().value();  // strides {c, 1}
    }
    return Tensor::random_normal(dt, {2 * r, c}, seed++).value().slice(0, 0, 2 * r, 2).value();
  };
  struct Size {
    int64_t m, k, n;
  };
  // {2, 2, 200} and {3, 3, 150}: within the multiply-adds, but more runs than 14^2.
  const Size sizes[] = {{1, 1, 1},    {3, 5, 7},  {8, 8, 8},   {2, 40, 3}, {14, 14, 14},
                        {15, 15, 15}, {1, 17, 9}, {2, 2, 200}, {3, 3, 150}};
  for (DType dt : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
    const double tol = (dt == DType::kF32 || dt == DType::kC64) ? 2e-5 : 1e-13;
    for (const Size& z : sizes) {
      for (int fa = 0; fa < 3; ++fa) {
        for (int fb = 0; fb < 3; ++fb) {
          const Tensor a = operand(dt, z.m, z.k, fa), b = operand(dt, z.k, z.n, fb);
          std::vector<std::complex<long double>> want(static_cast<size_t>(z.m * z.n));
          for (int64_t i = 0; i < z.m; ++i) {
            for (int64_t j = 0; j < z.n; ++j) {
              std::complex<long double> acc = 0;
              for (int64_t q = 0; q < z.k; ++q) {
                const c128 x = a.get_as_c128({i, q}).value(), y = b.get_as_c128({q, j}).value();
                acc += std::complex<long double>(x.real(), x.imag()) * std::complex<long double>(y.real(), y.imag());
              }
              want[static_cast<size_t>(i * z.n + j)] = acc;
            }
          }
          auto check = [&](const Tensor& got, const char* what) {
            for (int64_t i = 0; i < z.m; ++i) {
              for (int64_t j = 0; j < z.n; ++j) {
                const std::complex<long double> w = want[static_cast<size_t>(i * z.n + j)];
                const c128 g = got.get_as_c128({i, j}).value();
                const double scale = tol * (1 + static_cast<double>(std::abs(w))) * std::sqrt(static_cast<double>(z.k));
                EXPECT_NEAR(g.real(), static_cast<double>(w.real()), scale)
                    << what << " " << dtype_name(dt) << " " << z.m << "x" << z.k << "x" << z.n << " forms " << fa << fb;
                EXPECT_NEAR(g.imag(), static_cast<double>(w.imag()), scale);
              }
            }
          };
          const Tensor own = dot_general(ctx, a, b, mm).value();
          check(own, "dot_general");
          DotOptions planned;
          planned.shortcut_flops = 0;
          check(dot_general(ctx, a, b, mm, planned).value(), "planned");
          Tensor rows = Tensor::zeros(dt, {z.n, z.m}).value().transpose().value();  // row-major destination
          ASSERT_TRUE(dot_general_into(ctx, a, b, mm, {}, rows));
          check(rows, "into row-major");
          // Whether the call took the shortcut is the threshold's decision alone.
          const DotRoute route = explain_dot_general(ctx, a, b, mm).value();
          EXPECT_EQ(route.kernel == DotKernel::kPlainLoops &&
                        std::string_view(route.reason).find("Tiny matrix shortcut") != std::string_view::npos,
                    z.m * z.k * z.n <= limit && z.k * std::max(z.m, z.n) <= 196);
        }
      }
    }
  }
}

// Bool operands: the boolean semiring, out = (alpha and OR_k lhs and rhs) or (beta and
// out), against the naive count of true terms, for every provider and batch policy that
// takes integers (all run plain loops), any layouts.
TEST(DotGeneral, BooleanSemiringMatchesNaiveCounts) {
  std::mt19937_64 rng(7);
  auto executor = make_tbb_executor(2).value();
  int checked = 0, trues = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Config c = random_config(rng);
    int64_t work = element_count(dot_general_shape(c.lhs_shape, c.rhs_shape, c.dims).value());
    for (int64_t a : c.dims.lhs_contracting) work *= c.lhs_shape[static_cast<size_t>(a)];
    if (work > 20000) continue;  // keeps the naive reference quick
    const Tensor lhs = strided_operand(rng, DType::kBool, c.lhs_shape);
    const Tensor rhs = strided_operand(rng, DType::kBool, c.rhs_shape);
    DotOptions opt;
    opt.provider = static_cast<GemmProvider>(rng() % 4);
    opt.batch_policy = static_cast<BatchPolicy>(rng() % 4);  // all but the vendor batch
    if (opt.provider == GemmProvider::kOpenBlas && opt.batch_policy == BatchPolicy::kOuterParallel) {
      opt.batch_policy = BatchPolicy::kSequential;
    }
    opt.alpha = rng() % 4 == 0 ? 0.0 : 1.0;
    opt.beta = rng() % 2 ? 1.0 : 0.0;
    const Shape out_shape = dot_general_shape(c.lhs_shape, c.rhs_shape, c.dims).value();
    Tensor out = strided_operand(rng, DType::kBool, out_shape);
    const Tensor before = out.clone().value();
    Result<void> status;
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), rng() % 2 ? ParallelMode::kInner : ParallelMode::kSequential, 2);
      status = dot_general_into(ctx, lhs, rhs, c.dims, opt, out);
    });
    ASSERT_TRUE(status.has_value()) << status.error().to_string();
    std::vector<long double> mag;
    const auto count = reference(lhs, rhs, c, false, false, out_shape, &mag);
    int64_t lin = 0;
    for_each_index(out_shape, [&](const Index& oi) {
      const bool any = count[static_cast<size_t>(lin++)].real() != 0;
      const bool want = (opt.alpha.real() != 0 && any) || (opt.beta.real() != 0 && before.get<bool>(oi).value());
      ASSERT_EQ(out.get<bool>(oi).value(), want)
          << "trial " << trial << " lhs " << format_dims(c.lhs_shape) << " rhs " << format_dims(c.rhs_shape) << " at "
          << format_dims(oi);
      trues += want;
      ++checked;
    });
  }
  EXPECT_GT(checked, 2000);
  EXPECT_GT(trues, checked / 5);          // both values occur
  EXPECT_LT(trues, checked - checked / 5);
}

}  // namespace
}  // namespace tenferro::cpu

extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int);

namespace tenferro::cpu {
namespace {

// Note [OpenBLAS threads]: whatever counts the library's OpenBLAS calls need, the
// process's own setting is back once they finished, also after concurrent calls from
// two engines with different budgets.
TEST(DotGeneral, OpenBlasThreadCountIsGivenBack) {
  const int original = openblas_get_num_threads();
  openblas_set_num_threads(3);
  ASSERT_EQ(openblas_get_num_threads(), 3);
  Tensor lhs = Tensor::random_normal(DType::kF64, {64, 48, 4}, 1).value();
  Tensor rhs = Tensor::random_normal(DType::kF64, {48, 40, 4}, 2).value();
  Config c;
  c.lhs_shape = lhs.shape();
  c.rhs_shape = rhs.shape();
  c.dims.lhs_batch = {2};
  c.dims.rhs_batch = {2};
  c.dims.lhs_contracting = {1};
  c.dims.rhs_contracting = {0};
  auto run = [&](int threads, BatchPolicy policy) {
    auto executor = make_tbb_executor(threads).value();
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
      DotOptions opt;
      opt.provider = GemmProvider::kOpenBlas;
      opt.batch_policy = policy;
      auto out = dot_general(ctx, lhs, rhs, c.dims, opt);
      ASSERT_TRUE(out) << out.error().to_string();
      expect_real_product(lhs, rhs, c, *out);
    });
  };
  run(2, BatchPolicy::kSequential);     // one-thread OpenBLAS calls
  EXPECT_EQ(openblas_get_num_threads(), 3);
  run(2, BatchPolicy::kProviderItems);  // OpenBLAS with its own two threads
  EXPECT_EQ(openblas_get_num_threads(), 3);
  std::thread other([&] { run(1, BatchPolicy::kSequential); });  // a second engine at once
  run(2, BatchPolicy::kProviderItems);
  other.join();
  EXPECT_EQ(openblas_get_num_threads(), 3);
  openblas_set_num_threads(original);
}

}  // namespace
}  // namespace tenferro::cpu
