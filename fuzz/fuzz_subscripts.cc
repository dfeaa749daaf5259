// libFuzzer target: the einsum subscript parser and label resolution (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tenferro/einsum/subscripts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tenferro;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = einsum::parse_subscripts(text);
  if (!parsed) return 0;
  // Resolve with every named axis of extent 2 and ellipses of rank 0, 1 and 2.
  for (int64_t ell = 0; ell <= 2; ++ell) {
    std::vector<Shape> shapes;
    for (const einsum::Term& t : parsed->inputs) {
      shapes.emplace_back(t.labels.size() + static_cast<size_t>(t.ellipsis >= 0 ? ell : 0), 2);
    }
    (void)einsum::resolve(*parsed, shapes);
  }
  return 0;
}
