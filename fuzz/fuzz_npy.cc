// libFuzzer target: the .npy decoder (scripts/fuzz). A decoded tensor re-encodes and
// decodes to the same shape and dtype.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tenferro/tensor/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tenferro;
  auto t = npy_decode(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!t) return 0;
  auto bytes = npy_encode(*t);
  if (!bytes) __builtin_trap();
  auto again = npy_decode(*bytes);
  if (!again || again->shape() != t->shape() || again->dtype() != t->dtype()) __builtin_trap();
  return 0;
}
