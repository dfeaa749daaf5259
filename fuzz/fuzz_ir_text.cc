// libFuzzer target: the program text parser with the einsum and fft families
// (scripts/fuzz). A parsed program prints to text that parses to the same fingerprint,
// and lowers to StableHLO (the fft family through its own lowering) or fails with a typed
// error (the lowering reads every op and extent). A small program (no symbols or
// bindings, every value at most kMaxEvalElements elements) is also run by the reference
// interpreter on arange inputs: attributes at the int64 limits that type inference
// accepts must evaluate without undefined behaviour (a typed error is fine; the fft
// family's evaluation is not linked here and answers kUnsupported).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/fft_ir/fft_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/xla/stablehlo.h"

namespace {

constexpr int64_t kMaxEvalElements = 4096;

// Whether every value of the program has an exact shape of at most kMaxEvalElements.
bool small_enough(const tenferro::program::SemanticProgram& p) {
  if (!p.symbols().empty()) return false;
  for (const auto& in : p.inputs()) {
    if (in.binding) return false;
  }
  auto small = [&](tenferro::program::ValueRef v) {
    int64_t n = 1;
    for (const auto& e : p.type(v).shape) {
      if (!e.is_exact() || e.exact_value() < 0 || e.exact_value() > kMaxEvalElements) return false;
      n *= e.exact_value();
      if (n > kMaxEvalElements) return false;
    }
    return true;
  };
  for (const auto& in : p.inputs()) {
    if (!small(in.value)) return false;
  }
  for (const auto& op : p.ops()) {
    for (const auto v : op.results()) {
      if (!small(v)) return false;
    }
  }
  return true;
}

void evaluate(const tenferro::program::CompiledGraph& g) {
  using namespace tenferro;
  const program::SemanticProgram& p = *g.program;
  if (!small_enough(p)) return;
  std::vector<Tensor> args;
  for (const auto& in : p.inputs()) {
    const program::ValueType& t = p.type(in.value);
    Shape shape;
    int64_t n = 1;
    for (const auto& e : t.shape) {
      shape.push_back(e.exact_value());
      n *= e.exact_value();
    }
    auto a = t.dtype == DType::kBool ? Tensor::ones(t.dtype, shape) : Tensor::arange(t.dtype, n);
    if (!a) return;
    auto r = a->reshape(shape);
    if (!r) return;
    args.push_back(*r);
  }
  (void)program::interpret(g, args);  // values or a typed error; a crash is the finding
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tenferro;
  static const program::ExtensionRegistry* families = [] {
    auto* r = new program::ExtensionRegistry();
    (void)einsum::register_einsum_family(*r);
    (void)fft_ir::register_fft_family(*r);
    return r;
  }();
  static const xla::StableHloLowerings* lowerings = [] {
    auto* l = new xla::StableHloLowerings();
    (void)fft_ir::register_stablehlo_lowering(*l);
    return l;
  }();
  auto g = program::parse_program(std::string_view(reinterpret_cast<const char*>(data), size), families, {}, true);
  if (!g) return 0;
  auto again = program::parse_program(program::print_program(*g->program), families, {}, true);
  if (!again || !(again->program->fingerprint() == g->program->fingerprint())) __builtin_trap();
  xla::StableHloOptions options;
  options.lowerings = lowerings;
  auto m = xla::lower_to_stablehlo(*g, options);
  if (m && m->text.find("func.func public @main(") == std::string::npos) __builtin_trap();
  evaluate(*g);
  return 0;
}
