// The text side of the StableHLO lowering: types, attribute lists, literals and the
// generic-form op writer (Note [StableHLO text]).

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "tenferro/core/saturating_cast.h"
#include "tenferro/xla/stablehlo.h"
#include "text_parts.h"

namespace tenferro::xla {

// Note [StableHLO text]: every op is written in MLIR's generic form,
//   %3 = "stablehlo.add"(%1, %2) : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
// which every MLIR parser accepts whatever the dialect's custom syntax of the day (the
// pretty forms of StableHLO ops have changed between releases; the generic form and the
// attribute spellings used here — `array<i64: ...>` for dimension lists,
// #stablehlo.dot / #stablehlo.gather / #stablehlo.scatter, #stablehlo<comparison_direction
// LT>, #stablehlo<fft_type FFT> — are those of StableHLO 1.x). SSA values are numbered
// in emission order (%0, %1, ...), block arguments of reduction bodies included, so
// names are unique in the function. Floating-point literals are written as the shortest
// decimal that reads back to the same value, with a '.' as MLIR's float grammar requires;
// infinities and NaNs as their bit patterns (0x7FF0000000000000), which MLIR reads as
// the value with exactly those bits.

namespace {

std::string element_type_text(DType d) {
  switch (d) {
    case DType::kBool: return "i1";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kC64: return "complex<f32>";
    case DType::kC128: return "complex<f64>";
  }
  return "f64";
}

template <class F>
std::string float_text(F x) {
  if (!std::isfinite(x)) {
    char buf[24];
    if constexpr (sizeof(F) == 8) {
      std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(std::bit_cast<uint64_t>(x)));
    } else {
      std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(std::bit_cast<uint32_t>(x)));
    }
    return buf;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  std::string s(buf, r.ptr);
  // MLIR's float literal needs a '.' before any exponent: "1e+300" -> "1.0e+300", "2" -> "2.0".
  if (s.find('.') == std::string::npos) {
    const size_t e = s.find_first_of("eE");
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

std::string pair_text(const std::string& re, const std::string& im) {
  std::string s = "(";
  s.append(re).append(", ").append(im).append(")");
  return s;
}

// Element `i` (column-major position) of `bytes` as literal text.
std::string element_text(DType d, const uint8_t* bytes, int64_t i) {
  const uint8_t* p = bytes + i * dtype_size(d);
  switch (d) {
    case DType::kBool: return *p ? "true" : "false";
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return std::to_string(v);
    }
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return std::to_string(v);
    }
    case DType::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return float_text(v);
    }
    case DType::kF64: {
      double v;
      std::memcpy(&v, p, 8);
      return float_text(v);
    }
    case DType::kC64: {
      float v[2];
      std::memcpy(v, p, 8);
      return pair_text(float_text(v[0]), float_text(v[1]));
    }
    case DType::kC128: {
      double v[2];
      std::memcpy(v, p, 16);
      return pair_text(float_text(v[0]), float_text(v[1]));
    }
  }
  return "0";
}

}  // namespace

std::string type_text(const TensorType& type) {
  std::string s = "tensor<";
  for (int64_t e : type.shape) s.append(std::to_string(e)).append("x");
  return s + element_type_text(type.dtype) + ">";
}

std::string i64_array(std::span<const int64_t> v) {
  std::string s = "array<i64";
  for (size_t i = 0; i < v.size(); ++i) s.append(i ? ", " : ": ").append(std::to_string(v[i]));
  return s + ">";
}

std::string dim_list(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s.append(i ? ", " : "").append(std::to_string(v[i]));
  return s + "]";
}

namespace detail {

std::string dense_text(DType dtype, std::span<const int64_t> shape, const uint8_t* bytes) {
  const std::string suffix = " : " + type_text(TensorType{dtype, {shape.begin(), shape.end()}});
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return "dense<>" + suffix;
  int64_t n = 1;  // a literal's or a tensor's element count: bounded, no overflow
  for (int64_t e : shape) n *= e;
  bool splat = true;
  const auto size = static_cast<size_t>(dtype_size(dtype));
  for (int64_t i = 1; i < n && splat; ++i) splat = std::memcmp(bytes, bytes + i * dtype_size(dtype), size) == 0;
  if (splat) return "dense<" + element_text(dtype, bytes, 0) + ">" + suffix;
  // Row-major nesting over column-major bytes: the odometer runs the last axis fastest.
  const size_t rank = shape.size();
  std::vector<int64_t> col(rank, 1), idx(rank, 0);
  for (size_t k = 1; k < rank; ++k) col[k] = col[k - 1] * shape[k - 1];
  std::string s = "dense<" + std::string(rank, '[');
  for (int64_t count = 0; count < n; ++count) {
    int64_t pos = 0;
    for (size_t k = 0; k < rank; ++k) pos += idx[k] * col[k];
    s += element_text(dtype, bytes, pos);
    // Advance; close and reopen brackets for every axis that wrapped.
    size_t k = rank;
    int closed = 0;
    while (k > 0) {
      --k;
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
      ++closed;
    }
    if (count + 1 < n)
      s += std::string(static_cast<size_t>(closed), ']') + ", " + std::string(static_cast<size_t>(closed), '[');
  }
  return s + std::string(rank, ']') + ">" + suffix;
}

}  // namespace detail

std::string Emitter::fresh() {
  std::string s = "%";
  s += std::to_string(next_++);
  return s;
}

void Emitter::write(const std::string& result_name, std::string_view name, std::span<const HloValue> operands,
                    std::string_view region, std::string_view attrs, const TensorType& result) {
  std::string line = "    " + result_name + " = \"stablehlo." + std::string(name) + "\"(";
  std::string types = "(";
  for (size_t i = 0; i < operands.size(); ++i) {
    line.append(i ? ", " : "").append(operands[i].name);
    types.append(i ? ", " : "").append(type_text(operands[i].type));
  }
  line.append(")").append(region);
  if (!attrs.empty()) line.append(" {").append(attrs).append("}");
  line.append(" : ").append(types).append(") -> ").append(type_text(result)).append("\n");
  body_ += line;
}

HloValue Emitter::op(std::string_view name, std::span<const HloValue> operands, std::string_view attrs,
                     const TensorType& result) {
  HloValue r{fresh(), result};
  write(r.name, name, operands, "", attrs, result);
  return r;
}

HloValue Emitter::splat(const TensorType& type, c128 value) {
  alignas(16) uint8_t b[16] = {};
  switch (type.dtype) {
    case DType::kBool: b[0] = value != c128{} ? 1 : 0; break;
    case DType::kI32: {
      const auto v = saturating_cast<int32_t>(value.real());
      std::memcpy(b, &v, 4);
      break;
    }
    case DType::kI64: {
      const auto v = saturating_cast<int64_t>(value.real());
      std::memcpy(b, &v, 8);
      break;
    }
    case DType::kF32: {
      const auto v = static_cast<float>(value.real());
      std::memcpy(b, &v, 4);
      break;
    }
    case DType::kF64: {
      const double v = value.real();
      std::memcpy(b, &v, 8);
      break;
    }
    case DType::kC64: {
      const float v[2] = {static_cast<float>(value.real()), static_cast<float>(value.imag())};
      std::memcpy(b, v, 8);
      break;
    }
    case DType::kC128: {
      const double v[2] = {value.real(), value.imag()};
      std::memcpy(b, v, 16);
      break;
    }
  }
  return literal(TensorType{type.dtype, {}}, b, type.shape);
}

HloValue Emitter::literal(const TensorType& type, const uint8_t* bytes, std::span<const int64_t> splat_shape) {
  if (splat_shape.empty() || !type.shape.empty()) {
    return op("constant", {}, "value = " + detail::dense_text(type.dtype, type.shape, bytes), type);
  }
  // One element repeated over splat_shape: a splat constant of that shape.
  const TensorType t{type.dtype, {splat_shape.begin(), splat_shape.end()}};
  const std::string one = detail::dense_text(type.dtype, {}, bytes);
  return op("constant", {}, "value = " + one.substr(0, one.find(" : ")) + " : " + type_text(t), t);
}

HloValue Emitter::transpose(const HloValue& x, std::span<const int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  TensorType t{x.type.dtype, {}};
  for (int64_t p : perm) t.shape.push_back(x.type.shape[static_cast<size_t>(p)]);
  return op("transpose", {x}, "permutation = " + i64_array(perm), t);
}

HloValue Emitter::convert(const HloValue& x, DType dtype) {
  const DType from = x.type.dtype;
  if (from == dtype) return x;
  const TensorType to{dtype, x.type.shape};
  if (dtype == DType::kBool) {
    // `!= 0`, defined for every element type (complex compares eq/ne only).
    const HloValue zero = splat(x.type, c128{});
    return op("compare", {x, zero}, "comparison_direction = #stablehlo<comparison_direction NE>", to);
  }
  if (is_complex(from) && !is_complex(dtype)) {
    // Keep the real part (StableHLO leaves complex -> real conversion unspecified).
    const HloValue re = op("real", {x}, "", TensorType{real_dtype(from), x.type.shape});
    return convert(re, dtype);
  }
  return op("convert", {x}, "", to);
}

HloValue Emitter::with_body(std::string_view name, std::span<const HloValue> operands, std::string_view body,
                            DType element, std::string_view attrs, const TensorType& result) {
  const std::string r = fresh();
  const std::string a = fresh(), b = fresh(), c = fresh();
  const std::string scalar = type_text(TensorType{element, {}});
  std::string region = " ({\n";
  region += "    ^bb0(" + a + ": " + scalar + ", " + b + ": " + scalar + "):\n";
  region += "      " + c + " = \"stablehlo." + std::string(body) + "\"(" + a + ", " + b + ") : (" + scalar + ", " +
            scalar + ") -> " + scalar + "\n";
  region += "      \"stablehlo.return\"(" + c + ") : (" + scalar + ") -> ()\n";
  region += "    })";
  write(r, name, operands, region, attrs, result);
  return HloValue{r, result};
}

HloValue Emitter::sort_positions(const HloValue& x, int64_t dimension) {
  const TensorType positions{DType::kI64, x.type.shape};
  const HloValue iota = op("iota", {}, "iota_dimension = " + std::to_string(dimension) + " : i64", positions);
  const std::string r = fresh();
  const std::string a = fresh(), b = fresh(), ia = fresh(), ib = fresh();
  const std::string scalar = type_text(TensorType{x.type.dtype, {}}), index = type_text(TensorType{DType::kI64, {}});
  const std::string flag = type_text(TensorType{DType::kBool, {}});
  std::string region = " ({\n    ^bb0(" + a + ": " + scalar + ", " + b + ": " + scalar + ", " + ia + ": " + index +
                       ", " + ib + ": " + index + "):\n";
  // One scalar op of the comparator: operands of `arg_type`, a result of `result_type`.
  auto line = [&](std::string_view name, std::initializer_list<std::string> args, std::string_view attrs,
                  std::string_view arg_type, std::string_view result_type) {
    const std::string v = fresh();
    region += "      " + v + " = \"stablehlo." + std::string(name) + "\"(";
    std::string types;
    for (const std::string& s : args) {
      region.append(types.empty() ? "" : ", ").append(s);
      types.append(types.empty() ? "" : ", ").append(arg_type);
    }
    region += ")";
    if (!attrs.empty()) region.append(" {").append(attrs).append("}");
    region += " : (" + types + ") -> " + std::string(result_type) + "\n";
    return v;
  };
  auto compare = [&](const char* dir, const std::string& u, const std::string& v, std::string_view type) {
    return line("compare", {u, v}, std::string("comparison_direction = #stablehlo<comparison_direction ") + dir + ">",
                type, flag);
  };
  auto logic = [&](std::string_view name, const std::string& u, const std::string& v) {
    return line(name, {u, v}, "", flag, flag);
  };
  // numpy's order (numpy_less in core/order.h). One statement per op, so the text is the
  // same whatever order a compiler evaluates call arguments in.
  std::string less;
  if (is_complex(x.type.dtype)) {
    // The NaN class 2 isnan(re) + isnan(im) orders first; within a class, (re, im)
    // lexicographically, or im alone where re is NaN.
    const std::string part = type_text(TensorType{real_dtype(x.type.dtype), {}});
    const std::string count = type_text(TensorType{DType::kI32, {}});
    const std::string ra = line("real", {a}, "", scalar, part);
    const std::string im_a = line("imag", {a}, "", scalar, part);
    const std::string rb = line("real", {b}, "", scalar, part);
    const std::string im_b = line("imag", {b}, "", scalar, part);
    auto nan_class = [&](const std::string& re, const std::string& im) {
      const std::string re_nan = compare("NE", re, re, part);
      const std::string im_nan = compare("NE", im, im, part);
      const std::string re_count = line("convert", {re_nan}, "", flag, count);
      const std::string im_count = line("convert", {im_nan}, "", flag, count);
      const std::string twice = line("add", {re_count, re_count}, "", count, count);
      return line("add", {twice, im_count}, "", count, count);
    };
    const std::string ca = nan_class(ra, im_a);
    const std::string cb = nan_class(rb, im_b);
    const std::string re_less = compare("LT", ra, rb, part);
    const std::string re_equal = compare("EQ", ra, rb, part);
    const std::string im_less = compare("LT", im_a, im_b, part);
    const std::string lex = logic("or", re_less, logic("and", re_equal, im_less));
    const std::string re_nan = compare("NE", ra, ra, part);
    const std::string within = logic("or", lex, logic("and", re_nan, im_less));
    const std::string class_less = compare("LT", ca, cb, count);
    const std::string same_class = compare("EQ", ca, cb, count);
    less = logic("or", class_less, logic("and", same_class, within));
  } else {
    less = compare("LT", a, b, scalar);
    if (is_inexact(x.type.dtype)) {  // NaN last: a < b, or a is a number and b is NaN
      const std::string a_nan = compare("NE", a, a, scalar);
      const std::string a_num = line("not", {a_nan}, "", flag, flag);
      const std::string b_nan = compare("NE", b, b, scalar);
      less = logic("or", less, logic("and", a_num, b_nan));
    }
  }
  region += "      \"stablehlo.return\"(" + less + ") : (" + flag + ") -> ()\n    })";
  const std::string xt = type_text(x.type), pt = type_text(positions);
  body_ += "    " + r + ":2 = \"stablehlo.sort\"(" + x.name + ", " + iota.name + ")" + region +
           " {dimension = " + std::to_string(dimension) + " : i64, is_stable = true} : (" + xt + ", " + pt + ") -> (" +
           xt + ", " + pt + ")\n";
  return HloValue{r + "#1", positions};
}

Result<void> StableHloLowerings::add(std::string family_id, ExtensionLowering lowering) {
  if (lowerings_.count(family_id)) {
    return usage_error(ErrorCode::kInvalidArgument, "StableHloLowerings::add",
                       "family '" + family_id + "' already has a lowering");
  }
  lowerings_.emplace(std::move(family_id), std::move(lowering));
  return ok();
}

const ExtensionLowering* StableHloLowerings::find(std::string_view family_id) const {
  const auto it = lowerings_.find(family_id);
  return it == lowerings_.end() ? nullptr : &it->second;
}

}  // namespace tenferro::xla
