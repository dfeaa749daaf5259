// `tenferro ir check|compile|eval`: the semantic program text format on the command line.

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/program/interpreter.h"
#include "tenferro/program/text.h"
#include "tenferro/tensor/npy.h"

namespace tenferro::cli {

namespace {

constexpr const char* kIrUsage =
    "usage: tenferro ir check FILE [--binding B.npy ...]\n"
    "       tenferro ir compile FILE [--explain] [--no-canonicalize] [--no-cse] [--no-dce] [--binding B.npy ...]\n"
    "       tenferro ir eval FILE IN.npy ... [-o OUT.npy ...] [--compiled] [--binding B.npy ...]\n"
    "FILE holds one program in the text format (docs/design/0004-program-ir.md).\n";

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.to_string().c_str());
  return 1;
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
  bool explain = false, compiled = false;
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
    } else if (a == "--explain" && sub == "compile") {
      explain = true;
    } else if (a == "--no-canonicalize" && sub == "compile") {
      options.canonicalize = false;
    } else if (a == "--no-cse" && sub == "compile") {
      options.cse = false;
    } else if (a == "--no-dce" && sub == "compile") {
      options.dce = false;
    } else if (a == "--compiled" && sub == "eval") {
      compiled = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "tenferro ir %s: unknown option '%s'\n%s", sub.c_str(), a.c_str(), kIrUsage);
      return 2;
    } else {
      positional.push_back(a);
    }
  }
  if (sub != "check" && sub != "compile" && sub != "eval") {
    std::fprintf(stderr, "tenferro ir: unknown subcommand '%s'\n%s", sub.c_str(), kIrUsage);
    return 2;
  }
  if (sub != "eval" && !positional.empty()) {
    std::fprintf(stderr, "tenferro ir %s: unexpected argument '%s'\n", sub.c_str(), positional[0].c_str());
    return 2;
  }
  std::ifstream in(file);
  if (!in) return fail(Error(ErrorStage::kUsage, ErrorCode::kIo, "ir", "cannot read " + file));
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<Tensor> bindings;
  for (const auto& f : binding_files) {
    auto t = read_npy(f);
    if (!t) return fail(t.error());
    bindings.push_back(std::move(*t));
  }
  // check/compile may run without the binding data (zero placeholders); eval may not.
  auto parsed = program::parse_program(ss.str(), nullptr, bindings, sub != "eval");
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
  for (size_t i = 0; i < r->size(); ++i) {
    if (!outputs.empty()) {
      if (auto w = write_npy(outputs[i], (*r)[i]); !w) return fail(w.error());
      std::printf("wrote %s\n", outputs[i].c_str());
    } else {
      std::printf("output %zu:\n%s\n", i, (*r)[i].to_string().c_str());
    }
  }
  return 0;
}

}  // namespace tenferro::cli
