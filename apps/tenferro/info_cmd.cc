// `tenferro info [--json]`: the CPU capabilities a default engine plans with.

#include <cstdio>
#include <string>
#include <string_view>

#include "commands.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/fft/fft.h"

namespace tenferro::cli {

int run_info(int argc, char** argv) {
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "usage: tenferro info [--json]\n");
      return 2;
    }
  }
  auto engine = cpu::CpuEngine::create();
  if (!engine) {
    std::fprintf(stderr, "tenferro info: %s\n", engine.error().to_string().c_str());
    return 1;
  }
  const cpu::CpuCaps& caps = (*engine)->caps();
  const std::string_view fft = fft::library_version();
  if (json) {
    std::string text = caps.to_json();  // one object: the FFT library joins it
    const size_t close = text.rfind('}');
    text.insert(close, ", \"fft_library\": \"" + std::string(fft) + "\"");
    std::printf("%s\n", text.c_str());
  } else {
    std::fputs(caps.describe().c_str(), stdout);
    std::printf("fft        %.*s (FFTW_ESTIMATE plans, one thread per batch chunk)\n", static_cast<int>(fft.size()),
                fft.data());
    int threads = 0;
    for (const auto& d : (*engine)->domains()) threads += d.threads;
    std::printf("engine     %zu domain(s), %d worker thread(s) in all\n", (*engine)->domains().size(), threads);
  }
  return 0;
}

}  // namespace tenferro::cli
