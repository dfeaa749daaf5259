// `tenferro demo trg`: the 2D Ising model by TRG with derivatives by AD, next to
// Onsager's solution. `tenferro bench ad`: gradient cost against forward cost (MLP loss
// through the program path, TRG) with torch from Python as the peer, same threads.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "commands.h"
#include "tenferro/ad/ad.h"
#include "tenferro/compiler/compiler.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/eager/autograd.h"
#include "tenferro/tensor/random.h"
#include "trg.h"

namespace tenferro::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

template <class T>
Result<void> done(Result<T> r) {
  if (!r) return r.error();
  return ok();
}

int fail(const Error& e) {
  std::fprintf(stderr, "%s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

// The largest β `demo trg` accepts: exp(2β) of the initial tensor stays far from overflow.
constexpr double kMaxTrgBeta = 100;

int run_demo_trg(int argc, char** argv) {
  examples::TrgOptions o;
  std::vector<double> betas;
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--beta" && i + 1 < argc) {
      betas.push_back(parse_real(argv[++i], 0, kMaxTrgBeta).value_or(0));  // 0: rejected below
    } else if (a == "--chi" && i + 1 < argc) {
      o.chi = parse_count(argv[++i], 2, examples::kMaxTrgChi).value_or(0);
    } else if (a == "--steps" && i + 1 < argc) {
      o.steps = static_cast<int>(parse_count(argv[++i], 1, examples::kMaxTrgSteps).value_or(0));
    } else if (a == "--threads" && i + 1 < argc) {
      o.threads = static_cast<int>(parse_count(argv[++i], 1, kMaxThreads).value_or(-1));
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "usage: tenferro demo trg --beta B [--beta B2 ...] [--chi C] [--steps S] [--threads N] [--json]\n");
      return 2;
    }
  }
  const bool bad_beta = std::any_of(betas.begin(), betas.end(), [](double b) { return !(b > 0); });
  if (betas.empty() || bad_beta || o.chi < 2 || o.steps < 1 || o.threads < 0) {
    std::fprintf(stderr,
                 "tenferro demo trg: needs --beta in (0, %g], --chi 2 to %lld, --steps 1 to %d, --threads 1 to %lld\n",
                 kMaxTrgBeta, static_cast<long long>(examples::kMaxTrgChi), examples::kMaxTrgSteps,
                 static_cast<long long>(kMaxThreads));
    return 2;
  }
  const auto t0 = Clock::now();
  auto solver = examples::TrgSolver::create(o);
  if (!solver) return fail(solver.error());
  const double setup_ms = ms_since(t0);
  if (!json) {
    std::printf("2D Ising model, TRG with bond dimension %lld, %d steps (2^%d sites, periodic)\n",
                static_cast<long long>(o.chi), o.steps, o.steps);
    std::printf("energy and specific heat: first and second derivatives of ln Z by AD\n");
    std::printf("%6s  %15s %15s  %12s %12s  %10s %10s\n", "beta", "free energy", "Onsager", "energy", "Onsager",
                "spec.heat", "Onsager");
  }
  for (double b : betas) {
    const auto t1 = Clock::now();
    auto r = (*solver)->solve(b);
    if (!r) return fail(r.error());
    const double ms = ms_since(t1);
    if (json) {
      nlohmann::json j = {{"beta", b},
                          {"chi", o.chi},
                          {"steps", o.steps},
                          {"free_energy", r->free_energy},
                          {"energy", r->energy},
                          {"specific_heat", r->specific_heat},
                          {"exact_free_energy", r->exact_free_energy},
                          {"exact_energy", r->exact_energy},
                          {"exact_specific_heat", r->exact_specific_heat},
                          {"free_energy_rel_error", std::abs(r->free_energy / r->exact_free_energy - 1)},
                          {"setup_ms", setup_ms},
                          {"solve_ms", ms}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%6.3f  %15.10f %15.10f  %12.8f %12.8f  %10.6f %10.6f\n", b, r->free_energy, r->exact_free_energy,
                  r->energy, r->exact_energy, r->specific_heat, r->exact_specific_heat);
    }
  }
  return 0;
}

namespace {

// Median of `reps` timed runs after one warm run, in ms.
template <class F>
Result<double> median_ms(int reps, F&& f) {
  TENFERRO_TRY_VOID(f());
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    TENFERRO_TRY_VOID(f());
    t.push_back(ms_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// loss = sum((tanh(tanh(x W1 + b1) W2 + b2) W3 + b3)²) / n, row-major semantics on
// column-major data: x [n, w] as dot_general over the feature axis.
Result<program::CompiledGraph> mlp_program(int64_t n, int64_t w) {
  using program::Attrs;
  using program::Extent;
  using program::OpCode;
  using program::Value;
  compiler::TraceContext tc;
  const auto mat = [](int64_t a, int64_t b) {
    return program::ValueType{DType::kF64, {Extent::exact(a), Extent::exact(b)}};
  };
  TENFERRO_TRY(Value x, tc.input(mat(n, w), "x"));
  Value h = x;
  for (int l = 0; l < 3; ++l) {
    TENFERRO_TRY(Value wl, tc.input(mat(w, w), "w" + std::to_string(l)));
    TENFERRO_TRY(Value bl, tc.input(program::ValueType{DType::kF64, {Extent::exact(w)}}, "b" + std::to_string(l)));
    TENFERRO_TRY(Value z, tc.op(OpCode::kDotGeneral, {h, wl}, Attrs{.lhs_contract = {1}, .rhs_contract = {0}}));
    TENFERRO_TRY(Value bb, tc.op(OpCode::kBroadcastInDim, {bl}, Attrs{.dims = {1}, .shape = {Extent::exact(n), Extent::exact(w)}}));
    TENFERRO_TRY(Value zb, tc.op(OpCode::kAdd, {z, bb}));
    if (l < 2) {
      TENFERRO_TRY(h, tc.op(OpCode::kTanh, {zb}));
    } else {
      h = zb;
    }
  }
  TENFERRO_TRY(Value sq, tc.op(OpCode::kMul, {h, h}));
  TENFERRO_TRY(Value s, tc.op(OpCode::kReduce, {sq}, Attrs{.dims = {0, 1}}));
  TENFERRO_TRY(Tensor inv_n, Tensor::from_col_major<double>({}, std::vector<double>{1.0 / static_cast<double>(n)}));
  TENFERRO_TRY(Value c, tc.constant(inv_n));
  TENFERRO_TRY(Value loss, tc.op(OpCode::kMul, {s, c}));
  TENFERRO_TRY(compiler::TracedGraph g, tc.finish({loss}));
  compiler::GraphCompiler gc;
  return gc.compile(g);
}

}  // namespace

int run_bench_ad(int argc, char** argv) {
  int threads = 1;
  bool json = false;
  std::string python_peer;
  int64_t trg_chi = 32;
  int trg_steps = 20;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<int>(parse_count(argv[++i], 1, kMaxThreads).value_or(0));  // 0: rejected below
    } else if (a == "--json") {
      json = true;
    } else if (a == "--python-peer" && i + 1 < argc) {
      python_peer = argv[++i];
    } else if (a == "--trg-chi" && i + 1 < argc) {
      trg_chi = parse_count(argv[++i], 2, examples::kMaxTrgChi).value_or(0);
    } else if (a == "--trg-steps" && i + 1 < argc) {
      trg_steps = static_cast<int>(parse_count(argv[++i], 1, examples::kMaxTrgSteps).value_or(0));
    } else {
      std::fprintf(stderr, "usage: tenferro bench ad [--threads N] [--json] [--python-peer bench/peer_ad.py] "
                           "[--trg-chi C] [--trg-steps S]\n");
      return 2;
    }
  }
  if (threads < 1 || trg_chi < 2 || trg_steps < 1) {
    std::fprintf(stderr, "tenferro bench ad: --threads takes 1 to %lld, --trg-chi 2 to %lld, --trg-steps 1 to %d\n",
                 static_cast<long long>(kMaxThreads), static_cast<long long>(examples::kMaxTrgChi),
                 examples::kMaxTrgSteps);
    return 2;
  }
  nlohmann::json out = {{"threads", threads}};
  // MLP loss through the program path.
  {
    constexpr int64_t n = 256, w = 512;
    auto f = mlp_program(n, w);
    if (!f) return fail(f.error());
    const ad::AdContext ctx = ad::AdContext::with_standard_rules();
    auto g = ctx.grad(*f);
    if (!g) return fail(g.error());
    auto topo = cpu::CpuTopology::discover();
    if (!topo) return fail(topo.error());
    cpu::CpuEngineConfig cfg;
    cpu::CpuDomainConfig d;
    d.cpus.assign(topo->allowed_cpus.begin(),
                  topo->allowed_cpus.begin() + std::min<std::ptrdiff_t>(threads, static_cast<std::ptrdiff_t>(topo->allowed_cpus.size())));
    d.threads = threads;
    cfg.domains = {d};
    auto engine = cpu::CpuEngine::create(cfg);
    if (!engine) return fail(engine.error());
    auto rt = runtime::Runtime::create();
    if (!rt) return fail(rt.error());
    if (auto id = cpu_runtime::register_cpu_engine(**rt, *engine); !id) return fail(id.error());
    std::vector<Tensor> args;
    args.push_back(Tensor::random_normal(DType::kF64, {n, w}, 1).value());
    for (int l = 0; l < 3; ++l) {
      args.push_back(Tensor::random_normal(DType::kF64, {w, w}, 10 + static_cast<uint64_t>(l), 0.0, 1.0 / std::sqrt(512.0)).value());
      args.push_back(Tensor::zeros(DType::kF64, {w}).value());
    }
    auto fwd = median_ms(7, [&]() -> Result<void> { return done((*rt)->run(*f, args)); });
    auto bwd = median_ms(7, [&]() -> Result<void> { return done((*rt)->run(*g, args)); });
    if (!fwd) return fail(fwd.error());
    if (!bwd) return fail(bwd.error());
    out["mlp forward ms"] = *fwd;
    out["mlp forward+gradient ms"] = *bwd;
    out["mlp gradient / forward"] = *bwd / *fwd;
  }
  // TRG: forward alone vs forward + gradient.
  {
    examples::TrgOptions o;
    o.chi = trg_chi;
    o.steps = trg_steps;
    o.threads = threads;
    auto solver = examples::TrgSolver::create(o);
    if (!solver) return fail(solver.error());
    // One warm and one timed run each (a run takes seconds).
    auto fwd = median_ms(1, [&]() -> Result<void> { return done((*solver)->log_z(0.5)); });
    auto grad = median_ms(1, [&]() -> Result<void> { return done((*solver)->log_z_and_derivative(0.5)); });
    if (!fwd) return fail(fwd.error());
    if (!grad) return fail(grad.error());
    out["trg chi"] = trg_chi;
    out["trg steps"] = trg_steps;
    out["trg forward ms"] = *fwd;
    out["trg forward+gradient ms"] = *grad;
    out["trg gradient / forward"] = *grad / *fwd;
  }
  // Eager reverse mode: forward + backward of sum(matmul(x, y)) 2x2.
  {
    auto ert = eager::EagerRuntime::create();
    if (!ert) return fail(ert.error());
    auto x = eager::requires_grad((*ert)->from_values<double>({2, 2}, {1, 2, 3, 4}).value()).value();
    auto y = eager::requires_grad((*ert)->from_values<double>({2, 2}, {0.5, -1, 2, 0}).value()).value();
    constexpr int kCalls = 5000;
    auto per = median_ms(5, [&]() -> Result<void> {
      for (int i = 0; i < kCalls; ++i) {
        TENFERRO_TRY(eager::EagerTensor l, eager::sum(eager::matmul(x, y).value()));
        TENFERRO_TRY_VOID(eager::backward(l));
      }
      return ok();
    });
    if (!per) return fail(per.error());
    out["eager fwd+bwd sum(matmul 2x2) us"] = *per * 1000.0 / kCalls;
  }
  if (!python_peer.empty()) {
    const std::string cmd = "OMP_NUM_THREADS=" + std::to_string(threads) + " OPENBLAS_NUM_THREADS=" +
                            std::to_string(threads) + " /usr/bin/python3 " + python_peer + " " + std::to_string(threads);
    FILE* p = popen(cmd.c_str(), "r");
    std::string text;
    if (p) {
      char buf[512];
      while (std::fgets(buf, sizeof buf, p)) text += buf;
      pclose(p);
    }
    try {
      const nlohmann::json peer = nlohmann::json::parse(text);
      for (const auto& [k, v] : peer.items()) out[k] = v;
    } catch (...) {
      std::fprintf(stderr, "tenferro bench ad: python peer '%s' gave no figures\n", python_peer.c_str());
    }
  }
  if (json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    for (auto& [k, v] : out.items()) std::printf("%-40s %s\n", k.c_str(), v.dump().c_str());
  }
  return 0;
}

}  // namespace tenferro::cli
