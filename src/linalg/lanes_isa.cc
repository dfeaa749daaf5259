// The item-lane kernels at one ISA level (Note [Lane kernels per ISA] in lanes.h):
// compiled three times through generated wrappers (tenferro_isa_sources).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common.h"
#include "lanes.h"
#include "small.h"
#include "tenferro/core/isa_region.h"

TENFERRO_ISA_BEGIN

#include "small_lanes.h"

namespace tenferro::linalg::detail::TENFERRO_ISA_NS {

#define TENFERRO_LANES_INSTANTIATE(T)                                                                                  \
  template void svd_items_lanes<T>(const Tensor&, const Batch&, int64_t, int64_t, int64_t, bool, Tensor&, Tensor*,     \
                                   Tensor*, Failures&);                                                                \
  template void eigh_items_lanes<T>(const Tensor&, const Batch&, int64_t, int64_t, int64_t, bool, Tensor&, Tensor*,    \
                                    Failures&);                                                                        \
  template void qr_items_lanes<T>(const Tensor&, const Batch&, int64_t, int64_t, int64_t, Tensor*, Tensor&);          \
  template void cholesky_lanes<T>(const Tensor&, const Batch&, int64_t, int64_t, int64_t, bool, Tensor&, Failures&);  \
  template void solve_items_lanes<T>(const Tensor&, const Tensor*, const Batch&, int64_t, int64_t, int64_t, int64_t,  \
                                     Tensor&, Failures&);                                                              \
  template void det_items_lanes<T>(const Tensor&, const Batch&, int64_t, int64_t, int64_t,                             \
                                   FunctionRef<void(int64_t, const T*, bool)>);
TENFERRO_LANES_INSTANTIATE(float)
TENFERRO_LANES_INSTANTIATE(double)
#undef TENFERRO_LANES_INSTANTIATE

}  // namespace tenferro::linalg::detail::TENFERRO_ISA_NS

TENFERRO_ISA_END
