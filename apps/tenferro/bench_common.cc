#include "bench_common.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace tenferro::cli {

using Clock = std::chrono::steady_clock;

void bench_fail(const char* what, const Error& error) {
  std::fprintf(stderr, "tenferro bench: %s: %s\n", what, error.to_string().c_str());
  std::exit(1);
}

std::optional<int64_t> parse_count(const char* text, int64_t lo, int64_t hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<double> parse_real(const char* text, double lo, double hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  // !(lo <= v && v <= hi) also rejects nan; errno catches overflow to +-inf.
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v) || !(lo <= v && v <= hi)) return std::nullopt;
  return v;
}

Result<std::string> read_text_file(const std::string& file, int64_t max_bytes, const char* op) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return usage_error(ErrorCode::kIo, op, "'" + file + "': cannot be read: " + std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      return usage_error(ErrorCode::kInvalidArgument, op,
                         "'" + file + "' is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  if (in.bad()) return usage_error(ErrorCode::kIo, op, "'" + file + "': read error");
  return text;
}

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

Result<EinsumInstance> load_einsum_instance(const std::string& file, const std::string& strategy) {
  // Instance files of the einsum benchmark are at most tens of KiB.
  auto text = read_text_file(file, int64_t{256} << 20, "einsum instance");
  if (!text) return text.error();
  return parse_einsum_instance(*text, file, strategy);
}

Result<EinsumInstance> parse_einsum_instance(std::string_view text, const std::string& file,
                                             const std::string& strategy) {
  const auto bad = [&](ErrorCode code, const std::string& what) {
    return usage_error(code, "einsum instance", "'" + file + "': " + what);
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad(ErrorCode::kParse, "not a JSON object");
  EinsumInstance inst;
  inst.name = std::filesystem::path(file).stem().string();
  if (j.contains("name")) {
    if (!j["name"].is_string()) return bad(ErrorCode::kParse, "\"name\" is not a string");
    inst.name = j["name"].get<std::string>();
  }
  const char* fmt_key = j.contains("format_string_colmajor") ? "format_string_colmajor" : "format_string";
  if (!j.contains(fmt_key) || !j[fmt_key].is_string()) return bad(ErrorCode::kParse, std::string("\"") + fmt_key + "\" is missing or not a string");
  inst.subscripts = j[fmt_key].get<std::string>();
  const char* shapes_key = j.contains("shapes_colmajor") ? "shapes_colmajor" : "shapes";
  if (!j.contains(shapes_key) || !j[shapes_key].is_array()) return bad(ErrorCode::kParse, std::string("\"") + shapes_key + "\" is missing or not a list");
  for (const auto& s : j[shapes_key]) {
    if (!s.is_array()) return bad(ErrorCode::kParse, "a shape is not a list");
    Shape sh;
    int64_t n = 1;
    for (const auto& e : s) {
      if (!e.is_number_integer()) return bad(ErrorCode::kParse, "an extent is not an integer: " + json_text(e));
      const int64_t v = e.get<int64_t>();
      if (v < 0 || (e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
        return bad(ErrorCode::kInvalidShape, "extent " + json_text(e) + " is negative or too large");
      }
      if (__builtin_mul_overflow(n, v, &n) || n > (int64_t{1} << 62)) {
        return bad(ErrorCode::kInvalidShape, "an operand of shape " + json_text(s) + " has more than 2^62 elements");
      }
      sh.push_back(v);
    }
    inst.shapes.push_back(std::move(sh));
  }
  if (j.contains("dtype")) {
    if (!j["dtype"].is_string()) return bad(ErrorCode::kParse, "\"dtype\" is not a string");
    const std::string name = j["dtype"].get<std::string>();
    const std::optional<DType> d = parse_dtype(name);
    // The benchmark times floating contractions (its operands are normal random numbers).
    if (!d || !is_inexact(*d)) {
      return bad(ErrorCode::kDTypeMismatch,
                 "\"dtype\" " + json_text(j["dtype"]) + " is not float32, float64, complex64 or complex128");
    }
    inst.dtype = *d;
  }
  if (!strategy.empty() && j.contains("paths")) {
    const auto& paths = j["paths"];
    if (!paths.is_object()) return bad(ErrorCode::kParse, "\"paths\" is not an object");
    if (paths.contains(strategy)) {
      inst.has_path = true;
      const auto& p = paths[strategy];
      if (!p.is_object() || !p.contains("path") || !p["path"].is_array()) {
        return bad(ErrorCode::kParse, "paths." + strategy + ".path is missing or not a list");
      }
      for (const auto& pair : p["path"]) {
        if (!pair.is_array()) return bad(ErrorCode::kParse, "a path entry is not a list");
        std::vector<int32_t> v;
        for (const auto& k : pair) {
          if (!k.is_number_integer() || k.get<int64_t>() < 0 || k.get<int64_t>() > INT32_MAX) {
            return bad(ErrorCode::kParse, "a path entry holds " + json_text(k) + ", not an operand position");
          }
          v.push_back(static_cast<int32_t>(k.get<int64_t>()));
        }
        inst.path.push_back(std::move(v));
      }
    }
  }
  return inst;
}

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
      std::printf("%s\n", json_text(j).c_str());
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

void settle_peer_threads(int threads) {
  if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

}  // namespace tenferro::cli
