// libFuzzer target: contraction paths from text, nested ((0,1),2) and pair-list
// [(0,1),(0,1)] forms (scripts/fuzz). The first byte picks the operand count.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tenferro/einsum/path.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tenferro::einsum;
  if (size == 0) return 0;
  const int32_t leaves = 1 + data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (auto tree = tree_from_nested(leaves, text)) {
    // A parsed tree converts to pairs and back to the same steps.
    std::vector<std::vector<int32_t>> pairs;
    for (const auto& [a, b] : pairs_from_tree(*tree)) pairs.push_back({a, b});
    auto again = tree_from_pairs(leaves, pairs);
    if (!again || again->steps.size() != tree->steps.size()) __builtin_trap();
  }
  if (auto pairs = pairs_from_text(text)) (void)tree_from_pairs(leaves, *pairs);
  return 0;
}
