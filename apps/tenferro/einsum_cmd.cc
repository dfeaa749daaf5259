// `tenferro einsum` (run one einsum on .npy files) and `tenferro bench einsum` (the
// einsum-benchmark instances).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/einsum_cpu/einsum.h"
#include "tenferro/tensor/npy.h"

namespace tenferro::cli {

namespace {

using einsum::PathAlgorithm;
using einsum::PathPolicy;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "--optimize" values: greedy | optimal | treesa | left-to-right | path=((0,1),2) |
// path=[(0,1),(0,1)] or path=[[0,1],[0,1]] (opt_einsum pairs, Python or JSON form).
Result<PathPolicy> parse_optimize(const std::string& v, int32_t operands) {
  PathPolicy p;
  if (v == "greedy") {
    p.algorithm = PathAlgorithm::kGreedy;
  } else if (v == "optimal") {
    p.algorithm = PathAlgorithm::kOptimal;
  } else if (v == "treesa") {
    p.algorithm = PathAlgorithm::kTreeSA;
  } else if (v == "left-to-right") {
    p.algorithm = PathAlgorithm::kLeftToRight;
  } else if (v.rfind("path=", 0) == 0) {
    const std::string text = v.substr(5);
    p.algorithm = PathAlgorithm::kExplicit;
    if (!text.empty() && text[0] == '[') {
      TENFERRO_TRY(auto pairs, einsum::pairs_from_text(text));
      TENFERRO_TRY(p.explicit_tree, einsum::tree_from_pairs(operands, pairs));
    } else {
      TENFERRO_TRY(p.explicit_tree, einsum::tree_from_nested(operands, text));
    }
  } else {
    return usage_error(ErrorCode::kInvalidArgument, "tenferro einsum",
                       "--optimize '" + v + "' is not greedy, optimal, treesa, left-to-right or path=...");
  }
  return p;
}

Result<std::shared_ptr<cpu::CpuEngine>> make_engine(int threads, int64_t pool_bytes = int64_t{1} << 30) {
  TENFERRO_TRY(cpu::CpuTopology topo, cpu::CpuTopology::discover());
  cpu::CpuEngineConfig cfg;
  std::vector<int> cpus = topo.allowed_cpus;
  if (static_cast<int>(cpus.size()) > threads) cpus.resize(static_cast<size_t>(threads));
  cfg.domains = {cpu::CpuDomainConfig{0, cpus, threads, nullptr}};
  cfg.pin_workers = static_cast<int>(topo.allowed_cpus.size()) >= threads;
  cfg.pool.max_retained_bytes = pool_bytes;
  return cpu::CpuEngine::create(cfg, &topo);
}

struct Timing {
  double median_ms = 0, iqr_ms = 0, min_ms = 0;
  int runs = 0;
};

Timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  Timing r;
  r.runs = static_cast<int>(t.size());
  if (t.empty()) return r;
  r.median_ms = t[t.size() / 2] * 1e3;
  r.min_ms = t.front() * 1e3;
  r.iqr_ms = (t[3 * t.size() / 4] - t[t.size() / 4]) * 1e3;
  return r;
}

int fail(const Error& e) {
  std::fprintf(stderr, "tenferro: %s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

int run_einsum(int argc, char** argv) {
  std::string out_path, optimize = "greedy";
  std::optional<std::string> subscripts;  // may be empty ('' : a product of scalars)
  std::vector<std::string> inputs;
  int threads = 1, repeat = 1;
  bool json = false, bad_value = false, profile = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (a == "--optimize" && i + 1 < argc) {
      optimize = argv[++i];
    } else if ((a == "--threads" || a == "--repeat") && i + 1 < argc) {
      const auto v = parse_count(argv[++i], 1, a == "--threads" ? kMaxThreads : 1000000000);
      bad_value = bad_value || !v;
      (a == "--threads" ? threads : repeat) = static_cast<int>(v.value_or(1));
    } else if (a == "--json") {
      json = true;
    } else if (a == "--profile") {
      profile = true;
    } else if (!subscripts && (a.empty() || a.find("->") != std::string::npos || a[0] != '-')) {
      subscripts = a;  // subscripts may begin with '-' ('->': the scalar output of vectors)
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "tenferro einsum: unknown option '%s'\n", a.c_str());
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (!subscripts || inputs.empty() || bad_value) {
    std::fprintf(stderr,
                 "usage: tenferro einsum SUBSCRIPTS A.npy [B.npy ...] [-o OUT.npy] [--optimize "
                 "greedy|optimal|treesa|left-to-right|path=...] [--threads N] [--repeat K] [--json] [--profile]\n");
    return 2;
  }
  std::vector<Tensor> ops;
  std::vector<Shape> shapes;
  for (const std::string& p : inputs) {
    auto t = read_npy(p);
    if (!t) return fail(t.error());
    shapes.push_back(t->shape());
    ops.push_back(std::move(*t));
  }
  for (size_t i = 1; i < ops.size(); ++i) {
    if (ops[i].dtype() != ops[0].dtype()) {
      return fail(usage_error(ErrorCode::kDTypeMismatch, "tenferro einsum",
                              "operand " + std::to_string(i) + " is " + std::string(dtype_name(ops[i].dtype())) +
                                  ", operand 0 is " + std::string(dtype_name(ops[0].dtype()))));
    }
  }
  auto policy = parse_optimize(optimize, static_cast<int32_t>(ops.size()));
  if (!policy) return fail(policy.error());
  // C-ordered .npy operands (numpy's default) plan as row-major (Note [Row-major operands]).
  const einsum::OperandOrder order = einsum::preferred_operand_order(ops);
  auto plan = einsum::EinsumPlan::prepare(*subscripts, shapes, ops[0].dtype(), *policy, order);
  if (!plan) return fail(plan.error());
  auto engine = make_engine(threads);
  if (!engine) return fail(engine.error());
  Tensor result;
  std::vector<double> times;
  // --profile: each binary step's sizes, time and dot_general route (kernel, provider,
  // split, packing, and the planner's reason) of the last run, in plan order.
  std::vector<einsum::StepProfile> steps;
  for (int k = 0; k < repeat; ++k) {
    const double t0 = now_s();
    steps.clear();
    auto st = (*engine)->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
      TENFERRO_TRY(result, (*plan)->execute(ctx, ops, (*engine)->pool(0), {}, profile ? &steps : nullptr));
      return ok();
    });
    times.push_back(now_s() - t0);
    if (!st) return fail(st.error());
  }
  if (!out_path.empty()) {
    auto w = write_npy(out_path, result);
    if (!w) return fail(w.error());
  }
  const Timing tm = summarize(times);
  const einsum::PathCost& c = (*plan)->cost();
  if (json) {
    nlohmann::json j;
    j["subscripts"] = *subscripts;
    j["dtype"] = std::string(dtype_name(ops[0].dtype()));
    j["output_shape"] = std::vector<int64_t>(result.shape().begin(), result.shape().end());
    j["optimize"] = optimize;
    j["operand_order"] = std::string(einsum::operand_order_name(order));
    j["log10_flops"] = c.log10_flops();
    j["largest_intermediate"] = c.largest_intermediate;
    j["search_ms"] = (*plan)->search_seconds() * 1e3;
    j["threads"] = threads;
    j["runs"] = tm.runs;
    j["median_ms"] = tm.median_ms;
    j["min_ms"] = tm.min_ms;
    auto pairs = einsum::pairs_from_tree((*plan)->tree());
    j["path"] = pairs;
    if (profile) {
      nlohmann::json js = nlohmann::json::array();
      for (const auto& p : steps) {
        js.push_back({{"step", p.step},
                      {"ms", p.seconds * 1e3},
                      {"batch", p.batch},
                      {"m", p.m},
                      {"n", p.n},
                      {"k", p.k},
                      {"kernel", std::string(cpu::dot_kernel_name(p.route.kernel))},
                      {"threads", p.route.threads},
                      {"route", cpu::describe(p.route)}});
      }
      j["steps"] = js;
    }
    if (!out_path.empty()) j["output"] = out_path;
    std::printf("%s\n", json_text(j).c_str());
  } else {
    std::printf("einsum %s: %s %s, path %s (log10 flops %.3f, largest intermediate %.0f elements, search %.2f ms)\n",
                subscripts->c_str(), std::string(dtype_name(ops[0].dtype())).c_str(),
                format_dims(result.shape()).c_str(), optimize.c_str(), c.log10_flops(), c.largest_intermediate,
                (*plan)->search_seconds() * 1e3);
    std::printf("time: median %.3f ms over %d run(s) at %d thread(s), planned for %s operands\n", tm.median_ms, tm.runs,
                threads, std::string(einsum::operand_order_name(order)).c_str());
    for (const auto& p : steps) {
      std::printf("step %lld: %.3f ms, batch %lld, m %lld, n %lld, k %lld\n    %s\n", static_cast<long long>(p.step),
                  p.seconds * 1e3, static_cast<long long>(p.batch), static_cast<long long>(p.m),
                  static_cast<long long>(p.n), static_cast<long long>(p.k), cpu::describe(p.route).c_str());
    }
    if (!out_path.empty()) {
      std::printf("wrote %s\n", out_path.c_str());
    } else {
      std::printf("%s\n", result.to_string().c_str());
    }
  }
  return 0;
}

int run_bench_einsum(int argc, char** argv) {
  std::vector<std::string> targets;
  std::string path_mode = "instance", strategy = "opt_flops";
  int threads = 1;
  bool json = false;
  double min_time_s = 1.0;
  int64_t pool_mib = 4096;
  std::string provider = "auto";
  bool profile_steps = false;
  bool profile_all = false;  // every step in plan order instead of the 15 slowest
  bool use_workspace = true;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--path" && i + 1 < argc) {
      path_mode = argv[++i];
    } else if (a == "--strategy" && i + 1 < argc) {
      strategy = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      const auto v = parse_count(argv[++i], 1, kMaxThreads);
      threads = v ? static_cast<int>(*v) : 0;  // 0: rejected below
    } else if (a == "--json") {
      json = true;
    } else if (a == "--min-time" && i + 1 < argc) {
      min_time_s = parse_real(argv[++i], 0, 3600).value_or(-1);  // -1: rejected below
    } else if (a == "--provider" && i + 1 < argc) {
      provider = argv[++i];
    } else if (a == "--profile") {
      profile_steps = true;
    } else if (a == "--profile-all") {
      profile_steps = true;
      profile_all = true;
    } else if (a == "--no-workspace") {
      use_workspace = false;
    } else if (a == "--pool-mib" && i + 1 < argc) {
      pool_mib = parse_count(argv[++i], 0, int64_t{1} << 30).value_or(-1);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "tenferro bench einsum: unknown option '%s'\n", a.c_str());
      return 2;
    } else {
      targets.push_back(a);
    }
  }
  if (targets.empty() || threads < 1 || min_time_s < 0 || pool_mib < 0 || (path_mode != "instance" && path_mode != "greedy" && path_mode != "treesa") ||
      (strategy != "opt_flops" && strategy != "opt_size")) {
    std::fprintf(stderr,
                 "usage: tenferro bench einsum FILE_OR_DIR... [--path instance|greedy|treesa] [--strategy "
                 "opt_flops|opt_size] [--threads N] [--json] [--min-time S] [--pool-mib M] [--provider P] [--profile] [--profile-all] "
                 "[--no-workspace]\n");
    return 2;
  }
  std::vector<std::string> files;
  for (const std::string& t : targets) {
    std::error_code ec;
    if (std::filesystem::is_directory(t, ec)) {
      const size_t before = files.size();
      for (const auto& e : std::filesystem::directory_iterator(t, ec)) {
        if (e.path().extension() == ".json") files.push_back(e.path().string());
      }
      if (ec || files.size() == before) {
        std::fprintf(stderr, "tenferro bench einsum: no instance files (*.json) in '%s'%s%s\n", t.c_str(),
                     ec ? ": " : "", ec ? ec.message().c_str() : "");
        return 2;
      }
    } else {
      files.push_back(t);
    }
  }
  std::sort(files.begin(), files.end());
  // Intermediates are drawn from the domain's buffer pool; it may retain up to
  // --pool-mib (default 4096) so that repeated runs reuse their buffers.
  cpu::DotOptions dot;
  if (provider == "openblas") dot.provider = cpu::GemmProvider::kOpenBlas;
  else if (provider == "blis") dot.provider = cpu::GemmProvider::kBlis;
  else if (provider != "auto") {
    std::fprintf(stderr, "tenferro bench einsum: --provider must be auto, openblas or blis\n");
    return 2;
  }
  auto engine = make_engine(threads, pool_mib << 20);
  if (!engine) return fail(engine.error());
  if (!json) {
    std::printf("%-48s %8s %10s %9s %9s %8s %11s %10s\n", "instance", "threads", "median ms", "iqr ms", "GFLOP/s",
                "log10 F", "largest", "search ms");
  }
  int failures = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    auto loaded = load_einsum_instance(files[fi], path_mode == "instance" ? strategy : std::string());
    if (!loaded) {
      std::fprintf(stderr, "tenferro bench einsum: %s\n", loaded.error().to_string().c_str());
      ++failures;
      continue;
    }
    const std::string& name = loaded->name;
    (*engine)->pool(0)->clear();  // each instance starts with an empty pool
    std::fprintf(stderr, "[%zu/%zu] %s: planning (%s path)...\n", fi + 1, files.size(), name.c_str(), path_mode.c_str());
    // Column-major data: the instance's column-major subscripts and shapes describe the
    // same contraction as the row-major ones on numpy's data.
    const std::string& fmt = loaded->subscripts;
    const std::vector<Shape>& shapes = loaded->shapes;
    const DType dtype = loaded->dtype;
    PathPolicy policy;
    if (path_mode == "instance") {
      if (!loaded->has_path && shapes.size() > 1) {
        std::fprintf(stderr,
                     "tenferro bench einsum: '%s' holds no paths.%s.path (--path greedy or --path treesa "
                     "search one)\n",
                     files[fi].c_str(), strategy.c_str());
        ++failures;
        continue;
      }
      auto tree = einsum::tree_from_pairs(static_cast<int32_t>(shapes.size()), loaded->path);
      if (!tree) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), tree.error().to_string().c_str());
        ++failures;
        continue;
      }
      policy.algorithm = PathAlgorithm::kExplicit;
      policy.explicit_tree = *tree;
    } else if (path_mode == "greedy") {
      policy.algorithm = PathAlgorithm::kGreedy;
    } else {
      policy.algorithm = PathAlgorithm::kTreeSA;
    }
    auto plan = einsum::EinsumPlan::prepare(fmt, shapes, dtype, policy);
    if (!plan) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), plan.error().to_string().c_str());
      ++failures;
      continue;
    }
    const einsum::PathCost& c = (*plan)->cost();
    std::vector<Tensor> ops;
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto t = Tensor::random_normal(dtype, shapes[i], 1234 + i);
      if (!t) {
        std::fprintf(stderr, "%s: operand %zu: %s\n", name.c_str(), i, t.error().to_string().c_str());
        break;
      }
      ops.push_back(std::move(*t));
    }
    if (ops.size() != shapes.size()) {
      ++failures;
      continue;
    }
    std::fprintf(stderr, "[%zu/%zu] %s: running...\n", fi + 1, files.size(), name.c_str());
    std::vector<double> times;
    std::vector<einsum::StepProfile> steps;
    std::optional<Error> err;
    bool failed = false;
    // Repeated executions reuse one workspace (Note [Einsum workspace]) unless
    // --no-workspace asks for the one-shot path.
    einsum::EinsumWorkspace ws = (*plan)->make_workspace();
    auto once = [&] {
      const double t0 = now_s();
      auto st = (*engine)->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
        auto* prof = profile_steps ? &steps : nullptr;
        TENFERRO_TRY(Tensor r, use_workspace ? (*plan)->execute(ctx, ops, ws, (*engine)->pool(0), dot, prof)
                                             : (*plan)->execute(ctx, ops, (*engine)->pool(0), dot, prof));
        (void)r;
        return ok();
      });
      if (!st) {
        err = st.error();
        failed = true;
      }
      return now_s() - t0;
    };
    // Warm-up: at least two runs and 0.3 s (caches, page tables, BLAS buffers and worker
    // threads reach their steady state), unless one run already takes 5 s.
    const double first = once();
    const double warm_start = now_s();
    if (!failed && first < 5) {
      do {
        once();
      } while (!failed && now_s() - warm_start < 0.3);
    }
    const double start = now_s();
    while (!failed && (times.size() < 5 || (times.size() < 15 && now_s() - start < min_time_s))) times.push_back(once());
    if (failed) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), err->to_string().c_str());
      ++failures;
      continue;
    }
    const Timing tm = summarize(times);
    if (profile_steps && !steps.empty()) {
      // The last run's steps, slowest first.
      const size_t per_run = (*plan)->tree().steps.size();
      std::vector<einsum::StepProfile> last(steps.end() - static_cast<int64_t>(std::min(per_run, steps.size())), steps.end());
      if (!profile_all) {
        std::sort(last.begin(), last.end(), [](const auto& x, const auto& y) { return x.seconds > y.seconds; });
      }
      double total = 0;
      for (const auto& p : last) total += p.seconds;
      std::fprintf(stderr, "  last run: %zu steps, %.3f ms inside dot_general\n", last.size(), total * 1e3);
      for (size_t i = 0; i < (profile_all ? last.size() : std::min<size_t>(last.size(), 15)); ++i) {
        const auto& p = last[i];
        char lane[24] = "";
        if (p.lane >= 0) std::snprintf(lane, sizeof lane, "  lane %d", static_cast<int>(p.lane));
        std::fprintf(stderr, "  step %3lld %8.3f ms  batch %lld  m %lld  n %lld  k %lld  %.2f GFLOP/s%s\n    %s\n",
                     static_cast<long long>(p.step), p.seconds * 1e3, static_cast<long long>(p.batch),
                     static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                     2.0 * static_cast<double>(p.batch * p.m * p.n * p.k) / p.seconds / 1e9, lane,
                     cpu::describe(p.route).c_str());
      }
    }
    {
      const HostBufferPoolStats ps = (*engine)->pool(0)->stats();
      std::fprintf(stderr, "[%zu/%zu] %s: buffer pool hits %lld, misses %lld, evictions %lld, retained %.1f MiB\n",
                   fi + 1, files.size(), name.c_str(), static_cast<long long>(ps.hits),
                   static_cast<long long>(ps.misses), static_cast<long long>(ps.evictions),
                   static_cast<double>(ps.retained_bytes) / (1 << 20));
    }
    const double gflops = c.flops / (tm.median_ms * 1e-3) / 1e9;
    if (json) {
      nlohmann::json j;
      j["instance"] = name;
      j["threads"] = threads;
      j["path"] = path_mode;
      j["strategy"] = strategy;
      j["median_ms"] = tm.median_ms;
      j["iqr_ms"] = tm.iqr_ms;
      j["min_ms"] = tm.min_ms;
      j["runs"] = tm.runs;
      j["gflops"] = gflops;
      j["log10_flops"] = c.log10_flops();
      j["largest_intermediate"] = c.largest_intermediate;
      j["search_ms"] = (*plan)->search_seconds() * 1e3;
      std::printf("%s\n", json_text(j).c_str());
    } else {
      std::printf("%-48s %8d %10.3f %9.3f %9.2f %8.3f %11.0f %10.2f\n", name.c_str(), threads, tm.median_ms, tm.iqr_ms,
                  gflops, c.log10_flops(), c.largest_intermediate, (*plan)->search_seconds() * 1e3);
    }
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace tenferro::cli
