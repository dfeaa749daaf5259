#include "tenferro/core/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace tenferro {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return usage_error(ErrorCode::kOutOfRange, "parse_positive", "value " + std::to_string(v) + " <= 0");
  return v;
}

Result<int> doubled(int v) {
  TENFERRO_TRY(int x, parse_positive(v));
  return 2 * x;
}

Result<void> check_even(int v) {
  if (v % 2 != 0) return usage_error(ErrorCode::kInvalidArgument, "check_even", "odd");
  return ok();
}

Result<int> chain(int v) {
  TENFERRO_TRY_VOID(check_even(v));
  return v / 2;
}

TEST(Result, HoldsValueOrError) {
  Result<int> a = 5;
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, 5);
  EXPECT_EQ(a.value(), 5);
  Result<int> b = parse_positive(-1);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(b.error().stage(), ErrorStage::kUsage);
  EXPECT_EQ(b.error().op(), "parse_positive");
  EXPECT_NE(b.error().message().find("-1"), std::string::npos);
  EXPECT_EQ(b.value_or(7), 7);
}

TEST(Result, TryPropagatesErrorsAndValues) {
  EXPECT_EQ(doubled(4).value(), 8);
  auto e = doubled(0);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().op(), "parse_positive");
  EXPECT_EQ(chain(6).value(), 3);
  EXPECT_EQ(chain(5).error().code(), ErrorCode::kInvalidArgument);
}

TEST(Result, ValueOfErrorThrowsException) {
  Result<int> b = parse_positive(0);
  try {
    (void)b.value();
    FAIL() << "expected an exception";
  } catch (const Exception& ex) {
    EXPECT_EQ(ex.error().code(), ErrorCode::kOutOfRange);
    EXPECT_NE(std::string(ex.what()).find("usage/out_of_range in parse_positive"), std::string::npos);
  }
  Result<void> v = check_even(3);
  EXPECT_THROW(v.value(), Exception);
  EXPECT_NO_THROW(check_even(2).value());
}

TEST(Result, AndThenAndTransform) {
  auto r = parse_positive(3).and_then([](int v) { return parse_positive(v - 5); });
  EXPECT_FALSE(r);
  auto t = parse_positive(3).transform([](int v) { return std::to_string(v); });
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, "3");
  auto te = parse_positive(-3).transform([](int v) { return v * 1.5; });
  EXPECT_FALSE(te);
  EXPECT_EQ(te.error().op(), "parse_positive");
  Result<void> ok_void;
  auto after = ok_void.and_then([] { return parse_positive(1); });
  EXPECT_EQ(after.value(), 1);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(4);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 4);
}

TEST(Error, CauseChainIsPrinted) {
  Error inner = usage_error(ErrorCode::kIo, "read", "file x.npy missing");
  Error outer = Error(ErrorStage::kPrepare, ErrorCode::kInvalidArgument, "load", "bad input").with_cause(inner);
  ASSERT_NE(outer.cause(), nullptr);
  EXPECT_EQ(outer.cause()->code(), ErrorCode::kIo);
  EXPECT_EQ(outer.to_string(),
            "prepare/invalid_argument in load: bad input\n  caused by: usage/io in read: file x.npy missing");
  EXPECT_EQ(inner.cause(), nullptr);
}

TEST(Error, NamesAreStable) {
  EXPECT_EQ(error_stage_name(ErrorStage::kCompletion), "completion");
  EXPECT_EQ(error_code_name(ErrorCode::kNotExclusive), "not_exclusive");
  EXPECT_EQ(error_code_name(ErrorCode::kIncompatibleLayout), "incompatible_layout");
}

}  // namespace
}  // namespace tenferro
