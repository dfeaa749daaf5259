// lower_to_stablehlo: programs to StableHLO modules (Note [Core ops in StableHLO]).

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

#include "tenferro/xla/stablehlo.h"
#include "text_parts.h"

namespace tenferro::xla {

using program::OpCode;

// Note [Core ops in StableHLO]: each core op becomes the StableHLO op of the same
// meaning (Note [Core op semantics] in ops.cc follows StableHLO where it has the op),
// except where the two differ:
// - reshape keeps column-major element order; StableHLO's reshape is row-major. When the
//   extents other than 1 are the same sequence on both sides the orders agree and one
//   reshape is written; otherwise transpose (axes reversed) -> reshape to the reversed
//   shape -> transpose back, which is the column-major reshape exactly.
// - conj has no StableHLO op: complex(real(x), negate(imag(x))); the identity on real
//   and integer values. real/imag of a real value: the value / zeros.
// - convert: complex -> real takes the real part first and anything -> bool is
//   compare(x, 0, NE), both explicit because StableHLO leaves them unspecified or
//   defines them differently.
// - gather(x, i){axis} (numpy take with clamped indices) is a StableHLO gather of slices
//   of size 1 along `axis` (collapsed) at the start indices `i` (index_vector_dim = rank
//   of i, so each index is a vector of one); StableHLO clamps start indices into
//   [0, extent - 1] as the core op does. scatter_add is the matching scatter with an add
//   body (or for bool); StableHLO skips updates whose window is out of bounds, as the
//   core op skips out-of-range indices.
// - extract_diag gathers the positions (i, i) of the two axes (an iota of shape [n, 2]
//   as start indices); embed_diag and tril/triu select between the operand (broadcast
//   for embed_diag) and zeros with a mask from compared iotas. All exact: no arithmetic
//   touches the values.
// - reduce writes the identity of its combiner as init (0, 1, -inf / lowest, +inf /
//   max); reductions over no axis, reversals of no axis and one-operand concatenations
//   are the operand itself.
// Extension ops: the family lowering of StableHloOptions::lowerings when there is one,
// else the op's own lower_to_core on the concrete operand types, whose core program is
// lowered in place (its binding inputs as constants).

namespace {

constexpr int64_t kMaxInlineElements = int64_t{1} << 24;

std::string_view unary_name(OpCode c) {
  switch (c) {
    case OpCode::kNeg: return "negate";
    case OpCode::kAbs: return "abs";
    case OpCode::kSign: return "sign";
    case OpCode::kExp: return "exponential";
    case OpCode::kLog: return "log";
    case OpCode::kExpm1: return "exponential_minus_one";
    case OpCode::kLog1p: return "log_plus_one";
    case OpCode::kSin: return "sine";
    case OpCode::kCos: return "cosine";
    case OpCode::kTanh: return "tanh";
    case OpCode::kSqrt: return "sqrt";
    case OpCode::kRsqrt: return "rsqrt";
    default: return "";
  }
}

std::string_view binary_name(OpCode c) {
  switch (c) {
    case OpCode::kAdd: return "add";
    case OpCode::kSub: return "subtract";
    case OpCode::kMul: return "multiply";
    case OpCode::kDiv: return "divide";
    case OpCode::kRem: return "remainder";
    case OpCode::kPow: return "power";
    case OpCode::kMax: return "maximum";
    case OpCode::kMin: return "minimum";
    case OpCode::kAtan2: return "atan2";
    default: return "";
  }
}

std::string direction_attr(program::CompareDirection d) {
  constexpr std::string_view n[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  return "comparison_direction = #stablehlo<comparison_direction " + std::string(n[static_cast<int>(d)]) + ">";
}

std::vector<int64_t> iota_vec(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(from + i);
  return v;
}

std::vector<int64_t> reversed_axes(size_t rank) {
  std::vector<int64_t> v;
  for (size_t i = rank; i > 0; --i) v.push_back(static_cast<int64_t>(i - 1));
  return v;
}

// Whether a shape holds no element (no product: extents of hostile programs may overflow it).
bool empty(const std::vector<int64_t>& shape) { return std::find(shape.begin(), shape.end(), 0) != shape.end(); }

// The identity element of a reduction's combiner, as the bytes of one element.
void reduce_init(program::ReduceKind kind, DType d, uint8_t* b) {
  std::memset(b, 0, 16);
  auto put = [&](auto v) { std::memcpy(b, &v, sizeof v); };
  const bool max = kind == program::ReduceKind::kMax;
  switch (kind) {
    case program::ReduceKind::kSum: return;
    case program::ReduceKind::kProd:
      switch (d) {
        case DType::kI32: return put(int32_t{1});
        case DType::kI64: return put(int64_t{1});
        case DType::kF32:
        case DType::kC64: return put(1.0f);
        default: return put(1.0);
      }
    case program::ReduceKind::kMax:
    case program::ReduceKind::kMin:
      switch (d) {
        case DType::kBool: return put(static_cast<uint8_t>(max ? 0 : 1));  // any / all
        case DType::kI32:
          return put(max ? std::numeric_limits<int32_t>::lowest() : std::numeric_limits<int32_t>::max());
        case DType::kI64:
          return put(max ? std::numeric_limits<int64_t>::lowest() : std::numeric_limits<int64_t>::max());
        case DType::kF32:
          return put(max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
        default: return put(max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
      }
  }
}

bool identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  });
}

Error unsupported(std::string op, std::string message) {
  return Error(ErrorStage::kCompile, ErrorCode::kUnsupported, std::move(op), std::move(message));
}

class Lowering {
 public:
  explicit Lowering(const StableHloOptions& options) : options_(options) {}

  Emitter& emitter() { return em_; }

  // Lowers the ops of `p` (symbols bound to `symbols`) with its inputs `inputs`; returns
  // its outputs.
  Result<std::vector<HloValue>> lower_ops(const program::SemanticProgram& p, std::span<const int64_t> symbols,
                                          std::vector<HloValue> inputs) {
    std::vector<HloValue> values(p.value_count());
    for (size_t i = 0; i < inputs.size(); ++i) values[static_cast<size_t>(p.inputs()[i].value.index())] = inputs[i];
    for (const program::Operation& op : p.ops()) {
      std::vector<HloValue> in;
      for (program::ValueRef v : op.operands()) in.push_back(values[static_cast<size_t>(v.index())]);
      std::vector<TensorType> out;
      for (program::ValueRef v : op.results()) {
        TENFERRO_TRY(Shape sh, p.concrete_shape(v, symbols));
        out.push_back(TensorType{p.type(v).dtype, {sh.begin(), sh.end()}});
      }
      std::vector<HloValue> res;
      if (op.code() == OpCode::kExtension) {
        TENFERRO_TRY(res, extension(*op.extension(), in, out));
      } else {
        TENFERRO_TRY(HloValue r, core(op, in, out[0]));
        res.push_back(std::move(r));
      }
      for (size_t k = 0; k < res.size(); ++k) values[static_cast<size_t>(op.results()[k].index())] = res[k];
    }
    std::vector<HloValue> outs;
    for (program::ValueRef v : p.outputs()) outs.push_back(values[static_cast<size_t>(v.index())]);
    return outs;
  }

  // A tensor as a constant (column-major bytes).
  Result<HloValue> constant_of(const Tensor& t) {
    const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    if (t.numel() > kMaxInlineElements) {
      return usage_error(ErrorCode::kOverflow, "lower_to_stablehlo",
                         "a binding of " + std::to_string(t.numel()) + " elements is too large to inline (limit " +
                             std::to_string(kMaxInlineElements) + "); pass it as an argument");
    }
    TENFERRO_TRY(Tensor c, t.to_col_major());
    const auto* bytes = static_cast<const uint8_t*>(c.storage()->data()) + c.layout().offset * c.element_size();
    return em_.literal(TensorType{t.dtype(), shape}, bytes);
  }

 private:
  Result<std::vector<HloValue>> extension(const program::ExtensionOp& ext, std::span<const HloValue> in,
                                          std::span<const TensorType> out) {
    if (options_.lowerings) {
      if (const ExtensionLowering* f = options_.lowerings->find(ext.family_id())) {
        auto r = (*f)(em_, ext, in, out);
        if (r || r.error().code() != ErrorCode::kUnsupported) return r;
        return unsupported(std::string(ext.family_id()), "no StableHLO lowering for extension \"" +
                                                             std::string(ext.family_id()) + "\" \"" +
                                                             ext.payload_text() + "\"")
            .with_cause(r.error());
      }
    }
    program::ProgramBuilder b;
    b.set_core_only(true);
    std::vector<program::Value> args;
    for (const HloValue& v : in) {
      program::ValueType vt{v.type.dtype, {}};
      for (int64_t e : v.type.shape) vt.shape.push_back(program::Extent::exact(e));
      TENFERRO_TRY(program::Value a, b.input(vt));
      args.push_back(a);
    }
    TENFERRO_TRY(program::LoweringOutcome lo, ext.lower_to_core(b, args));
    if (lo.kind != program::LoweringOutcome::Kind::kLowered) {
      return unsupported(std::string(ext.family_id()),
                         "no StableHLO lowering for extension \"" + std::string(ext.family_id()) + "\" \"" +
                             ext.payload_text() + "\" (no family lowering installed, no core lowering: " + lo.reason +
                             ")");
    }
    TENFERRO_TRY(program::CompiledGraph g, b.finish(lo.values));
    std::vector<HloValue> inputs;
    size_t next_arg = 0, next_binding = 0;
    for (const program::InputInfo& info : g.program->inputs()) {
      if (info.binding) {
        TENFERRO_TRY(HloValue c, constant_of(g.bindings.tensors[next_binding++]));
        inputs.push_back(std::move(c));
      } else {
        inputs.push_back(in[next_arg++]);
      }
    }
    return lower_ops(*g.program, {}, std::move(inputs));
  }

  Result<HloValue> core(const program::Operation& op, std::span<const HloValue> in, const TensorType& rt) {
    const program::Attrs& a = op.attrs();
    const OpCode c = op.code();
    if (!unary_name(c).empty()) return em_.op(unary_name(c), {in[0]}, "", rt);
    if (!binary_name(c).empty()) return em_.op(binary_name(c), {in[0], in[1]}, "", rt);
    const HloValue& x = in.empty() ? dummy_ : in[0];
    switch (c) {
      case OpCode::kConj: {
        if (!is_complex(x.type.dtype)) return x;
        const TensorType part{real_dtype(x.type.dtype), x.type.shape};
        const HloValue re = em_.op("real", {x}, "", part);
        const HloValue im = em_.op("imag", {x}, "", part);
        const HloValue neg = em_.op("negate", {im}, "", part);
        return em_.op("complex", {re, neg}, "", rt);
      }
      case OpCode::kReal:
        if (!is_complex(x.type.dtype)) return x;
        return em_.op("real", {x}, "", rt);
      case OpCode::kImag:
        if (!is_complex(x.type.dtype)) return em_.splat(rt, c128{});
        return em_.op("imag", {x}, "", rt);
      case OpCode::kCompare: return em_.op("compare", {in[0], in[1]}, direction_attr(a.direction), rt);
      case OpCode::kSelect: return em_.op("select", {in[0], in[1], in[2]}, "", rt);
      case OpCode::kClamp: return em_.op("clamp", {in[0], in[1], in[2]}, "", rt);
      case OpCode::kConvert: return em_.convert(x, rt.dtype);
      case OpCode::kConstant: return em_.literal(rt, a.literal->bytes.data());
      case OpCode::kIota: return em_.op("iota", {}, "iota_dimension = " + std::to_string(a.axis) + " : i64", rt);
      case OpCode::kBroadcastInDim:
        return em_.op("broadcast_in_dim", {x}, "broadcast_dimensions = " + i64_array(a.dims), rt);
      case OpCode::kReshape: return reshape(x, rt);
      case OpCode::kTranspose: return em_.transpose(x, a.dims);
      case OpCode::kReverse:
        if (a.dims.empty()) return x;
        return em_.op("reverse", {x}, "dimensions = " + i64_array(a.dims), rt);
      case OpCode::kSlice:
        return em_.op("slice", {x},
                      "start_indices = " + i64_array(a.start) + ", limit_indices = " + i64_array(a.limit) +
                          ", strides = " + i64_array(a.stride),
                      rt);
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice: {
        // StableHLO wants start indices of one type: all as i64.
        std::vector<HloValue> ops(in.begin(), in.end());
        const size_t first = c == OpCode::kDynamicSlice ? 1 : 2;
        for (size_t i = first; i < ops.size(); ++i) ops[i] = em_.convert(ops[i], DType::kI64);
        if (c == OpCode::kDynamicUpdateSlice) return em_.op("dynamic_update_slice", ops, "", rt);
        return em_.op("dynamic_slice", ops, "slice_sizes = " + i64_array(a.sizes), rt);
      }
      case OpCode::kConcatenate:
        if (in.size() == 1) return x;
        return em_.op("concatenate", in, "dimension = " + std::to_string(a.axis) + " : i64", rt);
      case OpCode::kPad:
        return em_.op("pad", {in[0], in[1]},
                      "edge_padding_low = " + i64_array(a.low) + ", edge_padding_high = " + i64_array(a.high) +
                          ", interior_padding = " + i64_array(a.interior),
                      rt);
      case OpCode::kGather: return gather(x, in[1], a.axis, rt);
      case OpCode::kScatterAdd: return scatter_add(x, in[1], in[2], a.axis, rt);
      case OpCode::kReduce: {
        if (a.dims.empty()) return x;
        alignas(16) uint8_t init_bytes[16];
        reduce_init(a.reduce, x.type.dtype, init_bytes);
        const HloValue init = em_.literal(TensorType{x.type.dtype, {}}, init_bytes);
        constexpr std::string_view body[] = {"add", "multiply", "maximum", "minimum"};
        const HloValue ops[] = {x, init};
        return em_.with_body("reduce", ops, body[static_cast<int>(a.reduce)], x.type.dtype,
                             "dimensions = " + i64_array(a.dims), rt);
      }
      case OpCode::kDotGeneral: {
        std::string dn;
        auto field = [&](const char* name, const std::vector<int64_t>& v) {
          if (v.empty()) return;
          dn.append(dn.empty() ? "" : ", ").append(name).append(" = ").append(dim_list(v));
        };
        field("lhs_batching_dimensions", a.lhs_batch);
        field("rhs_batching_dimensions", a.rhs_batch);
        field("lhs_contracting_dimensions", a.lhs_contract);
        field("rhs_contracting_dimensions", a.rhs_contract);
        return em_.op("dot_general", {in[0], in[1]}, "dot_dimension_numbers = #stablehlo.dot<" + dn + ">", rt);
      }
      case OpCode::kExtractDiag: return extract_diag(x, a.axis, rt);
      case OpCode::kEmbedDiag: {
        // x axis `axis` -> result axis `axis`; result axis axis + 1 is broadcast.
        std::vector<int64_t> dims;
        for (int64_t i = 0; i < static_cast<int64_t>(x.type.shape.size()); ++i) dims.push_back(i <= a.axis ? i : i + 1);
        const HloValue bx = em_.op("broadcast_in_dim", {x}, "broadcast_dimensions = " + i64_array(dims), rt);
        const HloValue mask = iota_mask(rt.shape, a.axis, a.axis + 1, 0, "EQ");
        return em_.op("select", {mask, bx, em_.splat(rt, c128{})}, "", rt);
      }
      case OpCode::kTril:
      case OpCode::kTriu: {
        const auto r = static_cast<int64_t>(rt.shape.size());
        const HloValue mask = iota_mask(rt.shape, r - 1, r - 2, a.k, c == OpCode::kTril ? "LE" : "GE");
        return em_.op("select", {mask, x, em_.splat(rt, c128{})}, "", rt);
      }
      case OpCode::kArgsort: return em_.sort_positions(x, a.axis);
      default: break;
    }
    return Error(ErrorStage::kCompile, ErrorCode::kInternal, std::string(program::op_name(c)), "no StableHLO rule");
  }

  HloValue reshape(const HloValue& x, const TensorType& rt) {
    std::vector<int64_t> a, b;
    for (int64_t e : x.type.shape)
      if (e != 1) a.push_back(e);
    for (int64_t e : rt.shape)
      if (e != 1) b.push_back(e);
    if (a == b) return em_.op("reshape", {x}, "", rt);
    // Column-major reshape = reverse axes, row-major reshape to the reversed shape, reverse back.
    const HloValue t = em_.transpose(x, reversed_axes(x.type.shape.size()));
    TensorType rev{rt.dtype, std::vector<int64_t>(rt.shape.rbegin(), rt.shape.rend())};
    const HloValue r = em_.op("reshape", {t}, "", rev);
    return em_.transpose(r, reversed_axes(rt.shape.size()));
  }

  // The window dims of gather/scatter: every operand axis but `axis`, placed around the
  // q index axes of the result.
  static std::vector<int64_t> window_dims(int64_t rank, int64_t axis, int64_t q) {
    std::vector<int64_t> v = iota_vec(axis);
    for (int64_t d = axis + 1; d < rank; ++d) v.push_back(d - 1 + q);
    return v;
  }

  Result<HloValue> gather(const HloValue& x, const HloValue& idx, int64_t axis, const TensorType& rt) {
    const auto r = static_cast<int64_t>(x.type.shape.size());
    const auto q = static_cast<int64_t>(idx.type.shape.size());
    if (empty(rt.shape)) return em_.splat(rt, c128{});
    if (x.type.shape[static_cast<size_t>(axis)] == 0) {
      return unsupported("gather",
                         "indices into axis " + std::to_string(axis) +
                             " of extent 0 (an out_of_range error at run time, which StableHLO cannot express)");
    }
    std::vector<int64_t> sizes = x.type.shape;
    sizes[static_cast<size_t>(axis)] = 1;
    const std::vector<int64_t> ax{axis};
    const std::string dn = "dimension_numbers = #stablehlo.gather<" +
                           offset_field("offset_dims", window_dims(r, axis, q)) +
                           "collapsed_slice_dims = " + dim_list(ax) + ", start_index_map = " + dim_list(ax) +
                           ", index_vector_dim = " + std::to_string(q) + ">";
    return em_.op("gather", {x, idx}, dn + ", indices_are_sorted = false, slice_sizes = " + i64_array(sizes), rt);
  }

  HloValue scatter_add(const HloValue& x, const HloValue& idx, const HloValue& upd, int64_t axis,
                       const TensorType& rt) {
    const auto r = static_cast<int64_t>(x.type.shape.size());
    const auto q = static_cast<int64_t>(idx.type.shape.size());
    if (x.type.shape[static_cast<size_t>(axis)] == 0 || empty(upd.type.shape)) return x;  // every update skipped
    const std::vector<int64_t> ax{axis};
    const std::string dn =
        "scatter_dimension_numbers = #stablehlo.scatter<" +
        offset_field("update_window_dims", window_dims(r, axis, q)) + "inserted_window_dims = " + dim_list(ax) +
        ", scatter_dims_to_operand_dims = " + dim_list(ax) + ", index_vector_dim = " + std::to_string(q) + ">";
    const HloValue ops[] = {x, idx, upd};
    return em_.with_body("scatter", ops, x.type.dtype == DType::kBool ? "or" : "add", x.type.dtype,
                         dn + ", indices_are_sorted = false, unique_indices = false", rt);
  }

  // "NAME = [..], " or nothing for an empty list (the attribute parser's default).
  static std::string offset_field(const char* name, const std::vector<int64_t>& v) {
    return v.empty() ? std::string() : std::string(name) + " = " + dim_list(v) + ", ";
  }

  HloValue extract_diag(const HloValue& x, int64_t axis, const TensorType& rt) {
    const auto r = static_cast<int64_t>(x.type.shape.size());
    const int64_t n = x.type.shape[static_cast<size_t>(axis)];
    if (empty(rt.shape)) return em_.splat(rt, c128{});
    // Start indices (i, i) for i < n: an iota of shape [n, 2] along axis 0.
    const HloValue idx = em_.op("iota", {}, "iota_dimension = 0 : i64", TensorType{DType::kI64, {n, 2}});
    std::vector<int64_t> sizes = x.type.shape;
    sizes[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(axis) + 1] = 1;
    std::vector<int64_t> offset = iota_vec(axis);
    for (int64_t d = axis + 1; d < r - 1; ++d) offset.push_back(d);
    const std::vector<int64_t> pair{axis, axis + 1};
    const std::string dn = "dimension_numbers = #stablehlo.gather<" + offset_field("offset_dims", offset) +
                           "collapsed_slice_dims = " + dim_list(pair) + ", start_index_map = " + dim_list(pair) +
                           ", index_vector_dim = 1>";
    return em_.op("gather", {x, idx}, dn + ", indices_are_sorted = false, slice_sizes = " + i64_array(sizes), rt);
  }

  // compare(iota(axis_a) - iota(axis_b), k, dir) over `shape` (dir EQ with k = 0: the
  // diagonal of the two axes).
  HloValue iota_mask(const std::vector<int64_t>& shape, int64_t axis_a, int64_t axis_b, int64_t k, const char* dir) {
    const TensorType it{DType::kI64, shape};
    const HloValue ia = em_.op("iota", {}, "iota_dimension = " + std::to_string(axis_a) + " : i64", it);
    const HloValue ib = em_.op("iota", {}, "iota_dimension = " + std::to_string(axis_b) + " : i64", it);
    const HloValue diff = em_.op("subtract", {ia, ib}, "", it);
    // k exactly (an offset near the int64 limits does not survive a round trip through
    // double).
    const HloValue kk = em_.literal(TensorType{DType::kI64, {}}, reinterpret_cast<const uint8_t*>(&k), shape);
    return em_.op("compare", {diff, kk},
                  "comparison_direction = #stablehlo<comparison_direction " + std::string(dir) + ">",
                  TensorType{DType::kBool, shape});
  }

  const StableHloOptions& options_;
  Emitter em_;
  HloValue dummy_;
};

}  // namespace

Result<StableHloModule> lower_to_stablehlo(const program::CompiledGraph& graph, const StableHloOptions& options) {
  if (!graph.program) return usage_error(ErrorCode::kInvalidArgument, "lower_to_stablehlo", "the graph has no program");
  if (!identifier(options.module_name) || !identifier(options.function_name)) {
    return usage_error(ErrorCode::kInvalidArgument, "lower_to_stablehlo",
                       "module and function names must be identifiers ([A-Za-z_][A-Za-z0-9_.$]*), got '" +
                           options.module_name + "' and '" + options.function_name + "'");
  }
  const program::SemanticProgram& p = *graph.program;
  std::vector<int64_t> symbols;
  if (!options.input_shapes.empty()) {
    TENFERRO_TRY(symbols, p.bind_shapes(options.input_shapes));
  } else if (!p.symbols().empty()) {
    return unsupported("lower_to_stablehlo",
                       "the program has " + std::to_string(p.symbols().size()) +
                           " symbolic extents; pass the input shapes (StableHloOptions::input_shapes) "
                           "to lower it for them");
  }
  size_t bindings = 0;
  for (const program::InputInfo& in : p.inputs()) bindings += in.binding ? 1 : 0;
  if (options.inline_bindings && graph.bindings.tensors.size() < bindings) {
    return usage_error(ErrorCode::kInvalidArgument, "lower_to_stablehlo",
                       "inline_bindings needs " + std::to_string(bindings) + " binding tensors, the graph has " +
                           std::to_string(graph.bindings.tensors.size()));
  }
  StableHloModule m;
  Lowering low(options);
  std::vector<HloValue> inputs;
  std::string signature;
  size_t next_binding = 0;
  for (const program::InputInfo& in : p.inputs()) {
    TENFERRO_TRY(Shape sh, p.concrete_shape(in.value, symbols));
    const TensorType t{p.type(in.value).dtype, {sh.begin(), sh.end()}};
    if (in.binding && options.inline_bindings) {
      TENFERRO_TRY(HloValue c, low.constant_of(graph.bindings.tensors[next_binding++]));
      inputs.push_back(std::move(c));
      continue;
    }
    const std::string name = "%arg" + std::to_string(m.argument_types.size());
    signature.append(signature.empty() ? "" : ", ").append(name + ": " + type_text(t));
    m.argument_types.push_back(t);
    m.argument_is_binding.push_back(in.binding);
    inputs.push_back(HloValue{name, t});
  }
  TENFERRO_TRY(std::vector<HloValue> outs, low.lower_ops(p, symbols, std::move(inputs)));
  std::string results, names, types;
  for (size_t i = 0; i < outs.size(); ++i) {
    m.result_types.push_back(outs[i].type);
    const std::string t = type_text(outs[i].type);
    results.append(i ? ", " : "").append(t);
    names.append(i ? ", " : "").append(outs[i].name);
  }
  m.text = "module @" + options.module_name + " {\n  func.func public @" + options.function_name + "(" + signature +
           ") -> (" + results + ") {\n" + low.emitter().text() + "    \"func.return\"(" + names + ") : (" + results +
           ") -> ()\n  }\n}\n";
  return m;
}

}  // namespace tenferro::xla
