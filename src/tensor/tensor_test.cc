#include "tenferro/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

namespace tenferro {
namespace {

TEST(Construct, ColumnAndRowMajorDescribeTheSameMatrix) {
  // Spec 001 D4: column-major [1,4,2,5,3,6] and row-major [1,2,3,4,5,6] are both
  // rows [1,2,3], [4,5,6].
  std::vector<double> col{1, 4, 2, 5, 3, 6};
  const double* adopted = col.data();
  Tensor a = Tensor::from_col_major<double>({2, 3}, std::move(col)).value();
  Tensor b = Tensor::from_row_major<double>({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}).value();
  EXPECT_EQ(static_cast<const double*>(a.storage()->data()), adopted) << "from_col_major must not copy";
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(a.get<double>({i, j}).value(), static_cast<double>(3 * i + j + 1));
      EXPECT_EQ(b.get<double>({i, j}).value(), static_cast<double>(3 * i + j + 1));
    }
  }
  EXPECT_EQ(a.get<double>({1, 0}).value(), 4.0);
  EXPECT_EQ(a.get<double>({0, 2}).value(), 3.0);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_TRUE(b.is_contiguous());
}

TEST(Construct, RowMajorReorderForHigherRanks) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    Shape shape;
    const size_t rank = rng() % 6;
    for (size_t k = 0; k < rank; ++k) shape.push_back(static_cast<int64_t>(rng() % 4));
    const int64_t n = element_count(shape.span());
    std::vector<int64_t> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = i * 7 + 1;
    Tensor t = Tensor::from_row_major<int64_t>(shape, data).value();
    // Row-major linear index of each logical index gives its value.
    Strides rs = row_major_strides(shape.span());
    for (int64_t lin = 0; lin < n; ++lin) {
      std::vector<int64_t> idx(rank);
      int64_t rem = lin, row_lin = 0;
      for (size_t k = 0; k < rank; ++k) {
        idx[k] = rem % shape[k];
        rem /= shape[k];
        row_lin += idx[k] * rs[k];
      }
      EXPECT_EQ(t.get<int64_t>(idx).value(), row_lin * 7 + 1);
    }
  }
}

TEST(Construct, BadInputsAreTypedErrors) {
  auto len = Tensor::from_col_major<float>({2, 2}, {1, 2, 3});
  ASSERT_FALSE(len);
  EXPECT_EQ(len.error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(len.error().op(), "from_col_major");
  EXPECT_EQ(Tensor::from_row_major<float>({3}, std::vector<float>{1, 2}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(Tensor::zeros(DType::kF32, {-2}).error().code(), ErrorCode::kInvalidShape);
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(Tensor::zeros(DType::kF64, {big, 4}).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(Tensor::zeros(DType::kC128, {big / 8}).error().code(), ErrorCode::kOverflow);  // bytes overflow
  EXPECT_EQ(Tensor::arange(DType::kBool, 3).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(Tensor::arange(DType::kF64, 0, 1, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::random_normal(DType::kI32, {2}, 1).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(Tensor::random_uniform(DType::kF32, {2}, 1, 1.0, 1.0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::full(DType::kF64, {2}, c128(1, 2)).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::full(DType::kI32, {2}, c128(1.5, 0)).error().code(), ErrorCode::kInvalidArgument);
  // Out of an integer dtype's range (the conversion would be undefined behaviour): typed.
  EXPECT_EQ(Tensor::full(DType::kI32, {2}, c128(2147483648.0, 0)).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(Tensor::full(DType::kI64, {2}, c128(9223372036854775808.0, 0)).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(Tensor::full(DType::kI64, {2}, c128(-1e300, 0)).error().code(), ErrorCode::kOverflow);
  EXPECT_EQ(Tensor::full(DType::kI32, {1}, c128(-2147483648.0, 0)).value().get<int32_t>({0}).value(), INT32_MIN);
  EXPECT_EQ(Tensor::full(DType::kI64, {1}, c128(-9223372036854775808.0, 0)).value().get<int64_t>({0}).value(),
            INT64_MIN);
}

TEST(Construct, FillsForEveryDType) {
  for (DType d : kAllDTypes) {
    Tensor z = Tensor::zeros(d, {3, 2}).value();
    Tensor o = Tensor::ones(d, {3, 2}).value();
    Tensor f = Tensor::full(d, {4}, c128(is_complex(d) ? 2.0 : 1.0, is_complex(d) ? -1.0 : 0.0)).value();
    EXPECT_EQ(z.dtype(), d);
    EXPECT_EQ(z.shape(), (Shape{3, 2}));
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(z.get_as_c128({i, 1}).value(), c128(0, 0)) << dtype_name(d);
      EXPECT_EQ(o.get_as_c128({i, 0}).value(), c128(1, 0)) << dtype_name(d);
    }
    EXPECT_EQ(f.get_as_c128({3}).value(), is_complex(d) ? c128(2, -1) : c128(1, 0)) << dtype_name(d);
  }
}

TEST(Construct, ArangeMatchesNumpyCounts) {
  Tensor a = Tensor::arange(DType::kF64, 0.0, 1.0, 0.3).value();  // numpy: 0, .3, .6, .9
  ASSERT_EQ(a.numel(), 4);
  EXPECT_DOUBLE_EQ(a.get<double>({3}).value(), 0.9);
  Tensor b = Tensor::arange(DType::kI32, 5.0, -1.0, -2.0).value();  // 5, 3, 1
  ASSERT_EQ(b.numel(), 3);
  EXPECT_EQ(b.get<int32_t>({2}).value(), 1);
  EXPECT_EQ(Tensor::arange(DType::kI64, 0).value().numel(), 0);
  EXPECT_EQ(Tensor::arange(DType::kF32, 3.0, 1.0, 1.0).value().numel(), 0);
  Tensor c = Tensor::arange(DType::kC64, 3).value();
  EXPECT_EQ(c.get<c64>({2}).value(), c64(2, 0));
}

TEST(Construct, RandomIsSeededAndDistributed) {
  Tensor a = Tensor::random_normal(DType::kF64, {100000}, 11).value();
  Tensor b = Tensor::random_normal(DType::kF64, {100000}, 11).value();
  Tensor c = Tensor::random_normal(DType::kF64, {100000}, 12).value();
  double sum = 0, sq = 0;
  bool same = true, differs = false;
  for (int64_t i = 0; i < 100000; ++i) {
    const double x = a.get<double>({i}).value();
    same = same && x == b.get<double>({i}).value();
    differs = differs || x != c.get<double>({i}).value();
    sum += x;
    sq += x * x;
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 1e5, 0.0, 0.02);        // 6 sigma of the mean is ~0.019
  EXPECT_NEAR(sq / 1e5, 1.0, 0.03);
  Tensor u = Tensor::random_uniform(DType::kI32, {10000}, 3, -2, 3).value();
  int counts[5] = {};
  for (int64_t i = 0; i < 10000; ++i) {
    const int32_t v = u.get<int32_t>({i}).value();
    ASSERT_GE(v, -2);
    ASSERT_LT(v, 3);
    counts[v + 2]++;
  }
  for (int k : counts) EXPECT_NEAR(k, 2000, 250);
  Tensor z = Tensor::random_normal(DType::kC64, {1000}, 4, 5.0, 0.0).value();
  EXPECT_EQ(z.get<c64>({999}).value(), c64(5, 5));
}

TEST(Access, GetChecksDTypeRankAndBounds) {
  Tensor a = Tensor::zeros(DType::kF32, {2, 3}).value();
  EXPECT_EQ(a.get<double>({0, 0}).error().code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(a.get<float>({0}).error().code(), ErrorCode::kInvalidShape);
  EXPECT_EQ(a.get<float>({2, 0}).error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(a.typed<int32_t>().error().code(), ErrorCode::kDTypeMismatch);
  TypedTensor<float> t = a.typed<float>().value();
  EXPECT_TRUE(t.shares_storage_with(a));
  Tensor back = t;  // erase again, no copy
  EXPECT_TRUE(back.shares_storage_with(a));
  EXPECT_EQ(back.dtype(), DType::kF32);
  Tensor scalar = Tensor::full(DType::kI64, {}, c128(42, 0)).value();
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.get<int64_t>({}).value(), 42);
}

TEST(Materialize, ContiguousAndToColMajorCopyValues) {
  std::mt19937_64 rng(9);
  Tensor base = Tensor::random_normal(DType::kC128, {4, 3, 5}, 1).value();
  EXPECT_TRUE(base.contiguous().value().shares_storage_with(base)) << "already compact: no copy";
  Tensor v = base.permute({2, 0, 1}).value().flip(0).value().slice(2, 2, -1, -2).value();
  Tensor c = v.contiguous().value();
  EXPECT_FALSE(c.shares_storage_with(base));
  EXPECT_TRUE(c.is_contiguous());
  Tensor d = base.to_col_major().value();
  EXPECT_FALSE(d.shares_storage_with(base)) << "to_col_major always copies";
  for (int64_t i = 0; i < v.dim(0); ++i)
    for (int64_t j = 0; j < v.dim(1); ++j)
      for (int64_t k = 0; k < v.dim(2); ++k) {
        EXPECT_EQ(c.get<c128>({i, j, k}).value(), v.get<c128>({i, j, k}).value());
      }
  // Broadcast views materialize their repeated elements.
  Tensor r = Tensor::arange(DType::kI32, 3).value().broadcast_to({2, 3}).value().contiguous().value();
  EXPECT_EQ(r.get<int32_t>({1, 2}).value(), 2);
  EXPECT_EQ(r.strides(), (Strides{1, 2}));
}

TEST(Mutation, ViewMutNeedsExclusiveStorage) {
  Tensor a = Tensor::zeros(DType::kF64, {2, 3}).value();
  {
    auto m = a.view_mut<double>();
    ASSERT_TRUE(m.has_value()) << m.error().to_string();
    ASSERT_TRUE(m->set({1, 2}, 5.0).has_value());
    EXPECT_EQ(m->set({2, 0}, 1.0).error().code(), ErrorCode::kOutOfRange);
    // A second mutable view while the first lives: storage is shared with it.
    EXPECT_EQ(a.view_mut<double>().error().code(), ErrorCode::kNotExclusive);
    // Copying the tensor while the view lives makes further writes fail, writing nothing.
    Tensor copy = a;
    EXPECT_EQ(m->set({0, 0}, 9.0).error().code(), ErrorCode::kNotExclusive);
    EXPECT_EQ(m->fill(9.0).error().code(), ErrorCode::kNotExclusive);
    EXPECT_EQ(copy.get<double>({0, 0}).value(), 0.0);
  }
  EXPECT_EQ(a.get<double>({1, 2}).value(), 5.0);
  EXPECT_EQ(a.view_mut<float>().error().code(), ErrorCode::kDTypeMismatch);
  Tensor view = a.slice(1, 0, 2).value();
  EXPECT_EQ(a.view_mut<double>().error().code(), ErrorCode::kNotExclusive);
  // Once the source handle is gone, the view owns the storage alone and may write.
  a = Tensor();
  auto vm = view.view_mut<double>();
  ASSERT_TRUE(vm.has_value());
  ASSERT_TRUE(vm->fill(1.5).has_value());
  EXPECT_EQ(view.get<double>({1, 1}).value(), 1.5);
  // Broadcast (aliasing) views cannot be written.
  Tensor b = Tensor::zeros(DType::kF64, {3}).value().broadcast_to({2, 3}).value();
  EXPECT_EQ(b.view_mut<double>().error().code(), ErrorCode::kIncompatibleLayout);
  EXPECT_EQ(Tensor().view_mut<double>().error().code(), ErrorCode::kInvalidArgument);
}

TEST(Mutation, CopyFromChecksShapeBeforeWriting) {
  Tensor dst = Tensor::zeros(DType::kI64, {2, 3}).value();
  TypedTensor<int64_t> src = TypedTensor<int64_t>::arange(6).value().reshape({3, 2}).value();
  {
    auto m = dst.view_mut<int64_t>().value();
    auto bad = m.copy_from(src);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code(), ErrorCode::kShapeMismatch);
  }
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(dst.get<int64_t>({i, j}).value(), 0);
  {
    auto m = dst.view_mut<int64_t>().value();
    ASSERT_TRUE(m.copy_from(src.transpose().value()).has_value());
  }
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(dst.get<int64_t>({i, j}).value(), src.get({j, i}).value());
  // Writing into a strided (flipped) destination.
  Tensor d2 = Tensor::zeros(DType::kI64, {6}).value().flip(0).value();
  auto m2 = d2.view_mut<int64_t>().value();
  ASSERT_TRUE(m2.copy_from(TypedTensor<int64_t>::arange(6).value()).has_value());
  EXPECT_EQ(d2.get<int64_t>({0}).value(), 0);
  EXPECT_EQ(static_cast<const int64_t*>(d2.storage()->data())[0], 5);
}

TEST(Print, ShowsHeaderRowsAndTruncates) {
  Tensor a = Tensor::from_row_major<int32_t>({2, 3}, std::vector<int32_t>{1, 2, 3, 4, 5, 6}).value();
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(),
            "Tensor(shape=[2, 3], dtype=i32, strides=[1, 2], storage=plain, placement=cpu)\n[[1, 2, 3],\n [4, 5, 6]]");
  Tensor big = Tensor::arange(DType::kF64, 5000).value();
  const std::string s = big.to_string();
  EXPECT_NE(s.find("[0, 1, 2, ..., 4997, 4998, 4999]"), std::string::npos) << s;
  Tensor z = Tensor::full(DType::kC64, {}, c128(1.5, -2)).value();
  EXPECT_NE(z.to_string().find("1.5-2i"), std::string::npos);
  EXPECT_NE(Tensor::zeros(DType::kBool, {0, 3}).value().to_string().find("[]"), std::string::npos);
  EXPECT_NE(Tensor::zeros(DType::kBool, {2}).value().to_string().find("[false, false]"), std::string::npos);
  EXPECT_EQ(Tensor().to_string(), "Tensor(null)");
}

}  // namespace
}  // namespace tenferro

namespace tenferro {
namespace {

TEST(Construct, EmptyTensorsWithHugeExtentsAreValid) {
  const int64_t big = int64_t{1} << 40;
  Tensor e = Tensor::zeros(DType::kF64, {big, big, 0}).value();
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.to_string().find("[]") != std::string::npos, true);
  EXPECT_EQ(e.permute({2, 1, 0}).value().numel(), 0);
  EXPECT_EQ(e.contiguous().value().numel(), 0);
  EXPECT_EQ(e.reshape({0, 5}).value().shape(), (Shape{0, 5}));
  for (int64_t axis = 0; axis < 2; ++axis) {
    Tensor s = e.select(axis, big - 1).value();
    EXPECT_EQ(s.offset(), 0) << "empty views keep their offset";
    EXPECT_EQ(e.flip(axis).value().offset(), 0);
    EXPECT_EQ(e.slice(axis, big - 1, -1, -3).value().offset(), 0);
  }
  EXPECT_EQ(e.diagonal({0, 1}).value().numel(), 0);
  EXPECT_EQ(export_host(Tensor(e)).value().byte_size, 0);
}

}  // namespace
}  // namespace tenferro
