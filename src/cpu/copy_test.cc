#include <gtest/gtest.h>

#include "tenferro/test_support/index.h"

#include <cstdint>
#include <initializer_list>
#include <random>
#include <span>
#include <vector>

#include "copy_tiny.h"
#include "tenferro/cpu/kernels.h"

namespace tenferro::cpu {
namespace {

using test_support::for_each_index;
using test_support::Index;


// A random source view: random shape (rank 0-8), then permute / flip / step-slice /
// broadcast some axes.
Tensor random_source(std::mt19937_64& rng, DType dtype) {
  const size_t rank = rng() % 9;
  Shape shape;
  int64_t total = 1;
  for (size_t k = 0; k < rank; ++k) {
    int64_t e = 1 + static_cast<int64_t>(rng() % (rank > 5 ? 3 : 9));
    if (rng() % 25 == 0) e = 0;
    if (total * std::max<int64_t>(e, 1) > 50000) e = 1;
    total *= std::max<int64_t>(e, 1);
    shape.push_back(e);
  }
  Tensor t = Tensor::random_uniform(dtype, shape, rng(), -5, 5).value();
  for (size_t k = 0; k < rank; ++k) {
    const auto axis = static_cast<int64_t>(k);
    switch (rng() % 5) {
      case 0: t = t.flip(axis).value(); break;
      case 1:
        if (t.dim(axis) > 2) t = t.slice(axis, t.dim(axis) - 1, -1, -2).value();
        break;
      case 2:
        if (t.dim(axis) > 1) t = t.slice(axis, 1, t.dim(axis), 1).value();
        break;
      default: break;
    }
  }
  if (rank > 1) {
    Index perm(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    t = t.permute(perm).value();
  }
  if (rng() % 4 == 0 && rank < 8) {
    Shape b = t.shape();
    b.insert(0, 3);
    t = t.broadcast_to(b).value();
  }
  return t;
}

// A fresh exclusive destination of `shape` with a random strided layout.
Tensor random_destination(std::mt19937_64& rng, DType dtype, const Shape& shape) {
  const size_t rank = shape.size();
  Index perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::shuffle(perm.begin(), perm.end(), rng);
  Shape permuted(rank);
  for (size_t i = 0; i < rank; ++i) permuted[static_cast<size_t>(perm[i])] = shape[i];
  Tensor base = Tensor::full(dtype, permuted, c128(-7, 0)).value();
  Tensor view = base.permute(perm).value();  // view[idx] = base[idx permuted]
  if (rank > 0 && rng() % 2 == 0) view = view.flip(static_cast<int64_t>(rng() % rank)).value();
  return view;  // `base` dies here: the view is the only handle
}

class CopyKernel : public ::testing::TestWithParam<DType> {};

TEST_P(CopyKernel, MatchesNaiveOnRandomLayouts) {
  const DType dtype = GetParam();
  std::mt19937_64 rng(static_cast<uint64_t>(dtype) * 101 + 7);
  auto executor = make_tbb_executor(2).value();
  for (int trial = 0; trial < 150; ++trial) {
    Tensor src = random_source(rng, dtype);
    Tensor dst = random_destination(rng, dtype, src.shape());
    const ParallelMode mode = trial % 2 == 0 ? ParallelMode::kSequential : ParallelMode::kInner;
    Result<void> r;
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), mode, 2);
      r = copy_into(ctx, src, dst);
    });
    ASSERT_TRUE(r.has_value()) << r.error().to_string();
    int bad = 0;
    for_each_index(src.shape(), [&](const Index& idx) {
      if (bad < 3 && dst.get_as_c128(idx).value() != src.get_as_c128(idx).value()) {
        ++bad;
        ADD_FAILURE() << "mismatch at " << format_dims(idx) << " shape " << format_dims(src.shape()) << " src strides "
                      << format_dims(src.strides()) << " dst strides " << format_dims(dst.strides());
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CopyKernel, ::testing::ValuesIn(kAllDTypes),
                         [](const auto& param_info) { return std::string(dtype_name(param_info.param)); });

TEST(CopyKernel, PermuteCopyOfLargeTensorsAllRank4Permutations) {
  auto executor = make_tbb_executor(2).value();
  Tensor src = Tensor::random_normal(DType::kF64, {12, 10, 9, 11}, 3).value();
  Index perm{0, 1, 2, 3};
  do {
    Tensor out;
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
      out = permute_copy(ctx, src, perm).value();
    });
    ASSERT_TRUE(out.is_contiguous());
    Tensor view = src.permute(perm).value();
    for_each_index(out.shape(), [&](const Index& idx) {
      ASSERT_EQ(out.get<double>(idx).value(), view.get<double>(idx).value());
    });
  } while (std::next_permutation(perm.begin(), perm.end()));
}

// Many size-2 axes under random permutations: small groups, the 2 x 2 pair path for
// 8-byte elements, streaming stores (the f64/c128 outputs are >= 8 MiB).
TEST(CopyKernel, HighRankSizeTwo) {
  auto ctx = CpuExecutionContext::sequential();
  Shape shape(20, 2);
  for (DType d : {DType::kF32, DType::kF64, DType::kC128}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      Tensor src = Tensor::arange(d, int64_t{1} << 20).value().reshape(shape).value();
      std::mt19937_64 rng(seed);
      Index perm(20);
      for (size_t i = 0; i < 20; ++i) perm[i] = static_cast<int64_t>(i);
      std::shuffle(perm.begin(), perm.end(), rng);
      Tensor out = permute_copy(ctx, src, perm).value();
      Tensor view = src.permute(perm).value();
      std::mt19937_64 pick(seed + 10);
      for (int s = 0; s < 5000; ++s) {
        Index idx(20);
        for (auto& v : idx) v = static_cast<int64_t>(pick() % 2);
        ASSERT_EQ(out.get_as_c128(idx).value(), view.get_as_c128(idx).value()) << dtype_name(d) << " seed " << seed;
      }
    }
  }
}

// Note [Tiny-axis source groups]: source groups of axes with extent <= 4 grow past gaps
// up to 256 elements; every element of random permutations of shapes that mix tiny
// axes (2, 3, 4) with larger ones (5, 8), in every element size, against the view.
TEST(CopyKernel, TinyAxisGroupsMatchEveryElement) {
  auto ctx = CpuExecutionContext::sequential();
  std::mt19937_64 rng(2026);
  const int64_t extents[] = {2, 3, 4, 2, 5, 2, 2, 8, 3, 2, 2, 4};
  for (DType d : {DType::kF32, DType::kF64, DType::kC128, DType::kI32}) {
    for (int trial = 0; trial < 3; ++trial) {
      Shape shape;
      for (int64_t e : extents) shape.push_back(e);
      std::shuffle(shape.begin(), shape.end(), rng);
      const Tensor src = Tensor::arange(d, element_count(shape)).value().reshape(shape).value();
      Index perm(12);
      for (size_t i = 0; i < 12; ++i) perm[i] = static_cast<int64_t>(i);
      std::shuffle(perm.begin(), perm.end(), rng);
      const Tensor out = permute_copy(ctx, src, perm).value();
      const Tensor view = src.permute(perm).value();
      int64_t bad = 0;
      for_each_index(view.shape(), [&](const Index& idx) {
        if (out.get_as_c128(idx).value() != view.get_as_c128(idx).value()) ++bad;
      });
      EXPECT_EQ(bad, 0) << dtype_name(d) << " shape " << format_dims(shape) << " perm " << format_dims(perm);
    }
  }
}

TEST(CopyKernel, ErrorsBeforeWriting) {
  auto ctx = CpuExecutionContext::sequential();
  Tensor src = Tensor::ones(DType::kF64, {2, 3}).value();
  Tensor dst = Tensor::zeros(DType::kF64, {3, 2}).value();
  EXPECT_EQ(copy_into(ctx, src, dst).error().code(), ErrorCode::kShapeMismatch);
  Tensor dst32 = Tensor::zeros(DType::kF32, {2, 3}).value();
  EXPECT_EQ(copy_into(ctx, src, dst32).error().code(), ErrorCode::kDTypeMismatch);
  Tensor shared = Tensor::zeros(DType::kF64, {2, 3}).value();
  Tensor other = shared;
  EXPECT_EQ(copy_into(ctx, src, shared).error().code(), ErrorCode::kNotExclusive);
  EXPECT_EQ(other.get<double>({1, 2}).value(), 0.0);
  Tensor bcast = Tensor::zeros(DType::kF64, {3}).value().broadcast_to({2, 3}).value();
  EXPECT_EQ(copy_into(ctx, src, bcast).error().code(), ErrorCode::kIncompatibleLayout);
}

TEST(ZeroInto, ZeroesExactlyTheViewForEveryDType) {
  // A step-2, permuted, flipped view of a buffer of ones: the view's elements become
  // zero, the skipped ones stay one.
  auto executor = make_tbb_executor(2).value();
  for (DType d : kAllDTypes) {
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{5, 6, 3}, Shape{300, 41}}) {
      Shape stored = shape;
      if (!stored.empty()) stored[0] *= 2;
      Tensor buf = Tensor::ones(d, stored).value();
      Tensor view = buf;
      if (!shape.empty()) view = view.slice(0, 0, stored[0], 2).value();
      if (shape.size() == 2) view = view.permute({1, 0}).value();
      if (shape.size() == 3) view = view.permute({2, 0, 1}).value();
      if (!shape.empty()) view = view.flip(0).value();
      Tensor keep = buf;  // read the buffer afterwards through a second handle
      buf = Tensor();
      {
        Tensor target = view;
        view = Tensor();
        // Two handles on the storage: not exclusive, nothing written.
        EXPECT_EQ(zero_into(CpuExecutionContext::sequential(), target).error().code(), ErrorCode::kNotExclusive);
        keep = Tensor();
        Result<void> st = ok();
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
          st = zero_into(ctx, target);
        });
        ASSERT_TRUE(st) << st.error().to_string();
        view = target;
      }
      // Every element of the view is zero; the base buffer alternates zero / one along
      // its first axis (the step-2 slice covered the even rows).
      Tensor base = Tensor::from_storage(d, view.storage(), Layout::col_major(stored)).value();
      for_each_index(stored, [&](const Index& idx) {
        const c128 want = (idx.empty() || idx[0] % 2 == 0) ? c128(0) : c128(1);
        ASSERT_EQ(base.get_as_c128(idx).value(), want) << dtype_name(d) << " " << format_dims(shape);
      });
    }
  }
  Tensor null_dst;
  EXPECT_EQ(zero_into(CpuExecutionContext::sequential(), null_dst).error().code(), ErrorCode::kInvalidArgument);
  Tensor bcast = Tensor::ones(DType::kF64, {3}).value().broadcast_to({2, 3}).value();
  EXPECT_EQ(zero_into(CpuExecutionContext::sequential(), bcast).error().code(), ErrorCode::kIncompatibleLayout);
}

}  // namespace
}  // namespace tenferro::cpu

namespace tenferro::cpu {
namespace {

// Large enough to take the split paths (one long axis chunked over threads; a single
// big transpose split over its rows) and the streaming-store path (>= 8 MiB output).
TEST(CopyKernel, LargeCopiesSplitAcrossThreads) {
  auto executor = make_tbb_executor(2).value();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
    DType dtype;
  };
  const Case cases[] = {{{1 << 17}, {0}, DType::kF64},
                        {{700, 530}, {1, 0}, DType::kF64},
                        {{700, 530}, {1, 0}, DType::kC128},
                        {{300, 301}, {1, 0}, DType::kF32},
                        {{1024, 1100}, {1, 0}, DType::kF64},
                        {{64, 64, 64, 8}, {1, 2, 3, 0}, DType::kF64},
                        // Few rows, many columns: split over columns (remainder chunks,
                        // streamed output for the largest).
                        {{5000, 60}, {1, 0}, DType::kF64},
                        {{3001, 37}, {1, 0}, DType::kF32},
                        {{2500, 33}, {1, 0}, DType::kC128},
                        {{40000, 64}, {1, 0}, DType::kF64}};
  for (const Case& c : cases) {
    Tensor src = Tensor::random_uniform(c.dtype, c.shape, 11, -1, 1).value();
    Tensor out;
    executor->install([&] {
      CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, 2);
      out = permute_copy(ctx, src, c.perm).value();
    });
    Tensor view = src.permute(c.perm).value();
    std::mt19937_64 pick(3);
    for (int s = 0; s < 20000; ++s) {
      Index idx(view.shape().size());
      for (size_t k = 0; k < idx.size(); ++k) idx[k] = static_cast<int64_t>(pick() % static_cast<uint64_t>(view.shape()[k]));
      ASSERT_EQ(out.get_as_c128(idx).value(), view.get_as_c128(idx).value()) << format_dims(c.shape);
    }
    // The last element too (remainder tiles).
    Index last(view.shape().size());
    for (size_t k = 0; k < last.size(); ++k) last[k] = view.shape()[k] - 1;
    ASSERT_EQ(out.get_as_c128(last).value(), view.get_as_c128(last).value());
  }
}

}  // namespace
}  // namespace tenferro::cpu

namespace tenferro::cpu {
namespace {

// Note [Transpose segments]: permutations whose transpose groups run contiguously only
// over a first axis of extent 5, 6 or 9 (vector quads plus a tail per segment), small
// and past the streaming threshold (8 MiB), on one and two threads; every element is
// checked against the source view.
TEST(CopyKernel, TransposeGroupsWithShortSegments) {
  auto executor = make_tbb_executor(2).value();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
    DType dtype;
  };
  const Case cases[] = {
      // MERA-like pack: source [5 x 8] tiles (N fastest), destination K fastest.
      {{9, 3, 17, 6, 8, 5}, {4, 2, 5, 3, 1, 0}, DType::kF64},
      {{9, 3, 17, 6, 8, 5}, {4, 2, 5, 3, 1, 0}, DType::kF32},
      {{9, 3, 17, 6, 8, 5}, {4, 2, 5, 3, 1, 0}, DType::kC128},
      {{40, 9, 6, 5}, {2, 3, 0, 1}, DType::kF64},
      {{7, 9, 6, 5}, {3, 1, 2, 0}, DType::kF64},
      {{27, 17, 8, 3, 5, 6}, {2, 1, 5, 4, 3, 0}, DType::kF64},  // 8.8 MiB: streaming stores
      {{27, 17, 8, 3, 5, 6}, {2, 1, 5, 4, 3, 0}, DType::kF32},
      {{50, 9, 64, 5}, {3, 1, 2, 0}, DType::kC128},
  };
  for (const Case& c : cases) {
    Tensor src = Tensor::random_uniform(c.dtype, c.shape, 17, -1, 1).value();
    Tensor view = src.permute(c.perm).value();
    for (int threads : {1, 2}) {
      Tensor out;
      executor->install([&] {
        CpuExecutionContext ctx(executor.get(), ParallelMode::kInner, threads);
        out = permute_copy(ctx, src, c.perm).value();
      });
      int64_t bad = 0;
      for_each_index(view.shape(), [&](const Index& idx) {
        if (out.get_as_c128(idx).value() != view.get_as_c128(idx).value()) ++bad;
      });
      EXPECT_EQ(bad, 0) << format_dims(c.shape) << " threads " << threads << " " << dtype_name(c.dtype);
    }
  }
}

}  // namespace
}  // namespace tenferro::cpu

namespace tenferro::cpu {
namespace {

// A zeroed buffer of at least `bytes` whose data() is 64-byte aligned, so that the
// copies into it can take their streaming paths (which need aligned stores).
class LineAlignedBuffer {
 public:
  explicit LineAlignedBuffer(int64_t bytes) : storage_(static_cast<size_t>((bytes + 64 + 15) / 16)) {}
  void* data() {
    const uintptr_t p = reinterpret_cast<uintptr_t>(storage_.data());
    return storage_.data() + (64 - p % 64) % 64 / 16;
  }

 private:
  std::vector<c128> storage_;
};

// Element i of a compact buffer of `dtype` (f32, f64, c128, i32): read its real part,
// or set it to a real value.
double real_at(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kI32: return static_cast<const int32_t*>(data)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::kC128: return static_cast<const double*>(data)[2 * i];
    default: return static_cast<const double*>(data)[i];
  }
}
void set_real(void* data, DType dtype, int64_t i, double v) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
    case DType::kI64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); break;
    case DType::kC128: static_cast<c128*>(data)[i] = c128(v, 0.0); break;
    default: static_cast<double*>(data)[i] = v; break;
  }
}

// Note [Streamed runs]: large copies whose source and destination share the fastest axis
// (runs of at least 256 bytes, outputs of 8 MiB or more) are walked in source order
// with streaming stores (Note [Run tiles]: some in tiles of runs), and so are the outer
// axes of large transposes (Note [Transposes in source order]). Runs of whole and of
// partial lines, into compact destinations and into line-unaligned slices of a larger
// buffer, on one and two threads: every element against the source index it came from,
// and nothing outside the slice written. Each case runs planned for an L1d of 32 KiB and
// of 48 KiB, whose streamed line tiles go in row and in column order (Note [Row-order
// line tiles]), so both orders run on every machine. Transposes whose source rows alias
// in L2 take smaller row blocks (Note [Aliased row blocks]).
TEST(CopyKernel, StreamedCopiesMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
    DType dtype;
    int64_t pad;  // destination = rows [pad, pad + n) of axis 0 of a larger buffer
  };
  const Case cases[] = {{{32, 64, 32, 32}, {0, 3, 2, 1}, DType::kF64, 0},  // 256-byte runs, tiles
                        {{40, 37, 23, 45}, {0, 3, 2, 1}, DType::kF64, 0},  // partial tiles
                        {{40, 37, 23, 45}, {0, 3, 2, 1}, DType::kF64, 1},  // no tiles (padded)
                        {{67, 41, 23, 19}, {0, 2, 3, 1}, DType::kF64, 3},  // 536-byte runs, unaligned
                        {{130, 150, 120}, {0, 2, 1}, DType::kF32, 1},      // 520-byte runs
                        {{20, 300, 200}, {0, 2, 1}, DType::kC128, 2},      // 320-byte runs
                        {{70, 200, 160}, {0, 2, 1}, DType::kI32, 5},       // 280-byte runs
                        {{33, 90, 40, 20}, {0, 3, 1, 2}, DType::kF64, 0},  // 264-byte runs
                        // Transposes with two outer axes (Note [Transposes in source order]).
                        {{16, 16, 96, 96}, {1, 0, 3, 2}, DType::kF64, 0},
                        {{12, 10, 130, 70}, {1, 0, 3, 2}, DType::kC128, 1},
                        // 4-byte transposes in streamed 16 x 16 line transposes (Note [Line
                        // transposes]), with remainders in rows and columns.
                        {{1501, 1600}, {1, 0}, DType::kF32, 0},
                        {{40, 37, 49, 40}, {2, 3, 0, 1}, DType::kF32, 0},
                        {{2100, 1204}, {1, 0}, DType::kI32, 4},
                        // Streamed zips and unzips (Note [Zips]).
                        {{600001, 2}, {1, 0}, DType::kF64, 0},
                        {{2, 600004}, {1, 0}, DType::kF64, 0},
                        {{1000, 2, 1201}, {1, 0, 2}, DType::kF32, 0},
                        {{2, 1200008}, {1, 0}, DType::kF32, 0},
                        // Rows a multiple of 64 KiB apart in the source, in blocks of 16
                        // (Note [Aliased row blocks]): streamed and not, a last partial
                        // block, two row axes, unaligned destinations.
                        {{8192, 136}, {1, 0}, DType::kF64, 0},
                        {{8192, 40}, {1, 0}, DType::kF64, 1},
                        {{8192, 3, 24}, {2, 1, 0}, DType::kF64, 0},
                        {{8200, 72}, {1, 0}, DType::kI64, 2}};
  // Tile orders (Note [Row-order line tiles]) and source-group caps (Note [Transpose
  // source group]: L2 128 KiB -> 64 elements, unknown -> 4096) of other machines.
  for (const auto& [l1d, l2] : {std::pair<int64_t, int64_t>{32 << 10, 1 << 20}, {48 << 10, 128 << 10}, {48 << 10, 0}}) {
    CpuCaps caps = host_caps();
    caps.l1d_bytes = l1d;
    caps.l2_bytes = l2;
    for (const int threads : {1, 2}) {
      for (const Case& c : cases) {
        const size_t rank = c.shape.size();
        int64_t numel = 1;
        for (size_t k = 0; k < rank; ++k) numel *= c.shape[k];
        Tensor src = Tensor::arange(c.dtype, numel).value().reshape(c.shape).value();
        Tensor view = src.permute(c.perm).value();
        Shape parent_shape = view.shape();
        parent_shape[0] += 2 * c.pad;
        constexpr double kSentinel = -7.0;
        const int64_t parent_numel = numel / view.shape()[0] * parent_shape[0];
        const int64_t bytes = parent_numel * dtype_size(c.dtype);
        LineAlignedBuffer buffer(bytes);
        for (int64_t i = 0; i < parent_numel; ++i) set_real(buffer.data(), c.dtype, i, kSentinel);
        {
          Tensor parent = Tensor::wrap(c.dtype, parent_shape, buffer.data(), bytes, nullptr).value();
          Tensor dst = parent.slice(0, c.pad, c.pad + view.shape()[0], 1).value();
          parent = Tensor();  // the slice is the only handle: a writable destination
          executor->install([&] {
            CpuExecutionContext ctx(executor.get(), threads > 1 ? ParallelMode::kInner : ParallelMode::kSequential,
                                    threads, {}, &caps);
            ASSERT_TRUE(copy_into(ctx, view, dst).has_value());
          });
        }
        // Column-major source strides (elements), and the odometer over the parent.
        std::vector<int64_t> src_stride(rank, 1);
        for (size_t k = 1; k < rank; ++k) src_stride[k] = src_stride[k - 1] * c.shape[k - 1];
        std::vector<int64_t> idx(rank, 0);
        int64_t wrong = 0;
        for (int64_t i = 0; i < parent_numel; ++i) {
          const bool inside = idx[0] >= c.pad && idx[0] < c.pad + view.shape()[0];
          double expected = kSentinel;
          if (inside) {
            expected = static_cast<double>((idx[0] - c.pad) * src_stride[static_cast<size_t>(c.perm[0])]);
            for (size_t k = 1; k < rank; ++k) {
              expected += static_cast<double>(idx[k] * src_stride[static_cast<size_t>(c.perm[k])]);
            }
          }
          if (real_at(buffer.data(), c.dtype, i) != expected && ++wrong <= 3) {
            ADD_FAILURE() << format_dims(c.shape) << " " << dtype_name(c.dtype) << " threads " << threads << " L1d "
                          << l1d << ": element " << i << " is " << real_at(buffer.data(), c.dtype, i) << ", expected "
                          << expected;
          }
          for (size_t k = 0; k < rank && ++idx[k] == parent_shape[k]; ++k) idx[k] = 0;
        }
        ASSERT_EQ(wrong, 0) << format_dims(c.shape) << " " << dtype_name(c.dtype) << " threads " << threads << " L1d "
                            << l1d;
      }
    }
  }
}

// Note [Reserved source lines], Note [Transpose groups]: permutations of many size-2
// axes whose source-fastest axes sit at destination positions inside and far past a row
// block, and within the destination's first vector (both groupings), reversed and random
// ones, streamed (f64, f32) and not
// (c128), on 1 and 2 threads: every element against its source index.
TEST(CopyKernel, ReservedSourceLinesMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  const std::vector<std::vector<int64_t>> fixed = {
      // Source axes 1-3 at destination positions 7-10: past a block of 64 f64 rows.
      {15, 13, 11, 19, 6, 12, 4, 1, 5, 3, 2, 18, 9, 16, 10, 21, 17, 7, 20, 8, 0, 14},
      // Source axis 2 at destination position 2: inside the block.
      {4, 6, 2, 13, 9, 5, 18, 17, 10, 16, 21, 7, 0, 14, 12, 3, 20, 19, 1, 8, 15, 11},
      // Source axis 1 at destination position 2: the grouping that keeps it for the
      // source group wins (Note [Transpose groups]).
      {3, 18, 1, 15, 0, 19, 5, 16, 2, 6, 4, 9, 8, 20, 10, 11, 7, 12, 17, 21, 13, 14}};
  std::mt19937_64 rng(22);
  for (const DType dtype : {DType::kF64, DType::kF32, DType::kC128}) {
    const size_t rank = dtype == DType::kC128 ? 18 : 22;
    std::vector<std::vector<int64_t>> perms;
    for (const auto& p : fixed) {
      std::vector<int64_t> q;
      for (int64_t a : p) {
        if (a < static_cast<int64_t>(rank)) q.push_back(a);
      }
      perms.push_back(q);
    }
    std::vector<int64_t> p(rank);
    for (size_t k = 0; k < rank; ++k) p[k] = static_cast<int64_t>(rank - 1 - k);
    perms.push_back(p);
    for (int t = 0; t < 2; ++t) {
      std::shuffle(p.begin(), p.end(), rng);
      perms.push_back(p);
    }
    const int64_t numel = int64_t{1} << rank;
    const Tensor src = Tensor::arange(dtype, numel).value().reshape(Shape(rank, 2)).value();
    const int64_t bytes = numel * dtype_size(dtype);
    LineAlignedBuffer buffer(bytes);
    for (const int threads : {1, 2}) {
      for (const auto& perm : perms) {
        for (int64_t i = 0; i < numel; ++i) set_real(buffer.data(), dtype, i, -7.0);
        Tensor dst = Tensor::wrap(dtype, Shape(rank, 2), buffer.data(), bytes, nullptr).value();
        executor->install([&] {
          CpuExecutionContext ctx(executor.get(), threads > 1 ? ParallelMode::kInner : ParallelMode::kSequential,
                                  threads);
          ASSERT_TRUE(copy_into(ctx, src.permute(perm).value(), dst).has_value());
        });
        // Destination element i has index bits i_k; its source index is sum i_k 2^perm[k].
        int64_t wrong = 0;
        for (int64_t i = 0; i < numel; ++i) {
          int64_t from = 0;
          for (size_t k = 0; k < rank; ++k) from |= ((i >> k) & 1) << perm[k];
          if (real_at(buffer.data(), dtype, i) != static_cast<double>(from) && ++wrong <= 3) {
            ADD_FAILURE() << dtype_name(dtype) << " perm " << format_dims(perm) << " threads " << threads
                          << ": element " << i << " is " << real_at(buffer.data(), dtype, i) << ", expected " << from;
          }
        }
        ASSERT_EQ(wrong, 0) << dtype_name(dtype) << " perm " << format_dims(perm) << " threads " << threads;
      }
    }
  }
}

// Large contiguous copies (split into chunks across threads) into destinations that
// start 0-3 elements past a line boundary and end mid-line, every element size, 1 and 2
// threads; every element, and the sentinels on both sides untouched.
TEST(CopyKernel, LargeContiguousCopiesMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  for (const DType dtype : {DType::kF32, DType::kF64, DType::kC128, DType::kI32}) {
    const int64_t elem = dtype_size(dtype);
    const int64_t n = (int64_t{9} << 20) / elem + 5;  // past the streaming threshold
    const Tensor src = Tensor::arange(dtype, n).value();
    for (const int64_t offset : {0, 1, 3}) {
      const int64_t total = n + offset + 4;
      LineAlignedBuffer buffer(total * elem);
      for (int64_t i = 0; i < total; ++i) set_real(buffer.data(), dtype, i, -7.0);
      for (const int threads : {1, 2}) {
        {
          Tensor parent = Tensor::wrap(dtype, {total}, buffer.data(), total * elem, nullptr).value();
          Tensor dst = parent.slice(0, offset, offset + n, 1).value();
          parent = Tensor();
          executor->install([&] {
            CpuExecutionContext ctx(executor.get(), threads > 1 ? ParallelMode::kInner : ParallelMode::kSequential,
                                    threads);
            ASSERT_TRUE(copy_into(ctx, src, dst).has_value());
          });
        }
        int64_t wrong = 0;
        for (int64_t i = 0; i < total; ++i) {
          const double expected = i < offset || i >= offset + n ? -7.0 : static_cast<double>(i - offset);
          if (real_at(buffer.data(), dtype, i) != expected && ++wrong <= 3) {
            ADD_FAILURE() << dtype_name(dtype) << " offset " << offset << " threads " << threads << ": element " << i
                          << " is " << real_at(buffer.data(), dtype, i) << ", expected " << expected;
          }
        }
        ASSERT_EQ(wrong, 0) << dtype_name(dtype) << " offset " << offset << " threads " << threads;
      }
    }
  }
}

// Copies the col-major `shape` viewed through `perm` (its axes permuted) into a compact
// destination at `offset` elements with copy_strided, `elem`-byte elements of hashed
// bytes, and returns how many destination bytes differ from a naive strided copy
// (including the guard bytes before and after the destination).
int64_t transpose_mismatches(CpuDomainExecutor& executor, const Shape& shape, const std::vector<int64_t>& perm,
                             int64_t offset, int64_t elem, int threads) {
  auto byte_of = [](int64_t element, int64_t b) {
    uint64_t z =
        static_cast<uint64_t>(element) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(b) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 29;
    z *= 0x94D049BB133111EBull;
    return static_cast<unsigned char>(z >> 56);
  };
  const size_t rank = shape.size();
  const int64_t numel = element_count(shape);
  std::vector<unsigned char> src(static_cast<size_t>(numel * elem));
  for (int64_t n = 0; n < numel; ++n) {
    for (int64_t b = 0; b < elem; ++b) src[static_cast<size_t>(n * elem + b)] = byte_of(n, b);
  }
  const Layout compact = Layout::col_major(shape);
  Layout src_layout;
  for (size_t k = 0; k < rank; ++k) {
    src_layout.shape.push_back(shape[static_cast<size_t>(perm[k])]);
    src_layout.strides.push_back(compact.strides[static_cast<size_t>(perm[k])]);
  }
  Layout dst_layout = Layout::col_major(src_layout.shape);
  dst_layout.offset = offset;
  // The destination buffer starts on a 64-byte line (as tensor storage does), so that
  // offset 0 allows streaming stores; the bytes around it are guards.
  std::vector<unsigned char> buffer(static_cast<size_t>((numel + offset + 1) * elem + 64), 0xA5);
  unsigned char* dst = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
  executor.install([&] {
    CpuExecutionContext ctx(&executor, threads > 1 ? ParallelMode::kInner : ParallelMode::kSequential, threads);
    detail::copy_strided(ctx, src.data(), src_layout, dst, dst_layout, elem);
  });
  int64_t wrong = 0;
  for (int64_t n = 0; n < offset * elem; ++n) wrong += dst[n] != 0xA5;
  for (int64_t n = (numel + offset) * elem; n < (numel + offset + 1) * elem; ++n) wrong += dst[n] != 0xA5;
  for_each_index(src_layout.shape, [&](const Index& idx) {
    int64_t so = 0, d = offset;
    for (size_t k = 0; k < rank; ++k) {
      so += idx[k] * src_layout.strides[k];
      d += idx[k] * dst_layout.strides[k];
    }
    for (int64_t b = 0; b < elem; ++b) wrong += dst[d * elem + b] != src[static_cast<size_t>(so * elem + b)];
  });
  return wrong;
}

// A permutation copy for transpose_mismatches: the source shape, the permutation, the
// destination's offset (elements).
struct PermCase {
  Shape shape;
  std::vector<int64_t> perm;
  int64_t offset = 0;
};

// Every case at each element size of `elems`, on one and two threads: no byte differs
// from the naive copy.
void expect_every_byte(CpuDomainExecutor& executor, std::span<const PermCase> cases,
                       std::initializer_list<int64_t> elems) {
  for (const int64_t elem : elems) {
    for (const PermCase& c : cases) {
      for (const int threads : {1, 2}) {
        EXPECT_EQ(transpose_mismatches(executor, c.shape, c.perm, c.offset, elem, threads), 0)
            << elem << "-byte elements, shape " << format_dims(c.shape) << " perm " << format_dims(c.perm) << " offset "
            << c.offset << ", " << threads << " threads";
      }
    }
  }
}

// Every element size the untyped copy serves (1, 2, 4, 8 and 16 bytes; 2 has no dtype
// yet), through transposes large enough for each size's vector path (16 x 16 bytes, 8 x 8
// of 2 bytes, quads and line tiles, pairs, zips and unzips), with remainders, segments
// and many tiny axes, into compact and offset destinations, on one and two threads: every byte against
// a naive strided copy.
TEST(CopyKernel, EveryElementSizeMatchesNaiveTransposes) {
  auto executor = make_tbb_executor(2).value();
  std::vector<PermCase> cases = {{{64, 80}, {1, 0}, 0},
                                 {{37, 53}, {1, 0}, 3},
                                 {{700, 530}, {1, 0}, 0},
                                 {{20, 33, 17, 6}, {2, 3, 0, 1}, 1},
                                 {{48, 40, 36}, {2, 0, 1}, 0},
                                 {{9, 3, 17, 6, 8, 5}, {4, 2, 5, 3, 1, 0}, 0},
                                 {{301, 2}, {1, 0}, 1},
                                 {{2, 301}, {1, 0}, 0},
                                 {{60, 2, 37}, {1, 0, 2}, 0},
                                 {{37, 50, 2}, {2, 0, 1}, 3},
                                 // Note [Blocked copies]: a shared run of 3 and of 7 elements,
                                 // 3 x 7 transposes along a long shared axis, axes of extent 3.
                                 {{3, 100, 3, 100}, {0, 3, 2, 1}, 1},
                                 {{7, 60, 70, 3}, {0, 3, 2, 1}, 0},
                                 {{7, 300, 200, 3}, {3, 1, 2, 0}, 2},
                                 {{3, 100, 3, 100}, {2, 1, 0, 3}, 0},
                                 // Note [Split group axes]: a source group of 7 x 1000 taken as
                                 // 7 x 500.
                                 {{7, 1000, 50, 3}, {3, 2, 1, 0}, 0}};
  {
    PermCase reversed{Shape(12, 2), std::vector<int64_t>(12), 0};
    for (size_t k = 0; k < 12; ++k) reversed.perm[k] = static_cast<int64_t>(11 - k);
    PermCase shuffled{Shape(14, 2), std::vector<int64_t>(14), 5};
    for (size_t k = 0; k < 14; ++k) shuffled.perm[k] = static_cast<int64_t>(k);
    std::shuffle(shuffled.perm.begin(), shuffled.perm.end(), std::mt19937_64(14));
    cases.push_back(reversed);
    cases.push_back(shuffled);
  }
  expect_every_byte(*executor, cases, {1, 2, 4, 8, 16});
}

// Note [Tiny transposes]: batches of transposes of tiny axes (every extent pair 2..8,
// every element size, batches of 8 and 37, a batch of two merged axes, one large enough to
// split across two threads, a destination starting mid-line): every byte against the
// naive copy.
TEST(CopyKernel, TinyTransposeBatchesMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  for (const int64_t elem : {1, 2, 4, 8, 16}) {
    for (int64_t na = 2; na <= 8; ++na) {
      for (int64_t nd = 2; nd <= 8; ++nd) {
        for (const int64_t batch : {8, 37}) {
          EXPECT_EQ(transpose_mismatches(*executor, {na, batch, nd}, {2, 1, 0}, 0, elem, 1), 0)
              << elem << "-byte elements, " << na << " x " << batch << " x " << nd;
        }
      }
    }
  }
  const PermCase cases[] = {
      {{5, 6, 7, 3}, {3, 1, 2, 0}, 0},     // the batch: two axes merged
      {{7, 20000, 3}, {2, 1, 0}, 0},       // pieces over two threads
      {{3, 9001, 8}, {2, 1, 0}, 3},        // a destination off the line grid
      {{7, 600, 10, 3}, {3, 1, 2, 0}, 0},  // the [3120] of the permutation benchmark, smaller
      {{4, 4, 5000}, {1, 0, 2}, 0},        // a batch of whole 4 x 4 blocks (matrices transposed)
      {{3, 8, 777}, {1, 0, 2}, 5},         // ... 3 x 8, into an offset destination
      {{5, 300, 3}, {2, 0, 1}, 0},         // the batch continues a's rows in the source, the block in the destination
      {{5, 3, 300}, {1, 2, 0}, 0},         // the block in the source, d's rows in the destination
      {{3, 100, 3, 30}, {2, 1, 0, 3}, 0},  // an outer axis
      {{3, 10, 3, 7, 9}, {2, 1, 0, 4, 3}, 1},                                             // two outer axes, swapped
      {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0},  // 2 x 2 blocks of rank 12
  };
  expect_every_byte(*executor, cases, {4, 8, 16});
}

// The merged loop of copying a column-major `shape` permuted by `perm` into a compact
// destination, 8-byte elements (what copy_typed classifies).
detail::StridedLoop<2> loop_of(const Shape& shape, const std::vector<int64_t>& perm) {
  const Layout compact = Layout::col_major(shape);
  Layout src;
  for (size_t k = 0; k < shape.size(); ++k) {
    src.shape.push_back(shape[static_cast<size_t>(perm[k])]);
    src.strides.push_back(compact.strides[static_cast<size_t>(perm[k])]);
  }
  const Layout dst = Layout::col_major(src.shape);
  return detail::StridedLoop<2>({&dst, &src}, {8, 8});
}

// Note [Small-block permutations]: batches of permutations of one small block (shared
// fastest runs of 1-7 elements, no shared fastest axis, blocks of 8 to 256 elements, two
// outer axes, pieces over two threads, a destination starting mid-line): every byte
// against the naive copy.
TEST(CopyKernel, SmallBlockPermutationsMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  const PermCase cases[] = {
      {{2, 2, 2, 2, 3000}, {0, 3, 2, 1, 4}, 0},  // qubits 1 and 3 swapped
      {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {0, 3, 2, 1, 4, 5, 6, 7, 8, 9, 10, 11}, 3},
      {{7, 3, 3, 300}, {0, 2, 1, 3}, 0},             // a shared run of 7
      {{3, 3, 3, 3, 3, 40}, {4, 3, 2, 1, 0, 5}, 0},  // no shared fastest axis
      {{3, 3, 3, 3, 3, 40}, {0, 2, 1, 4, 3, 5}, 1},
      {{2, 16, 8, 30}, {0, 2, 1, 3}, 0},             // a block of 256 elements
      {{2, 2, 3, 2, 20, 9}, {0, 2, 1, 3, 5, 4}, 0},  // outer axes swapped
      {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
       {1, 2, 0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
       0},
  };
  expect_every_byte(*executor, cases, {1, 4, 8, 16});
  // Into a step-2 slice of a larger destination (blocks dense, outer steps of two blocks):
  // the slice's elements are the permuted source's, the skipped ones untouched.
  const Tensor src = Tensor::random_normal(DType::kF64, {2, 2, 2, 2, 50}, 3).value();
  const Tensor view = src.permute({0, 3, 2, 1, 4}).value();
  Tensor parent = Tensor::full(DType::kF64, {2, 2, 2, 2, 100}, 7.0).value();
  Tensor keep = parent;
  Tensor dst = parent.slice(4, 0, 100, 2).value();
  parent = Tensor();
  keep = Tensor();
  ASSERT_TRUE(copy_into(CpuExecutionContext::sequential(), view, dst));
  Tensor whole = Tensor::from_storage(DType::kF64, dst.storage(), Layout::col_major({2, 2, 2, 2, 100})).value();
  for_each_index(Shape{2, 2, 2, 2, 100}, [&](const Index& idx) {
    const double got = whole.get<double>(idx).value();
    if (idx[4] % 2 == 1) {
      ASSERT_EQ(got, 7.0) << format_dims(Shape(idx));
    } else {
      ASSERT_EQ(got, src.get<double>({idx[0], idx[3], idx[2], idx[1], idx[4] / 2}).value()) << format_dims(Shape(idx));
    }
  });
}

// Note [Small-block permutations]: which loops are batches of block permutations, decided
// by a pure function of the loop.
TEST(CopyKernel, SmallBlockPermutationsAreRecognisedByShape) {
  detail::BlockPermutation bp;
  {
    const detail::StridedLoop<2> loop = loop_of({2, 2, 2, 2, 1000}, {0, 3, 2, 1, 4});
    ASSERT_TRUE(detail::block_permutation(loop, 8, &bp));
    EXPECT_EQ(bp.block, 16);
    EXPECT_EQ(loop.axis(bp.x).extent, 1000);
  }
  {
    // The smallest block: 3 x 3 swapped under a batch of 5 and an outer axis of 4.
    const detail::StridedLoop<2> loop = loop_of({3, 3, 5, 3, 3, 4}, {1, 0, 2, 4, 3, 5});
    ASSERT_TRUE(detail::block_permutation(loop, 8, &bp));
    EXPECT_EQ(bp.block, 9);
  }
  EXPECT_FALSE(detail::block_permutation(loop_of({16, 16, 100}, {1, 0, 2}), 8, &bp));      // vector runs: transpose
  EXPECT_FALSE(detail::block_permutation(loop_of({8, 2, 2, 100}, {0, 2, 1, 3}), 8, &bp));  // a shared run of a line
  EXPECT_FALSE(detail::block_permutation(loop_of({2, 2, 2, 2, 2, 2, 2, 2, 2, 50}, {8, 7, 6, 5, 4, 3, 2, 1, 0, 9}), 8,
                                         &bp));                                    // a block of 512
  EXPECT_FALSE(detail::block_permutation(loop_of({2, 3, 4}, {2, 1, 0}), 8, &bp));  // no batch axis
}

// Note [Tiny transposes]: which loops are batches of tiny transposes, decided by a pure
// function of the loop (the route is then taken on every machine and ISA level).
TEST(CopyKernel, TinyTransposesAreRecognisedByShape) {
  detail::TinyTransposes t;
  {
    const detail::StridedLoop<2> loop = loop_of({7, 600, 1000, 3}, {3, 1, 2, 0});
    ASSERT_TRUE(detail::tiny_transposes(loop, 8, &t));
    EXPECT_EQ(loop.axis(t.a).extent, 7);
    EXPECT_EQ(loop.axis(t.d).extent, 3);
    EXPECT_EQ(loop.axis(t.b).extent, 600000);  // 600 x 1000 merged
    EXPECT_EQ(loop.axis(t.a).stride[1], 8);
    EXPECT_EQ(loop.axis(t.d).stride[0], 8);
  }
  EXPECT_TRUE(detail::tiny_transposes(loop_of({2, 8, 8}, {2, 1, 0}), 8, &t));
  {
    // Whole blocks: a batch of 4 x 4 matrices transposed; the batch steps by the block.
    const detail::StridedLoop<2> loop = loop_of({4, 4, 1000}, {1, 0, 2});
    ASSERT_TRUE(detail::tiny_transposes(loop, 8, &t));
    EXPECT_EQ(loop.axis(t.b).extent, 1000);
    EXPECT_EQ(loop.axis(t.b).stride[0], 128);
    EXPECT_EQ(loop.axis(t.b).stride[1], 128);
  }
  {
    // An outer axis (the last, 10 long) around a batch of 1000.
    const detail::StridedLoop<2> loop = loop_of({3, 1000, 3, 10}, {2, 1, 0, 3});
    ASSERT_TRUE(detail::tiny_transposes(loop, 8, &t));
    EXPECT_EQ(loop.rank(), 4u);
    EXPECT_EQ(loop.axis(t.b).extent, 1000);
  }
  {
    // A short batch (10) under a long outer axis (1000, stepping 90 elements on both
    // sides: neither rows nor blocks).
    const detail::StridedLoop<2> loop = loop_of({3, 10, 3, 1000}, {2, 1, 0, 3});
    ASSERT_TRUE(detail::tiny_transposes(loop, 8, &t));
    EXPECT_EQ(loop.axis(t.b).extent, 10);
  }
  // A 4 x 4 transpose whose destination rows are 16 elements apart, under an axis stepping
  // 64 elements on both sides: no batch axis.
  EXPECT_FALSE(detail::tiny_transposes(loop_of({4, 4, 4, 100}, {1, 2, 0, 3}), 8, &t));
  EXPECT_FALSE(detail::tiny_transposes(loop_of({9, 100, 3}, {2, 1, 0}), 8, &t));          // na > 8
  EXPECT_FALSE(detail::tiny_transposes(loop_of({3, 100, 9}, {2, 1, 0}), 8, &t));          // nd > 8
  EXPECT_FALSE(detail::tiny_transposes(loop_of({3, 7, 5}, {2, 1, 0}), 8, &t));            // batch < 8
  EXPECT_FALSE(detail::tiny_transposes(loop_of({7, 100, 3}, {0, 2, 1}), 8, &t));          // a shared fastest axis
  EXPECT_FALSE(detail::tiny_transposes(loop_of({100, 7, 3}, {2, 1, 0}), 8, &t));          // a long fastest axis
}

// Note [Streamed byte tiles]: byte transposes of 8 MiB or more stream their whole line
// tiles when the destination's lines allow (aligned, whole tiles and remainders of both
// sides, row and column splits over two threads), and store normally when the
// destination starts mid-line or its segments are not whole tiles: every byte against
// the naive copy.
TEST(CopyKernel, LargeByteTransposesMatchEveryElement) {
  auto executor = make_tbb_executor(2).value();
  const PermCase cases[] = {
      {{4096, 2304}, {1, 0}, 0},       // streamed, whole tiles
      {{4100, 2336}, {1, 0}, 0},       // streamed, a remainder on both sides
      {{4100, 2336}, {1, 0}, 3},       // starts mid-line: stored normally
      {{3001, 3003}, {1, 0}, 0},       // rows off the 32-byte grid: stored normally
      {{96, 70, 1408}, {2, 0, 1}, 0},  // a source group of two axes
      {{40, 220000}, {1, 0}, 0},       // too few columns for line tiles
  };
  expect_every_byte(*executor, cases, {1});
}

}  // namespace
}  // namespace tenferro::cpu
