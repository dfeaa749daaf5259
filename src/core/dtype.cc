#include "tenferro/core/dtype.h"

namespace tenferro {

std::string_view dtype_name(DType d) noexcept {
  switch (d) {
    case DType::kBool: return "bool";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kC64: return "c64";
    case DType::kC128: return "c128";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"bool", DType::kBool},      {"i32", DType::kI32},         {"int32", DType::kI32},
      {"i64", DType::kI64},        {"int64", DType::kI64},       {"f32", DType::kF32},
      {"float32", DType::kF32},    {"f64", DType::kF64},         {"float64", DType::kF64},
      {"c64", DType::kC64},        {"complex64", DType::kC64},   {"c128", DType::kC128},
      {"complex128", DType::kC128}};
  for (const Alias& a : kAliases) {
    if (a.name == name) return a.dtype;
  }
  return std::nullopt;
}

}  // namespace tenferro
