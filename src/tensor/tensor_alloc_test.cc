// Views of rank <= 8 allocate no metadata (Note [View metadata without allocation]).
// This executable replaces the global operator new to count heap allocations.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tenferro/tensor/tensor.h"

#include "tenferro/test_support/alloc_counter.h"

namespace tenferro {
namespace {

using test_support::allocations;

// Runs every view op on `t` (rank r >= 2) and returns the number of allocations made.
int64_t count_view_allocations(const Tensor& t, int64_t& checksum) {
  const int64_t r = t.rank();
  int64_t perm[16];
  for (int64_t i = 0; i < r; ++i) perm[i] = r - 1 - i;
  int64_t bshape[16];
  bshape[0] = 2;
  for (int64_t i = 0; i < r; ++i) bshape[i + 1] = t.dim(i);
  const int64_t before = allocations();
  {
    auto p = t.permute(Dims(std::span<const int64_t>(perm, static_cast<size_t>(r))));
    auto tr = t.transpose();
    auto s = t.slice(0, 1, -1, -1);
    auto sel = t.select(1, 1);
    auto d = t.diagonal({0, 1});
    auto f = t.flip(r - 1);
    auto rs = t.reshape({-1});
    auto rs2 = t.reshape({2, -1});
    auto b = t.select(0, 0).value().broadcast_to(Dims(std::span<const int64_t>(bshape + 1, static_cast<size_t>(r))));
    auto copy = t;  // handle copy: shared_ptr increment + inline metadata
    checksum += p->rank() + tr->rank() + s->numel() + sel->rank() + d->rank() + f->offset() + rs->numel() +
                rs2->numel() + b->rank() + copy.rank();
  }
  return allocations() - before;
}

TEST(ViewAllocations, NoneUpToRank8) {
  int64_t checksum = 0;
  for (int64_t rank = 2; rank <= 8; ++rank) {
    Shape shape(static_cast<size_t>(rank), 2);
    Tensor t = Tensor::arange(DType::kF64, int64_t{1} << rank).value().reshape(shape).value();
    EXPECT_EQ(count_view_allocations(t, checksum), 0) << "rank " << rank;
  }
  Tensor z = Tensor::zeros(DType::kC128, {2, 3, 4, 2, 2, 2, 2, 2}).value();
  const int64_t before = allocations();
  auto re = z.real();
  auto im = z.imag();
  auto count = z.numel();
  EXPECT_EQ(allocations() - before, 0);
  EXPECT_EQ(re->rank() + im->rank(), 16);
  EXPECT_EQ(count, 768);
  EXPECT_GT(checksum, 0);
}

TEST(ViewAllocations, RanksAboveEightWorkAndSpill) {
  int64_t checksum = 0;
  for (int64_t rank = 9; rank <= 12; ++rank) {
    Shape shape(static_cast<size_t>(rank), 2);
    Tensor t = Tensor::arange(DType::kF64, int64_t{1} << rank).value().reshape(shape).value();
    EXPECT_GT(count_view_allocations(t, checksum), 0) << "rank " << rank << " spills to the heap";
    // And the views are right: the reversed permutation maps index i to reversed i.
    Tensor p = t.transpose().value();
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0), rev(static_cast<size_t>(rank), 0);
    idx[0] = 1;
    rev[static_cast<size_t>(rank - 1)] = 1;
    EXPECT_EQ(p.get<double>(idx).value(), t.get<double>(rev).value());
    EXPECT_EQ(t.get<double>(rev).value(), static_cast<double>(int64_t{1} << (rank - 1)));
  }
}

}  // namespace
}  // namespace tenferro
