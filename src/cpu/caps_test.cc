#include "tenferro/cpu/caps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

#include "tenferro/cpu/engine.h"

namespace tenferro::cpu {
namespace {

TEST(CpuCaps, IsaNamesRoundTripAndUnknownNamesAreTypedErrors) {
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    auto p = parse_isa(isa_name(l));
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(*p, l);
  }
  EXPECT_EQ(parse_isa("AVX2").value(), IsaLevel::kAvx2);  // names are case-insensitive
  EXPECT_EQ(parse_isa("Avx512").value(), IsaLevel::kAvx512);
  auto bad = parse_isa("sse4");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().stage(), ErrorStage::kConfiguration);
  EXPECT_NE(bad.error().message().find("sse4"), std::string::npos);
  EXPECT_LT(IsaLevel::kScalar, IsaLevel::kAvx2);
  EXPECT_LT(IsaLevel::kAvx2, IsaLevel::kAvx512);
}

TEST(CpuCaps, OpenBlasCoresBelowTheCpusIsaAreNotTrusted) {
  EXPECT_FALSE(openblas_core_tuned("Prescott", IsaLevel::kAvx2));
  EXPECT_FALSE(openblas_core_tuned("Prescott", IsaLevel::kAvx512));
  EXPECT_FALSE(openblas_core_tuned("Core2", IsaLevel::kAvx512));
  EXPECT_FALSE(openblas_core_tuned("Nehalem", IsaLevel::kAvx2));
  EXPECT_FALSE(openblas_core_tuned("Sandybridge", IsaLevel::kAvx2));  // AVX without FMA
  EXPECT_TRUE(openblas_core_tuned("Prescott", IsaLevel::kScalar));    // nothing better there
  EXPECT_TRUE(openblas_core_tuned("Haswell", IsaLevel::kAvx2));
  EXPECT_TRUE(openblas_core_tuned("Haswell", IsaLevel::kAvx512));
  EXPECT_TRUE(openblas_core_tuned("SKYLAKEX", IsaLevel::kAvx512));
  EXPECT_TRUE(openblas_core_tuned("Zen", IsaLevel::kAvx2));
  // Which cores run 512-bit kernels (the blocked kernel leaves their products alone).
  EXPECT_TRUE(openblas_core_avx512("SkylakeX"));
  EXPECT_TRUE(openblas_core_avx512("sapphirerapids"));
  EXPECT_FALSE(openblas_core_avx512("Haswell"));
  EXPECT_FALSE(openblas_core_avx512("Zen"));
  EXPECT_FALSE(openblas_core_avx512("Prescott"));
}

// The probe against an independent source: the kernel's /proc/cpuinfo.
TEST(CpuCaps, ProbeAgreesWithProcCpuinfo) {
  const CpuCaps caps = CpuCaps::probe();
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, vendor;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (line.rfind("model name", 0) == 0 && model.empty()) model = value();
    if (line.rfind("vendor_id", 0) == 0 && vendor.empty()) vendor = value();
    if (line.rfind("flags", 0) == 0 && flags.empty()) {
      std::istringstream words(value());
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  IsaLevel want = IsaLevel::kScalar;
  if (flags.count("avx2") && flags.count("fma")) want = IsaLevel::kAvx2;
  if (want == IsaLevel::kAvx2 && flags.count("avx512f") && flags.count("avx512dq") && flags.count("avx512bw") &&
      flags.count("avx512vl")) {
    want = IsaLevel::kAvx512;
  }
  EXPECT_EQ(caps.detected_isa, want);
  EXPECT_EQ(caps.cpu_vendor, vendor);
  // The model name is not compared: a hypervisor may give /proc/cpuinfo a different
  // name than the cpuid brand string the probe reads (seen: "AMD EPYC" against
  // "Oxide Virtual Turin-like Processor").
  if (!model.empty()) {
    EXPECT_FALSE(caps.cpu_model.empty());
  }
  EXPECT_LE(caps.usable_isa(), caps.detected_isa);
  EXPECT_LE(caps.usable_isa(), caps.built_isa);
  EXPECT_FALSE(caps.blis_arch.empty());
  EXPECT_EQ(caps.blis_tuned, caps.blis_arch != "generic");
  EXPECT_FALSE(caps.openblas_core.empty());
  EXPECT_EQ(caps.openblas_tuned, openblas_core_tuned(caps.openblas_core, caps.detected_isa));
  EXPECT_EQ(CpuCaps::probe(), caps);  // probing is deterministic and changes nothing
}

// Cache sizes from a sysfs-like directory (a fake one here, so every machine checks the
// same thing), and the probe agreeing with this machine's own sysfs where it has one.
TEST(CpuCaps, CacheSizesComeFromTheKernelsDescription) {
  const std::string root = ::testing::TempDir() + "tenferro_caps_" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  auto entry = [&](const std::string& name, const std::string& level, const std::string& type,
                   const std::string& size) {
    const std::string d = root + "/" + name;
    std::filesystem::create_directories(d);
    std::ofstream(d + "/level") << level << "\n";
    std::ofstream(d + "/type") << type << "\n";
    std::ofstream(d + "/size") << size << "\n";
  };
  entry("index0", "1", "Data", "48K");
  entry("index1", "1", "Instruction", "32K");
  entry("index2", "2", "Unified", "2M");
  entry("index3", "3", "Unified", "32768K");
  entry("power", "9", "Unified", "1K");  // not an index entry: ignored
  EXPECT_EQ(read_cache_sizes(root), (CacheSizes{48 << 10, 2 << 20, int64_t{32} << 20}));
  // Sizes that do not parse or are absurd leave their level unknown.
  entry("index3", "3", "Unified", "lots");
  entry("index2", "2", "Unified", "99999999999999999999K");
  EXPECT_EQ(read_cache_sizes(root), (CacheSizes{48 << 10, 0, 0}));
  entry("index2", "2", "Unified", "2048G");
  entry("index3", "3", "Unified", "1X");
  EXPECT_EQ(read_cache_sizes(root), (CacheSizes{48 << 10, 0, 0}));
  EXPECT_EQ(read_cache_sizes(root + "/missing"), CacheSizes{});
  std::filesystem::remove_all(root);

  const CacheSizes sys = read_cache_sizes("/sys/devices/system/cpu/cpu0/cache");
  const CpuCaps caps = CpuCaps::probe();
  if (sys.l1d > 0) {
    EXPECT_EQ(caps.l1d_bytes, sys.l1d);
  }
  if (sys.l2 > 0) {
    EXPECT_EQ(caps.l2_bytes, sys.l2);
  }
  if (sys.l3 > 0) {
    EXPECT_EQ(caps.l3_bytes, sys.l3);
  }
}

TEST(CpuCaps, JsonAndTextReportsCarryEveryField) {
  CpuCaps caps;
  caps.cpu_vendor = "GenuineIntel";
  caps.cpu_model = "Test \"CPU\" \x01";
  caps.cpu_family = 6;
  caps.cpu_model_id = 167;
  caps.detected_isa = IsaLevel::kAvx512;
  caps.built_isa = IsaLevel::kAvx2;
  caps.blis_arch = "generic";
  caps.openblas_core = "Prescott";
  caps.openblas_threaded = true;
  caps.l2_bytes = 2 << 20;
  const auto j = nlohmann::json::parse(caps.to_json());
  EXPECT_EQ(j.at("cpu_model").get<std::string>(), caps.cpu_model);
  EXPECT_EQ(j.at("cpu_model_id").get<int>(), 167);
  EXPECT_EQ(j.at("detected_isa").get<std::string>(), "avx512");
  EXPECT_EQ(j.at("usable_isa").get<std::string>(), "avx2");
  EXPECT_EQ(j.at("blis_tuned").get<bool>(), false);
  EXPECT_EQ(j.at("openblas_core").get<std::string>(), "Prescott");
  EXPECT_EQ(j.at("openblas_threaded").get<bool>(), true);
  EXPECT_EQ(j.at("l2_bytes").get<int64_t>(), int64_t{2} << 20);
  const std::string text = caps.describe();
  EXPECT_NE(text.find("generic kernels: planned as slow"), std::string::npos) << text;
  EXPECT_NE(text.find("usable avx2"), std::string::npos) << text;
  EXPECT_NE(text.find("L2 2048 KiB"), std::string::npos) << text;
  // Note [Row-order line tiles]: row order only with an L1d of at most 32 KiB.
  EXPECT_EQ(j.at("transpose_tile_order").get<std::string>(), "column");  // L1d unknown
  EXPECT_NE(text.find("tiles in column order"), std::string::npos) << text;
  for (const auto& [l1d, row] : {std::pair<int64_t, bool>{32 << 10, true}, {48 << 10, false}, {16 << 10, true}}) {
    CpuCaps c = caps;
    c.l1d_bytes = l1d;
    EXPECT_EQ(row_order_line_tiles(c), row) << l1d;
    EXPECT_EQ(nlohmann::json::parse(c.to_json()).at("transpose_tile_order").get<std::string>(), row ? "row" : "column");
  }
  // Note [Transpose source group]: a row block within a quarter of the L2.
  EXPECT_EQ(j.at("transpose_source_group").get<int64_t>(), 1024);  // L2 2 MiB
  EXPECT_NE(text.find("source groups of at most 1024 elements"), std::string::npos) << text;
  for (const auto& [l2, group] : {std::pair<int64_t, int64_t>{0, 4096},
                                  {1 << 20, 512},
                                  {int64_t{3} << 20, 1024},
                                  {32 << 20, 4096},
                                  {128 << 10, 64},
                                  {16 << 10, 64}}) {
    CpuCaps c = caps;
    c.l2_bytes = l2;
    EXPECT_EQ(transpose_source_group(c), group) << l2;
  }
  EXPECT_EQ(j.at("blas_symbols_elsewhere").get<std::string>(), "");
  EXPECT_EQ(text.find("WARNING"), std::string::npos) << text;
  caps.blas_symbols_elsewhere = "/usr/lib/libblis.so.4";
  EXPECT_EQ(nlohmann::json::parse(caps.to_json()).at("blas_symbols_elsewhere").get<std::string>(),
            "/usr/lib/libblis.so.4");
  EXPECT_NE(caps.describe().find("BLAS symbols resolve to /usr/lib/libblis.so.4"), std::string::npos)
      << caps.describe();
}

TEST(CpuCaps, BlasSymbolsResolveToOpenBlas) {
  // This binary links OpenBLAS before BLIS (TENFERRO_BLAS_LIBS; Note [BLAS symbol
  // order]): cblas_dgemm and dgemm_ are OpenBLAS's, and the probe says so.
  EXPECT_EQ(CpuCaps::probe().blas_symbols_elsewhere, "");
}

TEST(CpuCaps, EnginesProbeOnceOrTakeTheConfiguredCaps) {
  auto probed = CpuEngine::create();
  ASSERT_TRUE(probed) << probed.error().to_string();
  EXPECT_EQ((*probed)->caps(), CpuCaps::probe());
  CpuEngineConfig cfg;
  CpuCaps slow = CpuCaps::probe();
  slow.blis_tuned = false;
  slow.openblas_tuned = false;
  cfg.caps = slow;
  auto configured = CpuEngine::create(cfg);
  ASSERT_TRUE(configured) << configured.error().to_string();
  EXPECT_EQ((*configured)->caps(), slow);
  // Contexts the engine enters plan with the engine's caps.
  bool seen = false;
  ASSERT_TRUE((*configured)
                  ->run((*configured)->domains()[0].id, ParallelMode::kSequential,
                        [&](CpuExecutionContext& ctx) -> Result<void> {
                          seen = !ctx.caps().blis_tuned && !ctx.caps().openblas_tuned;
                          return {};
                        }));
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace tenferro::cpu
