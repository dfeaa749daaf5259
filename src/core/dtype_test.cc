#include "tenferro/core/dtype.h"

#include <gtest/gtest.h>

namespace tenferro {
namespace {

TEST(DType, SizesMatchCppTypes) {
  for (DType d : kAllDTypes) {
    const int64_t size = visit_dtype(d, []<class T>() { return static_cast<int64_t>(sizeof(T)); });
    const int64_t align = visit_dtype(d, []<class T>() { return static_cast<int64_t>(alignof(T)); });
    EXPECT_EQ(dtype_size(d), size) << dtype_name(d);
    EXPECT_EQ(dtype_alignment(d), align) << dtype_name(d);
    const DType back = visit_dtype(d, []<class T>() { return kDTypeOf<T>; });
    EXPECT_EQ(back, d);
  }
}

TEST(DType, NamesRoundTrip) {
  for (DType d : kAllDTypes) {
    auto parsed = parse_dtype(dtype_name(d));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(parse_dtype("complex128"), DType::kC128);
  EXPECT_EQ(parse_dtype("float32"), DType::kF32);
  EXPECT_FALSE(parse_dtype("f16").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
}

TEST(DType, Properties) {
  EXPECT_TRUE(is_complex(DType::kC64));
  EXPECT_FALSE(is_complex(DType::kF64));
  EXPECT_EQ(real_dtype(DType::kC64), DType::kF32);
  EXPECT_EQ(real_dtype(DType::kC128), DType::kF64);
  EXPECT_EQ(real_dtype(DType::kI32), DType::kI32);
  EXPECT_EQ(complex_dtype(DType::kF64), DType::kC128);
  EXPECT_FALSE(complex_dtype(DType::kI64).has_value());
  EXPECT_TRUE(is_inexact(DType::kF32));
  EXPECT_FALSE(is_inexact(DType::kBool));
  EXPECT_TRUE(is_integral(DType::kI64));
  static_assert(std::is_same_v<ScalarOf<DType::kC64>, c64>);
  static_assert(std::is_same_v<ScalarTraits<c128>::Real, double>);
  static_assert(PresetScalar<float> && !PresetScalar<short>);
}

}  // namespace
}  // namespace tenferro
