#pragma once
// Private to the eager module: the direct reverse rules of the tape (Note [Eager direct
// backward] in autograd.cc). Each returns an empty Vjp where the op has no direct rule.

#include <memory>
#include <span>

#include "tenferro/eager/autograd.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/program/ops.h"

namespace tenferro::eager {

/// `ct` summed over the axes numpy broadcasting added to reach ct's shape from `target`.
Result<EagerTensor> unbroadcast(const Context& c, const EagerTensor& ct, const Shape& target);

AdNode::Vjp vjp_unary(program::OpCode code);
/// Broadcasting add, sub, mul, div.
AdNode::Vjp vjp_binary(program::OpCode code);
AdNode::Vjp vjp_sum(std::span<const int64_t> axes, const Shape& in, bool keep);
AdNode::Vjp vjp_mean(std::span<const int64_t> axes, const Shape& in, c128 n, bool keep);
/// The plain 2-D product.
AdNode::Vjp vjp_matmul2d();
AdNode::Vjp vjp_permute(std::span<const int64_t> perm);
AdNode::Vjp vjp_reshape(const Shape& in);
AdNode::Vjp vjp_broadcast_to(const Shape& from);
/// N-ary einsum (Note [Eager einsum rule]); empty where the rule does not apply.
/// `plan`: the forward call's plan (its resolved spec); null gives no rule.
AdNode::Vjp vjp_einsum(std::shared_ptr<const einsum::EinsumPlan> plan, std::span<const Shape> shapes);

}  // namespace tenferro::eager
