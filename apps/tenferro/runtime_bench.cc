// `tenferro bench runtime`: the prepared-graph path against same-run references — the
// replay overhead of a 100-node chain of tiny ops against libtorch C++'s per-op time,
// run() with a warm plan cache and submit + wait against execute_prepared, a GEMM-bound
// graph against the
// same CPU kernels called directly, and einsum ops inside graphs against the native
// einsum executor called directly (einsum-benchmark instances).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/elementwise.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/einsum_ir/einsum_op.h"

namespace tenferro::cli {

namespace {

using program::Extent;
using program::OpCode;
using program::ProgramBuilder;
using program::Value;
using program::ValueType;



std::vector<Extent> exact(const Shape& s) {
  std::vector<Extent> out;
  for (int64_t e : s) out.push_back(Extent::exact(e));
  return out;
}

// x -> add(x, y) -> mul(., y) -> tanh(.) ..., `nodes` ops on f64[n].
program::CompiledGraph chain_graph(int nodes, int64_t n) {
  ProgramBuilder b;
  Value x = must(b.input(ValueType{DType::kF64, {Extent::exact(n)}}), "input");
  Value y = must(b.input(ValueType{DType::kF64, {Extent::exact(n)}}), "input");
  Value v = x;
  for (int i = 0; i < nodes; ++i) {
    const OpCode code = i % 3 == 0 ? OpCode::kAdd : i % 3 == 1 ? OpCode::kMul : OpCode::kTanh;
    v = must(code == OpCode::kTanh ? b.op(code, {v}) : b.op(code, {v, y}), "op");
  }
  return must(b.finish({v}), "finish");
}

// h = tanh(h W_l + b_l), three layers, h: [batch, width] (row index = sample).
program::CompiledGraph mlp_graph(int64_t batch, int64_t width) {
  ProgramBuilder b;
  Value h = must(b.input(ValueType{DType::kF64, exact({batch, width})}), "input");
  std::vector<Value> w, bias;
  for (int l = 0; l < 3; ++l) {
    w.push_back(must(b.input(ValueType{DType::kF64, exact({width, width})}), "input"));
    bias.push_back(must(b.input(ValueType{DType::kF64, exact({width})}), "input"));
  }
  for (int l = 0; l < 3; ++l) {
    Value z = must(b.op(OpCode::kDotGeneral, {h, w[static_cast<size_t>(l)]},
                        program::Attrs{.lhs_contract = {1}, .rhs_contract = {0}}),
                   "dot_general");
    Value bb = must(b.op(OpCode::kBroadcastInDim, {bias[static_cast<size_t>(l)]},
                         program::Attrs{.dims = {1}, .shape = exact({batch, width})}),
                    "broadcast");
    h = must(b.op(OpCode::kTanh, {must(b.op(OpCode::kAdd, {z, bb}), "add")}), "tanh");
  }
  return must(b.finish({h}), "finish");
}

}  // namespace

int run_bench_runtime(int argc, char** argv, const char* argv0) {
  int threads = 1;
  bool json = false;
  std::string peer = default_peer(argv0);
  std::string instances = "../shared/data/einsum-benchmark";
  std::string only;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<int>(parse_count(argv[++i], 1, kMaxThreads).value_or(0));  // 0: rejected below
    } else if (a == "--json") {
      json = true;
    } else if (a == "--peer" && i + 1 < argc) {
      peer = argv[++i];
    } else if (a == "--no-peer") {
      peer.clear();
    } else if (a == "--instances" && i + 1 < argc) {
      instances = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: tenferro bench runtime [--threads N] [--json] [--peer PATH | --no-peer] [--instances DIR] "
                   "[--only chain|mlp|einsum]\n");
      return 2;
    }
  }
  if (!only.empty() && only != "chain" && only != "mlp" && only != "einsum") {
    std::fprintf(stderr, "tenferro bench runtime: --only takes chain, mlp or einsum\n");
    return 2;
  }
  const auto selected = [&](const char* group) { return only.empty() || only == group; };
  const auto topo = must(cpu::CpuTopology::discover(), "topology");
  if (threads < 1 || static_cast<size_t>(threads) > topo.allowed_cpus.size()) {
    std::fprintf(stderr, "tenferro bench runtime: --threads must be in [1, %zu]\n", topo.allowed_cpus.size());
    return 2;
  }
  cpu::CpuEngineConfig cfg;
  cfg.domains.push_back(cpu::CpuDomainConfig{
      .id = 0, .cpus = std::vector<int>(topo.allowed_cpus.begin(), topo.allowed_cpus.begin() + threads),
      .threads = threads, .external = nullptr});
  auto engine = must(cpu::CpuEngine::create(cfg), "engine");
  auto rt = must(runtime::Runtime::create(), "runtime");
  must(cpu_runtime::register_cpu_engine(*rt, engine), "register");
  const std::map<std::string, double> peers = selected("chain") ? run_peer(peer, threads) : std::map<std::string, double>{};
  const auto peer_of = [&](const std::string& name) {
    auto it = peers.find(name);
    return it == peers.end() ? 0.0 : it->second;
  };
  std::vector<BenchRow> rows;
  const auto& pool = engine->pool(0);
  const auto direct = [&](const std::function<Result<void>(cpu::CpuExecutionContext&)>& body) {
    (void)engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) { return body(ctx); });
  };


  // 1. Replay of a 100-node chain: per-node time against libtorch's per-op time.
  if (selected("chain")) {
    const auto g = chain_graph(100, 8);
    const std::vector<Tensor> in{must(Tensor::random_normal(DType::kF64, {8}, 1), "random"),
                                 must(Tensor::random_normal(DType::kF64, {8}, 2), "random")};
    auto plan = must(rt->prepare_for(g, runtime::signature_of(in)), "prepare");
    const double exec = per_call_us(20000, [&] { (void)rt->execute_prepared(*plan, in); });
    rows.push_back({"chain 100 x (add|mul|tanh) f64[8], per node", exec / 100, "libtorch C++ per op",
                    peer_of("chain100 per op"), "<= 0.5"});
    // 2. run() with a warm plan cache against execute_prepared (interleaved).
    const auto [run_us, exec_us] = interleaved_us(
        20001, [&] { (void)rt->run(g, in); }, [&] { (void)rt->execute_prepared(*plan, in); });
    rows.push_back({"run() (warm cache) vs execute_prepared, chain 100", run_us, "execute_prepared", exec_us,
                    "run - execute <= 1 us"});
    // 3. submit + wait (a CPU-only run launches on the caller) against execute_prepared.
    const auto [submit_us, exec2_us] = interleaved_us(
        20001, [&] { (void)must(rt->submit(plan, in), "submit").wait(); },
        [&] { (void)rt->execute_prepared(*plan, in); });
    rows.push_back({"submit + wait vs execute_prepared, chain 100", submit_us, "execute_prepared", exec2_us, "<= 1.2"});
  }

  // 3. A GEMM-bound graph: 3-layer MLP forward against the same kernels called directly.
  if (selected("mlp")) {
    constexpr int64_t kBatch = 256, kWidth = 512;
    const auto g = mlp_graph(kBatch, kWidth);
    std::vector<Tensor> in{must(Tensor::random_normal(DType::kF64, {kBatch, kWidth}, 3), "random")};
    for (int l = 0; l < 3; ++l) {
      in.push_back(must(Tensor::random_normal(DType::kF64, {kWidth, kWidth}, 10 + static_cast<uint64_t>(l), 0.0,
                                              0.05), "random"));
      in.push_back(must(Tensor::random_normal(DType::kF64, {kWidth}, 20 + static_cast<uint64_t>(l)), "random"));
    }
    auto plan = must(rt->prepare_for(g, runtime::signature_of(in)), "prepare");
    cpu::DotDims dims;
    dims.lhs_contracting = {1};
    dims.rhs_contracting = {0};
    const auto [graph_us, kernels_us] = interleaved_us(
        41, [&] { (void)rt->execute_prepared(*plan, in); },
        [&] {
          direct([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
            Tensor h = in[0];
            for (size_t l = 0; l < 3; ++l) {
              TENFERRO_TRY(Tensor z, cpu::dot_general(ctx, h, in[1 + 2 * l], dims, {}, pool));
              TENFERRO_TRY(Tensor s, cpu::binary(ctx, cpu::BinaryOp::kAdd, z, in[2 + 2 * l], pool));
              TENFERRO_TRY(h, cpu::unary(ctx, cpu::UnaryOp::kTanh, s, pool));
            }
            return ok();
          });
        });
    rows.push_back({"MLP forward 3 x 512, batch 256, f64", graph_us, "same kernels called directly", kernels_us,
                    "<= 1.05"});
  }

  // 4. An einsum op inside a graph against the native einsum executor called directly.
  for (const char* name : {"lm_batch_likelihood_brackets_4_4d", "str_mps_varying_inner_product_200"}) {
    if (!selected("einsum")) break;
    const auto inst = load_einsum_instance((std::filesystem::path(instances) / (std::string(name) + ".json")).string(), "");
    if (!inst) {
      std::fprintf(stderr, "tenferro bench runtime: %s; skipped\n", inst.error().to_string().c_str());
      continue;
    }
    std::vector<Tensor> in;
    ProgramBuilder b;
    std::vector<Value> vals;
    for (size_t i = 0; i < inst->shapes.size(); ++i) {
      in.push_back(must(Tensor::random_normal(inst->dtype, inst->shapes[i], 100 + i), "random"));
      vals.push_back(must(b.input(ValueType{inst->dtype, exact(inst->shapes[i])}), "input"));
    }
    const auto g = must(b.finish({must(einsum::emit_einsum(b, inst->subscripts, vals), "einsum op")}), "finish");
    auto plan = must(rt->prepare_for(g, runtime::signature_of(in)), "prepare");
    // The native call plans with the op's own policy (the same path the graph runs).
    const auto* op = static_cast<const einsum::EinsumOp*>(g.program->ops()[0].extension());
    auto native = must(einsum::EinsumPlan::prepare(inst->subscripts, inst->shapes, inst->dtype, op->policy()),
                       "einsum plan");
    // Repetitions: 31, fewer (>= 5) for instances whose call takes more than ~0.3 s.
    const auto t0 = std::chrono::steady_clock::now();
    (void)rt->execute_prepared(*plan, in);
    const double once_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const int reps = static_cast<int>(std::clamp(1e7 / std::max(once_us, 1.0), 5.0, 31.0));
    const auto [graph_us, native_us] = interleaved_us(
        reps, [&] { (void)rt->execute_prepared(*plan, in); },
        [&] {
          direct([&](cpu::CpuExecutionContext& ctx) -> Result<void> {
            TENFERRO_TRY(Tensor r, native->execute(ctx, in, pool));
            (void)r;
            return ok();
          });
        });
    rows.push_back({std::string("einsum op in a graph: ") + name, graph_us, "native einsum call", native_us,
                    "<= 1.05"});
  }

  print_rows(rows, threads, json);
  return 0;
}

}  // namespace tenferro::cli
