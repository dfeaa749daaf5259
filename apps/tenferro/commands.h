#pragma once
// Subcommands of the tenferro CLI. Each returns the process exit status.

namespace tenferro::cli {

inline constexpr const char* kVersion = "0.1.0";

/// `tenferro demo`: builds tensors, takes views, shows typed errors.
int run_demo(int argc, char** argv);
/// `tenferro demo trg`: the 2D Ising model by TRG with AD derivatives (ad_cmd.cc).
int run_demo_trg(int argc, char** argv);
/// `tenferro bench ad`: gradient against forward cost, torch as the peer (ad_cmd.cc).
int run_bench_ad(int argc, char** argv);

/// `tenferro bench kernels [--threads N] [--json]`: CPU kernels vs same-run references.
int run_bench_kernels(int argc, char** argv);

/// `tenferro einsum SUBSCRIPTS A.npy ... [-o OUT.npy] [--optimize ...] [--threads N]
/// [--repeat K] [--json]`.
int run_einsum(int argc, char** argv);

/// `tenferro bench einsum FILE_OR_DIR... [--path instance|greedy|treesa] [--strategy
/// opt_flops|opt_size] [--threads N] [--json]`: einsum-benchmark instances.
int run_bench_einsum(int argc, char** argv);

/// `tenferro ir check|compile|eval FILE ...`: semantic program text (check, compile with
/// the graph compiler, evaluate with the reference interpreter).
int run_ir(int argc, char** argv);

int run_bench_eager(int argc, char** argv, const char* argv0);

/// `tenferro bench linalg [--threads N] [--json] [--only SUBSTRING]`.
int run_bench_linalg(int argc, char** argv);
/// `tenferro bench runtime [--threads N] [--json] [--peer PATH | --no-peer] [--instances
/// DIR] [--only chain|mlp|einsum]`: prepared-graph replay, run() overhead, GEMM-bound graph and einsum ops in graphs
/// against same-run references.
int run_bench_runtime(int argc, char** argv, const char* argv0);

/// `tenferro info [--json]`: the CPU capabilities a default engine plans with (ISA,
/// BLIS/OpenBLAS kernels and whether they are tuned for this CPU, caches).
int run_info(int argc, char** argv);

}  // namespace tenferro::cli
