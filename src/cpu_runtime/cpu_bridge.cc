#include <algorithm>
#include <cstring>

#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/dot_route.h"
#include "tenferro/cpu/elementwise.h"
#include "tenferro/cpu/indexing.h"
#include "tenferro/cpu/kernels.h"
#include "tenferro/cpu/reduce.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/einsum_ir/einsum_op.h"

namespace tenferro::cpu_runtime {

// Note [CPU bridge]: every core op resolves at prepare time to one CoreKernel holding
// the op code, a copy of its attributes and what it needs precomputed (a constant's
// tensor, dot_general's dims); run() is one switch over the op code, no lookup. The
// kernels are the CPU module's (elementwise, reduce, indexing, copy, dot_general); where
// the program semantics (Note [Core op semantics] in ops.cc) differ from a kernel's
// contract, the bridge adapts:
// - view ops (transpose, reverse, slice, dynamic_slice, broadcast_in_dim, extract_diag,
//   and reshape when the layout allows) return views sharing the operand's storage;
// - integer div/rem by zero and integer pow with a negative exponent are completion
//   errors, as in the reference interpreter (the kernels define values for them);
// - gather clamps its indices and scatter_add skips out-of-range ones (the kernels
//   reject them): the bridge clamps a copy of the indices, and for scatter_add zeroes
//   the updates of skipped positions, only when some index is out of range;
// - pad accepts negative edges (cropping): padded with the non-negative parts, then
//   cropped by a view; tril/triu act on the last two axes (the kernels on the first two):
//   the operand is permuted there and the result permuted back (views);
// - clamp(min, x, max) is the kernel's clamp(x, min, max); boolean scatter_add (an OR)
//   adds i32 counts and tests them for nonzero.
// In DeterminismMode::kReproducible the ops whose floating results depend on how work
// is split (reductions, dot_general) run on a sequential context, so results are
// bitwise the same for any thread count.

namespace {

using cpu::CpuExecutionContext;
using program::OpCode;

static_assert(static_cast<int>(OpCode::kImag) - static_cast<int>(OpCode::kNeg) ==
              static_cast<int>(cpu::UnaryOp::kImag));
static_assert(static_cast<int>(OpCode::kAtan2) - static_cast<int>(OpCode::kAdd) ==
              static_cast<int>(cpu::BinaryOp::kAtan2));
static_assert(static_cast<int>(program::CompareDirection::kGe) == static_cast<int>(cpu::CompareOp::kGe));
static_assert(static_cast<int>(program::ReduceKind::kMin) == static_cast<int>(cpu::ReduceOp::kMin));

struct CpuContext final : runtime::EngineContext {
  CpuContext(CpuExecutionContext& c, const std::shared_ptr<HostBufferPool>& p) : ctx(c), pool(p) {}
  CpuExecutionContext& ctx;
  const std::shared_ptr<HostBufferPool>& pool;
};

Error completion(ErrorCode code, std::string_view op, std::string msg) {
  return Error(ErrorStage::kCompletion, code, std::string(op), std::move(msg));
}

bool is_int(DType d) { return d == DType::kI32 || d == DType::kI64; }

// Calls f(value) for every element of an integer tensor (any layout) until f returns true.
template <class F>
bool any_int(const Tensor& t, F&& f) {
  const int64_t rank = t.rank();
  const int64_t n = t.numel();
  if (n == 0) return false;
  const auto* base = static_cast<const uint8_t*>(t.storage()->data());
  const int64_t es = t.element_size();
  SmallVector<int64_t, 8> idx(static_cast<size_t>(rank), 0);
  int64_t off = t.offset();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = base + off * es;
    int64_t v = 0;
    if (t.dtype() == DType::kI32) {
      int32_t x;
      std::memcpy(&x, p, 4);
      v = x;
    } else {
      std::memcpy(&v, p, 8);
    }
    if (f(v)) return true;
    for (int64_t a = 0; a < rank; ++a) {
      const auto ua = static_cast<size_t>(a);
      off += t.strides()[ua];
      if (++idx[ua] < t.shape()[ua]) break;
      off -= t.strides()[ua] * t.shape()[ua];
      idx[ua] = 0;
    }
  }
  return false;
}

int64_t scalar_int(const Tensor& t) {
  int64_t v = 0;
  any_int(t, [&](int64_t x) {
    v = x;
    return true;
  });
  return v;
}

// Integer div/rem by zero and pow with a negative exponent are completion errors in the
// program semantics (the kernels define values for them).
Result<void> check_integer_operands(OpCode code, std::span<const Tensor> in) {
  if (!is_int(in[1].dtype())) return ok();
  if ((code == OpCode::kDiv || code == OpCode::kRem) && any_int(in[1], [](int64_t v) { return v == 0; })) {
    return completion(ErrorCode::kInvalidArgument, program::op_name(code), "integer division by zero");
  }
  if (code == OpCode::kPow && any_int(in[1], [](int64_t v) { return v < 0; })) {
    return completion(ErrorCode::kInvalidArgument, program::op_name(code), "negative integer exponent");
  }
  return ok();
}

// One core op's computation with the program semantics (Note [CPU bridge]); shared by
// prepared CoreKernels and run_core_op (the eager fast path).
class CoreOpRunner {
 public:
  CoreOpRunner(OpCode code, const program::Attrs& attrs, DType out_dtype, const Shape& out_shape)
      : code_(code), attrs_(attrs), out_dtype_(out_dtype), out_shape_(out_shape) {}

  Result<Tensor> compute(CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool,
                         std::span<const Tensor> in) const {
    const Attrs& a = attrs_;
    const std::string_view name = program::op_name(code_);
    if (program::is_elementwise_unary(code_)) {
      return cpu::unary(ctx, static_cast<cpu::UnaryOp>(static_cast<int>(code_)), in[0], pool);
    }
    if (is_elementwise_binary(code_)) {
      TENFERRO_TRY_VOID(check_integer_operands(code_, in));
      const auto op = static_cast<cpu::BinaryOp>(static_cast<int>(code_) - static_cast<int>(OpCode::kAdd));
      return cpu::binary(ctx, op, in[0], in[1], pool);
    }
    switch (code_) {
      case OpCode::kCompare:
        return cpu::compare(ctx, static_cast<cpu::CompareOp>(static_cast<int>(a.direction)), in[0], in[1], pool);
      case OpCode::kSelect: return cpu::select(ctx, in[0], in[1], in[2], pool);
      case OpCode::kClamp: return cpu::clamp(ctx, in[1], in[0], in[2], pool);
      case OpCode::kConvert: return cpu::convert(ctx, in[0], a.dtype, pool);
      case OpCode::kIota: return iota(ctx, pool);
      case OpCode::kBroadcastInDim: {
        const Tensor& x = in[0];
        Shape strides(out_shape_.size(), 0);
        for (size_t i = 0; i < a.dims.size(); ++i) {
          const auto r = static_cast<size_t>(a.dims[i]);
          if (x.shape()[i] != 1) strides[r] = x.strides()[i];
        }
        return x.as_strided(out_shape_, strides, x.offset());
      }
      case OpCode::kReshape: {
        Result<Tensor> v = in[0].reshape(out_shape_);
        if (v) return v;
        TENFERRO_TRY(Tensor m, cpu::materialize(ctx, in[0], pool));
        return m.reshape(out_shape_);
      }
      case OpCode::kTranspose: return in[0].permute(a.dims);
      case OpCode::kReverse: {
        Tensor t = in[0];
        for (int64_t axis : a.dims) {
          TENFERRO_TRY(t, t.flip(axis));
        }
        return t;
      }
      case OpCode::kSlice: {
        Tensor t = in[0];
        for (size_t i = 0; i < a.start.size(); ++i) {
          TENFERRO_TRY(t, t.slice(static_cast<int64_t>(i), a.start[i], a.limit[i], a.stride[i]));
        }
        return t;
      }
      case OpCode::kDynamicSlice: {
        Tensor t = in[0];
        for (size_t i = 0; i < a.sizes.size(); ++i) {
          const int64_t extent = t.shape()[i];
          const int64_t s = std::clamp(scalar_int(in[1 + i]), int64_t{0}, extent - a.sizes[i]);
          TENFERRO_TRY(t, t.slice(static_cast<int64_t>(i), s, s + a.sizes[i], 1));
        }
        return t;
      }
      case OpCode::kDynamicUpdateSlice: {
        Shape start(in.size() - 2, 0);
        for (size_t i = 0; i < start.size(); ++i) start[i] = scalar_int(in[2 + i]);
        return cpu::dynamic_update_slice(ctx, in[0], in[1], start);
      }
      case OpCode::kConcatenate: return cpu::concatenate(ctx, std::vector<Tensor>(in.begin(), in.end()), a.axis);
      case OpCode::kPad: return pad(ctx, in[0], in[1]);
      case OpCode::kGather: {
        if (in[0].shape()[static_cast<size_t>(a.axis)] == 0) {
          // Nothing to clamp to: an empty result, or an error for a non-empty one.
          if (element_count(out_shape_) == 0) return Tensor::uninitialized(out_dtype_, out_shape_, pool);
          return completion(ErrorCode::kOutOfRange, "gather", "indices into axis " + std::to_string(a.axis) + " of extent 0");
        }
        TENFERRO_TRY(Tensor idx, clamped_indices(ctx, in[0], in[1], pool));
        return cpu::gather(ctx, in[0], idx, a.axis);
      }
      case OpCode::kScatterAdd: return scatter_add(ctx, in[0], in[1], in[2], pool);
      case OpCode::kReduce:
        return cpu::reduce(ctx, static_cast<cpu::ReduceOp>(static_cast<int>(a.reduce)), in[0], a.dims, false, pool);
      case OpCode::kDotGeneral: {
        cpu::DotDims dims;
        dims.lhs_batch = SmallVector<int64_t, 8>(std::span<const int64_t>(a.lhs_batch));
        dims.rhs_batch = SmallVector<int64_t, 8>(std::span<const int64_t>(a.rhs_batch));
        dims.lhs_contracting = SmallVector<int64_t, 8>(std::span<const int64_t>(a.lhs_contract));
        dims.rhs_contracting = SmallVector<int64_t, 8>(std::span<const int64_t>(a.rhs_contract));
        return cpu::dot_general(ctx, in[0], in[1], dims, {}, pool);
      }
      case OpCode::kExtractDiag: return in[0].diagonal({a.axis, a.axis + 1});
      case OpCode::kEmbedDiag: return cpu::embed_diag(ctx, in[0], a.axis);
      case OpCode::kTril:
      case OpCode::kTriu: {
        const int64_t r = in[0].rank();
        Shape perm, inverse(static_cast<size_t>(r), 0);
        perm.push_back(r - 2);
        perm.push_back(r - 1);
        for (int64_t i = 0; i < r - 2; ++i) perm.push_back(i);
        for (int64_t i = 0; i < r; ++i) inverse[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
        TENFERRO_TRY(Tensor x, in[0].permute(perm));
        TENFERRO_TRY(Tensor y, code_ == OpCode::kTril ? cpu::tril(ctx, x, a.k) : cpu::triu(ctx, x, a.k));
        return y.permute(inverse);
      }
      case OpCode::kArgsort: return cpu::argsort(ctx, in[0], a.axis, pool);
      default:
        return completion(ErrorCode::kInternal, name, "op was not prepared for the CPU bridge");
    }
  }

  Result<Tensor> iota(CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool) const {
    // Column-major fill of index values along `axis`: element count / extent blocks.
    TENFERRO_TRY(Tensor t, Tensor::uninitialized(out_dtype_, out_shape_, pool));
    const auto axis = static_cast<size_t>(attrs_.axis);
    int64_t inner = 1;
    for (size_t i = 0; i < axis; ++i) inner *= out_shape_[i];
    const int64_t extent = out_shape_[axis];
    const int64_t n = t.numel();
    void* data = t.storage()->data();
    const auto fill = [&](auto* p) {
      using T = std::remove_pointer_t<decltype(p)>;
      ctx.parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t v = (i / inner) % extent;
          if constexpr (std::is_same_v<T, c64> || std::is_same_v<T, c128>) {
            p[i] = T(static_cast<typename T::value_type>(v));
          } else {
            p[i] = static_cast<T>(v);
          }
        }
      });
    };
    switch (out_dtype_) {
      case DType::kBool: fill(static_cast<bool*>(data)); break;
      case DType::kI32: fill(static_cast<int32_t*>(data)); break;
      case DType::kI64: fill(static_cast<int64_t*>(data)); break;
      case DType::kF32: fill(static_cast<float*>(data)); break;
      case DType::kF64: fill(static_cast<double*>(data)); break;
      case DType::kC64: fill(static_cast<c64*>(data)); break;
      case DType::kC128: fill(static_cast<c128*>(data)); break;
    }
    return t;
  }

  // cpu::pad takes StableHLO's pad whole, cropping included (Note [Pad by placement]).
  Result<Tensor> pad(CpuExecutionContext& ctx, const Tensor& x, const Tensor& value) const {
    return cpu::pad(ctx, x, value, attrs_.low, attrs_.high, attrs_.interior);
  }

  // Indices clamped into [0, extent) (a copy only when some index is out of range;
  // precondition: extent > 0).
  Result<Tensor> clamped_indices(CpuExecutionContext& ctx, const Tensor& x, const Tensor& idx,
                                 const std::shared_ptr<HostBufferPool>& pool) const {
    const int64_t extent = x.shape()[static_cast<size_t>(attrs_.axis)];
    if (!any_int(idx, [&](int64_t v) { return v < 0 || v >= extent; })) return idx;
    TENFERRO_TRY(Tensor lo, Tensor::zeros(idx.dtype(), {}));
    TENFERRO_TRY(Tensor hi, Tensor::full(idx.dtype(), {}, c128(static_cast<double>(extent - 1))));
    return cpu::clamp(ctx, idx, lo, hi, pool);
  }

  Result<Tensor> scatter_add(CpuExecutionContext& ctx, const Tensor& x, const Tensor& idx, const Tensor& updates,
                             const std::shared_ptr<HostBufferPool>& pool) const {
    if (x.dtype() == DType::kBool) {
      // Boolean scatter_add is an OR: add as i32 counts, then test for nonzero.
      TENFERRO_TRY(Tensor xi, cpu::convert(ctx, x, DType::kI32, pool));
      TENFERRO_TRY(Tensor ui, cpu::convert(ctx, updates, DType::kI32, pool));
      TENFERRO_TRY(Tensor sum, scatter_add(ctx, xi, idx, ui, pool));
      return cpu::convert(ctx, sum, DType::kBool, pool);
    }
    const auto axis = static_cast<size_t>(attrs_.axis);
    const int64_t extent = x.shape()[axis];
    if (!any_int(idx, [&](int64_t v) { return v < 0 || v >= extent; })) {
      return cpu::scatter_add(ctx, x, idx, updates, attrs_.axis);
    }
    // Skipped positions: their updates become zero, their indices any valid one.
    if (extent == 0) return cpu::materialize(ctx, x, pool);
    TENFERRO_TRY(Tensor u, cpu::materialize(ctx, updates, pool));
    TENFERRO_TRY(Tensor flat_idx, cpu::materialize(ctx, idx, pool));
    int64_t pre = 1, post = 1;
    for (size_t i = 0; i < axis; ++i) pre *= x.shape()[i];
    for (size_t i = axis + 1; i < x.shape().size(); ++i) post *= x.shape()[i];
    const int64_t count = flat_idx.numel();
    // u and flat_idx are fresh compact column-major buffers: [pre, count, post] and [count].
    auto* up = static_cast<uint8_t*>(u.storage()->data());
    auto* ip = static_cast<uint8_t*>(flat_idx.storage()->data());
    const int64_t es = u.element_size();
    for (int64_t j = 0; j < count; ++j) {
      int64_t v = 0;
      if (flat_idx.dtype() == DType::kI32) {
        int32_t w;
        std::memcpy(&w, ip + j * 4, 4);
        v = w;
      } else {
        std::memcpy(&v, ip + j * 8, 8);
      }
      if (v >= 0 && v < extent) continue;
      for (int64_t q = 0; q < post; ++q) {
        std::memset(up + (j * pre + q * pre * count) * es, 0, static_cast<size_t>(pre * es));
      }
      std::memset(ip + j * flat_idx.element_size(), 0, static_cast<size_t>(flat_idx.element_size()));
    }
    return cpu::scatter_add(ctx, x, flat_idx, u, attrs_.axis);
  }

 private:
  using Attrs = program::Attrs;
  OpCode code_;
  const Attrs& attrs_;
  DType out_dtype_;
  const Shape& out_shape_;
};

class CoreKernel final : public runtime::NodeKernel {
 public:
  CoreKernel(const program::Operation& op, const runtime::NodeRequest& req)
      : code_(op.code()), attrs_(op.attrs()), out_dtype_(req.output_dtypes[0]), out_shape_(req.output_shapes[0]),
        sequential_(req.determinism == runtime::DeterminismMode::kReproducible &&
                    (code_ == OpCode::kReduce || code_ == OpCode::kDotGeneral)) {
  }

  // dot_general's route for compact column-major operands on `threads` threads of an
  // engine with `caps` and `batch` settings (Note [dot_general planner]); the operands'
  // actual layouts at run time may change it.
  void plan_route(const runtime::NodeRequest& req, const cpu::CpuCaps& caps, const cpu::BatchSettings& batch,
                  int threads) {
    if (code_ != OpCode::kDotGeneral) return;
    const Attrs& a = attrs_;
    cpu::DotDims dims;
    dims.lhs_batch = SmallVector<int64_t, 8>(std::span<const int64_t>(a.lhs_batch));
    dims.rhs_batch = SmallVector<int64_t, 8>(std::span<const int64_t>(a.rhs_batch));
    dims.lhs_contracting = SmallVector<int64_t, 8>(std::span<const int64_t>(a.lhs_contract));
    dims.rhs_contracting = SmallVector<int64_t, 8>(std::span<const int64_t>(a.rhs_contract));
    const Layout out = cpu::dot_general_result_layout(out_shape_, dims.lhs_batch.size());
    auto problem = cpu::dot_problem(req.input_dtypes[0], Layout::col_major(req.input_shapes[0]),
                                    Layout::col_major(req.input_shapes[1]), out, dims);
    if (!problem) return;
    auto route = cpu::plan_dot(*problem, caps, cpu::DotSettings{batch, sequential_ ? 1 : threads});
    route_ = route ? cpu::describe(*route) : "no route: " + route.error().message();
  }

  std::string describe() const override { return route_; }

  Result<void> prepare_constant() {
    const program::Literal& l = *attrs_.literal;
    TENFERRO_TRY(constant_, Tensor::uninitialized(l.dtype, Dims(l.shape)));
    if (!l.bytes.empty()) std::memcpy(constant_.storage()->data(), l.bytes.data(), l.bytes.size());
    return ok();
  }

  bool is_view() const override {
    switch (code_) {
      case OpCode::kTranspose: case OpCode::kReverse: case OpCode::kSlice: case OpCode::kDynamicSlice:
      case OpCode::kBroadcastInDim: case OpCode::kExtractDiag: case OpCode::kReshape: case OpCode::kConstant:
        return true;
      default:
        return false;
    }
  }

  std::string_view provider() const override {
    if (code_ <= OpCode::kClamp || code_ == OpCode::kConvert) return "cpu.elementwise";
    switch (code_) {
      case OpCode::kReduce: return sequential_ ? "cpu.reduction (sequential: reproducible)" : "cpu.reduction";
      case OpCode::kDotGeneral: return sequential_ ? "cpu.dot_general (sequential: reproducible)" : "cpu.dot_general";
      case OpCode::kConstant: return "cpu.constant (prepared once)";
      case OpCode::kIota: return "cpu.iota";
      default: return is_view() ? "cpu.view" : "cpu.indexing";
    }
  }

  // Element-wise unary and binary ops write into a planned destination (Note [Buffer
  // plan] in the runtime), in place of an input when the plan says so.
  bool writes_into() const override {
    return program::is_elementwise_unary(code_) || program::is_elementwise_binary(code_);
  }
  bool in_place_ok(size_t) const override { return writes_into(); }

  Result<void> run(runtime::EngineContext& engine_ctx, std::span<const Tensor> in, std::span<Tensor> out) const override {
    auto& c = static_cast<CpuContext&>(engine_ctx);
    if (out[0].defined() && writes_into()) return run_into(c.ctx, in, out[0]);
    if (sequential_) {
      CpuExecutionContext seq = CpuExecutionContext::sequential();
      TENFERRO_TRY(out[0], compute(seq, c.pool, in));
      return ok();
    }
    TENFERRO_TRY(out[0], compute(c.ctx, c.pool, in));
    return ok();
  }

 private:
  Result<void> run_into(CpuExecutionContext& ctx, std::span<const Tensor> in, Tensor& dst) const {
    if (program::is_elementwise_unary(code_)) {
      return cpu::unary_into(ctx, static_cast<cpu::UnaryOp>(static_cast<int>(code_)), in[0], dst,
                             cpu::Destination::kPlanned);
    }
    TENFERRO_TRY_VOID(check_integer_operands(code_, in));
    const auto op = static_cast<cpu::BinaryOp>(static_cast<int>(code_) - static_cast<int>(OpCode::kAdd));
    return cpu::binary_into(ctx, op, in[0], in[1], dst, cpu::Destination::kPlanned);
  }

  Result<Tensor> compute(CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool,
                         std::span<const Tensor> in) const {
    if (code_ == OpCode::kConstant) return constant_;
    return CoreOpRunner(code_, attrs_, out_dtype_, out_shape_).compute(ctx, pool, in);
  }

  using Attrs = program::Attrs;
  OpCode code_;
  Attrs attrs_;
  DType out_dtype_;
  Shape out_shape_;
  bool sequential_ = false;
  Tensor constant_;
  std::string route_;  // dot_general's planned route (plan_route)
};

class CpuBridge final : public runtime::EngineBridge {
 public:
  explicit CpuBridge(std::shared_ptr<cpu::CpuEngine> engine) : engine_(std::move(engine)) {
    for (const cpu::CpuDomainInfo& d : engine_->domains()) domains_.push_back(d.id);
  }
  std::string_view name() const override { return "cpu"; }
  std::span<const int32_t> domains() const override { return domains_; }

  Result<runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>> prepare_core(
      const runtime::NodeRequest& req) const override {
    using Cap = runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>;
    const program::Operation& op = *req.op;
    if (op.code() == OpCode::kExtension) return Cap::unsupported("not a core op");
    if (is_elementwise_binary(op.code()) && req.input_dtypes[0] == DType::kBool) {
      return Cap::unsupported("the CPU elementwise kernels have no bool arithmetic");
    }
    auto k = std::make_shared<CoreKernel>(op, req);
    if (op.code() == OpCode::kDotGeneral) {
      int threads = 1;
      for (const cpu::CpuDomainInfo& d : engine_->domains()) {
        if (d.id == req.domain) threads = d.threads;
      }
      k->plan_route(req, engine_->caps(), engine_->config().batch, threads);
    }
    if (op.code() == OpCode::kConstant) {
      TENFERRO_TRY_VOID(k->prepare_constant());
    }
    return Cap::prepared(std::move(k));
  }

  bool plans_buffers() const override { return true; }
  Result<std::shared_ptr<Storage>> allocate(int32_t domain, int64_t bytes) const override {
    // From the domain's pool: returned to it when the workspace is dropped.
    TENFERRO_TRY(Tensor t, Tensor::uninitialized(DType::kF64, {std::max<int64_t>((bytes + 7) / 8, 1)}, engine_->pool(domain)));
    return t.storage();
  }

  Result<void> enter(int32_t domain, FunctionRef<Result<void>(runtime::EngineContext&)> body) const override {
    const std::shared_ptr<HostBufferPool>& pool = engine_->pool(domain);
    return engine_->run(domain, cpu::ParallelMode::kInner, [&](CpuExecutionContext& ctx) -> Result<void> {
      CpuContext c(ctx, pool);
      return body(c);
    });
  }

 const std::shared_ptr<cpu::CpuEngine>& engine() const noexcept { return engine_; }

 private:
  std::shared_ptr<cpu::CpuEngine> engine_;
  std::vector<int32_t> domains_;
};

// Note [CPU einsum module]: an einsum op is planned at prepare time for the specialized
// shapes (EinsumPlan::prepare: path search, step layouts) and runs as one prepared node
// through einsum_cpu's executor, inside the runtime's executor entry. In Reproducible
// mode it runs on a sequential context (no lanes, no split products). The node's inputs
// may arrive in either memory order (C-ordered arrays from Python), which prepare does
// not know: it plans both orders (Note [Row-major operands] in einsum.cc; the row-major
// plan on the column-major plan's tree, so the path is searched once) and each run takes
// the one preferred_operand_order picks for its inputs (an MPS inner product of
// C-ordered operands, 16 sites of bond 256, one thread: 9.6 ms -> eager's 6.8).
class EinsumKernel final : public runtime::NodeKernel {
 public:
  EinsumKernel(std::shared_ptr<const einsum::EinsumPlan> col, std::shared_ptr<const einsum::EinsumPlan> row,
               bool sequential)
      : col_(std::move(col)), row_(std::move(row)), sequential_(sequential) {}
  Result<void> run(runtime::EngineContext& engine_ctx, std::span<const Tensor> in, std::span<Tensor> out) const override {
    auto& c = static_cast<CpuContext&>(engine_ctx);
    const einsum::EinsumPlan& plan =
        einsum::preferred_operand_order(in) == einsum::OperandOrder::kRowMajor ? *row_ : *col_;
    if (sequential_) {
      CpuExecutionContext seq = CpuExecutionContext::sequential();
      TENFERRO_TRY(out[0], plan.execute(seq, in, c.pool));
      return ok();
    }
    TENFERRO_TRY(out[0], plan.execute(c.ctx, in, c.pool));
    return ok();
  }
  std::string_view provider() const override {
    return sequential_ ? "cpu.einsum (sequential: reproducible)" : "cpu.einsum";
  }

 private:
  std::shared_ptr<const einsum::EinsumPlan> col_, row_;  // Note [Row-major operands]
  bool sequential_;
};

class EinsumModule final : public runtime::ExtensionModule {
 public:
  std::string_view family_id() const override { return einsum::kEinsumFamily; }
  Result<runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>> prepare(
      const runtime::NodeRequest& req) const override {
    using Cap = runtime::PrepareCapability<std::shared_ptr<const runtime::NodeKernel>>;
    const auto* op = static_cast<const einsum::EinsumOp*>(req.op->extension());
    auto plan = einsum::EinsumPlan::prepare(op->subscripts(), req.input_shapes, req.output_dtypes[0], op->policy());
    if (!plan) {
      return Error(ErrorStage::kPrepare, plan.error().code(), "einsum", "planning '" + op->subscripts() + "' failed")
          .with_cause(plan.error());
    }
    if ((*plan)->output_shape() != req.output_shapes[0]) {
      return Cap::unsupported("the planned output shape " + format_dims((*plan)->output_shape()) +
                              " differs from the program's " + format_dims(req.output_shapes[0]));
    }
    einsum::PathPolicy same_tree;
    same_tree.algorithm = einsum::PathAlgorithm::kExplicit;
    same_tree.explicit_tree = (*plan)->tree();
    auto row = einsum::EinsumPlan::prepare((*plan)->spec(), req.input_shapes, req.output_dtypes[0], same_tree,
                                           einsum::OperandOrder::kRowMajor);
    if (!row) {
      return Error(ErrorStage::kPrepare, row.error().code(), "einsum",
                   "planning '" + op->subscripts() + "' for row-major operands failed")
          .with_cause(row.error());
    }
    return Cap::prepared(std::make_shared<EinsumKernel>(std::move(*plan), std::move(*row),
                                                        req.determinism == runtime::DeterminismMode::kReproducible));
  }
};

}  // namespace

std::shared_ptr<const runtime::ExtensionModule> cpu_einsum_module() {
  // Immutable registration metadata (ARCHITECTURE §3.3): one instance per process, so
  // registering it again is the runtime's same-module no-op.
  static const std::shared_ptr<const runtime::ExtensionModule> module = std::make_shared<EinsumModule>();
  return module;
}

bool is_cpu_einsum_module(const runtime::ExtensionModule* module) noexcept {
  return module != nullptr && dynamic_cast<const EinsumModule*>(module) != nullptr;
}

CpuEntered cpu_entered(runtime::EngineContext& c) noexcept {
  auto* cpu = dynamic_cast<CpuContext*>(&c);
  if (cpu == nullptr) return {};
  return CpuEntered{&cpu->ctx, &cpu->pool};
}

std::shared_ptr<cpu::CpuEngine> cpu_engine_of(const runtime::EngineBridge& bridge) noexcept {
  const auto* cpu = dynamic_cast<const CpuBridge*>(&bridge);
  return cpu == nullptr ? nullptr : cpu->engine();
}

Result<Tensor> run_core_op(cpu::CpuExecutionContext& ctx, const std::shared_ptr<HostBufferPool>& pool,
                           program::OpCode code, const program::Attrs& attrs, std::span<const Tensor> inputs,
                           DType out_dtype, const Shape& out_shape) {
  if (code == OpCode::kExtension || code == OpCode::kConstant) {
    return usage_error(ErrorCode::kInvalidArgument, "run_core_op",
                       std::string(code == OpCode::kConstant ? "constant" : "an extension op") +
                           " has no operands to run on; build it directly");
  }
  if (is_elementwise_binary(code) && !inputs.empty() && inputs[0].dtype() == DType::kBool) {
    return usage_error(ErrorCode::kDTypeMismatch, std::string(program::op_name(code)),
                       "no arithmetic on bool tensors (convert them first)");
  }
  return CoreOpRunner(code, attrs, out_dtype, out_shape).compute(ctx, pool, inputs);
}

Result<runtime::EngineId> register_cpu_engine(runtime::Runtime& runtime, std::shared_ptr<cpu::CpuEngine> engine,
                                              CpuRegistration what) {
  if (engine == nullptr) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kInvalidArgument, "register_cpu_engine", "null engine");
  }
  TENFERRO_TRY(runtime::EngineId id, runtime.register_engine(std::make_shared<CpuBridge>(std::move(engine))));
  if (what.einsum_module) {
    TENFERRO_TRY_VOID(runtime.register_extension(id, cpu_einsum_module()));
  }
  return id;
}

}  // namespace tenferro::cpu_runtime
