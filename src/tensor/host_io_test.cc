#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro {
namespace {

TEST(HostExport, ZeroCopyWhenExclusiveAndCompact) {
  Tensor t = Tensor::arange(DType::kF64, 12).value().reshape({3, 4}).value();
  const void* before = t.storage()->data();
  HostExport e = export_host(std::move(t)).value();
  EXPECT_EQ(e.transfer, HostTransfer::kZeroCopy);
  EXPECT_EQ(e.data, before);
  EXPECT_EQ(e.byte_size, 96);
  EXPECT_EQ(e.shape, (Shape{3, 4}));
  static_cast<double*>(e.data)[5] = -1.0;  // the buffer is the caller's to mutate
  EXPECT_EQ(static_cast<double*>(e.data)[5], -1.0);
}

TEST(HostExport, ExactlyOneCopyOtherwise) {
  Tensor shared = Tensor::arange(DType::kI32, 6).value();
  Tensor other = shared;
  HostExport e1 = export_host(Tensor(shared)).value();
  EXPECT_EQ(e1.transfer, HostTransfer::kCopied);
  EXPECT_NE(e1.data, other.storage()->data());
  static_cast<int32_t*>(e1.data)[0] = 100;
  EXPECT_EQ(other.get<int32_t>({0}).value(), 0) << "the copy is private";

  Tensor strided = Tensor::arange(DType::kC64, 10).value().slice(0, 9, -1, -2).value();
  HostExport e2 = export_host(std::move(strided)).value();
  EXPECT_EQ(e2.transfer, HostTransfer::kCopied);
  const c64* p = static_cast<const c64*>(e2.data);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p[i], c64(static_cast<float>(9 - 2 * i), 0));

  const std::vector<double> ro{1, 2};
  Tensor readonly = Tensor::wrap(DType::kF64, {2}, const_cast<double*>(ro.data()), 16, nullptr, false).value();
  EXPECT_EQ(export_host(std::move(readonly)).value().transfer, HostTransfer::kCopied);
  EXPECT_EQ(export_host(Tensor()).error().code(), ErrorCode::kInvalidArgument);
}

TEST(HostImport, ZeroCopyWhenAlignedAndRowMajorAsStrides) {
  auto buf = std::make_shared<std::vector<double>>(std::vector<double>{1, 2, 3, 4, 5, 6});
  HostImport im = import_host(DType::kF64, {2, 3}, HostOrder::kRowMajor, buf->data(), 48, buf).value();
  EXPECT_EQ(im.transfer, HostTransfer::kZeroCopy);
  EXPECT_EQ(im.tensor.strides(), (Strides{3, 1}));
  EXPECT_EQ(im.tensor.get<double>({1, 0}).value(), 4.0);
  {
    auto m = im.tensor.view_mut<double>().value();
    ASSERT_TRUE(m.set({0, 1}, 20.0).has_value());
  }
  EXPECT_EQ((*buf)[1], 20.0) << "zero-copy import writes through";
  HostImport col = import_host(DType::kF64, {2, 3}, HostOrder::kColMajor, buf->data(), 48, buf).value();
  EXPECT_EQ(col.tensor.get<double>({1, 0}).value(), 20.0);
}

TEST(HostImport, MisalignedDataIsCopiedOnce) {
  std::vector<unsigned char> raw(8 * 4 + 1);
  const double vals[4] = {1.5, -2.5, 3.5, 4.5};
  std::memcpy(raw.data() + 1, vals, sizeof vals);
  HostImport im = import_host(DType::kF64, {2, 2}, HostOrder::kColMajor, raw.data() + 1, 32, nullptr).value();
  EXPECT_EQ(im.transfer, HostTransfer::kCopied);
  EXPECT_EQ(im.tensor.get<double>({1, 1}).value(), 4.5);
  EXPECT_EQ(im.tensor.get<double>({1, 0}).value(), -2.5);
  EXPECT_EQ(import_host(DType::kF64, {2, 3}, HostOrder::kColMajor, raw.data(), 32, nullptr).error().code(),
            ErrorCode::kInvalidLayout);
  EXPECT_EQ(import_host(DType::kF64, {-1}, HostOrder::kColMajor, raw.data(), 32, nullptr).error().code(),
            ErrorCode::kInvalidShape);
  EXPECT_EQ(import_host(DType::kF64, {1}, HostOrder::kColMajor, nullptr, 8, nullptr).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Tensor::wrap(DType::kF64, {2}, raw.data() + 1, 16, nullptr).error().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro
