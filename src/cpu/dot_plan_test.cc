// The dot_general planner (Note [dot_general planner]) on tables of capability sets:
// every route is asserted through plan_dot with explicit CpuCaps, so each branch is
// reachable and checked on any machine; no data is computed here (the value tests in
// dot_general_test.cc run every route this machine can run, under each ISA cap).

#include "tenferro/cpu/dot_route.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>

namespace tenferro::cpu {
namespace {

struct Caps {
  IsaLevel isa = IsaLevel::kAvx512;
  bool blis_tuned = true;
  bool openblas_tuned = true;
  bool openblas_avx512 = false;  // OpenBLAS runs 512-bit kernels (SkylakeX core)
};

CpuCaps make_caps(Caps c) {
  CpuCaps caps;
  caps.detected_isa = c.isa;
  caps.built_isa = IsaLevel::kAvx512;
  caps.blis_arch = c.blis_tuned ? "haswell" : "generic";
  caps.blis_tuned = c.blis_tuned;
  caps.openblas_core = c.openblas_avx512 ? "SkylakeX" : c.openblas_tuned ? "Haswell" : "Prescott";
  caps.openblas_tuned = c.openblas_tuned;
  caps.openblas_avx512 = c.openblas_avx512;
  caps.openblas_threaded = true;
  return caps;
}

// A compact column-major layout.
Layout cm(Shape shape) { return Layout::col_major(shape); }
// A compact row-major layout.
Layout rm(Shape shape) {
  Layout l = Layout::col_major(shape);
  int64_t st = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    l.strides[i] = st;
    st *= shape[i];
  }
  return l;
}

DotDims matmul_dims() {
  DotDims d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return d;
}

DotDims batched_dims() {  // [b, m, k] x [b, k, n]
  DotDims d;
  d.lhs_batch = {0};
  d.rhs_batch = {0};
  d.lhs_contracting = {2};
  d.rhs_contracting = {1};
  return d;
}

struct Call {
  DType dtype = DType::kF64;
  Layout lhs, rhs;
  DotDims dims = matmul_dims();
  DotOptions options;
  int threads = 1;
  bool strict = false;  // strict placement
  std::optional<Layout> out;  // the destination's layout (default: the result layout)
};

Result<DotRoute> plan(const Call& c, Caps caps) {
  const Shape shape = dot_general_shape(c.lhs.shape, c.rhs.shape, c.dims).value();
  const Layout out = c.out ? *c.out : dot_general_result_layout(shape, c.dims.lhs_batch.size());
  TENFERRO_TRY(DotProblem p, dot_problem(c.dtype, c.lhs, c.rhs, out, c.dims, c.options));
  BatchSettings bs;
  if (c.options.batch_policy) bs.policy = *c.options.batch_policy;
  bs.provider = c.options.provider;
  bs.strict_placement = c.strict;
  return plan_dot(p, make_caps(caps), DotSettings{bs, c.threads});
}

Call matmul(int64_t m, int64_t n, int64_t k, int threads = 1, DType dtype = DType::kF64) {
  Call c;
  c.dtype = dtype;
  c.lhs = cm({m, k});
  c.rhs = cm({k, n});
  c.threads = threads;
  return c;
}

constexpr Caps kAvx512{IsaLevel::kAvx512, true, true};
constexpr Caps kAvx2{IsaLevel::kAvx2, true, true};
constexpr Caps kScalar{IsaLevel::kScalar, true, true};
constexpr Caps kUntunedBlis{IsaLevel::kAvx512, false, true};
constexpr Caps kUntunedOpenBlas{IsaLevel::kAvx2, true, false};

TEST(DotPlan, LargeF64ProductsFollowTheIsaAndTheTunedLibrary) {
  const Call c = matmul(2048, 2048, 2048);
  struct Row {
    Caps caps;
    DotKernel kernel;
    GemmProvider provider;
  };
  for (const Row& r : {Row{kAvx512, DotKernel::kBlocked, GemmProvider::kOpenBlas},
                       Row{kAvx2, DotKernel::kOpenBlas, GemmProvider::kOpenBlas},
                       Row{kScalar, DotKernel::kOpenBlas, GemmProvider::kOpenBlas},
                       Row{kUntunedBlis, DotKernel::kBlocked, GemmProvider::kOpenBlas},
                       Row{kUntunedOpenBlas, DotKernel::kBlis, GemmProvider::kBlis}}) {
    const DotRoute route = plan(c, r.caps).value();
    SCOPED_TRACE(describe(route));
    EXPECT_EQ(route.kernel, r.kernel);
    EXPECT_EQ(route.provider, r.provider);
    EXPECT_EQ(route.policy, BatchPolicy::kProviderItems);
    EXPECT_EQ(route.split, DotSplit::kNone);
    EXPECT_EQ(route.threads, 1);
    EXPECT_FALSE(route.pack_lhs || route.pack_rhs || route.pack_out);
    EXPECT_NE(std::string(route.reason), "");
  }
  // The complex product the issue measured: an untuned OpenBLAS hands it to BLIS.
  const Call z = matmul(512, 512, 512, 1, DType::kC128);
  EXPECT_EQ(plan(z, kUntunedOpenBlas).value().kernel, DotKernel::kBlis);
  EXPECT_EQ(plan(z, kAvx2).value().kernel, DotKernel::kOpenBlas);
}

// Note [Blocked thresholds]: a C of at most a quarter of a register block's rows (f64 6,
// f32 12; C^T's rows for a row-major C) from a contraction of at most 4 keeps OpenBLAS
// (f64 where B exceeds L2); more rows or a longer contraction take the blocked kernel.
// Such products with a small A of two rows or more take the narrow kernel first (Note
// [Narrow thresholds]); the rule still decides for a single row.
TEST(DotPlan, FewRowsFromAShortContractionKeepOpenBlas) {
  struct Row {
    int64_t m, n, k;
    DType dtype;
    DotKernel kernel;
  };
  for (const Row& r :
       {Row{1, 524288, 2, DType::kF32, DotKernel::kOpenBlas}, Row{1, 262144, 4, DType::kF64, DotKernel::kOpenBlas},
        Row{1, 131072, 5, DType::kF64, DotKernel::kBlocked}, Row{1, 1024, 4, DType::kF32, DotKernel::kOpenBlas}}) {
    const DotRoute route = plan(matmul(r.m, r.n, r.k, 1, r.dtype), kAvx512).value();
    SCOPED_TRACE(std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k) + " " +
                 std::string(dtype_name(r.dtype)) + ": " + describe(route));
    EXPECT_EQ(route.kernel, r.kernel);
    if (route.kernel == DotKernel::kOpenBlas) {
      EXPECT_NE(std::string(route.reason).find("Blocked thresholds"), std::string::npos);
    }
  }
  // A row-major C: the kernel's rows are C^T's, the long side.
  for (const DType d : {DType::kF32, DType::kF64}) {
    Call t = matmul(2, 524288, 2, 1, d);
    t.out = rm({2, 524288});
    EXPECT_EQ(plan(t, kAvx512).value().kernel, DotKernel::kBlocked) << describe(plan(t, kAvx512).value());
  }
}

// Note [Narrow thresholds]: a real A of at most one vector of rows (two for f32, and for
// f64 below 8 rows) with a contraction of at most 8 (4 over two vectors) against at
// least 16 columns, C's rows contiguous, takes the narrow kernel with B at any strides;
// C^T = B^T A^T for a small B against a row-major C. Per ISA: AVX-512 vectors hold 8 f64
// / 16 f32, AVX2 4 / 8; below AVX2 the providers keep the products; with OpenBLAS's
// 512-bit kernels only a B beyond L2.
TEST(DotPlan, NarrowKernelTakesASmallAAgainstManyColumns) {
  constexpr Caps kOpenBlas512{IsaLevel::kAvx512, true, true, true};
  struct Row {
    int64_t m, n, k;
    DType dtype;
    Caps caps;
    bool narrow;
  };
  for (const Row& r :
       {Row{3, 1000000, 3, DType::kF64, kAvx512, true}, Row{3, 1000000, 3, DType::kF64, kAvx2, true},
        Row{3, 1000000, 3, DType::kF64, kScalar, false}, Row{8, 65536, 8, DType::kF64, kAvx512, true},
        Row{8, 65536, 4, DType::kF64, kAvx2, false},     // two vectors, 8 rows: the wide kernel
        Row{6, 65536, 4, DType::kF64, kAvx2, true},      // two vectors below 8 rows
        Row{6, 65536, 5, DType::kF64, kAvx2, false},     // two vectors hold 4 steps
        Row{12, 65536, 2, DType::kF64, kAvx512, false},  // f64 over two vectors from 8 rows
        Row{32, 65536, 4, DType::kF32, kAvx512, true},   // f32 over two vectors
        Row{32, 65536, 4, DType::kF32, kAvx2, false},    // four vectors
        Row{16, 65536, 8, DType::kF32, kAvx512, true}, Row{20, 65536, 5, DType::kF32, kAvx512, false},
        Row{3, 65536, 9, DType::kF64, kAvx512, false},   // the contraction past 8
        Row{3, 15, 8, DType::kF64, kAvx512, false},      // fewer than 16 columns
        Row{1, 65536, 3, DType::kF64, kAvx512, false},   // one row
        Row{3, 65536, 3, DType::kC128, kAvx512, false},  // complex: the complex-short kernel's
        Row{3, 65536, 3, DType::kF64, kUntunedOpenBlas, true},
        // OpenBLAS with 512-bit kernels: only B beyond L2 (512 KiB assumed).
        Row{3, 65536, 3, DType::kF64, kOpenBlas512, true}, Row{3, 4096, 3, DType::kF64, kOpenBlas512, false},
        Row{4, 16384, 4, DType::kF32, kOpenBlas512, false}, Row{4, 65536, 4, DType::kF32, kOpenBlas512, true}}) {
    for (const bool b_rows : {false, true}) {
      Call c = matmul(r.m, r.n, r.k, 1, r.dtype);
      if (b_rows) c.rhs = rm({r.k, r.n});
      const DotRoute route = plan(c, r.caps).value();
      SCOPED_TRACE(std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k) + " " +
                   std::string(dtype_name(r.dtype)) + " isa " + std::string(isa_name(r.caps.isa)) + " B rows " +
                   std::to_string(b_rows) + ": " + describe(route));
      EXPECT_EQ(route.kernel == DotKernel::kNarrow, r.narrow);
      if (r.narrow) {
        EXPECT_FALSE(route.transposed || route.pack_lhs || route.pack_rhs || route.pack_out);
        EXPECT_EQ(route.provider, GemmProvider::kNaive);
        EXPECT_NE(std::string(route.reason).find("Narrow products"), std::string::npos);
      }
    }
  }
  // C^T = B^T A^T: a long A with its contraction contiguous against a small B, C
  // row-major ('nj,ji->ni' on numpy arrays); a column-major C there is not narrow.
  Call t;
  t.lhs = rm({65536, 3});
  t.rhs = cm({3, 3});
  t.out = rm({65536, 3});
  DotRoute route = plan(t, kAvx512).value();
  EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
  EXPECT_TRUE(route.transposed) << describe(route);
  t.out = cm({65536, 3});
  EXPECT_NE(plan(t, kAvx512).value().kernel, DotKernel::kNarrow);
  // Groups that do not merge are packed: 'ik,kab->iab' with B [k, a, b] row-major (B
  // [k, n] with its columns contiguous), and the transposed form's operands ('ikl,klj->ij'
  // with a contraction that merges in one of them: the other packed; a long A as [k, m]).
  for (const auto& [m, k, dtype] :
       {std::tuple{int64_t{2}, int64_t{2}, DType::kF32}, std::tuple{int64_t{6}, int64_t{5}, DType::kF64}}) {
    Call c;
    c.dtype = dtype;
    c.lhs = cm({m, k});
    c.rhs = rm({k, 512, 512});
    route = plan(c, kAvx512).value();
    EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
    EXPECT_TRUE(route.pack_rhs && !route.rhs_n_first && !route.pack_lhs && !route.transposed) << describe(route);
  }
  Call ta;
  ta.lhs = Layout{{4096, 2, 2}, {4, 2, 1}, 0};  // the contraction (2, 2) does not merge
  ta.rhs = cm({2, 2, 3});
  ta.dims.lhs_contracting = {1, 2};
  ta.dims.rhs_contracting = {0, 1};
  ta.out = rm({4096, 3});
  route = plan(ta, kAvx512).value();
  EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
  // (The planner orders the contraction so that one operand merges: the other is packed.)
  EXPECT_TRUE(route.transposed && route.pack_lhs != route.pack_rhs) << describe(route);
  EXPECT_EQ(route.lhs_k_first, route.pack_lhs) << describe(route);
  // A forced provider keeps the product.
  Call forced = matmul(3, 1000000, 3);
  forced.options.provider = GemmProvider::kOpenBlas;
  EXPECT_EQ(plan(forced, kAvx512).value().kernel, DotKernel::kOpenBlas);
  // Two threads: pieces of the kernel's columns, from 16 per worker.
  Call two = matmul(3, 1000000, 3, 2);
  route = plan(two, kAvx512).value();
  EXPECT_EQ(route.kernel, DotKernel::kNarrow) << describe(route);
  EXPECT_EQ(route.split, DotSplit::kPieces) << describe(route);
  EXPECT_TRUE(route.split_columns);
  EXPECT_EQ(route.threads, 2);
  t.threads = 2;
  t.out = rm({65536, 3});
  route = plan(t, kAvx512).value();
  EXPECT_EQ(route.split, DotSplit::kPieces) << describe(route);
  EXPECT_TRUE(route.transposed && route.split_columns) << describe(route);
}

// Note [Planar complex thresholds], Note [Short complex thresholds]: complex products
// take the blocked kernel's planar copies only from 32-step contractions, 64-element
// sides and 2^31 multiply-adds; below, the short complex kernel where A and C are
// column-major with columns of at least 256 bytes or an A that fits in registers (where
// OpenBLAS runs 256-bit kernels
// or none is tuned; at AVX2 contractions of at most 16), else the provider (OpenBLAS, or the blocked kernel where
// OpenBLAS is untuned). Short sides of 8 or more here: fewer go to the matrix-vector kernel. Real products are
// unaffected.
TEST(DotPlan, ComplexProductsTakeTheShortKernelOrThePlanarCopiesBySize) {
  struct Row {
    int64_t m, n, k;
    DType dtype;
    Caps caps;
    DotKernel kernel;
  };
  constexpr Caps kNoTunedLibrary{IsaLevel::kAvx512, false, false};
  constexpr Caps kZen4{IsaLevel::kAvx512, true, true, true};
  for (const Row& r : {Row{16384, 8, 4, DType::kC128, kAvx512, DotKernel::kComplexShort},
                       Row{2048, 2048, 8, DType::kC128, kAvx512, DotKernel::kComplexShort},
                       Row{1024, 1024, 32, DType::kC64, kAvx512, DotKernel::kComplexShort},
                       Row{512, 512, 512, DType::kC128, kAvx512, DotKernel::kComplexShort},
                       Row{1024, 1024, 1024, DType::kC128, kAvx512, DotKernel::kComplexShort},
                       Row{2048, 1024, 1024, DType::kC128, kAvx512, DotKernel::kBlocked},
                       Row{2048, 1024, 1024, DType::kC128, kZen4, DotKernel::kOpenBlas},
                       Row{16384, 8, 4, DType::kC128, kZen4, DotKernel::kOpenBlas},
                       Row{16384, 8, 4, DType::kC128, kAvx2, DotKernel::kComplexShort},
                       Row{16384, 8, 16, DType::kC64, kAvx2, DotKernel::kComplexShort},
                       Row{16384, 8, 17, DType::kC64, kAvx2, DotKernel::kOpenBlas},
                       Row{16384, 8, 17, DType::kC64, kAvx512, DotKernel::kComplexShort},
                       Row{16384, 8, 4, DType::kC128, kScalar, DotKernel::kOpenBlas},
                       Row{16384, 8, 4, DType::kC64, kNoTunedLibrary, DotKernel::kComplexShort},
                       Row{16, 16384, 4, DType::kC128, kAvx512, DotKernel::kComplexShort},
                       Row{12, 16384, 4, DType::kC128, kAvx512, DotKernel::kOpenBlas},
                       Row{8, 16384, 4, DType::kC128, kAvx512, DotKernel::kComplexShort},  // A in registers
                       Row{8, 16384, 5, DType::kC128, kAvx512, DotKernel::kOpenBlas},
                       Row{6, 16384, 4, DType::kC128, kAvx512, DotKernel::kComplexShort},
                       Row{6, 16384, 4, DType::kC64, kAvx2, DotKernel::kComplexShort},  // two AVX2 vectors
                       Row{6, 16384, 5, DType::kC64, kAvx2, DotKernel::kOpenBlas},
                       Row{6, 16384, 4, DType::kC128, kAvx2, DotKernel::kOpenBlas},  // three AVX2 vectors
                       Row{24, 16384, 4, DType::kC64, kAvx512, DotKernel::kOpenBlas},
                       Row{16, 16384, 4, DType::kC64, kAvx512, DotKernel::kComplexShort},
                       Row{12, 16384, 4, DType::kC128, kNoTunedLibrary, DotKernel::kBlocked},
                       Row{2048, 2048, 8, DType::kF32, kAvx512, DotKernel::kBlocked}}) {
    const DotRoute route = plan(matmul(r.m, r.n, r.k, 1, r.dtype), r.caps).value();
    SCOPED_TRACE(std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k) + " " +
                 std::string(dtype_name(r.dtype)) + ": " + describe(route));
    EXPECT_EQ(route.kernel, r.kernel);
    if (route.kernel == DotKernel::kOpenBlas && r.caps.isa == IsaLevel::kAvx512 && !r.caps.openblas_avx512) {
      EXPECT_NE(std::string(route.reason).find("Planar complex thresholds"), std::string::npos);
    }
  }
  // A row-major A (rows not contiguous): C^T = B^T A^T with B^T in registers where it
  // fits them (Note [Narrow complex products]: 8 c128 rows and 4 steps at AVX-512),
  // else the providers.
  Call rows = matmul(16384, 8, 4, 1, DType::kC128);
  rows.lhs = rm({16384, 4});
  const DotRoute narrow_t = plan(rows, kAvx512).value();
  EXPECT_EQ(narrow_t.kernel, DotKernel::kComplexShort) << describe(narrow_t);
  EXPECT_TRUE(narrow_t.transposed);
  EXPECT_FALSE(narrow_t.pack_lhs || narrow_t.pack_out) << describe(narrow_t);
  EXPECT_EQ(plan(rows, kAvx2).value().kernel, DotKernel::kOpenBlas);  // 8 c128 rows: four AVX2 vectors
  rows = matmul(16384, 8, 5, 1, DType::kC128);
  rows.lhs = rm({16384, 5});
  EXPECT_EQ(plan(rows, kAvx512).value().kernel, DotKernel::kOpenBlas);
  // A small row-major A (a gate against a long B) is packed column-major for the kernel.
  Call gate = matmul(4, 16384, 4, 1, DType::kC128);
  gate.lhs = rm({4, 4});
  const DotRoute packed_gate = plan(gate, kAvx512).value();
  EXPECT_EQ(packed_gate.kernel, DotKernel::kComplexShort) << describe(packed_gate);
  EXPECT_TRUE(packed_gate.pack_lhs && !packed_gate.lhs_k_first) << describe(packed_gate);
  EXPECT_FALSE(packed_gate.transposed);
  // Two threads: pieces of rows, or of columns when the rows are few.
  DotRoute two = plan(matmul(16384, 8, 4, 2, DType::kC128), kAvx512).value();
  EXPECT_EQ(two.kernel, DotKernel::kComplexShort);
  EXPECT_EQ(two.split, DotSplit::kPieces);
  EXPECT_FALSE(two.split_columns);
  EXPECT_EQ(two.threads, 2);
  two = plan(matmul(64, 16384, 8, 2, DType::kC128), kAvx512).value();
  EXPECT_EQ(two.kernel, DotKernel::kComplexShort);
  EXPECT_TRUE(two.split_columns);
  // A row-major C: C^T = B^T A^T, B packed [n, k] unless its rows are contiguous, A as
  // it is (rows or contraction contiguous); pieces along C^T's rows or columns.
  for (const bool b_rows : {true, false}) {
    for (const bool a_rows : {true, false}) {
      Call t = matmul(16384, 2, 2, 1, DType::kC128);
      if (a_rows) t.lhs = rm({16384, 2});
      if (b_rows) t.rhs = rm({2, 2});
      t.out = rm({16384, 2});
      const DotRoute r = plan(t, kAvx512).value();
      SCOPED_TRACE(describe(r));
      EXPECT_EQ(r.kernel, DotKernel::kComplexShort);
      EXPECT_TRUE(r.transposed);
      EXPECT_EQ(r.pack_rhs, !b_rows);
      EXPECT_TRUE(r.rhs_n_first || !r.pack_rhs);
      EXPECT_FALSE(r.pack_lhs || r.pack_out);
      EXPECT_NE(std::string(r.reason).find("C^T = B^T A^T"), std::string::npos);
      EXPECT_EQ(plan(t, kZen4).value().kernel, DotKernel::kOpenBlas);  // 512-bit OpenBLAS: unmeasured
      if (!a_rows) continue;  // (A's columns contiguous beyond L2: the matrix-vector kernel takes it)
      Call t2 = matmul(262144, 2, 2, 2, DType::kC128);
      t2.lhs = rm({262144, 2});
      t2.rhs = t.rhs;
      t2.out = rm({262144, 2});
      const DotRoute r2 = plan(t2, kAvx512).value();
      EXPECT_EQ(r2.kernel, DotKernel::kComplexShort);
      EXPECT_EQ(r2.split, DotSplit::kPieces);
      EXPECT_TRUE(r2.split_columns);  // C^T has 2 rows: pieces of its columns
    }
  }
  // A column-major C keeps the plain form; a C neither row- nor column-major is packed.
  EXPECT_FALSE(plan(matmul(16384, 2, 2, 1, DType::kC128), kAvx512).value().transposed);
}

TEST(DotPlan, SeveralThreadsSplitTheLongerSideOrColumns) {
  // Square: one-thread OpenBLAS pieces taken by the engine's workers (Note [OpenBLAS pieces]).
  DotRoute r = plan(matmul(2048, 2048, 2048, 2), kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kOpenBlas);
  EXPECT_EQ(r.split, DotSplit::kPieces);
  EXPECT_EQ(r.pieces, 4);  // 2048 / 512, between 2 and 8
  EXPECT_EQ(r.threads, 2);
  // Blocked pieces of 128 rows or columns, at most four per worker.
  r = plan(matmul(2048, 2048, 2048, 2), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kBlocked);
  EXPECT_EQ(r.pieces, 8);
  // Long sides against a short contraction: one BLIS call per worker (Note [Column-split products]).
  r = plan(matmul(2048, 2048, 64, 2), kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kBlis);
  EXPECT_EQ(r.split, DotSplit::kPieces);
  EXPECT_EQ(r.pieces, 2);
  // ... but not with an untuned BLIS.
  EXPECT_EQ(plan(matmul(2048, 2048, 64, 2), kUntunedBlis).value().provider, GemmProvider::kOpenBlas);
  // Nor, where OpenBLAS runs 512-bit kernels, with a contraction below 256 and both sides
  // at least 256 (BLIS's kernel slower there): OpenBLAS pieces, two per worker at most
  // four, a whole number per worker.
  const Caps wide{IsaLevel::kAvx512, true, true, true};
  r = plan(matmul(512, 8192, 128, 2), wide).value();
  EXPECT_EQ(r.kernel, DotKernel::kOpenBlas) << describe(r);
  EXPECT_EQ(r.split, DotSplit::kPieces);
  EXPECT_EQ(r.pieces, 8);  // 8192 / 512 = 16, at most 4 per worker
  EXPECT_EQ(plan(matmul(512, 8192, 128, 2), kAvx2).value().kernel, DotKernel::kBlis);  // 256-bit OpenBLAS
  EXPECT_EQ(plan(matmul(512, 8192, 256, 2), wide).value().kernel, DotKernel::kBlis);   // K = 256: alike
  EXPECT_EQ(plan(matmul(4, 8192, 128, 2), wide).value().kernel, DotKernel::kMatVec);   // a few vectors
  EXPECT_EQ(plan(matmul(12, 8192, 128, 2, DType::kF32), wide).value().kernel, DotKernel::kBlis);  // a short side
  // OpenBLAS pieces are blocks of C's outer side (columns of a column-major C, rows of a
  // row-major one) when every worker gets at least 256 of it, else of the longer side;
  // an output computed in a scratch is column-major (Note [OpenBLAS pieces]).
  struct SideRow {
    int64_t m, n;
    Layout out;
    bool columns;
    int64_t pieces;
  };
  const Layout padded_rows{Shape{2048, 1024}, Strides{2 * 1024, 2}, 0};  // no BLAS form: a scratch
  for (const SideRow& s :
       {SideRow{2048, 2048, cm({2048, 2048}), true, 4}, SideRow{2048, 2048, rm({2048, 2048}), false, 4},
        SideRow{3000, 1000, cm({3000, 1000}), true, 2}, SideRow{1000, 3000, rm({1000, 3000}), false, 2},
        SideRow{3000, 1000, rm({3000, 1000}), false, 4}, SideRow{20000, 512, cm({20000, 512}), true, 2},
        SideRow{20000, 511, cm({20000, 511}), false, 8}, SideRow{511, 20000, rm({511, 20000}), true, 8},
        SideRow{2048, 1024, padded_rows, true, 2}}) {
    Call c = matmul(s.m, s.n, 6000, 2);  // no column-split BLIS (Note [Column-split products])
    c.out = s.out;
    r = plan(c, kAvx2).value();
    SCOPED_TRACE(describe(r));
    EXPECT_EQ(r.kernel, DotKernel::kOpenBlas);
    EXPECT_EQ(r.split, DotSplit::kPieces);
    EXPECT_EQ(r.split_columns, s.columns);
    EXPECT_EQ(r.pieces, s.pieces);
    EXPECT_EQ(r.pack_out, s.out.strides[1] == 2);
    EXPECT_NE(describe(r).find(s.columns ? "of columns" : "of rows"), std::string::npos);
    c.threads = 3;  // 256 per worker: 3000 x 1000 keeps its columns, 20000 x 512 its rows
    if (s.m == 3000 && s.out.strides[0] == 1) {
      EXPECT_TRUE(plan(c, kAvx2).value().split_columns);
    }
    if (s.n == 512) {
      EXPECT_FALSE(plan(c, kAvx2).value().split_columns);
    }
  }
  // 1728 x 1100: 3 pieces of 512 would leave one worker two; a whole number per worker.
  r = plan(matmul(1728, 1100, 144, 2), wide).value();
  EXPECT_EQ(r.kernel, DotKernel::kOpenBlas) << describe(r);
  EXPECT_EQ(r.pieces, 2);
  r = plan(matmul(1728, 1100, 144, 3), wide).value();
  EXPECT_EQ(r.pieces, 3);
  // A small output with a long contraction: split-K BLIS (Note [Split-K products]).
  r = plan(matmul(19, 19, 23000, 2), kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kBlis) << describe(r);
  EXPECT_EQ(r.split, DotSplit::kSplitK);
  EXPECT_EQ(r.pieces, 2);
  // Below parallel_min_flops a product keeps one thread.
  r = plan(matmul(64, 64, 64, 2), kScalar).value();
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.split, DotSplit::kNone);
  // A product forced to provider openblas runs on OpenBLAS's own threads.
  Call forced = matmul(2048, 2048, 2048, 2);
  forced.options.provider = GemmProvider::kOpenBlas;
  r = plan(forced, kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kOpenBlas);
  EXPECT_EQ(r.split, DotSplit::kProviderThreads);
  // ... which strict placement refuses (the engine cannot place those threads).
  forced.strict = true;
  EXPECT_EQ(plan(forced, kAvx512).error().code(), ErrorCode::kUnsupported);
  forced.threads = 1;
  EXPECT_EQ(plan(forced, kAvx512).value().split, DotSplit::kNone);  // one thread: the caller's
}

// Note [Streamed tall products]: the tall side may be either operand, and C either
// column- or row-major (the kernel writes C's rows at any stride); a C strided both ways
// is not streamed.
TEST(DotPlan, StreamedProductsTakeEitherDestinationOrder) {
  struct Row {
    const char* what;
    int64_t m, n;
    bool row_major_out, transposed;
  };
  for (const Row& row : {Row{"tall lhs, C column-major", 5000, 16, false, false},
                         Row{"tall lhs, C row-major", 5000, 16, true, false},
                         Row{"tall rhs, C column-major", 16, 5000, false, true},
                         Row{"tall rhs, C row-major", 16, 5000, true, true}}) {
    SCOPED_TRACE(row.what);
    Call c = matmul(row.m, row.n, 200);
    if (row.row_major_out) c.out = rm({row.m, row.n});
    for (const Caps caps : {kAvx2, kAvx512}) {
      const DotRoute r = plan(c, caps).value();
      EXPECT_EQ(r.kernel, DotKernel::kStreamed) << describe(r);
      EXPECT_EQ(r.transposed, row.transposed) << describe(r);
      EXPECT_FALSE(r.pack_out) << describe(r);
    }
  }
  Call strided = matmul(5000, 16, 200);
  Layout out = cm({5000, 16});
  out.strides[0] = 2;
  out.strides[1] = 2 * 5000;
  strided.out = out;
  EXPECT_NE(plan(strided, kAvx512).value().kernel, DotKernel::kStreamed);
}

// Note [Streamed row-major products]: a tall side whose contraction is contiguous (the
// lhs row-major, or the rhs column-major in the transposed form) keeps C's rows in
// registers on AVX-512 only, and the route's reason says so; a column-major tall side
// does not.
TEST(DotPlan, StreamedRowMajorTallSidesSayCRowsInRegisters) {
  const std::string kRows = "C's rows in registers";
  Call lhs_rows = matmul(5000, 16, 200);
  lhs_rows.lhs = rm({5000, 200});
  Call rhs_cols = matmul(16, 5000, 200);  // C^T = B^T A^T: the tall rhs [200, 5000], column-major
  Call col_major = matmul(5000, 16, 200);
  struct Row {
    const char* what;
    Call call;
    bool rows;
  };
  for (const Row& row : {Row{"row-major tall lhs", lhs_rows, true}, Row{"column-major tall rhs", rhs_cols, true},
                         Row{"column-major tall lhs", col_major, false}}) {
    SCOPED_TRACE(row.what);
    const DotRoute r512 = plan(row.call, kAvx512).value();
    ASSERT_EQ(r512.kernel, DotKernel::kStreamed) << describe(r512);
    EXPECT_EQ(std::string(r512.reason).find(kRows) != std::string::npos, row.rows) << describe(r512);
    const DotRoute r2 = plan(row.call, kAvx2).value();
    ASSERT_EQ(r2.kernel, DotKernel::kStreamed) << describe(r2);
    EXPECT_EQ(std::string(r2.reason).find(kRows), std::string::npos) << describe(r2);
  }
}

TEST(DotPlan, TenferroKernelsNeedAvx2) {
  struct Row {
    const char* what;
    Call call;
    DotKernel with_avx2;
  };
  Call thin = matmul(4000, 8, 16);
  thin.lhs = rm({4000, 16});  // A's contraction contiguous
  Call out = matmul(40, 104900, 33, 2);
  Call stream = matmul(5000, 16, 200);
  for (const Row& row : {Row{"small", matmul(16, 16, 16), DotKernel::kSmall},
                         Row{"thin", thin, DotKernel::kThin},
                         Row{"wide", matmul(200, 3000, 16), DotKernel::kWide},
                         Row{"streamed", stream, DotKernel::kStreamed},
                         Row{"streamed output", out, DotKernel::kStreamedOutput}}) {
    SCOPED_TRACE(row.what);
    for (const Caps caps : {kAvx2, kAvx512}) {
      const DotRoute r = plan(row.call, caps).value();
      EXPECT_EQ(r.kernel, row.with_avx2) << describe(r);
      EXPECT_EQ(r.provider, GemmProvider::kNaive);
    }
    // Without the vector kernels the providers' own kernels serve.
    const DotRoute r = plan(row.call, kScalar).value();
    EXPECT_TRUE(r.kernel == DotKernel::kOpenBlas || r.kernel == DotKernel::kBlis) << describe(r);
  }
  // The streamed-output kernel needs several workers and a destination that is not read.
  EXPECT_NE(plan(matmul(40, 104900, 33, 1), kAvx2).value().kernel, DotKernel::kStreamedOutput);
  Call read = out;
  read.options.beta = 1.0;
  EXPECT_NE(plan(read, kAvx2).value().kernel, DotKernel::kStreamedOutput);
  // A row-major A is packed column-major for the streamed-output kernel.
  Call packed = out;
  packed.lhs = rm({40, 33});
  const DotRoute r = plan(packed, kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kStreamedOutput);
  EXPECT_TRUE(r.pack_lhs);
  EXPECT_FALSE(r.lhs_k_first);
}

TEST(DotPlan, ShortSidesWalkAStridedContraction) {
  // L [l, r, s] against T [c, s, l], contracting (l, s): T's contraction does not merge.
  Call c;
  c.lhs = cm({19, 19, 40});
  c.rhs = cm({19, 40, 19});
  c.dims.lhs_contracting = {0, 2};
  c.dims.rhs_contracting = {2, 1};
  DotRoute r = plan(c, kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kShortSides) << describe(r);
  EXPECT_FALSE(r.pack_lhs || r.pack_rhs);
  r = plan(c, kScalar).value();
  EXPECT_NE(r.kernel, DotKernel::kShortSides);
  EXPECT_TRUE(r.pack_lhs || r.pack_rhs) << describe(r);
}

// Note [Short-side products]: fewer than 8 rows of a column-major C with rows past L2
// go to BLIS (f64; B read in place), on one thread and split over several; the mirrored
// shape (few columns), short rows, another dtype or an untuned BLIS stay on OpenBLAS.
// Note [Few-vector products]: 2 to 7 rows (columns) of C against a long side whose
// operand lies beyond L2 and is contiguous along its rows or columns: the matrix-vector
// kernel, transposed when the long operand is the rhs; complex up to 4 (with the
// columns contiguous only 2 below AVX-512). Where the
// kernel is not available (below AVX2), OpenBLAS.
TEST(DotPlan, FewVectorsTakeTheMatrixVectorKernel) {
  for (const int64_t m : {2, 4, 7}) {
    DotRoute r = plan(matmul(m, 32768, 256), kAvx512).value();
    EXPECT_EQ(r.kernel, DotKernel::kMatVec) << m << ": " << describe(r);
    EXPECT_TRUE(r.transposed);
    EXPECT_NE(describe(r).find("Few-vector"), std::string::npos);
    r = plan(matmul(32768, m, 256), kAvx2).value();  // the long operand is the lhs
    EXPECT_EQ(r.kernel, DotKernel::kMatVec) << m << ": " << describe(r);
    EXPECT_FALSE(r.transposed);
    EXPECT_EQ(plan(matmul(m, 32768, 256), kScalar).value().kernel, DotKernel::kOpenBlas) << m;  // no vector kernels
  }
  EXPECT_NE(plan(matmul(8, 32768, 256), kAvx512).value().kernel, DotKernel::kMatVec);  // 8 vectors
  Call row_major_b = matmul(4, 8192, 256);
  row_major_b.rhs = rm({256, 8192});
  EXPECT_EQ(plan(row_major_b, kAvx512).value().kernel, DotKernel::kMatVec);
  const DotRoute two = plan(matmul(4, 32768, 256, 2), kAvx512).value();
  EXPECT_EQ(two.kernel, DotKernel::kMatVec);
  EXPECT_EQ(two.split, DotSplit::kPieces);
  EXPECT_EQ(two.threads, 2) << describe(two);
  // A in L2 (512 KiB assumed): not taken (OpenBLAS's GEMM as fast there).
  EXPECT_NE(plan(matmul(4, 128, 256), kAvx512).value().kernel, DotKernel::kMatVec);
  EXPECT_EQ(plan(matmul(4, 512, 256), kAvx512).value().kernel, DotKernel::kMatVec);  // 1 MiB
  // ... but one vector always (Note [Matrix-vector thresholds]).
  EXPECT_EQ(plan(matmul(1, 128, 256), kAvx512).value().kernel, DotKernel::kMatVec);
  // Both sides short: not the kernel.
  EXPECT_NE(plan(matmul(4, 32, 100000), kAvx512).value().kernel, DotKernel::kMatVec);
  EXPECT_EQ(plan(matmul(4, 32768, 256, 1, DType::kF32), kAvx512).value().kernel, DotKernel::kMatVec);
  // Complex: up to 4 vectors in the row form (the long operand contiguous along the
  // contraction), in the column form 4 at AVX-512 and 2 below.
  for (const DType d : {DType::kC128, DType::kC64}) {
    for (const int64_t m : {2, 3, 4})
      EXPECT_EQ(plan(matmul(m, 32768, 256, 1, d), kAvx2).value().kernel, DotKernel::kMatVec) << m;
    EXPECT_NE(plan(matmul(5, 32768, 256, 1, d), kAvx512).value().kernel, DotKernel::kMatVec);
    for (const int64_t m : {2, 3, 4, 5}) {
      Call columns = matmul(m, 32768, 256, 1, d);
      columns.rhs = rm({256, 32768});
      EXPECT_EQ(plan(columns, kAvx512).value().kernel == DotKernel::kMatVec, m <= 4) << m;
      EXPECT_EQ(plan(columns, kAvx2).value().kernel == DotKernel::kMatVec, m == 2) << m;
    }
  }
  // ... except against A's columns with a contraction of at most 16, where the short
  // complex kernel takes them (a gate on a state's slowest axis): at AVX-512 and AVX2,
  // not where OpenBLAS runs 512-bit kernels (the short kernel is not chosen there), nor
  // a longer contraction; with A's rows contiguous the matrix-vector kernel's row form
  // from a contraction of 8, below it the short kernel on C^T = B^T A^T (B^T in registers).
  for (const DType d : {DType::kC128, DType::kC64}) {
    for (const int64_t k : {2, 8, 16}) {
      for (const int64_t n : {2, 4}) {
        const int64_t m = 524288 / k;
        const DotRoute r = plan(matmul(m, n, k, 1, d), kAvx512).value();
        EXPECT_EQ(r.kernel, DotKernel::kComplexShort) << m << "x" << n << "x" << k << ": " << describe(r);
        EXPECT_FALSE(r.pack_lhs || r.pack_rhs || r.pack_out) << describe(r);
        EXPECT_EQ(plan(matmul(m, n, k, 1, d), kAvx2).value().kernel, DotKernel::kComplexShort) << m << "x" << n;
        EXPECT_EQ(plan(matmul(m, n, k, 1, d), Caps{IsaLevel::kAvx512, true, true, true}).value().kernel,
                  DotKernel::kMatVec)
            << m << "x" << n << "x" << k;
        Call rows = matmul(m, n, k, 1, d);
        rows.lhs = rm({m, k});
        const DotRoute rr = plan(rows, kAvx512).value();
        // From a contraction of 8 the matrix-vector kernel's row form comes first.
        EXPECT_EQ(rr.kernel, k < 8 ? DotKernel::kComplexShort : DotKernel::kMatVec)
            << m << "x" << n << "x" << k << ": " << describe(rr);
        EXPECT_EQ(rr.transposed, k < 8) << describe(rr);  // B^T in registers (Note [Narrow complex products])
      }
    }
    EXPECT_EQ(plan(matmul(16384, 2, 32, 1, d), kAvx512).value().kernel, DotKernel::kMatVec);
    EXPECT_EQ(plan(matmul(524288, 2, 2, 2, d), kAvx512).value().threads, 2);
  }
  Call row_major_c = matmul(4, 32768, 256);
  row_major_c.out = rm({4, 32768});
  EXPECT_EQ(plan(row_major_c, kAvx512).value().kernel, DotKernel::kMatVec);
  // An operand contiguous along neither side is packed for a GEMM instead.
  Call strided = matmul(4, 32768, 256);
  strided.rhs = Layout{Shape{256, 32768}, Strides{2, 512}, 0};
  EXPECT_NE(plan(strided, kAvx512).value().kernel, DotKernel::kMatVec);
}

// Note [Matrix-vector contraction levels]: 'abc,ac->b' on C-order arrays (the
// contraction a, c around the free b) walks its outer loop around the kernel at AVX2 and
// above, packs nothing; the scalar level keeps the GEMM; an innermost loop too short for
// the per-call minimum is not walked.
TEST(DotPlan, MatrixVectorContractionLoopsAreWalked) {
  Call c;
  c.lhs = rm({256, 128, 256});
  c.rhs = rm({256, 256});
  c.dims = DotDims{};
  c.dims.lhs_contracting = {0, 2};
  c.dims.rhs_contracting = {0, 1};
  for (const Caps caps : {kAvx2, kAvx512}) {
    const DotRoute r = plan(c, caps).value();
    EXPECT_EQ(r.kernel, DotKernel::kMatVec) << describe(r);
    EXPECT_TRUE(r.k_walk);
    EXPECT_FALSE(r.pack_lhs || r.pack_rhs || r.pack_out);
    EXPECT_NE(describe(r).find("contraction loops walked"), std::string::npos);
  }
  EXPECT_NE(plan(c, kScalar).value().kernel, DotKernel::kMatVec);
  c.threads = 2;
  const DotRoute two = plan(c, kAvx512).value();
  EXPECT_EQ(two.split, DotSplit::kPieces) << describe(two);  // pieces of rows walk every loop
  Call few_rows = c;
  few_rows.lhs = rm({256, 32, 256});
  const DotRoute few = plan(few_rows, kAvx512).value();
  EXPECT_TRUE(few.k_walk) << describe(few);
  EXPECT_EQ(few.split, DotSplit::kNone) << describe(few);  // no contraction parts when walking
  Call short_inner = c;
  short_inner.lhs = rm({256, 8, 4});  // 8 rows x 4 per call
  short_inner.rhs = rm({256, 4});
  EXPECT_NE(plan(short_inner, kAvx512).value().kernel, DotKernel::kMatVec);
}

TEST(DotPlan, DegenerateProducts) {
  // Tiny: plain loops below the provider's call cost.
  DotRoute r = plan(matmul(3, 3, 3), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kPlainLoops);
  // Integers have no BLAS.
  r = plan(matmul(300, 300, 300, 1, DType::kI32), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kPlainLoops);
  EXPECT_EQ(r.provider, GemmProvider::kNaive);
  // Nothing contracted: the outer-product loop, split over columns on two threads.
  r = plan(matmul(3000, 3000, 1, 2), kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kOuter);
  EXPECT_EQ(r.split, DotSplit::kPieces);
  // An empty contraction scales the destination.
  r = plan(matmul(30, 30, 0), kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kScaleOutput);
  // An empty output runs nothing.
  EXPECT_EQ(plan(matmul(0, 30, 30), kAvx2).value().kernel, DotKernel::kNone);
  // Every dimension a batch dimension: an elementwise product.
  Call e;
  e.lhs = cm({50});
  e.rhs = cm({50});
  e.dims = DotDims{};
  e.dims.lhs_batch = {0};
  e.dims.rhs_batch = {0};
  EXPECT_EQ(plan(e, kScalar).value().kernel, DotKernel::kElementwise);
}

TEST(DotPlan, BatchPolicies) {
  Call b;
  b.lhs = cm({100, 30, 30});
  b.rhs = cm({100, 30, 30});
  b.dims = batched_dims();
  b.threads = 2;
  // Small products on two threads: outer-parallel, one thread each.
  DotRoute r = plan(b, kAvx2).value();
  EXPECT_EQ(r.policy, BatchPolicy::kOuterParallel);
  EXPECT_EQ(r.split, DotSplit::kOuterBatch);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.kernel, DotKernel::kSmall) << describe(r);
  EXPECT_EQ(plan(b, kScalar).value().kernel, DotKernel::kBlis);
  // An untuned BLIS: one-thread OpenBLAS items instead.
  const Caps untuned_scalar{IsaLevel::kScalar, false, true};
  r = plan(b, untuned_scalar).value();
  EXPECT_EQ(r.kernel, DotKernel::kOpenBlas);
  EXPECT_EQ(r.split, DotSplit::kOuterBatch);
  // The whole-batch vendor call, and its typed refusals.
  Call v = b;
  v.options.batch_policy = BatchPolicy::kWholeBatchVendor;
  r = plan(v, kAvx2).value();
  EXPECT_EQ(r.kernel, DotKernel::kVendorBatch);
  EXPECT_EQ(r.provider, GemmProvider::kBlis);
  v.dtype = DType::kI64;
  EXPECT_EQ(plan(v, kAvx2).error().code(), ErrorCode::kUnsupported);
  // OpenBLAS under an outer-parallel batch on two threads would be two fan-out levels.
  Call o = b;
  o.options.provider = GemmProvider::kOpenBlas;
  o.options.batch_policy = BatchPolicy::kOuterParallel;
  EXPECT_EQ(plan(o, kAvx2).error().code(), ErrorCode::kUnsupported);
}

TEST(DotPlan, FreeGroupSplitAndPackForms) {
  // rhs [n1, k, n2]: its free labels sit around the contraction (Note [Split free groups]).
  Call c;
  c.lhs = cm({24, 40});
  c.rhs = cm({20, 40, 50});
  c.dims.lhs_contracting = {1};
  c.dims.rhs_contracting = {1};
  DotRoute r = plan(c, kAvx2).value();
  EXPECT_TRUE(r.split_rhs_free) << describe(r);
  EXPECT_FALSE(r.pack_rhs);
  EXPECT_EQ(r.batch, 50);
  EXPECT_EQ(r.n, 20);
  // A long other side packs instead.
  c.lhs = cm({100, 40});
  r = plan(c, kAvx2).value();
  EXPECT_FALSE(r.split_rhs_free);
  EXPECT_TRUE(r.pack_rhs);
  // Note [Pack order]: a short leading contracted axis and a unit-stride free run pack
  // the rhs N-fastest, unless it is wide with a short contraction.
  for (const int64_t n2 : {int64_t{8}, int64_t{300}}) {
    Call w;
    w.lhs = cm({100, 6, 8});
    Layout mem = cm({16, 6, 8, n2});  // memory [n1 | k1 k2 | n2], viewed as [k1, k2, n1, n2]
    w.rhs = Layout{Shape{6, 8, 16, n2}, Strides{mem.strides[1], mem.strides[2], mem.strides[0], mem.strides[3]}, 0};
    w.dims.lhs_contracting = {1, 2};
    w.dims.rhs_contracting = {0, 1};
    r = plan(w, kAvx2).value();
    EXPECT_TRUE(r.pack_rhs);
    EXPECT_EQ(r.rhs_n_first, 16 * n2 < 4096) << describe(r);
  }
}

// Note [Batch-lane thresholds]: batch items one element apart in all three operands
// run as vector lanes where the lane run fills its vectors (at most a fourth padding)
// and the smaller operand slice fits half of L2; otherwise the batch is packed.
TEST(DotPlan, BatchLanesWhereItemsAreOneElementApart) {
  auto lanes_call = [](int64_t b, int64_t m, int64_t n, int64_t k, int threads = 1, DType dtype = DType::kF64) {
    Call c;
    c.dtype = dtype;
    c.dims = batched_dims();
    c.lhs = cm({b, m, k});
    c.rhs = cm({b, k, n});
    c.out = cm({b, m, n});
    c.threads = threads;
    return c;
  };
  DotRoute r = plan(lanes_call(32, 64, 64, 64), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kBatchLanes) << describe(r);
  EXPECT_EQ(r.provider, GemmProvider::kNaive);
  EXPECT_EQ(r.lanes, 32);
  EXPECT_EQ(r.threads, 1);
  EXPECT_FALSE(r.pack_lhs || r.pack_rhs || r.pack_out);
  EXPECT_NE(describe(r).find("(32 lanes)"), std::string::npos) << describe(r);
  // Two threads: units of one vector of lanes over the workers.
  r = plan(lanes_call(32, 64, 64, 64, 2), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kBatchLanes);
  EXPECT_EQ(r.split, DotSplit::kPieces);
  EXPECT_EQ(r.pieces, 4);
  EXPECT_EQ(r.threads, 2);
  // ...but not under a sequential batch policy, nor for a batch too small to share.
  Call seq = lanes_call(32, 64, 64, 64, 2);
  seq.options.batch_policy = BatchPolicy::kSequential;
  EXPECT_EQ(plan(seq, kAvx512).value().threads, 1);
  EXPECT_EQ(plan(lanes_call(8, 2, 2, 2, 2), kAvx512).value().threads, 1);
  // Vectors of 8 f64: 12 items leave a third of the second empty (not taken), 20 a
  // sixth of the third. AVX-512 only: AVX2 and scalar levels pack (measured slower).
  EXPECT_NE(plan(lanes_call(12, 8, 8, 8), kAvx512).value().kernel, DotKernel::kBatchLanes);
  EXPECT_EQ(plan(lanes_call(20, 8, 8, 8), kAvx512).value().kernel, DotKernel::kBatchLanes);  // 24 slots
  EXPECT_NE(plan(lanes_call(32, 64, 64, 64), kAvx2).value().kernel, DotKernel::kBatchLanes);
  EXPECT_NE(plan(lanes_call(32, 8, 8, 8), kScalar).value().kernel, DotKernel::kBatchLanes);
  EXPECT_NE(plan(lanes_call(4, 8, 8, 8), kAvx512).value().kernel, DotKernel::kBatchLanes);
  // The smaller slice within four times an unknown L2 (512 KiB assumed): 128 x 128
  // (1 MiB of 8 lanes) is, 256 x 256 (4 MiB) is not, 256 x 16 against 16 x 256 is.
  EXPECT_EQ(plan(lanes_call(32, 128, 128, 128), kAvx512).value().kernel, DotKernel::kBatchLanes);
  EXPECT_NE(plan(lanes_call(8, 256, 256, 256), kAvx512).value().kernel, DotKernel::kBatchLanes);
  EXPECT_EQ(plan(lanes_call(8, 256, 16, 256), kAvx512).value().kernel, DotKernel::kBatchLanes);
  // One vector of lanes on two threads: its rows in parts (four: two per worker).
  r = plan(lanes_call(8, 128, 128, 128, 2), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kBatchLanes);
  EXPECT_EQ(r.lane_parts, 4);
  EXPECT_EQ(r.pieces, 4);
  EXPECT_EQ(r.threads, 2);
  // Fewer rows than a part: one part (the clamp's bounds stay ordered).
  r = plan(lanes_call(8, 5, 5, 4000, 2), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kBatchLanes);
  EXPECT_EQ(r.lane_parts, 1);
  r = plan(lanes_call(32, 16, 2000, 128), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kBatchLanes);
  EXPECT_TRUE(r.columns_outer);  // A's slice (16 x 128) is the one re-read
  EXPECT_FALSE(plan(lanes_call(32, 2000, 16, 128), kAvx512).value().columns_outer);
  // f32: vectors of 16 items; 24 items leave a third of the second empty. Complex and
  // integer dtypes have no lane kernel.
  EXPECT_EQ(plan(lanes_call(32, 8, 8, 8, 1, DType::kF32), kAvx512).value().kernel, DotKernel::kBatchLanes);
  EXPECT_NE(plan(lanes_call(24, 8, 8, 8, 1, DType::kF32), kAvx512).value().kernel, DotKernel::kBatchLanes);
  EXPECT_NE(plan(lanes_call(32, 8, 8, 8, 1, DType::kC128), kAvx512).value().kernel, DotKernel::kBatchLanes);
  EXPECT_NE(plan(lanes_call(32, 8, 8, 8, 1, DType::kI64), kAvx512).value().kernel, DotKernel::kBatchLanes);
  // A forced provider, or a destination whose items are not one element apart.
  Call forced = lanes_call(32, 8, 8, 8);
  forced.options.provider = GemmProvider::kBlis;
  EXPECT_EQ(plan(forced, kAvx512).value().kernel, DotKernel::kBlis);
  Call slow_out = lanes_call(32, 8, 8, 8);
  slow_out.out = std::nullopt;  // dot_general_result_layout: the batch outermost
  EXPECT_NE(plan(slow_out, kAvx512).value().kernel, DotKernel::kBatchLanes);
}

// Note [Matrix-vector thresholds]: a side of 1 with the long operand contiguous along its
// rows (contraction of at least 8) or its columns (at least 16 rows), f64 and f32, from
// AVX2 up; the rhs as the long operand is the transposed form; threads split the rows
// or, for few rows and a long contraction, the contraction.
TEST(DotPlan, MatrixVectorProductsWithASideOfOne) {
  const DotDims mv = matmul_dims();  // [M, K] x [K] -> [M]
  DotDims vm;                        // [K] x [K, N] -> [N]
  vm.lhs_contracting = {0};
  vm.rhs_contracting = {0};
  auto call = [&](int64_t m, int64_t k, bool rows, int threads = 1, DType dtype = DType::kF64) {
    Call c;
    c.dtype = dtype;
    c.dims = mv;
    c.lhs = rows ? rm({m, k}) : cm({m, k});
    c.rhs = cm({k});
    c.threads = threads;
    return c;
  };
  for (const Caps& caps : {kAvx512, kAvx2}) {
    for (bool rows : {false, true}) {
      DotRoute r = plan(call(2048, 2048, rows), caps).value();
      EXPECT_EQ(r.kernel, DotKernel::kMatVec) << describe(r);
      EXPECT_EQ(r.provider, GemmProvider::kNaive);
      EXPECT_FALSE(r.transposed || r.pack_lhs || r.pack_rhs || r.pack_out) << describe(r);
      EXPECT_EQ(r.threads, 1);
      EXPECT_NE(describe(r).find("matrix-vector"), std::string::npos) << describe(r);
      // Two threads: one piece of rows per worker.
      r = plan(call(2048, 2048, rows, 2), caps).value();
      EXPECT_EQ(r.split, DotSplit::kPieces) << describe(r);
      EXPECT_EQ(r.pieces, 2);
      EXPECT_EQ(r.threads, 2);
      // f32 too; from 1024 multiply-adds (below: plain loops).
      EXPECT_EQ(plan(call(2048, 2048, rows, 1, DType::kF32), caps).value().kernel, DotKernel::kMatVec);
      EXPECT_EQ(plan(call(32, 32, rows), caps).value().kernel, DotKernel::kMatVec);
      EXPECT_EQ(plan(call(16, 16, rows), caps).value().kernel, DotKernel::kPlainLoops);
    }
  }
  // Form limits: rows contiguous from a contraction of 8, columns from 16 rows.
  EXPECT_EQ(plan(call(65536, 8, true), kAvx512).value().kernel, DotKernel::kMatVec);
  EXPECT_NE(plan(call(65536, 4, true), kAvx512).value().kernel, DotKernel::kMatVec);
  EXPECT_EQ(plan(call(16, 65536, false), kAvx512).value().kernel, DotKernel::kMatVec);
  EXPECT_NE(plan(call(8, 65536, false), kAvx512).value().kernel, DotKernel::kMatVec);
  // Short rows (columns) of an A beyond twice L2 (512 KiB assumed: these capabilities
  // give none) are read one at a time; long ones, or an A in cache, four at a time.
  EXPECT_TRUE(plan(call(65536, 256, true), kAvx512).value().one_run);
  EXPECT_TRUE(plan(call(256, 65536, false), kAvx512).value().one_run);
  EXPECT_FALSE(plan(call(8192, 2048, true), kAvx512).value().one_run);
  EXPECT_FALSE(plan(call(256, 256, true), kAvx512).value().one_run);
  EXPECT_NE(describe(plan(call(65536, 256, true), kAvx512).value()).find("one run at a time"), std::string::npos);
  // A batch counts whole: 128 items of 128 x 128 (128 KiB each, 16 MiB in all).
  Call items;
  items.dims = batched_dims();
  items.lhs = cm({128, 128, 128});  // [b, m, k], each item's columns contiguous
  items.lhs.strides = {16384, 1, 128};
  items.rhs = cm({128, 128, 1});  // [b, k, n]
  items.rhs.strides = {128, 1, 1};
  const DotRoute ri = plan(items, kAvx512).value();
  EXPECT_EQ(ri.kernel, DotKernel::kMatVec) << describe(ri);
  EXPECT_TRUE(ri.one_run) << describe(ri);
  // Few rows, a long contraction, two threads: the row form splits the contraction
  // (parts summed afterwards); the column form keeps one thread.
  DotRoute r = plan(call(20, 100000, true, 2), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kMatVec);
  EXPECT_EQ(r.split, DotSplit::kSplitK) << describe(r);
  EXPECT_EQ(r.pieces, 2);
  r = plan(call(20, 100000, false, 2), kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kMatVec);
  EXPECT_EQ(r.split, DotSplit::kSplitK) << describe(r);
  // Columns contiguous: pieces of rows only while each piece's column segment is 2 KiB.
  EXPECT_EQ(plan(call(128, 16384, false, 2), kAvx512).value().split, DotSplit::kSplitK);
  EXPECT_EQ(plan(call(512, 16384, false, 2), kAvx512).value().split, DotSplit::kPieces);
  EXPECT_EQ(plan(call(128, 16384, true, 2), kAvx512).value().split, DotSplit::kPieces);
  EXPECT_EQ(plan(call(256, 256, false, 2), kAvx512).value().split, DotSplit::kPieces);  // A in cache
  // Small products stay on one thread: 256^2 is shared (65536 multiply-adds, an eighth
  // of parallel_min_flops), 128^2 is not.
  EXPECT_EQ(plan(call(256, 256, true, 2), kAvx512).value().threads, 2);
  EXPECT_EQ(plan(call(128, 128, true, 2), kAvx512).value().threads, 1);
  // The long operand as the rhs: C^T = B^T A^T.
  Call t;
  t.dims = vm;
  t.lhs = cm({4096});
  t.rhs = cm({4096, 300});  // B's columns contiguous: the row form of B^T
  r = plan(t, kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kMatVec);
  EXPECT_TRUE(r.transposed) << describe(r);
  // A dot product: the operand with a unit stride is A.
  Call dot;
  dot.dims = vm;
  dot.lhs = cm({5000});
  dot.rhs = cm({5000});
  EXPECT_EQ(plan(dot, kAvx512).value().kernel, DotKernel::kMatVec);
  // Complex dtypes too (Note [Complex matrix-vector products]), conjugated or not.
  for (const DType d : {DType::kC128, DType::kC64}) {
    Call cx = call(2048, 2048, false, 1, d);
    cx.options.conj_lhs = true;
    EXPECT_EQ(plan(cx, kAvx512).value().kernel, DotKernel::kMatVec);
    EXPECT_EQ(plan(call(2048, 2048, true, 1, d), kAvx2).value().kernel, DotKernel::kMatVec);
  }
  // Not taken: the scalar level, integer dtypes, a forced provider, an A contiguous
  // along neither side.
  EXPECT_NE(plan(call(2048, 2048, true), kScalar).value().kernel, DotKernel::kMatVec);
  EXPECT_NE(plan(call(2048, 2048, true, 1, DType::kI64), kAvx512).value().kernel, DotKernel::kMatVec);
  Call forced = call(2048, 2048, true);
  forced.options.provider = GemmProvider::kOpenBlas;
  EXPECT_EQ(plan(forced, kAvx512).value().kernel, DotKernel::kOpenBlas);
  Call strided = call(2048, 2048, true);
  strided.lhs.strides = {2 * 2048, 2};
  EXPECT_NE(plan(strided, kAvx512).value().kernel, DotKernel::kMatVec);
  // A contraction broadcast (stride 0) past int64 multiply-adds plans on two threads
  // without overflow (the count saturates; the UBSan build traps on signed overflow).
  Call huge = call(1000, 2, false, 2);
  huge.lhs.shape = {1000, int64_t{1} << 60};
  huge.lhs.strides = {1, 0};
  huge.rhs.shape = {int64_t{1} << 60};
  huge.rhs.strides = {0};
  r = plan(huge, kAvx512).value();
  EXPECT_EQ(r.kernel, DotKernel::kMatVec) << describe(r);
  EXPECT_EQ(r.split, DotSplit::kPieces) << describe(r);
}

TEST(DotPlan, IsPureAndDescribed) {
  const Call c = matmul(700, 300, 200, 2);
  const DotRoute a = plan(c, kAvx2).value(), b = plan(c, kAvx2).value();
  EXPECT_EQ(describe(a), describe(b));
  const std::string text = describe(a);
  EXPECT_NE(text.find(std::string(dot_kernel_name(a.kernel))), std::string::npos) << text;
  EXPECT_NE(text.find(a.reason), std::string::npos) << text;
  // explain_dot_general plans with the context's capabilities.
  const CpuCaps caps = make_caps(kScalar);
  CpuExecutionContext ctx(nullptr, ParallelMode::kSequential, 1, {}, &caps);
  const Tensor lhs = Tensor::zeros(DType::kF64, {16, 16}).value();
  const Tensor rhs = Tensor::zeros(DType::kF64, {16, 16}).value();
  const DotRoute e = explain_dot_general(ctx, lhs, rhs, matmul_dims()).value();
  EXPECT_EQ(e.kernel, DotKernel::kOpenBlas) << describe(e);
  const CpuCaps caps2 = make_caps(kAvx2);
  CpuExecutionContext ctx2(nullptr, ParallelMode::kSequential, 1, {}, &caps2);
  const DotRoute own = explain_dot_general(ctx2, lhs, rhs, matmul_dims()).value();
  EXPECT_EQ(own.kernel, DotKernel::kSmall);
  // tenferro's own kernels name tenferro as the provider, the libraries themselves.
  EXPECT_NE(describe(own).find("kernel small, provider tenferro,"), std::string::npos) << describe(own);
  EXPECT_NE(describe(e).find("kernel openblas, provider openblas,"), std::string::npos) << describe(e);
  // Errors as dot_general's.
  DotDims bad = matmul_dims();
  bad.rhs_contracting = {1};
  EXPECT_EQ(explain_dot_general(ctx, lhs, Tensor::zeros(DType::kF64, {16, 5}).value(), bad).error().code(),
            ErrorCode::kShapeMismatch);
}

}  // namespace
}  // namespace tenferro::cpu
