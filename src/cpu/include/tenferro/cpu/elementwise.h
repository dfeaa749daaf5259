#pragma once
/// \file
/// Elementwise CPU kernels with numpy broadcasting. Operands must have the same dtype
/// (no implicit promotion); the output is a new compact column-major tensor, or a
/// caller destination (`*_into`, exclusive storage, exactly the broadcast shape).
/// All checks happen before the first write.

#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/cpu/context.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::cpu {

enum class UnaryOp : uint8_t {
  kNeg, kAbs, kSign, kExp, kLog, kExpm1, kLog1p, kSin, kCos, kTanh, kSqrt, kRsqrt, kConj, kReal, kImag,
};
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kAtan2 };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

std::string_view unary_op_name(UnaryOp op) noexcept;
std::string_view binary_op_name(BinaryOp op) noexcept;
std::string_view compare_op_name(CompareOp op) noexcept;

/// numpy broadcasting of two shapes. Errors: kShapeMismatch.
Result<Shape> broadcast_shapes(Dims a, Dims b, const char* op = "broadcast");

/// The dtype `op` produces for input `dtype`, or kDTypeMismatch if unsupported:
/// abs/real/imag of complex give the component dtype; transcendental ops (exp ... rsqrt)
/// need floating or complex; bool supports none but conj/real/imag.
Result<DType> unary_result_dtype(UnaryOp op, DType dtype);

/// kDTypeMismatch (naming `op`) unless binary() defines `op` for `dtype`.
Result<void> check_binary_dtype(BinaryOp op, DType dtype);

/// Who vouches that an `*_into` destination is not observed by anyone else while the
/// kernel writes it. kExclusive (default): the kernel checks that `out` is the only handle
/// to its storage (passing the same handle as an input is an in-place update).
/// kPlanned: the caller does — a runtime buffer plan whose workspace buffers only the plan
/// reads; `out` may then be exactly an input (same storage, offset, shape and strides: in
/// place) but must not otherwise share storage with an input (kInvalidArgument).
enum class Destination : uint8_t { kExclusive, kPlanned };

/// y = op(x). Integer and bool semantics: see Note [Integer edge cases] in elementwise.cc.
Result<Tensor> unary(const CpuExecutionContext& ctx, UnaryOp op, const Tensor& x,
                     const std::shared_ptr<HostBufferPool>& pool = nullptr);
Result<void> unary_into(const CpuExecutionContext& ctx, UnaryOp op, const Tensor& x, Tensor& out,
                        Destination destination = Destination::kExclusive);

/// z = op(x, y) with broadcasting. Supported dtypes: add/sub/mul/div/pow all but bool;
/// rem, max and min real types (not complex, not bool); atan2(y, x) (C's atan2: the
/// angle of the point (x, y) in [-pi, pi]) f32 and f64. Integer add/sub/mul/pow wrap
/// modulo 2^bits; an integer power with a negative exponent is 1 / x^|y| truncated
/// (0 unless |x| == 1, and 0 for x == 0).
/// Integer division by zero gives -1 and remainder by zero gives the dividend (as
/// XLA does); max/min propagate NaN (as numpy.maximum does).
Result<Tensor> binary(const CpuExecutionContext& ctx, BinaryOp op, const Tensor& x, const Tensor& y,
                      const std::shared_ptr<HostBufferPool>& pool = nullptr);
Result<void> binary_into(const CpuExecutionContext& ctx, BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out,
                         Destination destination = Destination::kExclusive);

/// Boolean comparison with broadcasting. Complex supports only kEq and kNe.
Result<Tensor> compare(const CpuExecutionContext& ctx, CompareOp op, const Tensor& x, const Tensor& y,
                       const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// `pred ? on_true : on_false` element-wise with broadcasting (pred is bool).
Result<Tensor> select(const CpuExecutionContext& ctx, const Tensor& pred, const Tensor& on_true,
                      const Tensor& on_false, const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// min(max(x, lo), hi) with broadcasting; real dtypes only.
Result<Tensor> clamp(const CpuExecutionContext& ctx, const Tensor& x, const Tensor& lo, const Tensor& hi,
                     const std::shared_ptr<HostBufferPool>& pool = nullptr);

/// Converts to `dtype` like static_cast (complex to real takes the real part; to bool is
/// `!= 0`; float to int truncates and saturates at the integer range, NaN gives 0).
Result<Tensor> convert(const CpuExecutionContext& ctx, const Tensor& x, DType dtype,
                       const std::shared_ptr<HostBufferPool>& pool = nullptr);

}  // namespace tenferro::cpu
