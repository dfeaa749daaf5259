// Direct reverse rules of the eager tape (Note [Eager direct backward] in autograd.cc):
// each computes the cotangents of a record's inputs from its output's cotangent with
// eager operations, under the complex convention of the program path (Note [Complex
// cotangents] in ad/transforms.cc: the transpose of x -> a * x is c -> conj(a) * c).

#include "vjp.h"

#include <algorithm>
#include <string>

#include "tenferro/einsum/subscripts.h"
#include "tenferro/einsum_cpu/einsum.h"

namespace tenferro::eager {

namespace {

using program::OpCode;

bool wants(const AdNode& node, size_t i) noexcept { return node.inputs[i].ad_node() != nullptr; }

// conj(x) for complex dtypes; x itself (no kernel) for real ones.
Result<EagerTensor> conj_of(const Context& c, const EagerTensor& x) {
  if (!is_complex(x.dtype())) return x;
  return c.conj(x);
}

}  // namespace

Result<EagerTensor> unbroadcast(const Context& c, const EagerTensor& ct, const Shape& target) {
  if (ct.shape() == target) return ct;
  // numpy alignment: `target` matches the trailing axes of ct's shape; the leading axes
  // and the size-1 axes of `target` that ct spans were broadcast.
  const int64_t lead = ct.rank() - static_cast<int64_t>(target.size());
  SmallVector<int64_t, 8> axes;
  for (int64_t i = 0; i < ct.rank(); ++i) {
    if (i < lead || (target[static_cast<size_t>(i - lead)] == 1 && ct.shape()[static_cast<size_t>(i)] != 1)) {
      axes.push_back(i);
    }
  }
  EagerTensor s = ct;
  if (!axes.empty()) {
    TENFERRO_TRY(s, c.sum(ct, axes, false));
  }
  if (s.shape() == target) return s;
  return c.reshape(s, target);
}

AdNode::Vjp vjp_unary(OpCode code) {
  switch (code) {
    case OpCode::kNeg:
    case OpCode::kConj:
    case OpCode::kExp:
    case OpCode::kLog:
    case OpCode::kSin:
    case OpCode::kCos:
    case OpCode::kTanh:
    case OpCode::kSqrt:
    case OpCode::kReal:
    case OpCode::kImag:
    case OpCode::kConvert: break;
    default: return {};
  }
  return [code](const Context& c, const AdNode& node, const EagerTensor& ct,
                std::span<EagerTensor> out) -> Result<void> {
    const EagerTensor& x = node.inputs[0];
    // The derivative factor d (for a holomorphic f: f'(x)); the cotangent is ct * conj(d).
    EagerTensor d;
    switch (code) {
      case OpCode::kNeg: {
        TENFERRO_TRY(out[0], c.neg(ct));
        return ok();
      }
      case OpCode::kConj: {
        TENFERRO_TRY(out[0], c.conj(ct));
        return ok();
      }
      case OpCode::kReal:  // the adjoint of Re is c -> c + 0i
      case OpCode::kConvert: {  // between inexact dtypes: the real part where complex drops to real
        TENFERRO_TRY(out[0], c.astype(ct, x.dtype()));
        return ok();
      }
      case OpCode::kImag: {  // the adjoint of Im is c -> i c; imag of a real tensor is constant
        if (!is_complex(x.dtype())) return ok();
        TENFERRO_TRY(EagerTensor z, c.astype(ct, x.dtype()));
        TENFERRO_TRY(EagerTensor i, c.full({}, c128(0.0, 1.0), x.dtype()));
        TENFERRO_TRY(out[0], c.mul(z, i));
        return ok();
      }
      case OpCode::kLog: {  // ct / conj(x)
        TENFERRO_TRY(EagerTensor cx, conj_of(c, x));
        TENFERRO_TRY(out[0], c.div(ct, cx));
        return ok();
      }
      case OpCode::kSqrt: {  // ct / conj(2 sqrt(x))
        TENFERRO_TRY(EagerTensor s, c.sqrt(x));
        TENFERRO_TRY(EagerTensor s2, c.add(s, s));
        TENFERRO_TRY(EagerTensor cs, conj_of(c, s2));
        TENFERRO_TRY(out[0], c.div(ct, cs));
        return ok();
      }
      case OpCode::kExp: {
        TENFERRO_TRY(d, c.exp(x));
        break;
      }
      case OpCode::kSin: {
        TENFERRO_TRY(d, c.cos(x));
        break;
      }
      case OpCode::kCos: {
        TENFERRO_TRY(EagerTensor s, c.sin(x));
        TENFERRO_TRY(d, c.neg(s));
        break;
      }
      case OpCode::kTanh: {  // 1 - tanh(x)^2
        TENFERRO_TRY(EagerTensor t, c.tanh(x));
        TENFERRO_TRY(EagerTensor t2, c.mul(t, t));
        TENFERRO_TRY(EagerTensor one, c.full({}, c128(1.0, 0.0), x.dtype()));
        TENFERRO_TRY(d, c.sub(one, t2));
        break;
      }
      default: break;
    }
    TENFERRO_TRY(EagerTensor cd, conj_of(c, d));
    TENFERRO_TRY(out[0], c.mul(ct, cd));
    return ok();
  };
}

AdNode::Vjp vjp_binary(OpCode code) {
  if (code != OpCode::kAdd && code != OpCode::kSub && code != OpCode::kMul && code != OpCode::kDiv) return {};
  return [code](const Context& c, const AdNode& node, const EagerTensor& ct,
                std::span<EagerTensor> out) -> Result<void> {
    const EagerTensor& x = node.inputs[0];
    const EagerTensor& y = node.inputs[1];
    switch (code) {
      case OpCode::kAdd:
      case OpCode::kSub: {
        if (wants(node, 0)) {
          TENFERRO_TRY(out[0], unbroadcast(c, ct, x.shape()));
        }
        if (wants(node, 1)) {
          EagerTensor g = ct;
          if (code == OpCode::kSub) {
            TENFERRO_TRY(g, c.neg(ct));
          }
          TENFERRO_TRY(out[1], unbroadcast(c, g, y.shape()));
        }
        return ok();
      }
      case OpCode::kMul: {
        if (wants(node, 0)) {
          TENFERRO_TRY(EagerTensor cy, conj_of(c, y));
          TENFERRO_TRY(EagerTensor g, c.mul(ct, cy));
          TENFERRO_TRY(out[0], unbroadcast(c, g, x.shape()));
        }
        if (wants(node, 1)) {
          TENFERRO_TRY(EagerTensor cx, conj_of(c, x));
          TENFERRO_TRY(EagerTensor g, c.mul(ct, cx));
          TENFERRO_TRY(out[1], unbroadcast(c, g, y.shape()));
        }
        return ok();
      }
      default: {  // kDiv: d/dx = 1/y, d/dy = -x/y^2 = -(1/y)(x/y)
        TENFERRO_TRY(EagerTensor cy, conj_of(c, y));
        TENFERRO_TRY(EagerTensor gx, c.div(ct, cy));  // ct / conj(y)
        if (wants(node, 0)) {
          TENFERRO_TRY(out[0], unbroadcast(c, gx, x.shape()));
        }
        if (wants(node, 1)) {
          TENFERRO_TRY(EagerTensor q, c.div(x, y));
          TENFERRO_TRY(EagerTensor cq, conj_of(c, q));
          TENFERRO_TRY(EagerTensor p, c.mul(gx, cq));
          TENFERRO_TRY(EagerTensor g, c.neg(p));
          TENFERRO_TRY(out[1], unbroadcast(c, g, y.shape()));
        }
        return ok();
      }
    }
  };
}

// The cotangent of a sum over `axes` of an input of shape `in`: ct spread back over
// the reduced axes (a broadcast view), scaled by `scale` (1/n for mean) when non-null.
namespace {
Result<EagerTensor> spread(const Context& c, const EagerTensor& ct, std::span<const int64_t> axes, const Shape& in,
                           bool keep) {
  EagerTensor k = ct;
  if (!keep && !axes.empty() && ct.rank() > 0) {  // a scalar broadcasts as it is
    Shape kept = in;
    for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
    TENFERRO_TRY(k, c.reshape(ct, kept));
  }
  if (k.shape() == in) return k;
  return c.broadcast_to(k, in);
}
}  // namespace

AdNode::Vjp vjp_sum(std::span<const int64_t> axes, const Shape& in, bool keep) {
  return [ax = SmallVector<int64_t, 8>(axes), in, keep](
             const Context& c, const AdNode&, const EagerTensor& ct, std::span<EagerTensor> out) -> Result<void> {
    TENFERRO_TRY(out[0], spread(c, ct, ax, in, keep));
    return ok();
  };
}

AdNode::Vjp vjp_mean(std::span<const int64_t> axes, const Shape& in, c128 n, bool keep) {
  return [ax = SmallVector<int64_t, 8>(axes), in, n, keep](
             const Context& c, const AdNode&, const EagerTensor& ct, std::span<EagerTensor> out) -> Result<void> {
    TENFERRO_TRY(EagerTensor count, c.full({}, n, ct.dtype()));
    TENFERRO_TRY(EagerTensor scaled, c.div(ct, count));
    TENFERRO_TRY(out[0], spread(c, scaled, ax, in, keep));
    return ok();
  };
}

AdNode::Vjp vjp_matmul2d() {
  // Z = X Y: X̄ = Z̄ Yᴴ, Ȳ = Xᴴ Z̄ (transposes are views).
  return [](const Context& c, const AdNode& node, const EagerTensor& ct, std::span<EagerTensor> out) -> Result<void> {
    const EagerTensor& x = node.inputs[0];
    const EagerTensor& y = node.inputs[1];
    if (wants(node, 0)) {
      TENFERRO_TRY(EagerTensor yt, c.transpose(y));
      TENFERRO_TRY(EagerTensor yh, conj_of(c, yt));
      TENFERRO_TRY(out[0], c.matmul(ct, yh));
    }
    if (wants(node, 1)) {
      TENFERRO_TRY(EagerTensor xt, c.transpose(x));
      TENFERRO_TRY(EagerTensor xh, conj_of(c, xt));
      TENFERRO_TRY(out[1], c.matmul(xh, ct));
    }
    return ok();
  };
}

AdNode::Vjp vjp_permute(std::span<const int64_t> perm) {
  SmallVector<int64_t, 8> inverse(perm.size(), 0);
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return [inverse](const Context& c, const AdNode&, const EagerTensor& ct, std::span<EagerTensor> out) -> Result<void> {
    TENFERRO_TRY(out[0], c.permute(ct, inverse));
    return ok();
  };
}

AdNode::Vjp vjp_reshape(const Shape& in) {
  return [in](const Context& c, const AdNode&, const EagerTensor& ct, std::span<EagerTensor> out) -> Result<void> {
    TENFERRO_TRY(out[0], c.reshape(ct, in));
    return ok();
  };
}

AdNode::Vjp vjp_broadcast_to(const Shape& from) {
  return [from](const Context& c, const AdNode&, const EagerTensor& ct, std::span<EagerTensor> out) -> Result<void> {
    TENFERRO_TRY(out[0], unbroadcast(c, ct, from));
    return ok();
  };
}

// Note [Eager einsum rule]: Z = einsum(A_1, ..., A_N) is linear in each operand, and the
// cotangent of A_i is the einsum of Z̄ with the conjugated other operands onto A_i's
// labels (the program path's einsum rule, Note [Einsum rules]). Written as one eager
// einsum when A_i's labels are distinct, each of them also occurs in the output or in
// another operand (nothing summed within A_i alone), and A_i is not broadcast (its
// extents are the resolved ones); otherwise the record has no direct rule and backward
// replays. Ellipsis dimensions are written as private-use code points.
AdNode::Vjp vjp_einsum(std::shared_ptr<const einsum::EinsumPlan> plan, std::span<const Shape> shapes) {
  constexpr einsum::Label kEllipsisBase = 0xF0000;
  if (!plan) return {};
  const einsum::EinsumSpec& spec = plan->spec();
  const size_t n = spec.inputs.size();
  auto occurs = [](const std::vector<einsum::Label>& labels, einsum::Label l) {
    return std::find(labels.begin(), labels.end(), l) != labels.end();
  };
  for (einsum::Label l : spec.output) {
    if (l >= kEllipsisBase) return {};
  }
  for (size_t i = 0; i < n; ++i) {  // the rule's conditions, checked without allocating
    const std::vector<einsum::Label>& li = spec.inputs[i];
    for (size_t a = 0; a < li.size(); ++a) {
      const einsum::Label l = li[a];
      if (l >= kEllipsisBase || std::count(li.begin(), li.end(), l) != 1) return {};
      if (shapes[i][a] != spec.extent(l)) return {};
      bool elsewhere = occurs(spec.output, l);
      for (size_t j = 0; j < n && !elsewhere; ++j) elsewhere = j != i && occurs(spec.inputs[j], l);
      if (!elsewhere) return {};
    }
  }
  return [plan = std::move(plan)](const Context& c, const AdNode& node, const EagerTensor& ct,
                                  std::span<EagerTensor> out) -> Result<void> {
    const einsum::EinsumSpec& sp = plan->spec();
    auto text = [](const std::vector<einsum::Label>& labels, std::string& dst) {
      for (einsum::Label l : labels) dst += einsum::format_label(l >= 0 ? l : kEllipsisBase + (-l - 1));
    };
    const size_t count = node.inputs.size();
    std::vector<EagerTensor> conj_inputs;
    conj_inputs.reserve(count);
    for (const EagerTensor& x : node.inputs) {
      TENFERRO_TRY(EagerTensor cx, conj_of(c, x));
      conj_inputs.push_back(std::move(cx));
    }
    std::vector<EagerTensor> ops;
    std::string sub;
    for (size_t i = 0; i < count; ++i) {
      if (!wants(node, i)) continue;
      sub.clear();
      text(sp.output, sub);
      ops.assign(1, ct);
      for (size_t j = 0; j < count; ++j) {
        if (j == i) continue;
        sub.push_back(',');
        text(sp.inputs[j], sub);
        ops.push_back(conj_inputs[j]);
      }
      sub += "->";
      text(sp.inputs[i], sub);
      TENFERRO_TRY(out[i], c.einsum(sub, ops));
    }
    return ok();
  };
}

}  // namespace tenferro::eager
