#pragma once
// Helpers shared by the CLI's subcommands: checked option values, JSON output that never
// throws, einsum-benchmark instance files read with every field checked, timing helpers
// of the `tenferro bench` subcommands, and the libtorch C++ peer process
// (bench/peer_libtorch_eager.cc) they run for same-run peer figures.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tenferro/core/result.h"
#include "tenferro/core/dtype.h"
#include "tenferro/core/shape.h"

namespace tenferro::cli {

/// The most worker threads any command accepts (`--threads`).
inline constexpr int64_t kMaxThreads = 1024;

/// A whole decimal number in [lo, hi] (no sign other than a leading '-', no junk, no
/// overflow), or nullopt.
std::optional<int64_t> parse_count(const char* text, int64_t lo, int64_t hi);

/// A whole decimal real number in [lo, hi] (finite: no nan, inf or overflow; no junk), or
/// nullopt.
std::optional<double> parse_real(const char* text, double lo, double hi);

/// The text of `file`, read up to `max_bytes` (an input larger than that, e.g. a device
/// that never ends, is kInvalidArgument after max_bytes + 1 bytes, not a read until
/// memory runs out). Errors: kIo naming the file and the system's reason.
Result<std::string> read_text_file(const std::string& file, int64_t max_bytes, const char* op);

/// `j` as one line of JSON text; strings that are not valid UTF-8 (e.g. file names) have
/// the bad bytes replaced instead of throwing.
std::string json_text(const nlohmann::json& j);

/// An einsum-benchmark instance (../shared/data/einsum-benchmark/*.json).
struct EinsumInstance {
  std::string name;        ///< "name", else the file's stem
  std::string subscripts;  ///< column-major form when present ("format_string_colmajor")
  std::vector<Shape> shapes;
  DType dtype = DType::kF64;
  std::vector<std::vector<int32_t>> path;  ///< paths.<strategy>.path (empty if absent)
  bool has_path = false;                   ///< the file holds paths.<strategy>
};
/// Reads and checks an instance file: every field has the expected JSON type, extents
/// are non-negative and each operand holds at most 2^62 elements. `strategy` names the
/// path to read ("opt_flops"; empty: none). "dtype" is a numpy name of a floating or
/// complex dtype (default float64). Errors (kUsage stage): kIo, kParse (malformed JSON or a
/// field of the wrong type), kInvalidShape, kDTypeMismatch (any other dtype).
Result<EinsumInstance> load_einsum_instance(const std::string& file, const std::string& strategy);
/// The same from the file's text (`file` names it in errors and gives the default name).
Result<EinsumInstance> parse_einsum_instance(std::string_view text, const std::string& file,
                                             const std::string& strategy);

/// Note [Peer threads settle]: after a call on several threads OpenBLAS's own worker
/// threads spin (sched_yield) for up to its thread timeout before they sleep (a 2-thread
/// dgemm left 0.13 s of CPU time spent after it returned, then none). On a machine with
/// as many CPUs as threads they take the CPUs tenferro's workers need, so a tenferro
/// timing right after a multi-threaded OpenBLAS reference would measure the peer's
/// leftovers. The benchmarks call this after every multi-threaded peer timing: sleeps
/// 0.25 s when `threads` > 1; no-op otherwise.
void settle_peer_threads(int threads);

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

/// Prints "tenferro bench: WHAT: ERROR" and exits with status 1 (benchmark setup
/// failures, which leave nothing to measure).
[[noreturn]] void bench_fail(const char* what, const Error& error);
/// The value of `r`, or bench_fail.
template <class T>
T must(Result<T> r, const char* what) {
  if (!r) bench_fail(what, r.error());
  return std::move(*r);
}
inline void must(Result<void> r, const char* what) {
  if (!r) bench_fail(what, r.error());
}

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
