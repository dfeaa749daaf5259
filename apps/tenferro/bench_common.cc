#include "bench_common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

namespace tenferro::cli {

using Clock = std::chrono::steady_clock;

// Median over 7 repetitions of the per-call time of `calls` calls, in µs.
double per_call_us(int calls, const std::function<void()>& f) {
  for (int i = 0; i < std::min(calls, 1000); ++i) f();  // warm-up: pools, plan caches
  std::vector<double> reps;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    reps.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
  }
  std::sort(reps.begin(), reps.end());
  return reps[3];
}

// Medians of `reps` interleaved single calls of `a` and `b` (µs), so drift of a shared
// machine affects both alike.
std::pair<double, double> interleaved_us(int reps, const std::function<void()>& a, const std::function<void()>& b) {
  a();
  b();
  std::vector<double> ta, tb;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    a();
    ta.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    t0 = Clock::now();
    b();
    tb.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

// The libtorch peer's figures: one JSON object {case: us} on stdout.
std::map<std::string, double> run_peer(const std::string& path, int threads) {
  std::map<std::string, double> out;
  if (path.empty()) return out;
  const std::string cmd = "'" + path + "' " + std::to_string(threads);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  if (pclose(p) != 0) {
    std::fprintf(stderr, "tenferro bench: peer '%s' failed; no peer figures\n", path.c_str());
    return out;
  }
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) out[k] = v.get<double>();
  }
  return out;
}

std::string default_peer(const char* argv0) {
  std::string self(argv0);
  const auto slash = self.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  for (const std::string& cand : {dir + "/../../bench/tenferro_peer_libtorch", dir + "/tenferro_peer_libtorch"}) {
    if (FILE* f = std::fopen(cand.c_str(), "r")) {
      std::fclose(f);
      return cand;
    }
  }
  return {};
}

void print_rows(const std::vector<BenchRow>& rows, int threads, bool json) {
  if (json) {
    for (const BenchRow& r : rows) {
      nlohmann::json j{{"case", r.name}, {"threads", threads}, {"tenferro_us", r.tenferro_us}, {"peer", r.peer}};
      if (!r.target.empty()) j["target"] = r.target;
      if (r.peer_us > 0) {
        j["peer_us"] = r.peer_us;
        j["ratio"] = r.tenferro_us / r.peer_us;
      } else {
        j["peer_us"] = nullptr;
        j["ratio"] = nullptr;
      }
      std::printf("%s\n", j.dump().c_str());
    }
    return;
  }
  std::printf("%-56s %12s %-30s %12s %8s  %s\n", "case", "tenferro us", "reference", "ref us", "ratio", "target");
  for (const BenchRow& r : rows) {
    if (r.peer_us > 0) {
      std::printf("%-56s %12.3f %-30s %12.3f %8.3f  %s\n", r.name.c_str(), r.tenferro_us, r.peer.c_str(), r.peer_us,
                  r.tenferro_us / r.peer_us, r.target.c_str());
    } else {
      std::printf("%-56s %12.3f %-30s %12s %8s  %s\n", r.name.c_str(), r.tenferro_us, r.peer.c_str(), "-", "-",
                  r.target.c_str());
    }
  }
  std::printf("ratio = tenferro / reference (lower is better for tenferro)\n");
}

}  // namespace tenferro::cli
