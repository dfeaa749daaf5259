#pragma once
/// \file
/// Contraction-path search: the network model, contraction trees, the cost model and
/// the algorithms (greedy, optimal, TreeSA, left-to-right, explicit paths). Pure
/// functions of their inputs; part of the planning core (depends on `core` only).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/einsum/subscripts.h"

namespace tenferro::einsum {

/// The contraction problem seen by path search. Labels are dense ids 0..L-1. Every
/// operand lists its distinct labels sorted; labels that one operand alone carries and
/// the output lacks are not listed (the planner sums them inside that operand first).
struct Network {
  std::vector<std::vector<int32_t>> inputs;
  std::vector<int32_t> output;  ///< sorted, distinct
  std::vector<double> extent;   ///< per dense label
};

/// The network of a resolved spec. `dense_to_label`, when given, receives the spec label
/// of each dense id.
Network make_network(const EinsumSpec& spec, std::vector<Label>* dense_to_label = nullptr);

/// A binary contraction tree in SSA form: nodes 0..leaves-1 are the operands; step k
/// contracts two earlier, not yet consumed nodes into node leaves + k. After
/// leaves - 1 steps the last node is the result (a single operand has no steps).
struct ContractionTree {
  int32_t leaves = 0;
  std::vector<std::pair<int32_t, int32_t>> steps;
};

/// Cost of a tree. `flops` follows opt_einsum's convention (per step: the product of the
/// extents of all labels involved, times 2 when some label is summed), so log10_flops()
/// is comparable with the einsum-benchmark instances' figures. `largest`: elements of
/// the largest tensor of the evaluation, inputs included (the memory a path needs at
/// once). `largest_intermediate`: elements of the largest step result, inputs not counted
/// (opt_einsum's and numpy.einsum_path's figure; for a single operand, the output).
/// `read_write`: elements read plus written.
struct PathCost {
  double flops = 0;
  double largest = 0;
  double largest_intermediate = 0;
  double read_write = 0;
  double log10_flops() const;
};

/// Checks that `tree` is a complete tree over `leaves` operands: leaves - 1 steps, each
/// contracting two distinct earlier nodes not yet consumed. Errors: kInvalidArgument.
Result<void> check_tree(int32_t leaves, const ContractionTree& tree);

/// Checks that `tree` is a complete tree over the network's operands and returns its cost.
/// Errors: kInvalidArgument (wrong leaf count, a node used twice or not yet defined,
/// missing steps).
Result<PathCost> evaluate(const Network& network, const ContractionTree& tree);

/// Parses an opt_einsum pair list, in Python form `[(0, 1), (0, 1)]` or JSON form
/// `[[0, 1], [0, 1]]`: one entry per step (one or two positions, non-negative integers
/// below 2^31). Errors (kParse): any other character, a position too large.
Result<std::vector<std::vector<int32_t>>> pairs_from_text(std::string_view text);

/// An opt_einsum path: each entry names positions in the current operand list; those
/// operands are removed and their contraction appended. Entries with one position are
/// accepted as no-ops on that operand (moved to the end). Errors: kInvalidArgument.
Result<ContractionTree> tree_from_pairs(int32_t leaves, const std::vector<std::vector<int32_t>>& path);
/// The opt_einsum pair list of a tree.
std::vector<std::pair<int32_t, int32_t>> pairs_from_tree(const ContractionTree& tree);
/// A nested tree written as text, e.g. "((0,1),(2,3))" (operand indices, each once).
/// Errors: kParse (with byte position), kInvalidArgument (indices missing or repeated).
Result<ContractionTree> tree_from_nested(int32_t leaves, std::string_view text);

/// TreeSA (simulated annealing over contraction trees; Kalachev, Panteleev, Zhou,
/// Yung, arXiv:2108.05665) options. Deterministic for a seed unless the time budget
/// ends the search first.
struct TreeSAOptions {
  double time_weight = 1.0;        ///< weight of the summed flops
  double rw_weight = 0.0;          ///< weight of the read/write volume (elements)
  double space_weight = 0.0;       ///< penalty per log2 element above space_target_log2
  double space_target_log2 = 64.0;
  double beta_start = 0.01, beta_step = 0.05, beta_end = 15.0;  ///< inverse temperatures
  int32_t sweeps_per_beta = 10;
  int32_t trials = 4;              ///< independent annealing runs; the best is kept
  double time_budget_s = 2.0;      ///< whole search; <= 0 means no limit
  uint64_t seed = 0;
};

enum class PathAlgorithm : uint8_t {
  kGreedy,      ///< size-reduction heuristic; Hadamard products first, outer products last
  kOptimal,     ///< exact minimum flops by dynamic programming over operand subsets
  kTreeSA,      ///< simulated annealing from the greedy tree
  kLeftToRight, ///< ((0,1),2),3)...
  kExplicit,    ///< PathPolicy::explicit_tree as given
};
std::string_view path_algorithm_name(PathAlgorithm a) noexcept;

/// Which path to use. Part of a plan's identity (plan cache key).
struct PathPolicy {
  PathAlgorithm algorithm = PathAlgorithm::kGreedy;
  /// kOptimal fails with kUnsupported above this many operands (its cost is 3^n).
  int32_t optimal_max_operands = 14;
  TreeSAOptions treesa;
  /// kExplicit: the tree (see tree_from_pairs / tree_from_nested).
  ContractionTree explicit_tree;
  /// A stable text form for cache keys and logs.
  std::string key() const;
};

/// Runs the policy's algorithm. Errors: kUnsupported (optimal over the operand limit),
/// kInvalidArgument (an explicit tree that does not fit the network).
Result<ContractionTree> search_path(const Network& network, const PathPolicy& policy);

ContractionTree greedy_path(const Network& network);
Result<ContractionTree> optimal_path(const Network& network, int32_t max_operands);
ContractionTree treesa_path(const Network& network, const TreeSAOptions& options);
ContractionTree left_to_right_path(int32_t leaves);

}  // namespace tenferro::einsum
