#include "tenferro/program/interpreter.h"
#include "tenferro/core/complex_math.h"
#include "tenferro/core/order.h"
#include "tenferro/core/saturating_cast.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "tenferro/program/text.h"

namespace tenferro::program {

// Note [Reference interpreter]: every value is a compact column-major host buffer of its
// exact element type (bool as one byte 0/1). Each op is a loop over the result's
// multi-indices that reads operands through explicit index arithmetic, written for
// clarity, not speed. Integer arithmetic wraps (two's complement) instead of invoking
// undefined behaviour; float -> integer conversion truncates toward zero and saturates
// (NaN -> 0). Result shapes are computed from the operands and checked against the
// program's inferred types, so inference and evaluation check each other.

namespace {

std::string s(int64_t v) { return std::to_string(v); }

template <class T>
using Vec = std::vector<T>;
using Data = std::variant<Vec<uint8_t>, Vec<int32_t>, Vec<int64_t>, Vec<float>, Vec<double>, Vec<c64>, Vec<c128>>;

struct Buf {
  DType dtype = DType::kF64;
  std::vector<int64_t> shape;
  Data data;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
  }
};

template <class T> struct Elem { using type = T; };
template <> struct Elem<bool> { using type = uint8_t; };

Data make_data(DType d, int64_t n) {
  const auto count = static_cast<size_t>(n);
  switch (d) {
    case DType::kBool: return Vec<uint8_t>(count);
    case DType::kI32: return Vec<int32_t>(count);
    case DType::kI64: return Vec<int64_t>(count);
    case DType::kF32: return Vec<float>(count);
    case DType::kF64: return Vec<double>(count);
    case DType::kC64: return Vec<c64>(count);
    case DType::kC128: return Vec<c128>(count);
  }
  return Vec<double>(count);
}

// Note [Interpreter allocation]: the reference interpreter keeps values in std::vector;
// a size that overflows, or an allocation that fails, throws std::bad_alloc here and is
// turned into a typed kAllocationFailed error at interpret()'s boundary.
Buf make(DType d, std::vector<int64_t> shape) {
  Buf b;
  b.dtype = d;
  b.shape = std::move(shape);
  int64_t n = 1, bytes = 0;
  for (int64_t e : b.shape) {
    if (e < 0 || __builtin_mul_overflow(n, e, &n)) throw std::bad_alloc();
  }
  if (__builtin_mul_overflow(n, dtype_size(d), &bytes)) throw std::bad_alloc();
  b.data = make_data(d, n);
  return b;
}

std::vector<int64_t> col_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = 1; i < shape.size(); ++i) st[i] = st[i - 1] * shape[i - 1];
  return st;
}
void unravel(int64_t lin, const std::vector<int64_t>& shape, std::vector<int64_t>& idx) {
  idx.resize(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    idx[i] = shape[i] == 0 ? 0 : lin % shape[i];
    lin = shape[i] == 0 ? 0 : lin / shape[i];
  }
}
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t p = 0;
  for (size_t i = 0; i < idx.size(); ++i) p += idx[i] * strides[i];
  return p;
}

Error runtime_error(std::string_view op, ErrorCode code, std::string msg) {
  return Error(ErrorStage::kCompletion, code, std::string(op), std::move(msg));
}

// ---- conversions between Tensor and Buf

Result<Buf> from_tensor(const Tensor& t) {
  TENFERRO_TRY(Tensor c, t.to_col_major());
  std::vector<int64_t> shape(c.shape().begin(), c.shape().end());
  Buf b = make(c.dtype(), shape);
  const int64_t n = b.numel();
  const auto* base = static_cast<const uint8_t*>(c.storage()->data()) + c.offset() * c.element_size();
  std::visit(
      [&](auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if (n > 0) std::memcpy(v.data(), base, static_cast<size_t>(n) * sizeof(T));
      },
      b.data);
  if (b.dtype == DType::kBool) {
    for (auto& x : std::get<Vec<uint8_t>>(b.data)) x = x != 0 ? 1 : 0;
  }
  return b;
}

Result<Tensor> to_tensor(const Buf& b) {
  TENFERRO_TRY(Tensor t, Tensor::uninitialized(b.dtype, Dims(b.shape)));
  const int64_t n = b.numel();
  auto* dst = static_cast<uint8_t*>(t.storage()->data());
  std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if (n > 0) std::memcpy(dst, v.data(), static_cast<size_t>(n) * sizeof(T));
      },
      b.data);
  return t;
}

// ---- scalar semantics

template <class T> constexpr bool kIsComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;
template <class T> constexpr bool kIsInt = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
template <class T> constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

// Converts one value between element types (Note [Reference interpreter]).
template <class To, class From>
To convert_value(From x) {
  if constexpr (std::is_same_v<To, uint8_t>) {  // bool
    return x != From{} ? 1 : 0;
  } else if constexpr (kIsComplex<From>) {
    if constexpr (kIsComplex<To>) {
      return To(static_cast<typename To::value_type>(x.real()), static_cast<typename To::value_type>(x.imag()));
    } else {
      return convert_value<To>(x.real());
    }
  } else if constexpr (kIsComplex<To>) {
    return To(static_cast<typename To::value_type>(x), 0);
  } else if constexpr (kIsInt<To> && kIsFloat<From>) {
    return saturating_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

template <class T>
bool is_nan(T x) {
  if constexpr (kIsFloat<T>) return std::isnan(x);
  return false;
}

template <class T>
Result<T> binary(OpCode code, T a, T b) {
  switch (code) {
    case OpCode::kAdd:
      if constexpr (kIsInt<T>) return wrap_add(a, b);
      else if constexpr (std::is_same_v<T, uint8_t>) return T{0};
      else return a + b;
    case OpCode::kSub:
      if constexpr (kIsInt<T>) return wrap_sub(a, b);
      else if constexpr (std::is_same_v<T, uint8_t>) return T{0};
      else return a - b;
    case OpCode::kMul:
      if constexpr (kIsInt<T>) return wrap_mul(a, b);
      else if constexpr (std::is_same_v<T, uint8_t>) return T{0};
      else return a * b;
    case OpCode::kDiv:
      if constexpr (kIsInt<T>) {
        if (b == 0) return runtime_error("div", ErrorCode::kInvalidArgument, "integer division by zero");
        if (b == -1) return wrap_sub(T{0}, a);
        return static_cast<T>(a / b);
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        return T{0};
      } else {
        return a / b;
      }
    case OpCode::kRem:
      if constexpr (kIsInt<T>) {
        if (b == 0) return runtime_error("rem", ErrorCode::kInvalidArgument, "integer remainder by zero");
        if (b == -1) return T{0};
        return static_cast<T>(a % b);
      } else if constexpr (kIsFloat<T>) {
        return std::fmod(a, b);
      } else {
        return T{};
      }
    case OpCode::kPow:
      if constexpr (kIsInt<T>) {
        if (b < 0) return runtime_error("pow", ErrorCode::kInvalidArgument, "negative integer exponent " + s(static_cast<int64_t>(b)));
        T r = 1, base = a;
        for (T e = b; e > 0; e = static_cast<T>(e >> 1)) {
          if (e & 1) r = wrap_mul(r, base);
          base = wrap_mul(base, base);
        }
        return r;
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        return T{0};
      } else if constexpr (kIsComplex<T>) {
        return complex_pow(a, b);
      } else {
        return std::pow(a, b);
      }
    case OpCode::kMax:
    case OpCode::kMin:
      if constexpr (kIsComplex<T>) {
        return T{};
      } else {
        if (is_nan(a)) return a;
        if (is_nan(b)) return b;
        return code == OpCode::kMax ? std::max(a, b) : std::min(a, b);
      }
    case OpCode::kAtan2:
      if constexpr (kIsFloat<T>) {
        return std::atan2(a, b);
      } else {
        return T{};
      }
    default: break;
  }
  return runtime_error(op_name(code), ErrorCode::kInternal, "not a binary op");
}

template <class T>
bool compare(CompareDirection d, T a, T b) {
  if constexpr (kIsComplex<T>) {
    return d == CompareDirection::kEq ? a == b : a != b;
  } else {
    switch (d) {
      case CompareDirection::kEq: return a == b;
      case CompareDirection::kNe: return a != b;
      case CompareDirection::kLt: return a < b;
      case CompareDirection::kLe: return a <= b;
      case CompareDirection::kGt: return a > b;
      case CompareDirection::kGe: return a >= b;
    }
    return false;
  }
}

// Unary ops whose result has the operand's element type.
template <class T>
T unary_same(OpCode code, T x) {
  if constexpr (kIsInt<T>) {
    switch (code) {
      case OpCode::kNeg: return wrap_sub(T{0}, x);
      case OpCode::kSign: return static_cast<T>((x > 0) - (x < 0));
      default: return x;  // conj
    }
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return x;
  } else {
    using R = std::conditional_t<kIsComplex<T>, typename Elem<T>::type, T>;
    (void)sizeof(R);
    switch (code) {
      case OpCode::kNeg: return -x;
      case OpCode::kSign:
        if constexpr (kIsComplex<T>) {
          return std::abs(x) == 0 ? T{} : x / std::abs(x);
        } else {
          return std::isnan(x) ? x : x > 0 ? T(1) : x < 0 ? T(-1) : x;
        }
      case OpCode::kExp: return std::exp(x);
      case OpCode::kLog: return std::log(x);
      case OpCode::kExpm1:
        if constexpr (kIsComplex<T>) return complex_expm1(x);
        else return std::expm1(x);
      case OpCode::kLog1p:
        if constexpr (kIsComplex<T>) return complex_log1p(x);
        else return std::log1p(x);
      case OpCode::kSin: return std::sin(x);
      case OpCode::kCos: return std::cos(x);
      case OpCode::kTanh: return std::tanh(x);
      case OpCode::kSqrt: return std::sqrt(x);
      case OpCode::kRsqrt: return T(1) / std::sqrt(x);
      case OpCode::kConj:
        if constexpr (kIsComplex<T>) return std::conj(x);
        else return x;
      default: return x;
    }
  }
}

template <class T>
auto real_part(OpCode code, T x) {
  if constexpr (kIsComplex<T>) {
    using R = typename T::value_type;
    if (code == OpCode::kAbs) return static_cast<R>(std::abs(x));
    return code == OpCode::kReal ? x.real() : x.imag();
  } else if constexpr (kIsInt<T>) {
    if (code == OpCode::kAbs) return x < 0 ? wrap_sub(T{0}, x) : x;
    return code == OpCode::kReal ? x : T(0);
  } else if constexpr (kIsFloat<T>) {
    if (code == OpCode::kAbs) return std::fabs(x);
    return code == OpCode::kReal ? x : T(0);
  } else {  // bool
    return code == OpCode::kImag ? T(0) : x;
  }
}

// ---- the evaluator

class Eval {
 public:
  explicit Eval(const SemanticProgram& p) : p_(p) {}

  template <class F>
  static void visit(Buf& b, F&& f) {
    std::visit(f, b.data);
  }

  Result<Buf> unary(OpCode code, const Buf& x, DType out_dtype) {
    Buf r = make(out_dtype, x.shape);
    std::visit(
        [&](const auto& xv) {
          using T = typename std::decay_t<decltype(xv)>::value_type;
          if (code == OpCode::kAbs || code == OpCode::kReal || code == OpCode::kImag) {
            using R = decltype(real_part(code, T{}));
            auto& rv = std::get<Vec<R>>(r.data);
            for (size_t i = 0; i < xv.size(); ++i) rv[i] = real_part(code, xv[i]);
          } else {
            auto& rv = std::get<Vec<T>>(r.data);
            for (size_t i = 0; i < xv.size(); ++i) rv[i] = unary_same(code, xv[i]);
          }
        },
        x.data);
    return r;
  }

  Result<Buf> binary_op(OpCode code, const Buf& a, const Buf& b) {
    Buf r = make(a.dtype, a.shape);
    Result<void> status;
    std::visit(
        [&](const auto& av) {
          using T = typename std::decay_t<decltype(av)>::value_type;
          const auto& bv = std::get<Vec<T>>(b.data);
          auto& rv = std::get<Vec<T>>(r.data);
          for (size_t i = 0; i < av.size() && status; ++i) {
            auto v = binary<T>(code, av[i], bv[i]);
            if (!v) status = v.error();
            else rv[i] = *v;
          }
        },
        a.data);
    if (!status) return status.error();
    return r;
  }

  // Generic gather: result element at multi-index `idx` comes from source linear index
  // `src_of(idx)` (or the fill value when it returns -1).
  template <class F>
  Buf gather_like(const Buf& x, std::vector<int64_t> out_shape, F&& src_of, const Buf* fill = nullptr) {
    Buf r = make(x.dtype, std::move(out_shape));
    const int64_t n = r.numel();
    std::vector<int64_t> idx;
    std::visit(
        [&](const auto& xv) {
          using T = typename std::decay_t<decltype(xv)>::value_type;
          auto& rv = std::get<Vec<T>>(r.data);
          const T fv = fill ? std::get<Vec<T>>(fill->data)[0] : T{};
          for (int64_t lin = 0; lin < n; ++lin) {
            unravel(lin, r.shape, idx);
            const int64_t src = src_of(idx);
            rv[static_cast<size_t>(lin)] = src < 0 ? fv : xv[static_cast<size_t>(src)];
          }
        },
        x.data);
    return r;
  }

  static int64_t scalar_index(const Buf& b) {
    return std::visit(
        [](const auto& v) -> int64_t {
          using T = typename std::decay_t<decltype(v)>::value_type;
          if constexpr (kIsInt<T>) return static_cast<int64_t>(v[0]);
          return 0;
        },
        b.data);
  }
  static int64_t index_at(const Buf& b, int64_t i) {
    return std::visit(
        [&](const auto& v) -> int64_t {
          using T = typename std::decay_t<decltype(v)>::value_type;
          if constexpr (kIsInt<T>) return static_cast<int64_t>(v[static_cast<size_t>(i)]);
          return 0;
        },
        b.data);
  }

  Result<std::vector<Buf>> core(const Operation& op, const std::vector<const Buf*>& in) {
    const Attrs& a = op.attrs();
    const OpCode code = op.code();
    const DType out_dtype = p_.type(op.results()[0]).dtype;
    if (is_elementwise_unary(code)) {
      TENFERRO_TRY(Buf r, unary(code, *in[0], out_dtype));
      return one(std::move(r));
    }
    if (is_elementwise_binary(code)) {
      TENFERRO_TRY(Buf r, binary_op(code, *in[0], *in[1]));
      return one(std::move(r));
    }
    switch (code) {
      case OpCode::kCompare: {
        Buf r = make(DType::kBool, in[0]->shape);
        auto& rv = std::get<Vec<uint8_t>>(r.data);
        std::visit(
            [&](const auto& av) {
              using T = typename std::decay_t<decltype(av)>::value_type;
              const auto& bv = std::get<Vec<T>>(in[1]->data);
              for (size_t i = 0; i < av.size(); ++i) rv[i] = compare(a.direction, av[i], bv[i]) ? 1 : 0;
            },
            in[0]->data);
        return one(std::move(r));
      }
      case OpCode::kSelect: {
        const auto& pv = std::get<Vec<uint8_t>>(in[0]->data);
        Buf r = *in[2];
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              const auto& tv = std::get<Vec<T>>(in[1]->data);
              for (size_t i = 0; i < rv.size(); ++i) {
                if (pv[i]) rv[i] = tv[i];
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kClamp: {
        Buf r = *in[1];
        Result<void> status;
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              const auto& lo = std::get<Vec<T>>(in[0]->data);
              const auto& hi = std::get<Vec<T>>(in[2]->data);
              for (size_t i = 0; i < rv.size(); ++i) {
                const T l = lo.size() == 1 ? lo[0] : lo[i];
                const T h = hi.size() == 1 ? hi[0] : hi[i];
                auto v = binary<T>(OpCode::kMax, rv[i], l);
                if (v) v = binary<T>(OpCode::kMin, *v, h);
                if (v) rv[i] = *v;
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kConvert: {
        Buf r = make(a.dtype, in[0]->shape);
        std::visit(
            [&](const auto& xv) {
              std::visit(
                  [&](auto& rv) {
                    using To = typename std::decay_t<decltype(rv)>::value_type;
                    for (size_t i = 0; i < xv.size(); ++i) rv[i] = convert_value<To>(xv[i]);
                  },
                  r.data);
            },
            in[0]->data);
        return one(std::move(r));
      }
      case OpCode::kConstant: {
        const Literal& l = *a.literal;
        Buf r = make(l.dtype, l.shape);
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              if (!rv.empty()) std::memcpy(rv.data(), l.bytes.data(), rv.size() * sizeof(T));
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kIota: {
        TENFERRO_TRY(std::vector<int64_t> sh, result_shape(op));
        Buf r = make(a.dtype, sh);
        std::vector<int64_t> idx;
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              for (size_t lin = 0; lin < rv.size(); ++lin) {
                unravel(static_cast<int64_t>(lin), r.shape, idx);
                rv[lin] = convert_value<T>(idx[static_cast<size_t>(a.axis)]);
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kBroadcastInDim: {
        const Buf& x = *in[0];
        TENFERRO_TRY(std::vector<int64_t> sh, result_shape(op));
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, sh, [&](const std::vector<int64_t>& idx) {
          int64_t src = 0;
          for (size_t i = 0; i < a.dims.size(); ++i) {
            if (x.shape[i] != 1) src += idx[static_cast<size_t>(a.dims[i])] * xs[i];
          }
          return src;
        }));
      }
      case OpCode::kReshape: {
        TENFERRO_TRY(std::vector<int64_t> sh, result_shape(op));
        Buf r = *in[0];
        r.shape = sh;
        return one(std::move(r));
      }
      case OpCode::kTranspose: {
        const Buf& x = *in[0];
        std::vector<int64_t> shape;
        for (int64_t p : a.dims) shape.push_back(x.shape[static_cast<size_t>(p)]);
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, shape, [&](const std::vector<int64_t>& idx) {
          int64_t src = 0;
          for (size_t i = 0; i < idx.size(); ++i) src += idx[i] * xs[static_cast<size_t>(a.dims[i])];
          return src;
        }));
      }
      case OpCode::kReverse: {
        const Buf& x = *in[0];
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, x.shape, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> j = idx;
          for (int64_t d : a.dims) j[static_cast<size_t>(d)] = x.shape[static_cast<size_t>(d)] - 1 - j[static_cast<size_t>(d)];
          return ravel(j, xs);
        }));
      }
      case OpCode::kSlice: {
        const Buf& x = *in[0];
        std::vector<int64_t> shape;
        // ceil((limit - start) / stride) without overflow (inference checked 0 <= start <=
        // limit <= extent and stride >= 1; a stride may be as large as int64 holds).
        for (size_t i = 0; i < x.shape.size(); ++i) {
          const int64_t span = a.limit[i] - a.start[i];
          shape.push_back(span == 0 ? 0 : (span - 1) / a.stride[i] + 1);
        }
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, shape, [&](const std::vector<int64_t>& idx) {
          int64_t src = 0;
          for (size_t i = 0; i < idx.size(); ++i) src += (a.start[i] + idx[i] * a.stride[i]) * xs[i];
          return src;
        }));
      }
      case OpCode::kDynamicSlice: {
        const Buf& x = *in[0];
        std::vector<int64_t> start;
        for (size_t i = 0; i < x.shape.size(); ++i) {
          start.push_back(std::clamp<int64_t>(scalar_index(*in[i + 1]), 0, x.shape[i] - a.sizes[i]));
        }
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, a.sizes, [&](const std::vector<int64_t>& idx) {
          int64_t src = 0;
          for (size_t i = 0; i < idx.size(); ++i) src += (start[i] + idx[i]) * xs[i];
          return src;
        }));
      }
      case OpCode::kDynamicUpdateSlice: {
        const Buf& x = *in[0];
        const Buf& u = *in[1];
        std::vector<int64_t> start;
        for (size_t i = 0; i < x.shape.size(); ++i) {
          start.push_back(std::clamp<int64_t>(scalar_index(*in[i + 2]), 0, x.shape[i] - u.shape[i]));
        }
        Buf r = x;
        const auto rs = col_strides(r.shape);
        std::vector<int64_t> idx;
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              const auto& uv = std::get<Vec<T>>(u.data);
              for (size_t lin = 0; lin < uv.size(); ++lin) {
                unravel(static_cast<int64_t>(lin), u.shape, idx);
                for (size_t i = 0; i < idx.size(); ++i) idx[i] += start[i];
                rv[static_cast<size_t>(ravel(idx, rs))] = uv[lin];
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kConcatenate: {
        std::vector<int64_t> shape = in[0]->shape;
        const auto ax = static_cast<size_t>(a.axis);
        shape[ax] = 0;
        for (const Buf* b : in) shape[ax] += b->shape[ax];
        Buf r = make(in[0]->dtype, shape);
        std::vector<int64_t> idx;
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              for (size_t lin = 0; lin < rv.size(); ++lin) {
                unravel(static_cast<int64_t>(lin), shape, idx);
                int64_t pos = idx[ax];
                for (const Buf* b : in) {
                  if (pos < b->shape[ax]) {
                    std::vector<int64_t> j = idx;
                    j[ax] = pos;
                    rv[lin] = std::get<Vec<T>>(b->data)[static_cast<size_t>(ravel(j, col_strides(b->shape)))];
                    break;
                  }
                  pos -= b->shape[ax];
                }
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kPad: {
        const Buf& x = *in[0];
        TENFERRO_TRY(std::vector<int64_t> sh, result_shape(op));
        const auto xs = col_strides(x.shape);
        return one(gather_like(
            x, sh,
            [&](const std::vector<int64_t>& idx) -> int64_t {
              int64_t src = 0;
              for (size_t i = 0; i < idx.size(); ++i) {
                const int64_t off = idx[i] - a.low[i];  // position in the interior-dilated operand
                const int64_t step = a.interior[i] + 1;
                if (off < 0 || off % step != 0) return -1;
                const int64_t j = off / step;
                if (j >= x.shape[i]) return -1;
                src += j * xs[i];
              }
              return src;
            },
            in[1]));
      }
      case OpCode::kGather: {
        const Buf& x = *in[0];
        const Buf& ind = *in[1];
        const auto ax = static_cast<size_t>(a.axis);
        std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + a.axis);
        shape.insert(shape.end(), ind.shape.begin(), ind.shape.end());
        shape.insert(shape.end(), x.shape.begin() + a.axis + 1, x.shape.end());
        int64_t count = 1;
        for (int64_t e : shape) count *= e;
        if (x.shape[ax] == 0 && count > 0) {
          return runtime_error("gather", ErrorCode::kOutOfRange,
                               "indices into axis " + s(a.axis) + " of extent 0 (nothing to clamp them to)");
        }
        const auto xs = col_strides(x.shape);
        const auto is = col_strides(ind.shape);
        const size_t ir = ind.shape.size();
        return one(gather_like(x, shape, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> ii(idx.begin() + a.axis, idx.begin() + a.axis + static_cast<int64_t>(ir));
          const int64_t k = std::clamp<int64_t>(index_at(ind, ravel(ii, is)), 0, x.shape[ax] - 1);
          int64_t src = k * xs[ax];
          for (size_t d = 0; d < ax; ++d) src += idx[d] * xs[d];
          for (size_t d = ax + 1; d < x.shape.size(); ++d) src += idx[d - 1 + ir] * xs[d];
          return src;
        }));
      }
      case OpCode::kScatterAdd: {
        const Buf& x = *in[0];
        const Buf& ind = *in[1];
        const Buf& u = *in[2];
        const auto ax = static_cast<size_t>(a.axis);
        const size_t ir = ind.shape.size();
        const auto xs = col_strides(x.shape);
        const auto is = col_strides(ind.shape);
        Buf r = x;
        std::vector<int64_t> idx;
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              const auto& uv = std::get<Vec<T>>(u.data);
              for (size_t lin = 0; lin < uv.size(); ++lin) {
                unravel(static_cast<int64_t>(lin), u.shape, idx);
                std::vector<int64_t> ii(idx.begin() + a.axis, idx.begin() + a.axis + static_cast<int64_t>(ir));
                const int64_t k = index_at(ind, ravel(ii, is));
                if (k < 0 || k >= x.shape[ax]) continue;  // skipped (Note [Core op semantics])
                int64_t dst = k * xs[ax];
                for (size_t d = 0; d < ax; ++d) dst += idx[d] * xs[d];
                for (size_t d = ax + 1; d < x.shape.size(); ++d) dst += idx[d - 1 + ir] * xs[d];
                auto v = binary<T>(OpCode::kAdd, rv[static_cast<size_t>(dst)], uv[lin]);
                if constexpr (std::is_same_v<T, uint8_t>) {
                  rv[static_cast<size_t>(dst)] = rv[static_cast<size_t>(dst)] | uv[lin];
                } else {
                  rv[static_cast<size_t>(dst)] = *v;
                }
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kReduce: {
        const Buf& x = *in[0];
        std::vector<int64_t> keep;
        for (int64_t d = 0; d < static_cast<int64_t>(x.shape.size()); ++d) {
          if (std::find(a.dims.begin(), a.dims.end(), d) == a.dims.end()) keep.push_back(d);
        }
        std::vector<int64_t> shape;
        for (int64_t d : keep) shape.push_back(x.shape[static_cast<size_t>(d)]);
        Buf r = make(x.dtype, shape);
        const auto rs = col_strides(shape);
        std::vector<int64_t> idx, ridx(keep.size());
        std::visit(
            [&](auto& rv) {
              using T = typename std::decay_t<decltype(rv)>::value_type;
              const auto& xv = std::get<Vec<T>>(x.data);
              T init{};
              if constexpr (!kIsComplex<T> && !std::is_same_v<T, uint8_t>) {
                if (a.reduce == ReduceKind::kMax) init = kIsFloat<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
                if (a.reduce == ReduceKind::kMin) init = kIsFloat<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
              }
              if (a.reduce == ReduceKind::kProd) init = T(1);
              if (std::is_same_v<T, uint8_t> && a.reduce == ReduceKind::kMin) init = T(1);  // all of no bools
              std::fill(rv.begin(), rv.end(), init);
              const OpCode combine = a.reduce == ReduceKind::kSum    ? OpCode::kAdd
                                     : a.reduce == ReduceKind::kProd ? OpCode::kMul
                                     : a.reduce == ReduceKind::kMax  ? OpCode::kMax
                                                                     : OpCode::kMin;
              for (size_t lin = 0; lin < xv.size(); ++lin) {
                unravel(static_cast<int64_t>(lin), x.shape, idx);
                for (size_t k = 0; k < keep.size(); ++k) ridx[k] = idx[static_cast<size_t>(keep[k])];
                T& acc = rv[static_cast<size_t>(ravel(ridx, rs))];
                auto v = binary<T>(combine, acc, xv[lin]);
                if (v) acc = *v;
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kDotGeneral: {
        const Buf& l = *in[0];
        const Buf& rr = *in[1];
        auto free_axes = [](size_t rank, const std::vector<int64_t>& b, const std::vector<int64_t>& c) {
          std::vector<int64_t> f;
          for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
            if (std::find(b.begin(), b.end(), d) == b.end() && std::find(c.begin(), c.end(), d) == c.end()) f.push_back(d);
          }
          return f;
        };
        const auto lf = free_axes(l.shape.size(), a.lhs_batch, a.lhs_contract);
        const auto rf = free_axes(rr.shape.size(), a.rhs_batch, a.rhs_contract);
        std::vector<int64_t> shape, kshape;
        for (int64_t d : a.lhs_batch) shape.push_back(l.shape[static_cast<size_t>(d)]);
        for (int64_t d : lf) shape.push_back(l.shape[static_cast<size_t>(d)]);
        for (int64_t d : rf) shape.push_back(rr.shape[static_cast<size_t>(d)]);
        for (int64_t d : a.lhs_contract) kshape.push_back(l.shape[static_cast<size_t>(d)]);
        int64_t kn = 1;
        for (int64_t e : kshape) kn *= e;
        Buf r = make(l.dtype, shape);
        const auto ls = col_strides(l.shape), rs = col_strides(rr.shape);
        std::vector<int64_t> idx, kidx;
        const size_t nb = a.lhs_batch.size();
        std::visit(
            [&](auto& out) {
              using T = typename std::decay_t<decltype(out)>::value_type;
              const auto& lv = std::get<Vec<T>>(l.data);
              const auto& rv = std::get<Vec<T>>(rr.data);
              for (size_t lin = 0; lin < out.size(); ++lin) {
                unravel(static_cast<int64_t>(lin), shape, idx);
                T acc{};
                for (int64_t kk = 0; kk < kn; ++kk) {
                  unravel(kk, kshape, kidx);
                  int64_t lp = 0, rp = 0;
                  for (size_t i = 0; i < nb; ++i) {
                    lp += idx[i] * ls[static_cast<size_t>(a.lhs_batch[i])];
                    rp += idx[i] * rs[static_cast<size_t>(a.rhs_batch[i])];
                  }
                  for (size_t i = 0; i < lf.size(); ++i) lp += idx[nb + i] * ls[static_cast<size_t>(lf[i])];
                  for (size_t i = 0; i < rf.size(); ++i) rp += idx[nb + lf.size() + i] * rs[static_cast<size_t>(rf[i])];
                  for (size_t i = 0; i < kidx.size(); ++i) {
                    lp += kidx[i] * ls[static_cast<size_t>(a.lhs_contract[i])];
                    rp += kidx[i] * rs[static_cast<size_t>(a.rhs_contract[i])];
                  }
                  if constexpr (std::is_same_v<T, uint8_t>) {  // bools: an OR of ANDs
                    acc = static_cast<T>(acc || (lv[static_cast<size_t>(lp)] && rv[static_cast<size_t>(rp)]));
                  } else {
                    auto prod = binary<T>(OpCode::kMul, lv[static_cast<size_t>(lp)], rv[static_cast<size_t>(rp)]);
                    auto sum = binary<T>(OpCode::kAdd, acc, *prod);
                    acc = *sum;
                  }
                }
                out[lin] = acc;
              }
            },
            r.data);
        return one(std::move(r));
      }
      case OpCode::kExtractDiag: {
        const Buf& x = *in[0];
        const auto ax = static_cast<size_t>(a.axis);
        std::vector<int64_t> shape = x.shape;
        shape.erase(shape.begin() + a.axis + 1);
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, shape, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> j = idx;
          j.insert(j.begin() + a.axis + 1, idx[ax]);
          return ravel(j, xs);
        }));
      }
      case OpCode::kEmbedDiag: {
        const Buf& x = *in[0];
        const auto ax = static_cast<size_t>(a.axis);
        std::vector<int64_t> shape = x.shape;
        shape.insert(shape.begin() + a.axis, x.shape[ax]);
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, shape, [&](const std::vector<int64_t>& idx) -> int64_t {
          if (idx[ax] != idx[ax + 1]) return -1;
          std::vector<int64_t> j = idx;
          j.erase(j.begin() + a.axis + 1);
          return ravel(j, xs);
        }));
      }
      case OpCode::kTril:
      case OpCode::kTriu: {
        const Buf& x = *in[0];
        const size_t rk = x.shape.size();
        const auto xs = col_strides(x.shape);
        return one(gather_like(x, x.shape, [&](const std::vector<int64_t>& idx) -> int64_t {
          const int64_t diff = idx[rk - 1] - idx[rk - 2];  // col - row
          const bool keep = code == OpCode::kTril ? diff <= a.k : diff >= a.k;
          return keep ? ravel(idx, xs) : -1;
        }));
      }
      case OpCode::kArgsort: {
        // Each line along `axis` (stride `inner` in the column-major buffer) sorted stably
        // in numpy's order (numpy_less).
        const Buf& x = *in[0];
        Buf r = make(DType::kI64, x.shape);
        auto& rv = std::get<Vec<int64_t>>(r.data);
        const auto ax = static_cast<size_t>(a.axis);
        int64_t inner = 1;
        for (size_t k = 0; k < ax; ++k) inner *= x.shape[k];
        const int64_t n = x.shape[ax];
        const int64_t lines = n == 0 ? 0 : static_cast<int64_t>(rv.size()) / n;
        std::visit(
            [&](const auto& xv) {
              std::vector<int64_t> pos(static_cast<size_t>(n));
              for (int64_t line = 0; line < lines; ++line) {
                const int64_t base = line % inner + (line / inner) * inner * n;
                for (int64_t j = 0; j < n; ++j) pos[static_cast<size_t>(j)] = j;
                auto at = [&](int64_t j) { return xv[static_cast<size_t>(base + j * inner)]; };
                std::stable_sort(pos.begin(), pos.end(),
                                 [&](int64_t p, int64_t q) { return numpy_less(at(p), at(q)); });
                for (int64_t j = 0; j < n; ++j) rv[static_cast<size_t>(base + j * inner)] = pos[static_cast<size_t>(j)];
              }
            },
            x.data);
        return one(std::move(r));
      }
      default: break;
    }
    return runtime_error(op_name(code), ErrorCode::kInternal, "no interpreter rule");
  }

  // The concrete shape of an op's (first) result under the bound symbols.
  Result<std::vector<int64_t>> result_shape(const Operation& op) const {
    TENFERRO_TRY(Shape sh, p_.concrete_shape(op.results()[0], symbols_));
    return std::vector<int64_t>(sh.begin(), sh.end());
  }

  static Result<std::vector<Buf>> one(Buf b) {
    std::vector<Buf> v;
    v.push_back(std::move(b));
    return v;
  }

  Result<std::vector<Buf>> extension(const Operation& op, const std::vector<const Buf*>& in) {
    const ExtensionOp& ext = *op.extension();
    std::vector<Tensor> ts;
    for (const Buf* b : in) {
      TENFERRO_TRY(Tensor t, to_tensor(*b));
      ts.push_back(std::move(t));
    }
    auto direct = ext.evaluate_reference(ts);
    std::vector<Buf> out;
    if (direct) {
      for (const Tensor& t : *direct) {
        TENFERRO_TRY(Buf b, from_tensor(t));
        out.push_back(std::move(b));
      }
      return out;
    }
    if (direct.error().code() != ErrorCode::kUnsupported) return direct.error();
    // Evaluate through the core lowering on the concrete input types.
    ProgramBuilder b;
    b.set_core_only(true);
    std::vector<Value> args;
    for (const Tensor& t : ts) {
      ValueType vt{t.dtype(), {}};
      for (int64_t e : t.shape()) vt.shape.push_back(Extent::exact(e));
      TENFERRO_TRY(Value v, b.input(vt));
      args.push_back(v);
    }
    TENFERRO_TRY(LoweringOutcome lo, ext.lower_to_core(b, args));
    if (lo.kind != LoweringOutcome::Kind::kLowered) {
      return Error(ErrorStage::kPrepare, ErrorCode::kUnsupported, std::string(ext.family_id()),
                   "no reference evaluation and no core lowering: " + lo.reason);
    }
    TENFERRO_TRY(CompiledGraph g, b.finish(lo.values));
    TENFERRO_TRY(auto results, interpret(*g.program, ts, g.bindings));
    for (const Tensor& t : results) {
      TENFERRO_TRY(Buf bb, from_tensor(t));
      out.push_back(std::move(bb));
    }
    return out;
  }

  Result<std::vector<Tensor>> run(std::span<const Tensor> args, const ProgramBindings& bindings) {
    std::vector<Tensor> inputs;
    size_t na = 0, nb = 0;
    for (const InputInfo& in : p_.inputs()) {
      if (in.binding) {
        if (nb >= bindings.tensors.size()) return usage_error(ErrorCode::kInvalidArgument, "interpret", "missing binding tensor for input '" + in.name + "'");
        inputs.push_back(bindings.tensors[nb++]);
      } else {
        if (na >= args.size()) return usage_error(ErrorCode::kInvalidArgument, "interpret", "program needs more than " + s(static_cast<int64_t>(args.size())) + " arguments");
        inputs.push_back(args[na++]);
      }
    }
    if (na != args.size()) return usage_error(ErrorCode::kInvalidArgument, "interpret", "program takes " + s(static_cast<int64_t>(na)) + " arguments, got " + s(static_cast<int64_t>(args.size())));
    std::vector<Shape> shapes;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (!t.defined()) return usage_error(ErrorCode::kInvalidArgument, "interpret", "input " + s(static_cast<int64_t>(i)) + " is null");
      const DType want = p_.type(p_.inputs()[i].value).dtype;
      if (t.dtype() != want) {
        return usage_error(ErrorCode::kDTypeMismatch, "interpret",
                           "input " + s(static_cast<int64_t>(i)) + " has dtype " + std::string(dtype_name(t.dtype())) + ", expected " + std::string(dtype_name(want)));
      }
      shapes.push_back(t.shape());
    }
    TENFERRO_TRY(symbols_, p_.bind_shapes(shapes));
    std::unordered_map<ValueRef, Buf> env;
    for (size_t i = 0; i < inputs.size(); ++i) {
      TENFERRO_TRY(Buf b, from_tensor(inputs[i]));
      env[p_.inputs()[i].value] = std::move(b);
    }
    for (const Operation& op : p_.ops()) {
      std::vector<const Buf*> in;
      for (ValueRef v : op.operands()) in.push_back(&env.at(v));
      std::vector<Buf> outs;
      if (op.code() == OpCode::kExtension) {
        TENFERRO_TRY(outs, extension(op, in));
      } else {
        TENFERRO_TRY(outs, core(op, in));
      }
      if (outs.size() != op.results().size()) {
        return runtime_error(op_name(op.code()), ErrorCode::kInternal, "evaluation produced " + s(static_cast<int64_t>(outs.size())) + " results for " + s(static_cast<int64_t>(op.results().size())));
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        TENFERRO_TRY(Shape want, p_.concrete_shape(op.results()[k], symbols_));
        const ValueType& t = p_.type(op.results()[k]);
        if (outs[k].dtype != t.dtype || !std::equal(want.begin(), want.end(), outs[k].shape.begin(), outs[k].shape.end())) {
          return runtime_error(op_name(op.code()), ErrorCode::kInternal,
                               "evaluated result " + std::string(dtype_name(outs[k].dtype)) + " of rank " + s(static_cast<int64_t>(outs[k].shape.size())) +
                                   " disagrees with the inferred type " + print_type(t, p_.symbols()));
        }
        env[op.results()[k]] = std::move(outs[k]);
      }
    }
    std::vector<Tensor> result;
    for (ValueRef v : p_.outputs()) {
      TENFERRO_TRY(Tensor t, to_tensor(env.at(v)));
      result.push_back(std::move(t));
    }
    return result;
  }

 private:
  const SemanticProgram& p_;
  std::vector<int64_t> symbols_;
};

}  // namespace

Result<std::vector<Tensor>> interpret(const SemanticProgram& program, std::span<const Tensor> arguments,
                                      const ProgramBindings& bindings) {
  // Note [Interpreter allocation]: the only exceptions the evaluation can raise.
  try {
    Eval e(program);
    return e.run(arguments, bindings);
  } catch (const std::bad_alloc&) {
    return Error(ErrorStage::kCompletion, ErrorCode::kAllocationFailed, "interpret",
                 "a value of the program does not fit in memory");
  } catch (const std::length_error&) {
    return Error(ErrorStage::kCompletion, ErrorCode::kAllocationFailed, "interpret",
                 "a value of the program is larger than a vector can hold");
  }
}

Result<std::vector<Tensor>> interpret(const CompiledGraph& graph, std::span<const Tensor> arguments) {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "interpret", "null program");
  return interpret(*graph.program, arguments, graph.bindings);
}

}  // namespace tenferro::program
