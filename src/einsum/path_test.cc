// Path search: tree conversions, cost model, optimal vs brute force, greedy/TreeSA vs
// left-to-right, TreeSA reproducibility.

#include "tenferro/einsum/path.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

namespace tenferro::einsum {
namespace {

// A random connected-ish network: each label joins 1..3 random operands.
Network random_network(std::mt19937_64& rng, int n, int labels) {
  Network net;
  net.inputs.resize(static_cast<size_t>(n));
  for (int l = 0; l < labels; ++l) {
    net.extent.push_back(static_cast<double>(2 + rng() % 4));
    const int holders = 1 + static_cast<int>(rng() % 3);
    for (int h = 0; h < holders; ++h) {
      auto& in = net.inputs[rng() % static_cast<size_t>(n)];
      if (std::find(in.begin(), in.end(), l) == in.end()) in.push_back(l);
    }
    if (rng() % 5 == 0) net.output.push_back(l);
  }
  // Labels held by one operand only must be in the output (make_network's invariant).
  for (int l = 0; l < labels; ++l) {
    int c = 0;
    for (const auto& in : net.inputs) c += std::count(in.begin(), in.end(), l) > 0;
    if (c == 1 && std::find(net.output.begin(), net.output.end(), l) == net.output.end()) net.output.push_back(l);
  }
  for (auto& in : net.inputs) std::sort(in.begin(), in.end());
  std::sort(net.output.begin(), net.output.end());
  return net;
}

// Minimum flops over every binary tree (exhaustive recursion over the live set).
double brute_force(const Network& net) {
  const auto n = static_cast<int32_t>(net.inputs.size());
  double best = std::numeric_limits<double>::infinity();
  std::function<void(std::vector<int32_t>, ContractionTree)> rec = [&](std::vector<int32_t> live, ContractionTree t) {
    if (live.size() == 1) {
      best = std::min(best, evaluate(net, t).value().flops);
      return;
    }
    const int32_t next = n + static_cast<int32_t>(t.steps.size());
    for (size_t i = 0; i < live.size(); ++i)
      for (size_t j = i + 1; j < live.size(); ++j) {
        std::vector<int32_t> l2;
        for (size_t k = 0; k < live.size(); ++k)
          if (k != i && k != j) l2.push_back(live[k]);
        l2.push_back(next);
        ContractionTree t2 = t;
        t2.steps.emplace_back(live[i], live[j]);
        rec(l2, t2);
      }
  };
  std::vector<int32_t> live(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) live[static_cast<size_t>(i)] = i;
  ContractionTree t;
  t.leaves = n;
  rec(live, t);
  return best;
}

TEST(Path, CostModelMatchesHandComputedMatrixChain) {
  // ab,bc,cd with a=2, b=3, c=4, d=5; output ad.
  Network net{{{0, 1}, {1, 2}, {2, 3}}, {0, 3}, {2, 3, 4, 5}};
  ContractionTree t = left_to_right_path(3);  // (ab,bc)->ac then (ac,cd)->ad
  PathCost c = evaluate(net, t).value();
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (2 * 3 * 4) + 2.0 * (2 * 4 * 5));
  EXPECT_DOUBLE_EQ(c.largest, 20);               // the 'cd' input
  EXPECT_DOUBLE_EQ(c.largest_intermediate, 10);  // 'ac' (8) and the 'ad' result (10)
  EXPECT_DOUBLE_EQ(c.read_write, (6 + 12 + 8) + (8 + 20 + 10));
}

TEST(Path, TreeConversionsRoundTrip) {
  auto t = tree_from_pairs(4, {{0, 2}, {0, 1}, {0, 1}}).value();
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.steps[0], std::make_pair(0, 2));
  EXPECT_EQ(t.steps[1], std::make_pair(1, 3));
  EXPECT_EQ(t.steps[2], std::make_pair(4, 5));
  auto back = pairs_from_tree(t);
  EXPECT_EQ(back[0], std::make_pair(0, 2));
  EXPECT_EQ(back[1], std::make_pair(0, 1));
  auto n = tree_from_nested(4, "((0, 2), (1,3))").value();
  EXPECT_EQ(n.steps.size(), 3u);
  EXPECT_EQ(n.steps[2], std::make_pair(4, 5));
  EXPECT_EQ(tree_from_nested(3, "((0,1),1)").error().code(), ErrorCode::kInvalidArgument);
  // Nesting deeper than any tree of the operands is a parse error (no deep recursion).
  EXPECT_EQ(tree_from_nested(3, std::string(100000, '(')).error().code(), ErrorCode::kParse);
  EXPECT_EQ(tree_from_nested(3, "((((0,1),2),1),0)").error().code(), ErrorCode::kParse);
  EXPECT_EQ(tree_from_nested(3, "((0,1),2").error().code(), ErrorCode::kParse);
  EXPECT_EQ(tree_from_nested(3, "((0,1))").error().code(), ErrorCode::kParse);
  EXPECT_EQ(tree_from_pairs(3, {{0, 0}}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(tree_from_pairs(3, {{0, 1}}).error().code(), ErrorCode::kInvalidArgument);  // incomplete
  Network net{{{0}, {0}, {0}}, {}, {3}};
  ContractionTree bad;
  bad.leaves = 3;
  bad.steps = {{0, 1}, {0, 2}};
  EXPECT_EQ(evaluate(net, bad).error().code(), ErrorCode::kInvalidArgument);
}

TEST(Path, OptimalEqualsBruteForce) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 5);
    Network net = random_network(rng, n, 3 + static_cast<int>(rng() % 6));
    const ContractionTree t = optimal_path(net, 14).value();
    EXPECT_NEAR(evaluate(net, t).value().flops, brute_force(net), 1e-9) << "trial " << trial;
  }
  Network big = random_network(rng, 20, 30);
  EXPECT_EQ(optimal_path(big, 14).error().code(), ErrorCode::kUnsupported);
}

TEST(Path, GreedyAndTreeSANeverWorseThanLeftToRight) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 25);
    Network net = random_network(rng, n, n + static_cast<int>(rng() % (2 * n)));
    const double ltr = evaluate(net, left_to_right_path(n)).value().flops;
    const double greedy = evaluate(net, greedy_path(net)).value().flops;
    TreeSAOptions o;
    o.trials = 2;
    o.sweeps_per_beta = 2;
    o.beta_step = 0.5;
    o.seed = static_cast<uint64_t>(trial);
    const double sa = evaluate(net, treesa_path(net, o)).value().flops;
    EXPECT_LE(greedy, ltr * (1 + 1e-12)) << "trial " << trial;
    EXPECT_LE(sa, greedy * (1 + 1e-12)) << "trial " << trial;  // annealing starts from greedy, keeps the best
  }
}

TEST(Path, TreeSAIsReproducibleForASeed) {
  std::mt19937_64 rng(3);
  Network net = random_network(rng, 30, 50);
  TreeSAOptions o;
  o.trials = 2;
  o.sweeps_per_beta = 3;
  o.beta_step = 0.25;
  o.time_budget_s = 0;  // no time limit: the result depends on the seed only
  o.seed = 42;
  const ContractionTree a = treesa_path(net, o), b = treesa_path(net, o);
  EXPECT_EQ(a.steps, b.steps);
  PathPolicy p;
  p.algorithm = PathAlgorithm::kTreeSA;
  p.treesa = o;
  EXPECT_EQ(search_path(net, p).value().steps, a.steps);
  EXPECT_NE(p.key().find("treesa"), std::string::npos);
}

TEST(Path, ExplicitPolicyIsValidated) {
  Network net{{{0, 1}, {1, 2}, {2, 3}}, {0, 3}, {2, 3, 4, 5}};
  PathPolicy p;
  p.algorithm = PathAlgorithm::kExplicit;
  p.explicit_tree = tree_from_nested(3, "(0,(1,2))").value();
  EXPECT_EQ(search_path(net, p).value().steps, p.explicit_tree.steps);
  p.explicit_tree.leaves = 4;
  EXPECT_EQ(search_path(net, p).error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::einsum
