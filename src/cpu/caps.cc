#include "tenferro/cpu/caps.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <cblas.h>

#include <blis.h>

namespace tenferro::cpu {

// Note [CPU capabilities]: which code is fast depends on facts only known at run time:
// the processor's vector ISA, and which kernels the BLAS libraries picked for it. BLIS
// and OpenBLAS both choose a sub-configuration when loaded; on a CPU newer than the
// library they fall back to slow generic code (BLIS 0.9 on Zen 5: "generic"; OpenBLAS
// 0.3.21 on some Sapphire Rapids class CPUs: "Prescott", SSE3 only). The engine probes
// these facts once (CpuCaps::probe, at CpuEngine::create), keeps them immutable, and
// the dot_general planner reads them from the execution context, never from a global:
// a library that runs generic kernels on a CPU with AVX2 is planned as slow (not
// trusted), and tests plan for any capability set on any machine. The same caps pick
// the SIMD kernels' ISA level (Note [ISA kernels] in gemm_kernels.cc): usable_isa() is
// the detected level capped by max_isa (TENFERRO_MAX_ISA, read here once, or the
// engine's config), and kernel_isa() never exceeds what the machine supports, so caps
// written by hand can change plans but never execute a missing instruction. Probing
// reads cpuid, the caches' sysfs entries (sysconf where there are none), the libraries'
// query functions and that one environment variable; it changes no state.

std::string_view isa_name(IsaLevel level) noexcept {
  switch (level) {
    case IsaLevel::kScalar: return "scalar";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
  }
  return "?";
}

Result<IsaLevel> parse_isa(std::string_view text) {
  std::string lower(text);  // AVX2 as well as avx2
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (lower == isa_name(l)) return l;
  }
  return Error(ErrorStage::kConfiguration, ErrorCode::kInvalidArgument, "parse_isa",
               std::string("unknown ISA level '").append(text).append("' (expected scalar, avx2 or avx512)"));
}

namespace {
// Whether `core` names one of `cores` (lower case), compared case-insensitively.
template <size_t N>
bool core_in(std::string_view core, const std::array<std::string_view, N>& cores) {
  std::string lower(core);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(cores.begin(), cores.end(), lower) != cores.end();
}
}  // namespace

bool openblas_core_tuned(std::string_view core, IsaLevel cpu_level) noexcept {
  if (cpu_level == IsaLevel::kScalar) return true;  // SSE kernels are the best there is
  // OpenBLAS cores whose kernels use AVX2/FMA (or AVX-512).
  constexpr std::array<std::string_view, 6> kVectorCores = {"haswell",        "zen",      "skylakex", "cooperlake",
                                                            "sapphirerapids", "excavator"};
  return core_in(core, kVectorCores);
}

bool openblas_core_avx512(std::string_view core) noexcept {
  constexpr std::array<std::string_view, 3> kAvx512Cores = {"skylakex", "cooperlake", "sapphirerapids"};
  return core_in(core, kAvx512Cores);
}

namespace {

// The baseline the library (this file among it) was compiled for.
IsaLevel baseline_level() noexcept {
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  return IsaLevel::kAvx512;
#elif defined(__AVX2__) && defined(__FMA__)
  return IsaLevel::kAvx2;
#else
  return IsaLevel::kScalar;
#endif
}

IsaLevel detected_level() noexcept {
  __builtin_cpu_init();
  // __builtin_cpu_supports reports features the OS has enabled (XSAVE state included).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return IsaLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return IsaLevel::kAvx2;
  return IsaLevel::kScalar;
}

std::string trimmed(const char* text, size_t max_len) {
  std::string s(text, strnlen(text, max_len));
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(' ');
  return s.substr(first, last - first + 1);
}

void probe_cpuid(CpuCaps& caps) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  char vendor[12];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  caps.cpu_vendor = trimmed(vendor, sizeof vendor);
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const auto base_family = static_cast<int32_t>((a >> 8) & 0xf);
    const auto base_model = static_cast<int32_t>((a >> 4) & 0xf);
    caps.cpu_family = base_family == 0xf ? base_family + static_cast<int32_t>((a >> 20) & 0xff) : base_family;
    caps.cpu_model_id = base_family == 0x6 || base_family == 0xf
                            ? base_model + (static_cast<int32_t>((a >> 16) & 0xf) << 4)
                            : base_model;
  }
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext >= 0x80000004u) {
    char brand[48];
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4] = {0, 0, 0, 0};
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    caps.cpu_model = trimmed(brand, sizeof brand);
  }
}

int64_t cache_bytes(int name) noexcept {
  const long v = sysconf(name);
  return v > 0 ? static_cast<int64_t>(v) : 0;
}

// The first line of a small text file, or "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "32K", "1024K", "16M", "1G" or plain bytes -> bytes; 0 when it does not parse or
// claims a terabyte or more.
int64_t parse_cache_size(const std::string& text) {
  constexpr int64_t kMax = int64_t{1} << 40;
  int64_t v = 0;
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    v = v * 10 + (text[i] - '0');
    if (v >= kMax) return 0;
  }
  const std::string unit = text.substr(i);
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (i == 0 || shift < 0 || v >= (kMax >> shift)) return 0;
  return v << shift;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u >= 0x7f) {  // control or non-ASCII bytes: escaped
      static const char* hex = "0123456789abcdef";
      out.append("\\u00").append(1, hex[u >> 4]).append(1, hex[u & 0xf]);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

CacheSizes read_cache_sizes(const std::string& cache_dir) {
  CacheSizes out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string dir = e.path().string() + "/";
    const std::string level = first_line(dir + "level"), type = first_line(dir + "type");
    const int64_t bytes = parse_cache_size(first_line(dir + "size"));
    if (bytes <= 0) continue;
    if (level == "1" && type == "Data") out.l1d = bytes;
    if (level == "2" && (type == "Unified" || type == "Data")) out.l2 = bytes;
    if (level == "3" && (type == "Unified" || type == "Data")) out.l3 = bytes;
  }
  return out;
}

// Note [BLAS symbol order]: BLIS's library also defines the BLAS (dgemm_, ...) and
// cblas (cblas_dgemm, ...) symbols, and the dynamic linker binds each reference to the
// first library in the lookup order that defines it. With BLIS before OpenBLAS on a link
// line, tenferro's cblas calls and OpenBLAS's own LAPACK (its internal dgemm_, dtrsm_,
// ...) run on BLIS's BLAS layer, with BLIS's OpenMP threads (OMP_NUM_THREADS): a test
// binary linked that way ran its SVDs on 16 BLIS threads under OMP_NUM_THREADS=16. The
// build lists OpenBLAS before BLIS on every line (TENFERRO_BLAS_LIBS, src/cpu/
// CMakeLists.txt) and so does the installed package's link interface; a program that
// links BLIS first itself still gets it, so the probe compares where cblas_dgemm and
// dgemm_ resolve with the library that defines openblas_get_corename (OpenBLAS alone
// has it), reports the difference (`tenferro info`) and plans the "openblas" provider
// as slow, since it is not OpenBLAS.
namespace {

std::string library_path(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string probe_blas_symbols() {
  const std::string openblas = library_path(reinterpret_cast<const void*>(&openblas_get_corename));
  std::string cblas = library_path(reinterpret_cast<const void*>(&cblas_dgemm));
  if (!cblas.empty() && cblas != openblas) return cblas;
  // dgemm_ as the process's lookup finds it (what OpenBLAS's LAPACK calls); null where
  // the lookup scope has no such symbol (a module loaded with RTLD_LOCAL).
  std::string fortran = library_path(dlsym(RTLD_DEFAULT, "dgemm_"));
  if (!fortran.empty() && fortran != openblas) return fortran;
  return "";
}

}  // namespace

CpuCaps CpuCaps::probe() {
  CpuCaps caps;
  probe_cpuid(caps);
  caps.detected_isa = detected_level();
  caps.built_isa = IsaLevel::kAvx512;  // every kernel level is compiled (Note [ISA kernels])
  caps.baseline_isa = baseline_level();
  if (auto cap = isa_cap_from_env(); cap.has_value() && cap->has_value()) caps.max_isa = **cap;
  const arch_t arch = bli_arch_query_id();
  caps.blis_arch = bli_arch_string(arch);
  caps.blis_tuned = arch != BLIS_ARCH_GENERIC;
  caps.blis_zen = caps.blis_tuned && caps.blis_arch.rfind("zen", 0) == 0;
  caps.openblas_core = openblas_get_corename();
  caps.openblas_tuned = openblas_core_tuned(caps.openblas_core, caps.detected_isa);
  caps.openblas_avx512 = openblas_core_avx512(caps.openblas_core) && caps.detected_isa >= IsaLevel::kAvx512;
  caps.openblas_threaded = openblas_get_parallel() != 0;
  caps.blas_symbols_elsewhere = probe_blas_symbols();  // Note [BLAS symbol order]
  if (!caps.blas_symbols_elsewhere.empty()) caps.openblas_tuned = caps.openblas_avx512 = false;
  // The kernel's description of the caches first, sysconf where it has none.
  const CacheSizes sys = read_cache_sizes("/sys/devices/system/cpu/cpu0/cache");
  caps.l1d_bytes = sys.l1d > 0 ? sys.l1d : cache_bytes(_SC_LEVEL1_DCACHE_SIZE);
  caps.l2_bytes = sys.l2 > 0 ? sys.l2 : cache_bytes(_SC_LEVEL2_CACHE_SIZE);
  caps.l3_bytes = sys.l3 > 0 ? sys.l3 : cache_bytes(_SC_LEVEL3_CACHE_SIZE);
  return caps;
}

IsaLevel kernel_isa(const CpuCaps& caps) noexcept {
  static const IsaLevel machine = detected_level();
  const IsaLevel u = caps.usable_isa();
  return u < machine ? u : machine;
}

Result<std::optional<IsaLevel>> isa_cap_from_env() {
  const char* text = std::getenv("TENFERRO_MAX_ISA");
  if (text == nullptr || *text == '\0') return std::optional<IsaLevel>{};
  auto level = parse_isa(text);
  if (!level.has_value()) {
    return Error(ErrorStage::kConfiguration, ErrorCode::kInvalidArgument, "TENFERRO_MAX_ISA",
                 std::string("environment variable TENFERRO_MAX_ISA='").append(text).append(
                     "' is not an ISA level (expected scalar, avx2 or avx512)"));
  }
  return std::optional<IsaLevel>{*level};
}

const CpuCaps& host_caps() {
  static const CpuCaps caps = CpuCaps::probe();  // immutable once probed
  return caps;
}

bool row_order_line_tiles(const CpuCaps& caps) noexcept {
  return caps.l1d_bytes > 0 && caps.l1d_bytes <= (int64_t{32} << 10);
}

int64_t transpose_source_group(const CpuCaps& caps) noexcept {
  constexpr int64_t kTable = 4096, kMin = 64;
  if (caps.l2_bytes <= 0) return kTable;
  const int64_t fit = caps.l2_bytes / (4 * kTransposeBlockBytes);
  int64_t g = kMin;
  while (g * 2 <= fit && g < kTable) g *= 2;
  return g;
}

std::string CpuCaps::describe() const {
  auto kib = [](int64_t b) { return b > 0 ? std::to_string(b / 1024).append(" KiB") : std::string("unknown"); };
  std::string out;
  out.append("cpu        ").append(cpu_model.empty() ? "unknown" : cpu_model);
  out.append(" (").append(cpu_vendor).append(", family ").append(std::to_string(cpu_family));
  out.append(" model ").append(std::to_string(cpu_model_id)).append(")\n");
  out.append("isa        detected ").append(isa_name(detected_isa)).append(", kernels built up to ").append(isa_name(built_isa));
  out.append(baseline_isa == IsaLevel::kScalar ? ", library baseline needs no AVX2"
                                               : std::string(", library baseline needs ").append(isa_name(baseline_isa)));
  if (max_isa < IsaLevel::kAvx512) out.append(", capped at ").append(isa_name(max_isa));
  out.append(", usable ").append(isa_name(usable_isa()));
  if (baseline_isa > detected_isa) out.append("  (WARNING: the build uses instructions this CPU lacks)");
  out.append("\ncaches     L1d ").append(kib(l1d_bytes)).append(", L2 ").append(kib(l2_bytes));
  out.append(", L3 ").append(kib(l3_bytes)).append("\n");
  out.append("transposes streamed line tiles in ");
  out.append(row_order_line_tiles(*this) ? "row order (L1d of at most 32 KiB)\n"
                                         : "column order (row order only with an L1d of at most 32 KiB)\n");
  out.append("           source groups of at most ").append(std::to_string(transpose_source_group(*this)));
  out.append(" elements (a row block within a quarter of the L2)\n");
  out.append("blis       ").append(blis_arch).append(blis_tuned ? " (tuned)" : " (generic kernels: planned as slow)");
  out.append("\nopenblas   ").append(openblas_core);
  out.append(!blas_symbols_elsewhere.empty() ? " (its BLAS symbols bound to another library: planned as slow)"
             : openblas_tuned                ? (openblas_avx512 ? " (tuned, 512-bit kernels)" : " (tuned)")
                                             : " (kernels below this CPU's ISA: planned as slow)");
  out.append(openblas_threaded ? ", threaded build (global thread count)" : ", serial build").append("\n");
  if (!blas_symbols_elsewhere.empty()) {
    out.append("WARNING    the BLAS symbols resolve to ").append(blas_symbols_elsewhere);
    out.append(", not OpenBLAS (linked before it): OpenBLAS's LAPACK and cblas calls run there; link OpenBLAS first\n");
  }
  return out;
}

std::string CpuCaps::to_json() const {
  auto b = [](bool v) { return v ? std::string("true") : std::string("false"); };
  std::string out = "{";
  out.append("\"cpu_vendor\": ").append(json_string(cpu_vendor));
  out.append(", \"cpu_model\": ").append(json_string(cpu_model));
  out.append(", \"cpu_family\": ").append(std::to_string(cpu_family));
  out.append(", \"cpu_model_id\": ").append(std::to_string(cpu_model_id));
  out.append(", \"detected_isa\": \"").append(isa_name(detected_isa)).append("\"");
  out.append(", \"built_isa\": \"").append(isa_name(built_isa)).append("\"");
  out.append(", \"baseline_isa\": \"").append(isa_name(baseline_isa)).append("\"");
  out.append(", \"max_isa\": \"").append(isa_name(max_isa)).append("\"");
  out.append(", \"usable_isa\": \"").append(isa_name(usable_isa())).append("\"");
  out.append(", \"blis_arch\": ").append(json_string(blis_arch));
  out.append(", \"blis_tuned\": ").append(b(blis_tuned));
  out.append(", \"blis_zen\": ").append(b(blis_zen));
  out.append(", \"openblas_core\": ").append(json_string(openblas_core));
  out.append(", \"openblas_tuned\": ").append(b(openblas_tuned));
  out.append(", \"openblas_avx512\": ").append(b(openblas_avx512));
  out.append(", \"openblas_threaded\": ").append(b(openblas_threaded));
  out.append(", \"blas_symbols_elsewhere\": ").append(json_string(blas_symbols_elsewhere));
  out.append(", \"l1d_bytes\": ").append(std::to_string(l1d_bytes));
  out.append(", \"l2_bytes\": ").append(std::to_string(l2_bytes));
  out.append(", \"l3_bytes\": ").append(std::to_string(l3_bytes));
  out.append(", \"transpose_tile_order\": \"").append(row_order_line_tiles(*this) ? "row" : "column").append("\"");
  out.append(", \"transpose_source_group\": ").append(std::to_string(transpose_source_group(*this)));
  return out + "}";
}

}  // namespace tenferro::cpu
