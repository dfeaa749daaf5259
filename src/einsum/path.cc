#include "tenferro/einsum/path.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <tuple>

namespace tenferro::einsum {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

Error tree_error(std::string message) { return usage_error(ErrorCode::kInvalidArgument, "einsum path", std::move(message)); }

// Kept labels of contracting sorted label lists a and b: a label stays when the output
// has it or a live node other than a and b has it (cnt counts live nodes per label).
// Returns the product of the extents of all labels involved; sets *summed when a label
// disappears.
double contract_labels(const std::vector<int32_t>& a, const std::vector<int32_t>& b, const std::vector<int32_t>& cnt,
                       const std::vector<char>& in_out, const std::vector<double>& extent, std::vector<int32_t>* kept,
                       bool* summed) {
  kept->clear();
  *summed = false;
  double all = 1;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int32_t l;
    int occ;
    if (j == b.size() || (i < a.size() && a[i] < b[j])) {
      l = a[i++];
      occ = 1;
    } else if (i == a.size() || b[j] < a[i]) {
      l = b[j++];
      occ = 1;
    } else {
      l = a[i];
      ++i;
      ++j;
      occ = 2;
    }
    all *= extent[static_cast<size_t>(l)];
    if (in_out[static_cast<size_t>(l)] || cnt[static_cast<size_t>(l)] > occ) {
      kept->push_back(l);
    } else {
      *summed = true;
    }
  }
  return all;
}

double size_of(const std::vector<int32_t>& labels, const std::vector<double>& extent) {
  double v = 1;
  for (int32_t l : labels) v *= extent[static_cast<size_t>(l)];
  return v;
}

// Live-node bookkeeping shared by evaluate and greedy.
struct LiveSet {
  std::vector<std::vector<int32_t>> labels;  // per SSA node
  std::vector<char> alive;
  std::vector<int32_t> cnt;                  // live nodes per label
  std::vector<char> in_out;

  explicit LiveSet(const Network& net) {
    labels = net.inputs;
    alive.assign(labels.size(), 1);
    cnt.assign(net.extent.size(), 0);
    in_out.assign(net.extent.size(), 0);
    for (const auto& t : net.inputs)
      for (int32_t l : t) cnt[static_cast<size_t>(l)]++;
    for (int32_t l : net.output) in_out[static_cast<size_t>(l)] = 1;
  }
  // Contracts live nodes a and b into a new node; returns its id.
  int32_t contract(int32_t a, int32_t b, const std::vector<int32_t>& kept) {
    for (int32_t l : labels[static_cast<size_t>(a)]) cnt[static_cast<size_t>(l)]--;
    for (int32_t l : labels[static_cast<size_t>(b)]) cnt[static_cast<size_t>(l)]--;
    for (int32_t l : kept) cnt[static_cast<size_t>(l)]++;
    alive[static_cast<size_t>(a)] = 0;
    alive[static_cast<size_t>(b)] = 0;
    labels.push_back(kept);
    alive.push_back(1);
    return static_cast<int32_t>(labels.size() - 1);
  }
};

}  // namespace

Network make_network(const EinsumSpec& spec, std::vector<Label>* dense_to_label) {
  std::map<Label, int32_t> ops_with;  // operands containing each label
  for (const auto& in : spec.inputs) {
    std::vector<Label> u = in;
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    for (Label l : u) ops_with[l]++;
  }
  std::map<Label, char> in_output;
  for (Label l : spec.output) in_output[l] = 1;
  std::map<Label, int32_t> dense;
  std::vector<Label> back;
  Network net;
  auto id_of = [&](Label l) {
    auto [it, fresh] = dense.emplace(l, static_cast<int32_t>(back.size()));
    if (fresh) {
      back.push_back(l);
      net.extent.push_back(static_cast<double>(spec.extent(l)));
    }
    return it->second;
  };
  for (const auto& in : spec.inputs) {
    std::vector<int32_t> ids;
    for (Label l : in) {
      if (ops_with[l] == 1 && !in_output.count(l)) continue;  // summed inside the operand
      ids.push_back(id_of(l));
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    net.inputs.push_back(std::move(ids));
  }
  for (Label l : spec.output) net.output.push_back(id_of(l));
  std::sort(net.output.begin(), net.output.end());
  net.output.erase(std::unique(net.output.begin(), net.output.end()), net.output.end());
  if (dense_to_label) *dense_to_label = back;
  return net;
}

double PathCost::log10_flops() const { return flops > 0 ? std::log10(flops) : 0.0; }

Result<void> check_tree(int32_t leaves, const ContractionTree& tree) {
  const int32_t n = leaves;
  if (tree.leaves != n) return tree_error("the tree has " + s(tree.leaves) + " leaves, the network " + s(n) + " operands");
  if (static_cast<int64_t>(tree.steps.size()) != std::max(n - 1, 0)) {
    return tree_error("a tree over " + s(n) + " operands needs " + s(std::max(n - 1, 0)) + " steps, not " +
                      s(static_cast<int64_t>(tree.steps.size())));
  }
  std::vector<bool> consumed(static_cast<size_t>(n) + tree.steps.size(), false);
  for (size_t k = 0; k < tree.steps.size(); ++k) {
    const auto [a, b] = tree.steps[k];
    const int64_t defined = n + static_cast<int64_t>(k);
    if (a < 0 || b < 0 || a >= defined || b >= defined || a == b) {
      return tree_error("step " + s(static_cast<int64_t>(k)) + " (" + s(a) + ", " + s(b) + ") names an undefined node");
    }
    if (consumed[static_cast<size_t>(a)] || consumed[static_cast<size_t>(b)]) {
      return tree_error("step " + s(static_cast<int64_t>(k)) + " (" + s(a) + ", " + s(b) + ") reuses a consumed node");
    }
    consumed[static_cast<size_t>(a)] = consumed[static_cast<size_t>(b)] = true;
  }
  return ok();
}

Result<PathCost> evaluate(const Network& network, const ContractionTree& tree) {
  const auto n = static_cast<int32_t>(network.inputs.size());
  if (n == 0) return tree_error("the network has no operands");
  TENFERRO_TRY_VOID(check_tree(n, tree));
  LiveSet live(network);
  PathCost cost;
  for (const auto& in : network.inputs) cost.largest = std::max(cost.largest, size_of(in, network.extent));
  std::vector<int32_t> kept;
  for (size_t k = 0; k < tree.steps.size(); ++k) {
    const auto [a, b] = tree.steps[k];
    bool summed = false;
    const double all = contract_labels(live.labels[static_cast<size_t>(a)], live.labels[static_cast<size_t>(b)],
                                       live.cnt, live.in_out, network.extent, &kept, &summed);
    const double out = size_of(kept, network.extent);
    cost.flops += all * (summed ? 2 : 1);
    cost.read_write += size_of(live.labels[static_cast<size_t>(a)], network.extent) +
                       size_of(live.labels[static_cast<size_t>(b)], network.extent) + out;
    cost.largest = std::max(cost.largest, out);
    cost.largest_intermediate = std::max(cost.largest_intermediate, out);
    live.contract(a, b, kept);
  }
  if (tree.steps.empty()) cost.largest_intermediate = size_of(network.output, network.extent);
  return cost;
}

Result<ContractionTree> tree_from_pairs(int32_t leaves, const std::vector<std::vector<int32_t>>& path) {
  ContractionTree tree;
  tree.leaves = leaves;
  std::vector<int32_t> current(static_cast<size_t>(leaves));
  for (int32_t i = 0; i < leaves; ++i) current[static_cast<size_t>(i)] = i;
  int32_t next = leaves;
  for (size_t k = 0; k < path.size(); ++k) {
    std::vector<int32_t> pos = path[k];
    std::sort(pos.begin(), pos.end());
    if (pos.empty() || pos.size() > 2 || std::adjacent_find(pos.begin(), pos.end()) != pos.end() || pos.front() < 0 ||
        pos.back() >= static_cast<int32_t>(current.size())) {
      return tree_error("path entry " + s(static_cast<int64_t>(k)) + " is not one or two distinct positions below " +
                        s(static_cast<int64_t>(current.size())));
    }
    std::vector<int32_t> picked;
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) {
      picked.push_back(current[static_cast<size_t>(*it)]);
      current.erase(current.begin() + *it);
    }
    if (picked.size() == 1) {
      current.push_back(picked[0]);
      continue;
    }
    tree.steps.emplace_back(picked[1], picked[0]);  // lower position first
    current.push_back(next++);
  }
  if (current.size() != 1) {
    return tree_error("the path leaves " + s(static_cast<int64_t>(current.size())) + " operands uncontracted");
  }
  return tree;
}

std::vector<std::pair<int32_t, int32_t>> pairs_from_tree(const ContractionTree& tree) {
  std::vector<int32_t> current(static_cast<size_t>(tree.leaves));
  for (int32_t i = 0; i < tree.leaves; ++i) current[static_cast<size_t>(i)] = i;
  std::vector<std::pair<int32_t, int32_t>> out;
  int32_t next = tree.leaves;
  for (const auto& [a, b] : tree.steps) {
    const auto pa = static_cast<int32_t>(std::find(current.begin(), current.end(), a) - current.begin());
    const auto pb = static_cast<int32_t>(std::find(current.begin(), current.end(), b) - current.begin());
    out.emplace_back(std::min(pa, pb), std::max(pa, pb));
    current.erase(current.begin() + std::max(pa, pb));
    current.erase(current.begin() + std::min(pa, pb));
    current.push_back(next++);
  }
  return out;
}

Result<std::vector<std::vector<int32_t>>> pairs_from_text(std::string_view text) {
  std::vector<std::vector<int32_t>> pairs;
  std::vector<int32_t> cur;
  int64_t num = -1;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c >= '0' && c <= '9') {
      num = (num < 0 ? 0 : num * 10) + (c - '0');
      if (num > INT32_MAX) {
        return usage_error(ErrorCode::kParse, "einsum path", "a position is too large at byte " + s(static_cast<int64_t>(pos)));
      }
      continue;
    }
    if (c != '[' && c != ']' && c != '(' && c != ')' && c != ',' && c != ' ') {
      return usage_error(ErrorCode::kParse, "einsum path",
                         std::string("unexpected character '") + c + "' at byte " + s(static_cast<int64_t>(pos)) +
                             " (positions are non-negative integers)");
    }
    if (num >= 0) cur.push_back(static_cast<int32_t>(num));
    num = -1;
    // A pair closes with ')' (Python form) or with an inner ']' (JSON form).
    if (c == ')' || (c == ']' && !cur.empty())) {
      pairs.push_back(cur);
      cur.clear();
    }
  }
  if (num >= 0 || !cur.empty()) return usage_error(ErrorCode::kParse, "einsum path", "unterminated path entry");
  return pairs;
}

Result<ContractionTree> tree_from_nested(int32_t leaves, std::string_view text) {
  ContractionTree tree;
  tree.leaves = leaves;
  std::vector<char> seen(static_cast<size_t>(std::max(leaves, 0)), 0);
  int32_t next = leaves;
  size_t pos = 0;
  auto skip = [&] {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  };
  auto perr = [&](const std::string& what) {
    return usage_error(ErrorCode::kParse, "einsum path", what + " at byte " + s(static_cast<int64_t>(pos)));
  };
  // Recursive descent: node := int | '(' node ',' node ')'. A valid tree nests at most
  // leaves - 1 deep; deeper text is rejected before it can exhaust the stack.
  constexpr int kMaxDepth = 4096;
  int depth = 0;
  std::function<Result<int32_t>()> node = [&]() -> Result<int32_t> {
    skip();
    if (pos >= text.size()) return perr("unexpected end");
    if (text[pos] == '(') {
      if (++depth > std::min(kMaxDepth, std::max(leaves, 1))) {
        return perr("nesting deeper than " + s(std::min(kMaxDepth, std::max(leaves, 1))) +
                    " levels (a tree of " + s(leaves) + " operands nests less)");
      }
      ++pos;
      TENFERRO_TRY(int32_t a, node());
      skip();
      if (pos >= text.size() || text[pos] != ',') return perr("expected ','");
      ++pos;
      TENFERRO_TRY(int32_t b, node());
      skip();
      if (pos >= text.size() || text[pos] != ')') return perr("expected ')'");
      ++pos;
      --depth;
      tree.steps.emplace_back(a, b);
      return next++;
    }
    if (text[pos] < '0' || text[pos] > '9') return perr("expected an operand index or '('");
    int64_t v = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      v = v * 10 + (text[pos++] - '0');
      if (v > leaves) break;
    }
    if (v >= leaves) return tree_error("operand index " + s(v) + " is not below " + s(leaves));
    if (seen[static_cast<size_t>(v)]) return tree_error("operand " + s(v) + " appears twice");
    seen[static_cast<size_t>(v)] = 1;
    return static_cast<int32_t>(v);
  };
  TENFERRO_TRY(int32_t root, node());
  (void)root;
  skip();
  if (pos != text.size()) return perr("trailing text");
  for (int32_t i = 0; i < leaves; ++i) {
    if (!seen[static_cast<size_t>(i)]) return tree_error("operand " + s(i) + " is missing from the tree");
  }
  return tree;
}

ContractionTree left_to_right_path(int32_t leaves) {
  ContractionTree tree;
  tree.leaves = leaves;
  int32_t acc = 0;
  for (int32_t i = 1; i < leaves; ++i) {
    tree.steps.emplace_back(acc, i);
    acc = leaves + i - 1;
  }
  return tree;
}

// ---- Greedy -------------------------------------------------------------------------------

namespace {
ContractionTree greedy_tree(const Network& network);
}  // namespace

// The greedy result is never worse than left-to-right: both are evaluated and the one
// with fewer flops is returned (evaluation is linear in the tree size).
ContractionTree greedy_path(const Network& network) {
  ContractionTree g = greedy_tree(network);
  const ContractionTree l = left_to_right_path(static_cast<int32_t>(network.inputs.size()));
  auto cg = evaluate(network, g);
  auto cl = evaluate(network, l);
  if (cg && cl && cl->flops < cg->flops) return l;
  return g;
}

namespace {
ContractionTree greedy_tree(const Network& network) {
  const auto n = static_cast<int32_t>(network.inputs.size());
  ContractionTree tree;
  tree.leaves = n;
  if (n <= 1) return tree;
  LiveSet live(network);
  std::vector<double> size;
  for (const auto& t : network.inputs) size.push_back(size_of(t, network.extent));
  // Nodes holding each label (may list dead nodes; filtered on use).
  std::vector<std::vector<int32_t>> holders(network.extent.size());
  for (int32_t i = 0; i < n; ++i)
    for (int32_t l : network.inputs[static_cast<size_t>(i)]) holders[static_cast<size_t>(l)].push_back(i);

  // Candidate: (not Hadamard, size change, a, b); smallest first.
  using Cand = std::tuple<int, double, int32_t, int32_t>;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
  std::vector<int32_t> kept;
  auto score = [&](int32_t a, int32_t b) {
    bool summed = false;
    contract_labels(live.labels[static_cast<size_t>(a)], live.labels[static_cast<size_t>(b)], live.cnt, live.in_out,
                    network.extent, &kept, &summed);
    const double out = size_of(kept, network.extent);
    const auto& la = live.labels[static_cast<size_t>(a)];
    const auto& lb = live.labels[static_cast<size_t>(b)];
    const bool hadamard = !summed && (la == kept || lb == kept) &&
                          (std::includes(la.begin(), la.end(), lb.begin(), lb.end()) ||
                           std::includes(lb.begin(), lb.end(), la.begin(), la.end()));
    return Cand{hadamard ? 0 : 1, out - size[static_cast<size_t>(a)] - size[static_cast<size_t>(b)], std::min(a, b),
                std::max(a, b)};
  };
  auto push_neighbours = [&](int32_t a) {
    std::vector<int32_t> seen;
    for (int32_t l : live.labels[static_cast<size_t>(a)]) {
      for (int32_t b : holders[static_cast<size_t>(l)]) {
        if (b == a || !live.alive[static_cast<size_t>(b)]) continue;
        seen.push_back(b);
      }
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t b : seen) queue.push(score(a, b));
  };
  for (int32_t i = 0; i < n; ++i) {
    std::vector<int32_t> seen;
    for (int32_t l : network.inputs[static_cast<size_t>(i)])
      for (int32_t b : holders[static_cast<size_t>(l)])
        if (b > i) seen.push_back(b);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t b : seen) queue.push(score(i, b));
  }
  int32_t remaining = n;
  while (!queue.empty() && remaining > 1) {
    const Cand top = queue.top();
    queue.pop();
    const int32_t a = std::get<2>(top), b = std::get<3>(top);
    if (!live.alive[static_cast<size_t>(a)] || !live.alive[static_cast<size_t>(b)]) continue;
    const Cand now = score(a, b);
    if (now != top) {
      queue.push(now);  // stale: label counts changed since it was scored
      continue;
    }
    bool summed = false;
    contract_labels(live.labels[static_cast<size_t>(a)], live.labels[static_cast<size_t>(b)], live.cnt, live.in_out,
                    network.extent, &kept, &summed);
    // Labels whose holder count drops to two make the pair of remaining holders cheaper.
    std::vector<int32_t> touched;
    for (int32_t l : live.labels[static_cast<size_t>(a)]) touched.push_back(l);
    for (int32_t l : live.labels[static_cast<size_t>(b)]) touched.push_back(l);
    const int32_t c = live.contract(a, b, kept);
    size.push_back(size_of(kept, network.extent));
    tree.steps.emplace_back(a, b);
    --remaining;
    for (int32_t l : kept) holders[static_cast<size_t>(l)].push_back(c);
    push_neighbours(c);
    for (int32_t l : touched) {
      if (live.cnt[static_cast<size_t>(l)] != 2) continue;
      int32_t first = -1, second = -1;
      for (int32_t h : holders[static_cast<size_t>(l)]) {
        if (!live.alive[static_cast<size_t>(h)]) continue;
        if (first < 0) first = h; else if (h != first) second = h;
      }
      if (first >= 0 && second >= 0 && first != c && second != c) queue.push(score(first, second));
    }
  }
  // Disconnected parts: outer products, smallest first.
  using Node = std::pair<double, int32_t>;
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> rest;
  for (size_t i = 0; i < live.alive.size(); ++i) {
    if (live.alive[i]) rest.emplace(size[i], static_cast<int32_t>(i));
  }
  while (rest.size() > 1) {
    const int32_t a = rest.top().second;
    rest.pop();
    const int32_t b = rest.top().second;
    rest.pop();
    bool summed = false;
    contract_labels(live.labels[static_cast<size_t>(a)], live.labels[static_cast<size_t>(b)], live.cnt, live.in_out,
                    network.extent, &kept, &summed);
    const int32_t c = live.contract(a, b, kept);
    size.push_back(size_of(kept, network.extent));
    tree.steps.emplace_back(a, b);
    rest.emplace(size.back(), c);
  }
  return tree;
}
}  // namespace

// ---- Optimal (dynamic programming over subsets) --------------------------------------------

namespace {

struct Bits {
  size_t words = 0;
  std::vector<uint64_t> data;  // rows of `words` words
  uint64_t* row(size_t i) { return data.data() + i * words; }
  const uint64_t* row(size_t i) const { return data.data() + i * words; }
};

double bits_size(const uint64_t* b, size_t words, const std::vector<double>& extent) {
  double v = 1;
  for (size_t w = 0; w < words; ++w) {
    uint64_t x = b[w];
    while (x) {
      v *= extent[w * 64 + static_cast<size_t>(std::countr_zero(x))];
      x &= x - 1;
    }
  }
  return v;
}

int bits_count(const uint64_t* b, size_t words) {
  int c = 0;
  for (size_t w = 0; w < words; ++w) c += std::popcount(b[w]);
  return c;
}

void set_bits(uint64_t* b, const std::vector<int32_t>& labels) {
  for (int32_t l : labels) b[static_cast<size_t>(l) / 64] |= uint64_t{1} << (static_cast<size_t>(l) % 64);
}

}  // namespace

Result<ContractionTree> optimal_path(const Network& network, int32_t max_operands) {
  const auto n = static_cast<int32_t>(network.inputs.size());
  if (n > max_operands || n > 24) {
    return usage_error(ErrorCode::kUnsupported, "einsum path",
                       "optimal search over " + s(n) + " operands exceeds the limit of " + s(std::min(max_operands, 24)) +
                           " (its cost grows as 3^n); use greedy or treesa");
  }
  ContractionTree tree;
  tree.leaves = n;
  if (n <= 1) return tree;
  const size_t words = (network.extent.size() + 63) / 64 + 1;
  const uint32_t full = (uint32_t{1} << n) - 1;
  Bits uni{words, std::vector<uint64_t>(static_cast<size_t>(full + 1) * words, 0)};
  Bits kept{words, std::vector<uint64_t>(static_cast<size_t>(full + 1) * words, 0)};
  std::vector<uint64_t> out(words, 0), tmp(words, 0);
  set_bits(out.data(), network.output);
  for (uint32_t set = 1; set <= full; ++set) {
    const auto low = static_cast<size_t>(std::countr_zero(set));
    const uint32_t rest = set & (set - 1);
    uint64_t* u = uni.row(set);
    for (size_t w = 0; w < words; ++w) u[w] = uni.row(rest)[w];
    set_bits(u, network.inputs[low]);
  }
  for (uint32_t set = 1; set <= full; ++set) {
    const uint64_t* u = uni.row(set);
    const uint64_t* c = uni.row(full ^ set);
    uint64_t* k = kept.row(set);
    for (size_t w = 0; w < words; ++w) k[w] = u[w] & (c[w] | out[w]);
  }
  std::vector<double> cost(static_cast<size_t>(full) + 1, 0.0);
  std::vector<uint32_t> split(static_cast<size_t>(full) + 1, 0);
  for (uint32_t set = 1; set <= full; ++set) {
    if (std::popcount(set) < 2) continue;
    const uint32_t low = set & (~set + 1);
    const uint32_t rest = set ^ low;
    const int kept_n = bits_count(kept.row(set), words);
    double best = std::numeric_limits<double>::infinity();
    uint32_t best_a = 0;
    for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
      const uint32_t a = sub | low;
      if (a != set) {
        const uint32_t b = set ^ a;
        const double base = cost[a] + cost[b];
        if (base < best) {
          const uint64_t* ka = kept.row(a);
          const uint64_t* kb = kept.row(b);
          for (size_t w = 0; w < words; ++w) tmp[w] = ka[w] | kb[w];
          const double f = bits_size(tmp.data(), words, network.extent) *
                           (bits_count(tmp.data(), words) > kept_n ? 2 : 1);
          if (base + f < best) {
            best = base + f;
            best_a = a;
          }
        }
      }
      if (sub == 0) break;
    }
    cost[set] = best;
    split[set] = best_a;
  }
  // Emit steps bottom-up.
  std::function<int32_t(uint32_t)> emit = [&](uint32_t set) -> int32_t {
    if (std::popcount(set) == 1) return std::countr_zero(set);
    const int32_t a = emit(split[set]);
    const int32_t b = emit(set ^ split[set]);
    tree.steps.emplace_back(a, b);
    return n + static_cast<int32_t>(tree.steps.size()) - 1;
  };
  emit(full);
  return tree;
}

// ---- TreeSA --------------------------------------------------------------------------------

namespace {

class Annealer {
 public:
  Annealer(const Network& net, const TreeSAOptions& o) : net_(net), o_(o) {
    n_ = static_cast<int32_t>(net.inputs.size());
    words_ = (net.extent.size() + 63) / 64 + 1;
    out_.assign(words_, 0);
    set_bits(out_.data(), net.output);
    tmp_.assign(words_, 0);
    tmp2_.assign(words_, 0);
  }

  void load(const ContractionTree& t) {
    const size_t nodes = static_cast<size_t>(2 * n_ - 1);
    left_.assign(nodes, -1);
    right_.assign(nodes, -1);
    parent_.assign(nodes, -1);
    bits_.assign(nodes * words_, 0);
    size_.assign(nodes, 1);
    flops_.assign(nodes, 0);
    for (int32_t i = 0; i < n_; ++i) set_bits(row(i), net_.inputs[static_cast<size_t>(i)]);
    // Labels of internal nodes by live counting (as evaluate does).
    LiveSet live(net_);
    std::vector<int32_t> kept;
    for (size_t k = 0; k < t.steps.size(); ++k) {
      const auto [a, b] = t.steps[k];
      const int32_t v = n_ + static_cast<int32_t>(k);
      bool summed = false;
      contract_labels(live.labels[static_cast<size_t>(a)], live.labels[static_cast<size_t>(b)], live.cnt, live.in_out,
                      net_.extent, &kept, &summed);
      live.contract(a, b, kept);
      set_bits(row(v), kept);
      left_[static_cast<size_t>(v)] = a;
      right_[static_cast<size_t>(v)] = b;
      parent_[static_cast<size_t>(a)] = v;
      parent_[static_cast<size_t>(b)] = v;
    }
    root_ = 2 * n_ - 2;
    time_ = rw_ = pen_ = 0;
    for (int32_t v = 0; v < 2 * n_ - 1; ++v) {
      size_[static_cast<size_t>(v)] = bits_size(row(v), words_, net_.extent);
      pen_ += penalty(size_[static_cast<size_t>(v)]);
    }
    for (int32_t v = n_; v < 2 * n_ - 1; ++v) {
      flops_[static_cast<size_t>(v)] = node_flops(left_[static_cast<size_t>(v)], right_[static_cast<size_t>(v)], row(v));
      time_ += flops_[static_cast<size_t>(v)];
      rw_ += node_rw(v);
    }
  }

  double score() const { return score_of(time_, rw_, pen_); }

  // Recomputes the totals from the per-node values: the incremental updates lose
  // precision when the annealing visits trees whose cost is many orders of magnitude
  // above the current one (a difference of huge numbers).
  void refresh_totals() {
    time_ = rw_ = pen_ = 0;
    for (int32_t v = 0; v < 2 * n_ - 1; ++v) pen_ += penalty(size_[static_cast<size_t>(v)]);
    for (int32_t v = n_; v < 2 * n_ - 1; ++v) {
      time_ += flops_[static_cast<size_t>(v)];
      rw_ += node_rw(v);
    }
  }

  // One sweep of rotation proposals over the internal nodes at inverse temperature beta.
  void sweep(double beta, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int32_t v = n_; v < 2 * n_ - 1; ++v) {
      const int32_t l = left_[static_cast<size_t>(v)], r = right_[static_cast<size_t>(v)];
      const bool li = l >= n_, ri = r >= n_;
      if (!li && !ri) continue;
      const bool use_left = li && ri ? (rng() & 1) : li;
      const int32_t u = use_left ? l : r;
      const int32_t c = use_left ? r : l;
      const bool swap_a = rng() & 1;
      const int32_t a = swap_a ? left_[static_cast<size_t>(u)] : right_[static_cast<size_t>(u)];
      const int32_t b = swap_a ? right_[static_cast<size_t>(u)] : left_[static_cast<size_t>(u)];
      // Proposal: u' = (c, b), v' = (u', a).  labels(u') = (L(c)|L(b)) & (L(a)|L(v)).
      const uint64_t *la = row(a), *lb = row(b), *lc = row(c), *lv = row(v);
      for (size_t w = 0; w < words_; ++w) tmp_[w] = (lc[w] | lb[w]) & (la[w] | lv[w]);
      const double su = bits_size(tmp_.data(), words_, net_.extent);
      const double fu = node_flops(c, b, tmp_.data());
      for (size_t w = 0; w < words_; ++w) tmp2_[w] = tmp_[w] | la[w];
      const double fv = bits_size(tmp2_.data(), words_, net_.extent) *
                        (bits_count(tmp2_.data(), words_) > bits_count(lv, words_) ? 2 : 1);
      const double old_u = flops_[static_cast<size_t>(u)], old_v = flops_[static_cast<size_t>(v)];
      const double sa = size_[static_cast<size_t>(a)], sb = size_[static_cast<size_t>(b)],
                   sc = size_[static_cast<size_t>(c)], so = size_[static_cast<size_t>(u)];
      const double d_time = fu + fv - old_u - old_v;
      const double d_rw = (sc + sb + su) + (su + sa) - (sa + sb + so) - (so + sc);
      const double d_pen = penalty(su) - penalty(so);
      // Acceptance uses the change of the two rewired nodes' own cost (log2 ratio), as
      // TreeSA does: a global log ratio would be tiny for a local change and the
      // annealing would never freeze.
      const double old_local = o_.time_weight * (old_u + old_v) + o_.rw_weight * ((sa + sb + so) + (so + sc));
      const double new_local = o_.time_weight * (fu + fv) + o_.rw_weight * ((sc + sb + su) + (su + sa));
      const double delta = std::log2(std::max(new_local, 1.0) / std::max(old_local, 1.0)) + o_.space_weight * d_pen;
      if (delta > 0 && unit(rng) >= std::exp(-beta * delta)) continue;
      // Apply.
      left_[static_cast<size_t>(u)] = c;
      right_[static_cast<size_t>(u)] = b;
      parent_[static_cast<size_t>(c)] = u;
      parent_[static_cast<size_t>(b)] = u;
      if (use_left) {
        right_[static_cast<size_t>(v)] = a;
      } else {
        left_[static_cast<size_t>(v)] = a;
      }
      parent_[static_cast<size_t>(a)] = v;
      std::copy(tmp_.begin(), tmp_.end(), row(u));
      size_[static_cast<size_t>(u)] = su;
      flops_[static_cast<size_t>(u)] = fu;
      flops_[static_cast<size_t>(v)] = fv;
      time_ += d_time;
      rw_ += d_rw;
      pen_ += d_pen;
    }
  }

  ContractionTree tree() const {
    ContractionTree t;
    t.leaves = n_;
    std::vector<int32_t> ssa(static_cast<size_t>(2 * n_ - 1), -1);
    for (int32_t i = 0; i < n_; ++i) ssa[static_cast<size_t>(i)] = i;
    // Post-order without recursion.
    std::vector<std::pair<int32_t, bool>> stack{{root_, false}};
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      stack.pop_back();
      if (v < n_) continue;
      if (expanded) {
        t.steps.emplace_back(ssa[static_cast<size_t>(left_[static_cast<size_t>(v)])],
                             ssa[static_cast<size_t>(right_[static_cast<size_t>(v)])]);
        ssa[static_cast<size_t>(v)] = n_ + static_cast<int32_t>(t.steps.size()) - 1;
      } else {
        stack.emplace_back(v, true);
        stack.emplace_back(right_[static_cast<size_t>(v)], false);
        stack.emplace_back(left_[static_cast<size_t>(v)], false);
      }
    }
    return t;
  }

 private:
  uint64_t* row(int32_t v) { return bits_.data() + static_cast<size_t>(v) * words_; }
  const uint64_t* row(int32_t v) const { return bits_.data() + static_cast<size_t>(v) * words_; }
  double penalty(double size) const { return std::max(0.0, std::log2(std::max(size, 1.0)) - o_.space_target_log2); }
  double node_flops(int32_t a, int32_t b, const uint64_t* kept) const {
    const uint64_t *la = row(a), *lb = row(b);
    double v = 1;
    int all = 0;
    for (size_t w = 0; w < words_; ++w) {
      uint64_t x = la[w] | lb[w];
      all += std::popcount(x);
      while (x) {
        v *= net_.extent[w * 64 + static_cast<size_t>(std::countr_zero(x))];
        x &= x - 1;
      }
    }
    return v * (all > bits_count(kept, words_) ? 2 : 1);
  }
  double node_rw(int32_t v) const {
    return size_[static_cast<size_t>(left_[static_cast<size_t>(v)])] +
           size_[static_cast<size_t>(right_[static_cast<size_t>(v)])] + size_[static_cast<size_t>(v)];
  }
  double score_of(double time, double rw, double pen) const {
    return std::log2(std::max(1.0, o_.time_weight * time + o_.rw_weight * rw)) + o_.space_weight * pen;
  }

  const Network& net_;
  const TreeSAOptions& o_;
  int32_t n_ = 0, root_ = 0;
  size_t words_ = 0;
  std::vector<int32_t> left_, right_, parent_;
  std::vector<uint64_t> bits_, out_, tmp_, tmp2_;
  std::vector<double> size_, flops_;
  double time_ = 0, rw_ = 0, pen_ = 0;
};

}  // namespace

ContractionTree treesa_path(const Network& network, const TreeSAOptions& options) {
  const ContractionTree start = greedy_path(network);
  if (network.inputs.size() <= 2) return start;
  const auto t0 = std::chrono::steady_clock::now();
  auto over_budget = [&] {
    if (options.time_budget_s <= 0) return false;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > options.time_budget_s;
  };
  Annealer sa(network, options);
  sa.load(start);
  ContractionTree best = start;
  double best_score = sa.score();
  for (int32_t trial = 0; trial < std::max(1, options.trials) && !over_budget(); ++trial) {
    std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(trial) + 1);
    sa.load(start);
    bool stop = false;
    for (double beta = options.beta_start; beta <= options.beta_end + 1e-12 && !stop; beta += options.beta_step) {
      for (int32_t k = 0; k < options.sweeps_per_beta; ++k) {
        sa.sweep(beta, rng);
        sa.refresh_totals();
        if (sa.score() < best_score - 1e-12) {
          best_score = sa.score();
          best = sa.tree();
        }
      }
      stop = over_budget();
    }
  }
  // The annealer's totals are sums of doubles; confirm with an exact evaluation.
  auto cb = evaluate(network, best);
  auto cs = evaluate(network, start);
  if (!cb || (cs && cs->flops < cb->flops && options.space_weight == 0 && options.rw_weight == 0)) return start;
  return best;
}

std::string_view path_algorithm_name(PathAlgorithm a) noexcept {
  switch (a) {
    case PathAlgorithm::kGreedy: return "greedy";
    case PathAlgorithm::kOptimal: return "optimal";
    case PathAlgorithm::kTreeSA: return "treesa";
    case PathAlgorithm::kLeftToRight: return "left-to-right";
    case PathAlgorithm::kExplicit: return "explicit";
  }
  return "unknown";
}

std::string PathPolicy::key() const {
  std::string k(path_algorithm_name(algorithm));
  switch (algorithm) {
    case PathAlgorithm::kOptimal:
      k.append(":").append(s(optimal_max_operands));
      break;
    case PathAlgorithm::kTreeSA: {
      const TreeSAOptions& o = treesa;
      char buf[256];
      std::snprintf(buf, sizeof(buf), ":%g,%g,%g,%g,%g,%g,%g,%d,%d,%g,%llu", o.time_weight, o.rw_weight,
                    o.space_weight, o.space_target_log2, o.beta_start, o.beta_step, o.beta_end, o.sweeps_per_beta,
                    o.trials, o.time_budget_s, static_cast<unsigned long long>(o.seed));
      k += buf;
      break;
    }
    case PathAlgorithm::kExplicit:
      k += ":";
      for (const auto& [a, b] : explicit_tree.steps) k.append("(").append(s(a)).append(",").append(s(b)).append(")");
      break;
    default:
      break;
  }
  return k;
}

Result<ContractionTree> search_path(const Network& network, const PathPolicy& policy) {
  const auto n = static_cast<int32_t>(network.inputs.size());
  switch (policy.algorithm) {
    case PathAlgorithm::kGreedy: return greedy_path(network);
    case PathAlgorithm::kOptimal: return optimal_path(network, policy.optimal_max_operands);
    case PathAlgorithm::kTreeSA: return treesa_path(network, policy.treesa);
    case PathAlgorithm::kLeftToRight: return left_to_right_path(n);
    case PathAlgorithm::kExplicit: {
      TENFERRO_TRY_VOID(evaluate(network, policy.explicit_tree));
      return policy.explicit_tree;
    }
  }
  return greedy_path(network);
}

}  // namespace tenferro::einsum
