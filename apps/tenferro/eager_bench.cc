// `tenferro bench eager`: per-call time of eager operations, with peers measured in the
// same command: libtorch C++ (the tenferro_peer_libtorch program, run as a separate
// process when given or found beside this binary) and, for large operands, the CPU
// kernels called directly (the eager layer's own overhead).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/cpu/dot_general.h"
#include "tenferro/cpu/elementwise.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/eager/eager.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/tensor/random.h"

namespace tenferro::cli {

namespace {

using Clock = std::chrono::steady_clock;
using eager::EagerTensor;




EagerTensor random_tensor(eager::EagerRuntime& rt, Dims shape, uint64_t seed) {
  return must(rt.from_host(must(Tensor::random_normal(DType::kF64, shape, seed), "random")), "from_host");
}


// numpy and torch figures from a Python peer script (usage: SCRIPT THREADS OUT.json, one
// JSON object whose entries carry "median_us"), e.g. ../shared/bench/peer_eager.py.
std::map<std::string, double> run_python_peer(const std::string& script, int threads) {
  std::map<std::string, double> out;
  if (script.empty()) return out;
  const std::string file = "/tmp/tenferro_bench_eager_peer_" + std::to_string(::getpid()) + ".json";
  const std::string t = std::to_string(threads);
  const std::string cmd = "OMP_NUM_THREADS=" + t + " OPENBLAS_NUM_THREADS=" + t + " MKL_NUM_THREADS=" + t +
                          " /usr/bin/python3 '" + script + "' " + t + " '" + file + "' > /dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "tenferro bench eager: python peer '%s' failed; no numpy/torch figures\n", script.c_str());
    return out;
  }
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (f == nullptr) return out;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  std::remove(file.c_str());
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_object() && v.contains("median_us") && v["median_us"].is_number()) out[k] = v["median_us"].get<double>();
  }
  return out;
}


}  // namespace

int run_bench_eager(int argc, char** argv, const char* argv0) {
  int threads = 1;
  bool json = false;
  std::string peer = default_peer(argv0);
  std::string python_peer;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<int>(parse_count(argv[++i], 1, kMaxThreads).value_or(0));  // 0: rejected below
    } else if (a == "--json") {
      json = true;
    } else if (a == "--peer" && i + 1 < argc) {
      peer = argv[++i];
    } else if (a == "--python-peer" && i + 1 < argc) {
      python_peer = argv[++i];
    } else if (a == "--no-peer") {
      peer.clear();
    } else {
      std::fprintf(stderr, "usage: tenferro bench eager [--threads N] [--json] [--peer PATH | --no-peer] [--python-peer SCRIPT]\n");
      return 2;
    }
  }
  if (threads < 1) {
    std::fprintf(stderr, "tenferro bench eager: --threads must be >= 1\n");
    return 2;
  }
  eager::EagerConfig config;
  auto topo = must(cpu::CpuTopology::discover(), "topology");
  if (static_cast<size_t>(threads) > topo.allowed_cpus.size()) {
    std::fprintf(stderr, "tenferro bench eager: %d threads but %zu allowed CPUs\n", threads, topo.allowed_cpus.size());
    return 2;
  }
  config.engine.domains.push_back(cpu::CpuDomainConfig{
      .id = 0, .cpus = std::vector<int>(topo.allowed_cpus.begin(), topo.allowed_cpus.begin() + threads),
      .threads = threads, .external = nullptr});
  auto rt = must(eager::EagerRuntime::create(config), "runtime");
  const std::map<std::string, double> peers = run_peer(peer, threads);
  const auto peer_of = [&](const std::string& name) {
    auto it = peers.find(name);
    return it == peers.end() ? 0.0 : it->second;
  };

  std::vector<BenchRow> rows;
  const auto small = [&](const std::string& name, int calls, const std::function<void()>& f) {
    rows.push_back({name, per_call_us(calls, f), "libtorch C++", peer_of(name)});
  };
  EagerTensor a8 = random_tensor(*rt, {8}, 1), b8 = random_tensor(*rt, {8}, 2);
  EagerTensor a2 = random_tensor(*rt, {2, 2}, 3), b2 = random_tensor(*rt, {2, 2}, 4);
  small("add 8", 200000, [&] { (void)eager::add(a8, b8); });
  small("matmul 2x2", 200000, [&] { (void)eager::matmul(a2, b2); });
  small("einsum ij,jk->ik 2x2", 100000, [&] { (void)eager::einsum("ij,jk->ik", {a2, b2}); });
  small("sum 8", 200000, [&] { (void)eager::sum(a8); });
  small("exp 8", 200000, [&] { (void)eager::exp(a8); });
  {
    // Reverse mode: record, replay as a program, differentiate (cached), run.
    EagerTensor x = must(eager::requires_grad(a2), "requires_grad"), y = must(eager::requires_grad(b2), "requires_grad");
    small("fwd+bwd sum(matmul 2x2)", 20000, [&] {
      EagerTensor l = must(eager::sum(must(eager::matmul(x, y), "matmul")), "sum");
      (void)eager::backward(l);
    });
  }
  // The same calls from Python (numpy and torch), when a peer script is given.
  {
    const std::map<std::string, double> py = run_python_peer(python_peer, threads);
    const std::pair<const char*, const char*> names[] = {
        {"add 8", "add 8 (a+b)"}, {"matmul 2x2", "matmul 2x2 (a@b)"}, {"einsum ij,jk->ik 2x2", "einsum ij,jk->ik 2x2"}};
    const size_t n_small = rows.size();
    for (const auto& [ours, theirs] : names) {
      double us = 0;
      for (size_t i = 0; i < n_small; ++i) {
        if (rows[i].name == ours) us = rows[i].tenferro_us;
      }
      for (const char* lib : {"numpy", "torch"}) {
        auto it = py.find(std::string(lib) + " " + theirs);
        if (it != py.end()) rows.push_back({ours, us, lib, it->second});
      }
    }
  }

  // Changing-shape einsum sequence (every call a new shape, as in tensor cross
  // interpolation): per-call time with a plan-cache miss on every call, against the
  // target bound 2 x (the same calls with warm plans) + planning time (path search and
  // plan construction of those shapes, timed alone).
  {
    constexpr int kShapes = 400;
    std::vector<EagerTensor> xs, ys;
    std::vector<std::vector<Shape>> shapes;
    for (int64_t i = 0; i < kShapes; ++i) {
      const int64_t m = 2 + i % 7, k = 2 + i / 7, n = 2 + (i * 5) % 9;
      xs.push_back(random_tensor(*rt, {m, k}, 100 + static_cast<uint64_t>(i)));
      ys.push_back(random_tensor(*rt, {k, n}, 900 + static_cast<uint64_t>(i)));
      shapes.push_back({Shape{m, k}, Shape{k, n}});
    }
    const auto pass = [&] {
      const auto t0 = Clock::now();
      for (int i = 0; i < kShapes; ++i) (void)eager::einsum("ij,jk->ik", {xs[static_cast<size_t>(i)], ys[static_cast<size_t>(i)]});
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kShapes;
    };
    std::vector<double> fresh, warm, plan;
    for (int r = 0; r < 5; ++r) {
      rt->clear_einsum_cache();
      fresh.push_back(pass());  // every call plans (distinct shapes, empty cache)
      warm.push_back(pass());   // capacity 256 < 400 shapes: replay each call twice instead
      const auto t0 = Clock::now();
      for (int i = 0; i < kShapes; ++i) {
        (void)einsum::EinsumPlan::prepare("ij,jk->ik", shapes[static_cast<size_t>(i)], DType::kF64);
      }
      plan.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kShapes);
    }
    // Warm per-call time: the same call twice in a row, the second timed.
    std::vector<double> same;
    for (int r = 0; r < 5; ++r) {
      double total = 0;
      for (int i = 0; i < kShapes; ++i) {
        const auto& x = xs[static_cast<size_t>(i)];
        const auto& y = ys[static_cast<size_t>(i)];
        (void)eager::einsum("ij,jk->ik", {x, y});
        const auto t0 = Clock::now();
        (void)eager::einsum("ij,jk->ik", {x, y});
        total += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      }
      same.push_back(total / kShapes);
    }
    const auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    rows.push_back({"einsum same shape (warm plan), 400 shapes", med(same), "", 0});
    rows.push_back({"einsum planning alone (path search + plan)", med(plan), "", 0});
    rows.push_back({"einsum new shape every call", med(fresh), "2 x same + planning", 2 * med(same) + med(plan)});
  }

  // Large operands: eager vs the kernel called directly in the same domain.
  {
    const int64_t n = int64_t{1} << 24;
    EagerTensor x = random_tensor(*rt, {n}, 11), y = random_tensor(*rt, {n}, 12);
    auto engine = must(cpu::CpuEngine::create(config.engine), "engine");
    const auto [e, k] = interleaved_us(
        31, [&] { (void)eager::add(x, y); },
        [&] {
          (void)engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
            auto r = cpu::binary(ctx, cpu::BinaryOp::kAdd, x.tensor(), y.tensor(), engine->pool(0));
            return r ? ok() : Result<void>(r.error());
          });
        });
    rows.push_back({"add 2^24 f64", e, "cpu::binary direct", k});
    EagerTensor p = random_tensor(*rt, {2048, 2048}, 13), q = random_tensor(*rt, {2048, 2048}, 14);
    cpu::DotDims dims;
    dims.lhs_contracting = {1};
    dims.rhs_contracting = {0};
    const auto [me, mk] = interleaved_us(
        9, [&] { (void)eager::matmul(p, q); },
        [&] {
          (void)engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
            auto r = cpu::dot_general(ctx, p.tensor(), q.tensor(), dims, {}, engine->pool(0));
            return r ? ok() : Result<void>(r.error());
          });
        });
    rows.push_back({"matmul 2048^2 f64", me, "cpu::dot_general direct", mk});
  }

  print_rows(rows, threads, json);
  return 0;
}

}  // namespace tenferro::cli
