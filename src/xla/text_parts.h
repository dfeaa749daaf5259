#pragma once
// Private to the xla module: the literal writer shared by the emitter and the lowering.

#include <cstdint>
#include <span>
#include <string>

#include "tenferro/core/dtype.h"

namespace tenferro::xla::detail {

/// `dense<...> : tensor<...>` for column-major `bytes` of `dtype` and `shape` (a splat
/// when every element is equal; `dense<>` when there is none).
std::string dense_text(DType dtype, std::span<const int64_t> shape, const uint8_t* bytes);

}  // namespace tenferro::xla::detail
