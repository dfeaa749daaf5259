// libFuzzer target: einsum-benchmark instance files as the CLI reads them (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bench_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)tenferro::cli::parse_einsum_instance(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                                             "opt_flops");
  return 0;
}
