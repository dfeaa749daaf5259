// `tenferro ir check|compile|eval|run`: the semantic program text format on the command line.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_ir/einsum_op.h"
#include "tenferro/fft_ir/fft_op.h"
#include "tenferro/linalg_ir/linalg_op.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/tensor/npy.h"
#include "tenferro/xla/stablehlo.h"

namespace tenferro::cli {

namespace {

constexpr const char* kIrUsage =
    "usage: tenferro ir check FILE [--binding B.npy ...]\n"
    "       tenferro ir compile FILE [--explain] [--no-canonicalize] [--no-cse] [--no-dce] [--binding B.npy ...]\n"
    "       tenferro ir eval FILE IN.npy ... [-o OUT.npy ...] [--compiled] [--binding B.npy ...]\n"
    "       tenferro ir run FILE IN.npy ... [-o OUT.npy ...] [--threads N] [--explain] [--repeat K] [--json]\n"
    "                       [--binding B.npy ...]\n"
    "       tenferro ir lower FILE [IN.npy ...] [-o OUT.mlir] [--compiled] [--inline-bindings] [--binding B.npy ...]\n"
    "eval runs the reference interpreter; run compiles the program and runs it on the CPU\n"
    "engine through the runtime (prepared once, executed K times); lower prints the program\n"
    "as a StableHLO module (docs/design/0012-stablehlo.md; the IN.npy files give the input\n"
    "shapes of a program with symbolic extents; binding inputs are function arguments after\n"
    "the others in input order, or constants with --inline-bindings).\n"
    "FILE holds one program in the text format (docs/design/0004-program-ir.md); extension\n"
    "ops of the einsum, linalg and fft families are accepted (extension \"einsum\"\n"
    "\"ij,jk->ik;greedy\"(%0, %1), extension \"fft\" \"r2c;norm=ortho;axes=1\"(%0)).\n";

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.to_string().c_str());
  return 1;
}

using Clock = std::chrono::steady_clock;
double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Output files are written all-or-nothing (write_npy_files).
int write_outputs(const std::vector<Tensor>& r, const std::vector<std::string>& outputs, bool quiet) {
  if (!outputs.empty()) {
    if (auto w = write_npy_files(outputs, r); !w) return fail(w.error());
    for (const std::string& o : outputs) {
      if (!quiet) std::printf("wrote %s\n", o.c_str());
    }
    return 0;
  }
  for (size_t i = 0; i < r.size() && !quiet; ++i) std::printf("output %zu:\n%s\n", i, r[i].to_string().c_str());
  return 0;
}

// `ir run`: one CPU engine domain of `threads` workers, one runtime; prepared once.
int run_on_runtime(const program::CompiledGraph& g, const std::vector<Tensor>& args,
                   const std::vector<std::string>& outputs, int threads, int64_t repeat, bool explain, bool json) {
  auto topo = cpu::CpuTopology::discover();
  if (!topo) return fail(topo.error());
  cpu::CpuEngineConfig cfg;
  cpu::CpuDomainConfig domain;
  domain.cpus = topo->allowed_cpus;
  domain.threads = threads;
  cfg.domains = {domain};
  cfg.pin_workers = threads <= static_cast<int>(topo->allowed_cpus.size());
  auto engine = cpu::CpuEngine::create(cfg);
  if (!engine) return fail(engine.error());
  auto rt = runtime::Runtime::create();
  if (!rt) return fail(rt.error());
  auto id = cpu_runtime::register_cpu_engine(**rt, *engine);
  if (!id) return fail(id.error());
  for (const auto& module : {linalg_ir::cpu_linalg_module(), fft_ir::cpu_fft_module()}) {
    if (auto r = (*rt)->register_extension(*id, module); !r) return fail(r.error());
  }
  const auto t0 = Clock::now();
  auto plan = (*rt)->prepare_for(g, runtime::signature_of(args));
  const double prepare_us = micros(Clock::now() - t0);
  if (!plan) return fail(plan.error());
  if (explain && !json) std::fputs((*rt)->explain(**plan).c_str(), stdout);
  std::vector<double> times;
  std::vector<Tensor> result;
  for (int64_t k = 0; k < repeat; ++k) {
    const auto t1 = Clock::now();
    auto r = (*rt)->execute_prepared(**plan, args, g.bindings);
    times.push_back(micros(Clock::now() - t1));
    if (!r) return fail(r.error());
    if (k + 1 == repeat) result = std::move(*r);
  }
  if (const int w = write_outputs(result, outputs, json); w != 0) return w;
  std::sort(times.begin(), times.end());
  const runtime::PreparedInfo info = runtime::prepared_info(**plan);
  if (json) {
    std::printf("{\"threads\": %d, \"nodes\": %lld, \"views\": %lld, \"peak_bytes\": %lld, \"prepare_us\": %.3f, "
                "\"repeat\": %lld, \"execute_us_min\": %.3f, \"execute_us_median\": %.3f}\n",
                threads, static_cast<long long>(info.nodes), static_cast<long long>(info.view_nodes),
                static_cast<long long>(info.peak_bytes), prepare_us, static_cast<long long>(repeat), times.front(),
                times[times.size() / 2]);
  } else if (repeat > 1) {
    std::printf("prepared in %.1f us; %lld runs: min %.3f us, median %.3f us\n", prepare_us,
                static_cast<long long>(repeat), times.front(), times[times.size() / 2]);
  }
  return 0;
}

// `ir lower`: the program (compiled first with --compiled) as a StableHLO module, for the
// shapes of `args` where given.
int lower(compiler::GraphCompiler& gc, const compiler::CompilerOptions& options, bool compiled,
          program::CompiledGraph g, const std::vector<Tensor>& args, const std::vector<std::string>& outputs,
          bool inline_bindings) {
  if (outputs.size() > 1) {
    std::fprintf(stderr, "tenferro ir lower: one -o file at most, got %zu\n", outputs.size());
    return 2;
  }
  if (compiled) {
    auto c = gc.compile(g, options);
    if (!c) return fail(c.error());
    g = std::move(*c);
  }
  xla::StableHloOptions o;
  o.inline_bindings = inline_bindings;
  xla::StableHloLowerings lowerings;
  if (auto r = fft_ir::register_stablehlo_lowering(lowerings); !r) return fail(r.error());
  o.lowerings = &lowerings;
  if (!args.empty()) {
    size_t n_args = 0, next_arg = 0, next_binding = 0;
    for (const auto& in : g.program->inputs()) n_args += in.binding ? 0 : 1;
    if (args.size() != n_args) {
      std::fprintf(stderr, "tenferro ir lower: the program takes %zu arguments, %zu IN.npy files were given\n", n_args,
                   args.size());
      return 2;
    }
    for (const auto& in : g.program->inputs()) {
      const Tensor& t = in.binding ? g.bindings.tensors[next_binding++] : args[next_arg++];
      if (t.dtype() != g.program->type(in.value).dtype) {
        return fail(usage_error(ErrorCode::kDTypeMismatch, "ir lower",
                                "input '" + in.name + "' is " +
                                    std::string(dtype_name(g.program->type(in.value).dtype)) + ", the file holds " +
                                    std::string(dtype_name(t.dtype()))));
      }
      o.input_shapes.push_back(Shape(t.shape()));
    }
  }
  auto m = xla::lower_to_stablehlo(g, o);
  if (!m) return fail(m.error());
  if (outputs.empty()) {
    std::fputs(m->text.c_str(), stdout);
    return 0;
  }
  if (auto w = write_files(outputs, std::vector<std::string>{m->text}); !w) return fail(w.error());
  return 0;
}

}  // namespace

int run_ir(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kIrUsage, stderr);
    return 2;
  }
  const std::string sub = argv[0];
  const std::string file = argv[1];
  std::vector<std::string> positional, outputs, binding_files;
  bool explain = false, compiled = false, json = false, inline_bindings = false;
  int64_t threads = 1, repeat = 1;
  compiler::CompilerOptions options;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tenferro ir: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "-o") {
      const char* v = value("-o");
      if (!v) return 2;
      outputs.push_back(v);
    } else if (a == "--binding") {
      const char* v = value("--binding");
      if (!v) return 2;
      binding_files.push_back(v);
    } else if ((a == "--threads" || a == "--repeat") && sub == "run") {
      const char* v = value(a.c_str());
      if (!v) return 2;
      const bool t = a == "--threads";
      const int64_t hi = t ? kMaxThreads : 1000000;
      const auto n = parse_count(v, 1, hi);
      if (!n) {
        std::fprintf(stderr, "tenferro ir run: %s takes a whole number from 1 to %lld, got '%s'\n", a.c_str(),
                     static_cast<long long>(hi), v);
        return 2;
      }
      (t ? threads : repeat) = *n;
    } else if (a == "--json" && sub == "run") {
      json = true;
    } else if (a == "--explain" && (sub == "compile" || sub == "run")) {
      explain = true;
    } else if (a == "--no-canonicalize" && sub == "compile") {
      options.canonicalize = false;
    } else if (a == "--no-cse" && sub == "compile") {
      options.cse = false;
    } else if (a == "--no-dce" && sub == "compile") {
      options.dce = false;
    } else if (a == "--compiled" && (sub == "eval" || sub == "lower")) {
      compiled = true;
    } else if (a == "--inline-bindings" && sub == "lower") {
      inline_bindings = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "tenferro ir %s: unknown option '%s'\n%s", sub.c_str(), a.c_str(), kIrUsage);
      return 2;
    } else {
      positional.push_back(a);
    }
  }
  if (sub != "check" && sub != "compile" && sub != "eval" && sub != "run" && sub != "lower") {
    std::fprintf(stderr, "tenferro ir: unknown subcommand '%s'\n%s", sub.c_str(), kIrUsage);
    return 2;
  }
  if (sub != "eval" && sub != "run" && sub != "lower" && !positional.empty()) {
    std::fprintf(stderr, "tenferro ir %s: unexpected argument '%s'\n", sub.c_str(), positional[0].c_str());
    return 2;
  }
  auto text = read_text_file(file, int64_t{1} << 30, "ir");  // programs are text of KiB to MiB
  if (!text) return fail(text.error());
  std::vector<Tensor> bindings;
  for (const auto& f : binding_files) {
    auto t = read_npy(f);
    if (!t) return fail(t.error());
    bindings.push_back(std::move(*t));
  }
  // check/compile may run without the binding data (zero placeholders); eval may not.
  program::ExtensionRegistry families;  // extension families the text may use
  if (auto r = einsum::register_einsum_family(families); !r) return fail(r.error());
  if (auto r = linalg_ir::register_linalg_family(families); !r) return fail(r.error());
  if (auto r = fft_ir::register_fft_family(families); !r) return fail(r.error());
  const bool needs_data = sub == "eval" || sub == "run" || (sub == "lower" && inline_bindings);
  auto parsed = program::parse_program(*text, &families, bindings, !needs_data);
  if (!parsed) return fail(parsed.error());
  const program::SemanticProgram& p = *parsed->program;
  if (sub == "check") {
    size_t n_bind = 0;
    for (const auto& i : p.inputs()) n_bind += i.binding ? 1 : 0;
    std::printf("ok: %zu inputs (%zu bindings), %zu ops, %zu outputs, %zu symbols, %zu guards\nfingerprint %s\n",
                p.inputs().size(), n_bind, p.ops().size(), p.outputs().size(), p.symbols().size(), p.guards().size(),
                p.fingerprint().to_string().c_str());
    return 0;
  }
  compiler::GraphCompiler gc;
  if (sub == "compile") {
    if (explain) {
      auto rep = gc.explain(*parsed, options);
      if (!rep) return fail(rep.error());
      std::fputs(rep->text.c_str(), stdout);
      return 0;
    }
    auto c = gc.compile(*parsed, options);
    if (!c) return fail(c.error());
    std::fputs(program::print_program(*c->program).c_str(), stdout);
    std::printf("# fingerprint %s\n", c->program->fingerprint().to_string().c_str());
    return 0;
  }
  // eval
  std::vector<Tensor> args;
  for (const auto& f : positional) {
    auto t = read_npy(f);
    if (!t) return fail(t.error());
    args.push_back(std::move(*t));
  }
  program::CompiledGraph g = *parsed;
  if (sub == "lower") return lower(gc, options, compiled, std::move(g), args, outputs, inline_bindings);
  if (sub == "run") {
    auto c = gc.compile(g, options);
    if (!c) return fail(c.error());
    if (!outputs.empty() && outputs.size() != c->program->outputs().size()) {
      std::fprintf(stderr, "tenferro ir run: the program has %zu outputs but %zu -o files were given\n",
                   c->program->outputs().size(), outputs.size());
      return 2;
    }
    return run_on_runtime(*c, args, outputs, static_cast<int>(threads), repeat, explain, json);
  }
  if (compiled) {
    auto c = gc.compile(g, options);
    if (!c) return fail(c.error());
    g = std::move(*c);
  }
  if (!outputs.empty() && outputs.size() != g.program->outputs().size()) {
    std::fprintf(stderr, "tenferro ir eval: the program has %zu outputs but %zu -o files were given\n",
                 g.program->outputs().size(), outputs.size());
    return 2;
  }
  auto r = program::interpret(g, args);
  if (!r) return fail(r.error());
  return write_outputs(*r, outputs, false);
}

}  // namespace tenferro::cli
