// The README's usage example, compiled and checked so the documentation stays true.
#include <gtest/gtest.h>

#include "tenferro/tensor/tensor.h"

namespace readme {
using namespace tenferro;

// --- begin README example (kept identical to README.md) ---
Result<double> example() {
  // Rows [1, 2, 3] and [4, 5, 6]; from_col_major adopts the vector without copying.
  TENFERRO_TRY(Tensor m, Tensor::from_col_major<double>({2, 3}, {1, 4, 2, 5, 3, 6}));
  TENFERRO_TRY(Tensor t, m.transpose());          // a view: shares storage, no copy
  TENFERRO_TRY(Tensor rev, t.slice(0, 2, -1, -1));  // rows 2, 1, 0 of the transpose
  return rev.get<double>({0, 1});                 // t[2, 1] = m[1, 2] = 6
}

Result<void> write_example() {
  TENFERRO_TRY(Tensor z, Tensor::zeros(DType::kF64, {2, 2}));
  // Writes need exclusive storage: this fails with not_exclusive while a view exists.
  TENFERRO_TRY(auto w, z.view_mut<double>());
  return w.set({0, 1}, 2.5);
}
// --- end README example ---

TEST(Readme, ExampleComputesWhatItSays) {
  EXPECT_EQ(example().value(), 6.0);
  EXPECT_TRUE(write_example().has_value());
}

}  // namespace readme
