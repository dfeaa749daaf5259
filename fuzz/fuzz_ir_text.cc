// libFuzzer target: the program text parser with the einsum and fft families
// (scripts/fuzz). A parsed program prints to text that parses to the same fingerprint,
// and lowers to StableHLO (the fft family through its own lowering) or fails with a typed
// error (the lowering reads every op and extent).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/fft_ir/fft_op.h"
#include "tenferro/program/text.h"
#include "tenferro/xla/stablehlo.h"

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
  return 0;
}
