// The tenferro command-line program. Subcommands grow with the library.

#include <cstdio>
#include <exception>
#include <cstring>
#include <string_view>

#include "commands.h"

namespace {

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: tenferro <command> [args]\n"
      "\n"
      "commands:\n"
      "  demo       show what the library does so far (tensors, views, errors)\n"
      "  demo trg --beta B [--chi C] [--steps S] [--json]\n"
      "             2D Ising model by TRG: free energy, energy and specific heat by AD\n"
      "  info [--json]\n"
      "             CPU capabilities the engine plans with (ISA, BLIS/OpenBLAS kernels, caches)\n"
      "  bench kernels [--threads N] [--json] [--only S] [--max-n N]\n"
      "             CPU kernels next to a same-run reference (BLAS, memcpy)\n"
      "  einsum SUBSCRIPTS A.npy [B.npy ...] [-o OUT.npy] [--optimize greedy|optimal|treesa|\n"
      "         left-to-right|path=((0,1),2)|path=[(0,1),(0,1)]] [--threads N] [--repeat K] [--json]\n"
      "         [--profile]\n"
      "             run one einsum on .npy operands (--profile: each step's dot_general route and why)\n"
      "  bench einsum FILE_OR_DIR... [--path instance|greedy|treesa] [--strategy opt_flops|opt_size]\n"
      "         [--threads N] [--json]\n"
      "             time einsum-benchmark instances (median, IQR, GFLOP/s, path cost)\n"
      "  bench ad [--threads N] [--json] [--python-peer SCRIPT] [--trg-chi C] [--trg-steps S]\n"
      "  bench eager [--threads N] [--json] [--peer PATH | --no-peer] [--python-peer SCRIPT]\n"
      "             eager per-call times next to libtorch C++ and the kernels called directly\n"
      "  bench linalg [--threads N] [--json] [--only SUBSTRING]\n"
      "             decompositions and solvers (cases of peer_linalg.py) next to raw LAPACKE calls\n"
      "  bench runtime [--threads N] [--json] [--peer PATH | --no-peer] [--instances DIR]\n"
      "                [--only chain|mlp|einsum]\n"
      "             prepared-graph replay, run() overhead, MLP and einsum graphs next to\n"
      "             libtorch C++ and the kernels called directly\n"
      "  ir check FILE | ir compile FILE [--explain] | ir eval FILE IN.npy... [-o OUT.npy...]\n"
      "             check, compile or evaluate a semantic program in the text format\n"
      "  version    print the version\n"
      "  help       print this text\n",
      out);
}

}  // namespace

static int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string_view cmd = argv[1];
  if (cmd == "demo" && argc >= 3 && std::string_view(argv[2]) == "trg") {
    return tenferro::cli::run_demo_trg(argc - 3, argv + 3);
  }
  if (cmd == "demo") return tenferro::cli::run_demo(argc - 2, argv + 2);
  if (cmd == "bench" && argc >= 3 && std::string_view(argv[2]) == "ad") {
    return tenferro::cli::run_bench_ad(argc - 3, argv + 3);
  }
  if (cmd == "bench" && argc >= 3 && std::string_view(argv[2]) == "kernels") {
    return tenferro::cli::run_bench_kernels(argc - 3, argv + 3);
  }
  if (cmd == "einsum") return tenferro::cli::run_einsum(argc - 2, argv + 2);
  if (cmd == "bench" && argc >= 3 && std::string_view(argv[2]) == "einsum") {
    return tenferro::cli::run_bench_einsum(argc - 3, argv + 3);
  }
  if (cmd == "bench" && argc >= 3 && std::string_view(argv[2]) == "eager") {
    return tenferro::cli::run_bench_eager(argc - 3, argv + 3, argv[0]);
  }
  if (cmd == "bench" && argc >= 3 && std::string_view(argv[2]) == "linalg") {
    return tenferro::cli::run_bench_linalg(argc - 3, argv + 3);
  }
  if (cmd == "bench" && argc >= 3 && std::string_view(argv[2]) == "runtime") {
    return tenferro::cli::run_bench_runtime(argc - 3, argv + 3, argv[0]);
  }
  if (cmd == "ir") return tenferro::cli::run_ir(argc - 2, argv + 2);
  if (cmd == "info") return tenferro::cli::run_info(argc - 2, argv + 2);
  if (cmd == "version" || cmd == "--version") {
    std::printf("tenferro %s\n", tenferro::cli::kVersion);
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    print_usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "tenferro: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}

// Every subcommand answers --help / -h with the usage (exit 0). No exception reaches
// the shell: commands return typed errors; anything else (a bug) is reported, exit 1.
int main(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      print_usage(stdout);
      return 0;
    }
  }
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tenferro: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tenferro: internal error\n");
  }
  return 1;
}
