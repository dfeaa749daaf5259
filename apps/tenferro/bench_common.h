#pragma once
// Timing helpers shared by the `tenferro bench` subcommands, and the libtorch C++ peer
// process (bench/peer_libtorch_eager.cc) they run for same-run peer figures.

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tenferro::cli {

/// Median over 7 repetitions of the per-call time of `calls` calls of `f`, in µs (after
/// a warm-up of min(calls, 1000) calls).
double per_call_us(int calls, const std::function<void()>& f);

/// Medians of `reps` interleaved single calls of `a` and `b` (µs), so drift of a shared
/// machine affects both alike.
std::pair<double, double> interleaved_us(int reps, const std::function<void()>& a, const std::function<void()>& b);

/// The libtorch peer's figures (`PATH THREADS` prints one JSON object {case: µs}); empty
/// when `path` is empty or the peer fails.
std::map<std::string, double> run_peer(const std::string& path, int threads);

/// The libtorch peer built beside this binary (build tree: bench/tenferro_peer_libtorch),
/// or empty.
std::string default_peer(const char* argv0);

/// One measured case: tenferro's time next to a same-run reference (a peer library or the
/// kernels called directly); peer_us 0 when there is no reference figure.
struct BenchRow {
  std::string name;
  double tenferro_us = 0;
  std::string peer;
  double peer_us = 0;
  std::string target{};  ///< the issue's target for this case, or empty
};

/// Prints `rows` as one JSON object per line (`--json`: case, threads, tenferro_us, peer,
/// peer_us, ratio, target) or as a table, with ratio = tenferro / reference.
void print_rows(const std::vector<BenchRow>& rows, int threads, bool json);

}  // namespace tenferro::cli
