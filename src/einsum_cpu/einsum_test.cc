// The CPU einsum engine against a naive evaluator on >= 2000 random einsums covering
// explicit/implicit output, ellipsis broadcasting, repeated labels (diagonal, trace),
// repeated output labels, scalars, UTF-8 labels, strided operands, every dtype (bool as
// an OR of ANDs) and every path algorithm; plus the plan cache and typed errors.

#include "tenferro/einsum_cpu/einsum.h"

#include <gtest/gtest.h>

#include <complex>
#include <map>
#include <random>

#include "tenferro/cpu/engine.h"
#include "tenferro/test_support/index.h"
#include "tenferro/test_support/strided.h"

namespace tenferro::einsum {
namespace {

using test_support::for_each_index;
using test_support::Index;
using Cl = std::complex<long double>;

struct Case {
  std::string text;
  std::vector<std::vector<Label>> labels;  // per operand axis (ellipsis dims negative)
  std::vector<Label> output;
  std::vector<Shape> shapes;
};

void append_label(std::string& s, Label l) {
  // The generator's label alphabet: a..h and a few non-ASCII letters.
  static const char* const kNames[] = {"a", "b", "c", "d", "e", "f", "g", "h", "α", "β", "Ж", "ŋ"};
  s.append(kNames[l]);
}
Label code_point(Label l) {
  static const Label kCodes[] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0x3B1, 0x3B2, 0x416, 0x14B};
  return l < 0 ? l : kCodes[l];
}

Case random_case(std::mt19937_64& rng) {
  Case c;
  const int n = 1 + static_cast<int>(rng() % 4);
  const int pool = 2 + static_cast<int>(rng() % 10);
  std::vector<int64_t> extent(12);
  const uint64_t span = rng() % 4 == 0 ? 9 : 4;  // sometimes large enough for the BLAS routes
  for (auto& e : extent) e = 1 + static_cast<int64_t>(rng() % span);
  const bool ellipsis = rng() % 5 == 0;
  const int max_ell = ellipsis ? 1 + static_cast<int>(rng() % 2) : 0;
  std::vector<int64_t> ell_extent = {1 + static_cast<int64_t>(rng() % 3), 1 + static_cast<int64_t>(rng() % 3)};
  std::map<Label, int> count;
  for (int i = 0; i < n; ++i) {
    const int rank = static_cast<int>(rng() % 4);
    std::vector<Label> named;
    for (int a = 0; a < rank; ++a) {
      Label l = static_cast<Label>(rng() % static_cast<uint64_t>(pool));
      if (!named.empty() && rng() % 6 == 0) l = named[rng() % named.size()];  // repeated label
      named.push_back(l);
    }
    std::vector<Label> axes;
    Shape shape;
    std::string term;
    int ell_at = -1, n_ell = 0;
    if (ellipsis && rng() % 4 != 0) {
      ell_at = static_cast<int>(rng() % (named.size() + 1));
      n_ell = static_cast<int>(rng() % (max_ell + 1));
    }
    for (int a = 0; a <= static_cast<int>(named.size()); ++a) {
      if (a == ell_at) {
        term.append("...");
        for (int k = n_ell; k >= 1; --k) {
          axes.push_back(-k);
          // Right-aligned broadcasting: this operand may have extent 1 there.
          shape.push_back(rng() % 4 == 0 ? 1 : ell_extent[static_cast<size_t>(k - 1)]);
        }
      }
      if (a < static_cast<int>(named.size())) {
        append_label(term, named[static_cast<size_t>(a)]);
        axes.push_back(named[static_cast<size_t>(a)]);
        shape.push_back(extent[static_cast<size_t>(named[static_cast<size_t>(a)])]);
        count[named[static_cast<size_t>(a)]]++;
      }
    }
    if (i > 0) c.text.push_back(',');
    c.text.append(term);
    c.labels.push_back(axes);
    c.shapes.push_back(shape);
  }
  // Ellipsis dims that no operand has do not exist.
  int ell_used = 0;
  for (const auto& ax : c.labels)
    for (Label l : ax) ell_used = std::max(ell_used, static_cast<int>(-std::min<Label>(l, 0)));
  if (rng() % 3 == 0) {
    // Implicit output (numpy rule).
    for (int k = ell_used; k >= 1; --k) c.output.push_back(-k);
    for (const auto& [l, cnt] : count) {
      if (cnt == 1) c.output.push_back(l);
    }
    // Sorted by code point, as numpy sorts the characters.
    std::stable_sort(c.output.begin() + ell_used, c.output.end(),
                     [](Label x, Label y) { return code_point(x) < code_point(y); });
  } else {
    c.text.append("->");
    std::vector<Label> present;
    for (const auto& [l, cnt] : count) present.push_back(l);
    std::shuffle(present.begin(), present.end(), rng);
    const size_t keep = present.empty() ? 0 : rng() % (present.size() + 1);
    std::vector<Label> out(present.begin(), present.begin() + static_cast<int64_t>(keep));
    if (!out.empty() && rng() % 8 == 0) out.push_back(out[0]);  // repeated output label
    const bool ell_out = ell_used > 0 && rng() % 3 != 0;
    const size_t at = out.empty() ? 0 : rng() % (out.size() + 1);
    for (size_t a = 0; a <= out.size(); ++a) {
      if (ell_out && a == at) {
        c.text.append("...");
        for (int k = ell_used; k >= 1; --k) c.output.push_back(-k);
      }
      if (a < out.size()) {
        append_label(c.text, out[a]);
        c.output.push_back(out[a]);
      }
    }
  }
  return c;
}

// Strided operand (random storage order, maybe sliced or flipped); small values so
// integer results are exact.
Tensor strided(std::mt19937_64& rng, DType d, const Shape& shape) {
  return test_support::strided_random(rng, d, shape, is_integral(d) ? -3 : -1, is_integral(d) ? 4 : 1);
}

// Naive evaluator over every assignment of the labels.
std::vector<Cl> naive(const Case& c, const std::vector<Tensor>& ops, const Shape& out_shape,
                      std::map<Label, int64_t>* extent_out) {
  std::map<Label, int64_t> extent;
  for (size_t i = 0; i < c.labels.size(); ++i)
    for (size_t a = 0; a < c.labels[i].size(); ++a) {
      int64_t& e = extent[c.labels[i][a]];
      e = std::max(e, c.shapes[i][a]);
    }
  *extent_out = extent;
  std::vector<Label> all;
  Shape ext;
  for (const auto& [l, e] : extent) {
    all.push_back(l);
    ext.push_back(e);
  }
  std::vector<Cl> out(static_cast<size_t>(element_count(out_shape)), Cl(0));
  for_each_index(ext, [&](const Index& v) {
    auto val = [&](Label l) { return v[static_cast<size_t>(std::find(all.begin(), all.end(), l) - all.begin())]; };
    // Output index: every occurrence of a repeated output label must agree (diagonal).
    Cl p(1);
    for (size_t i = 0; i < ops.size(); ++i) {
      Index idx;
      for (size_t a = 0; a < c.labels[i].size(); ++a) {
        idx.push_back(c.shapes[i][a] == 1 ? 0 : val(c.labels[i][a]));
      }
      const c128 x = ops[i].get_as_c128(idx).value();
      p *= Cl(x.real(), x.imag());
    }
    int64_t lin = 0, mul = 1;
    for (size_t k = 0; k < c.output.size(); ++k) {
      lin += val(c.output[k]) * mul;
      mul *= out_shape[k];
    }
    out[static_cast<size_t>(lin)] += p;
  });
  return out;
}

TEST(Einsum, MatchesNaiveOnRandomEinsums) {
  std::mt19937_64 rng(20261129);
  auto executor = cpu::make_tbb_executor(2).value();
  const DType dtypes[] = {DType::kF64, DType::kF32, DType::kC128, DType::kC64, DType::kI64, DType::kI32, DType::kBool};
  const PathAlgorithm algos[] = {PathAlgorithm::kGreedy, PathAlgorithm::kOptimal, PathAlgorithm::kTreeSA,
                                 PathAlgorithm::kLeftToRight};
  PlanCache cache(64);
  auto pool = HostBufferPool::create();
  int checked = 0;
  for (int trial = 0; trial < 2800; ++trial) {
    const Case c = random_case(rng);
    const DType d = dtypes[trial % 7];
    std::vector<Tensor> ops;
    for (const Shape& s : c.shapes) ops.push_back(strided(rng, d, s));
    PathPolicy policy;
    policy.algorithm = algos[rng() % 4];
    policy.treesa.trials = 1;
    policy.treesa.beta_step = 1.0;
    policy.treesa.sweeps_per_beta = 1;
    policy.treesa.seed = static_cast<uint64_t>(trial);
    std::map<Label, int64_t> extent;
    Shape out_shape;
    // Expected output shape from the generator's own bookkeeping.
    std::vector<Cl> ref;
    {
      std::map<Label, int64_t> e;
      for (size_t i = 0; i < c.labels.size(); ++i)
        for (size_t a = 0; a < c.labels[i].size(); ++a) e[c.labels[i][a]] = std::max(e[c.labels[i][a]], c.shapes[i][a]);
      for (Label l : c.output) out_shape.push_back(e[l]);
      ref = naive(c, ops, out_shape, &extent);
    }
    Tensor got;
    std::optional<Result<void>> status;
    const bool into = rng() % 2;
    // Either memory order's plan (Note [Row-major operands]) on the same strided operands.
    const OperandOrder order = trial % 3 == 1 ? OperandOrder::kRowMajor : OperandOrder::kColumnMajor;
    executor->install([&] {
      cpu::CpuExecutionContext ctx(executor.get(), rng() % 2 ? cpu::ParallelMode::kInner : cpu::ParallelMode::kSequential, 2);
      auto plan = cache.get(c.text, c.shapes, d, policy, order);
      if (!plan) {
        status = plan.error();
        return;
      }
      if (into) {
        got = Tensor::full(d, out_shape, c128(7, 0)).value();
        if (got.rank() > 1) {
          // A transposed destination.
          Index rev(static_cast<size_t>(got.rank()));
          Shape t = out_shape;
          std::reverse(t.begin(), t.end());
          for (size_t i = 0; i < rev.size(); ++i) rev[i] = static_cast<int64_t>(rev.size() - 1 - i);
          got = Tensor::full(d, t, c128(7, 0)).value().permute(rev).value();
        }
        if (rng() % 2) {
          // Through a warm workspace: a first run into a scratch destination, then the real one.
          EinsumWorkspace ws = (*plan)->make_workspace();
          Tensor scratch = Tensor::zeros(d, out_shape).value();
          status = (*plan)->execute_into(ctx, ops, scratch, ws, pool);
          if (status->has_value()) status = (*plan)->execute_into(ctx, ops, got, ws, pool);
        } else {
          status = (*plan)->execute_into(ctx, ops, got, pool);
        }
      } else if (rng() % 2) {
        // Repeated executions with one workspace: earlier results must not change when the
        // workspace buffers are reused.
        EinsumWorkspace ws = (*plan)->make_workspace();
        std::vector<Tensor> results;
        for (int rep = 0; rep < 3 && (!status || status->has_value()); ++rep) {
          auto r = (*plan)->execute(ctx, ops, ws, rep == 1 ? pool : nullptr);
          if (r) {
            results.push_back(*r);
            status = ok();
          } else {
            status = r.error();
          }
        }
        if (status->has_value()) got = results[0];
      } else {
        auto r = (*plan)->execute(ctx, ops, rng() % 2 ? pool : nullptr);
        if (r) {
          got = *r;
          status = ok();
        } else {
          status = r.error();
        }
      }
    });
    ASSERT_TRUE(status->has_value()) << "trial " << trial << " " << c.text << " (" << operand_order_name(order)
                                     << "): " << status->error().to_string();
    ASSERT_EQ(got.shape(), out_shape) << c.text;
    const double eps = (d == DType::kF32 || d == DType::kC64) ? 1e-4 : is_integral(d) ? 0 : 1e-11;
    int64_t lin = 0;
    for_each_index(out_shape, [&](const Index& i) {
      const c128 g = got.get_as_c128(i).value();
      Cl want = ref[static_cast<size_t>(lin++)];
      if (!is_complex(d)) want = Cl(want.real(), 0);
      if (d == DType::kBool) want = Cl(want.real() != 0 ? 1 : 0, 0);  // OR of ANDs (Note [Boolean einsum])
      const long double err = std::abs(Cl(g.real(), g.imag()) - want);
      ASSERT_LE(static_cast<double>(err), eps * (1 + static_cast<double>(std::abs(want))) * 10)
          << "trial " << trial << " " << c.text << " dtype " << dtype_name(d) << " (" << operand_order_name(order)
          << ") at " << format_dims(i);
      ++checked;
    });
  }
  EXPECT_GT(checked, 5000);
  EXPECT_GT(cache.stats().hits + cache.stats().misses, 2000);
}

TEST(Einsum, NamedLabelsBroadcastFromExtentOne) {
  auto ctx = cpu::CpuExecutionContext::sequential();
  Tensor a = Tensor::from_col_major(Shape{1, 3}, std::vector<double>{1, 2, 3}).value();
  Tensor b = Tensor::from_col_major(Shape{2, 3}, std::vector<double>{1, 10, 2, 20, 3, 30}).value();
  std::vector<Tensor> ops{a, b};
  Tensor r = einsum(ctx, "ij,ij->ij", ops).value();
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.get<double>({1, 2}).value(), 90.0);
}

// Note [Einsum broadcast labels]: a named label with extent 1 in one operand as a batch,
// contracted, free or elsewhere-summed label; values against plain loops (an operand's
// extent-1 axis read at index 0), one and two threads.
TEST(Einsum, BroadcastLabelsInEveryRole) {
  auto executor = cpu::make_tbb_executor(2).value();
  struct BCase {
    const char* text;
    Shape a, b;
  };
  const int64_t B = 12, I = 5, J = 7, K = 6;
  for (const BCase& c : {BCase{"bij,bjk->bik", {1, I, J}, {B, J, K}}, BCase{"bij,bjk->bik", {B, I, 1}, {B, J, K}},
                         BCase{"ij,jk->ik", {I, 1}, {J, K}}, BCase{"ij,ij->j", {1, J}, {I, J}},
                         BCase{"ij,kj->ik", {I, 1}, {K, J}}, BCase{"ij,jk->ijk", {1, J}, {J, K}}}) {
    const Tensor a = Tensor::random_normal(DType::kF64, c.a, 11).value();
    const Tensor b = Tensor::random_normal(DType::kF64, c.b, 12).value();
    const std::string text(c.text), ta = text.substr(0, text.find(',')),
                                    tb = text.substr(text.find(',') + 1, text.find('-') - text.find(',') - 1),
                                    to = text.substr(text.find('>') + 1);
    std::map<char, int64_t> ext;
    for (size_t q = 0; q < ta.size(); ++q) ext[ta[q]] = std::max(ext[ta[q]], c.a[q]);
    for (size_t q = 0; q < tb.size(); ++q) ext[tb[q]] = std::max(ext[tb[q]], c.b[q]);
    std::string all;
    Shape all_ext;
    for (const auto& [l, e] : ext) {
      all.push_back(l);
      all_ext.push_back(e);
    }
    Shape out_shape;
    for (char l : to) out_shape.push_back(ext[l]);
    std::vector<double> want(static_cast<size_t>(element_count(out_shape)), 0.0);
    for_each_index(all_ext, [&](const Index& v) {
      auto at = [&](const std::string& t, const Shape& sh) {
        Index idx;
        for (size_t q = 0; q < t.size(); ++q) idx.push_back(sh[q] == 1 ? 0 : v[all.find(t[q])]);
        return idx;
      };
      int64_t lin = 0, mul = 1;
      for (size_t q = 0; q < to.size(); ++q) {
        lin += v[all.find(to[q])] * mul;
        mul *= out_shape[q];
      }
      want[static_cast<size_t>(lin)] += a.get<double>(at(ta, c.a)).value() * b.get<double>(at(tb, c.b)).value();
    });
    for (int threads : {1, 2}) {
      Result<Tensor> r = Tensor();
      executor->install([&] {
        cpu::CpuExecutionContext ctx(executor.get(), cpu::ParallelMode::kInner, threads);
        std::vector<Tensor> ops{a, b};
        r = einsum(ctx, c.text, ops);
      });
      ASSERT_TRUE(r.has_value()) << c.text << ": " << r.error().to_string();
      ASSERT_EQ(r->shape(), out_shape) << c.text;
      int64_t lin = 0;
      for_each_index(out_shape, [&](const Index& oi) {
        EXPECT_NEAR(r->get<double>(oi).value(), want[static_cast<size_t>(lin)], 1e-12)
            << c.text << " threads " << threads;
        ++lin;
      });
    }
  }
}

// Note [Root orientation]: a transposed pair whose output starts with the second
// operand's free label is swapped, so the root is written in output order: a compact
// column-major result with the right values (the mirror of a row-major product, and its
// batched form); a plain pair with a transposed output keeps its orientation and its
// values.
TEST(Einsum, RootIsWrittenInOutputOrder) {
  auto ctx = cpu::CpuExecutionContext::sequential();
  for (const char* text : {"ji,kj->ki", "jib,kjb->kib", "ij,jk->ki"}) {
    const std::string t(text);
    const bool batched = t.find('b') != std::string::npos;
    const int64_t I = 3, J = 4, K = 5, B = 2;  // the second operand has the larger free volume
    const Shape sa = t[0] == 'j' ? (batched ? Shape{J, I, B} : Shape{J, I}) : Shape{I, J};
    const Shape sb = batched ? Shape{K, J, B} : (t[3] == 'k' ? Shape{K, J} : Shape{J, K});
    const Tensor a = Tensor::random_normal(DType::kF64, sa, 1).value();
    const Tensor b = Tensor::random_normal(DType::kF64, sb, 2).value();
    std::vector<Tensor> ops{a, b};
    const Tensor r = einsum(ctx, text, ops).value();
    ASSERT_EQ(r.shape(), batched ? (Shape{K, I, B}) : (Shape{K, I})) << text;
    if (t[0] == 'j') {
      EXPECT_TRUE(is_col_major_contiguous(r.layout())) << text;
    }
    for (int64_t bb = 0; bb < (batched ? B : 1); ++bb) {
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t i = 0; i < I; ++i) {
          double want = 0;
          for (int64_t j = 0; j < J; ++j) {
            const double x = t[0] == 'j' ? (batched ? a.get<double>({j, i, bb}) : a.get<double>({j, i})).value()
                                         : a.get<double>({i, j}).value();
            const double y = batched ? b.get<double>({k, j, bb}).value()
                                     : (t[3] == 'k' ? b.get<double>({k, j}) : b.get<double>({j, k})).value();
            want += x * y;
          }
          const double got = (batched ? r.get<double>({k, i, bb}) : r.get<double>({k, i})).value();
          EXPECT_NEAR(got, want, 1e-12) << text;
        }
      }
    }
  }
}

// Chains of batched products with the batch label first (fastest in column-major
// tensors, Note [Lane-first results]): intermediates may keep the batch first; the
// values match plain loops, on one and two threads, f64 and f32, for a run of 16
// items (vectors of lanes) and of 3 (packed routes), with a batch-free operand last.
TEST(Einsum, BatchFirstChainsMatchPlainLoops) {
  auto executor = cpu::make_tbb_executor(2).value();
  for (const DType d : {DType::kF64, DType::kF32}) {
    for (const int64_t B : {16, 3}) {
      for (const char* text : {"bij,bjk,bkl->bil", "bij,bjk,kl->bil"}) {
        const bool last_batched = std::string(text).find("bkl") != std::string::npos;
        const int64_t I = 5, J = 7, K = 6, L = 9;
        const Tensor a = Tensor::random_normal(d, {B, I, J}, 3).value();
        const Tensor b = Tensor::random_normal(d, {B, J, K}, 4).value();
        const Tensor c =
            last_batched ? Tensor::random_normal(d, {B, K, L}, 5).value() : Tensor::random_normal(d, {K, L}, 5).value();
        for (int threads : {1, 2}) {
          Result<Tensor> r = Tensor();
          executor->install([&] {
            cpu::CpuExecutionContext ctx(executor.get(), cpu::ParallelMode::kInner, threads);
            std::vector<Tensor> ops{a, b, c};
            r = einsum(ctx, text, ops);
          });
          ASSERT_TRUE(r.has_value()) << r.error().to_string();
          ASSERT_EQ(r->shape(), (Shape{B, I, L}));
          for (int64_t bb = 0; bb < B; ++bb)
            for (int64_t i = 0; i < I; ++i)
              for (int64_t l = 0; l < L; ++l) {
                double want = 0, mag = 0;
                for (int64_t j = 0; j < J; ++j)
                  for (int64_t k = 0; k < K; ++k) {
                    const double term =
                        a.get_as_c128({bb, i, j}).value().real() * b.get_as_c128({bb, j, k}).value().real() *
                        (last_batched ? c.get_as_c128({bb, k, l}) : c.get_as_c128({k, l})).value().real();
                    want += term;
                    mag += std::abs(term);
                  }
                const double tol = (d == DType::kF32 ? 1e-5 : 1e-13) * (mag + 1);
                EXPECT_NEAR(r->get_as_c128({bb, i, l}).value().real(), want, tol)
                    << text << " " << dtype_name(d) << " B " << B << " threads " << threads;
              }
        }
      }
    }
  }
}

// A row-major (C-ordered) random tensor of `shape`.
Tensor row_major(DType d, const Shape& shape, uint64_t seed) {
  Shape rev = shape;
  std::reverse(rev.begin(), rev.end());
  SmallVector<int64_t, 8> perm;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) perm.push_back(i);
  return Tensor::random_normal(d, rev, seed).value().permute(Dims(perm.span())).value();
}

// Note [Row-major operands]: the order follows the operands holding most elements, the
// order of axes of extent > 1 decides (contiguous or not), and tiny problems stay
// column-major.
TEST(Einsum, PreferredOperandOrderFollowsMostElements) {
  const Tensor c = row_major(DType::kF64, {40, 30, 20}, 1);                      // 24000 elements, C order
  const Tensor f = Tensor::random_normal(DType::kF64, {40, 30, 20}, 2).value();  // Fortran order
  const Tensor f_small = Tensor::random_normal(DType::kF64, {20, 20}, 3).value();
  const Tensor c_small = row_major(DType::kF64, {8, 8}, 4);
  const Tensor vec = Tensor::random_normal(DType::kF64, {100000}, 5).value();
  const Tensor sliced_c = c.slice(0, 0, 40, 2).value();  // every other row: not contiguous, still slowest-first
  const Tensor flipped_c = c.flip(1).value();            // a negative stride: |strides| still fall
  auto order = [](std::vector<Tensor> ops) { return preferred_operand_order(ops); };
  EXPECT_EQ(order({c}), OperandOrder::kRowMajor);
  EXPECT_EQ(order({f}), OperandOrder::kColumnMajor);
  EXPECT_EQ(order({c, f_small}), OperandOrder::kRowMajor);
  EXPECT_EQ(order({f, c_small}), OperandOrder::kColumnMajor);
  EXPECT_EQ(order({c, f}), OperandOrder::kColumnMajor);              // a tie stays column-major
  EXPECT_EQ(order({c_small, c_small}), OperandOrder::kColumnMajor);  // 128 elements: tiny
  EXPECT_EQ(order({vec, c_small}), OperandOrder::kRowMajor);         // vectors count toward the size only
  EXPECT_EQ(order({vec}), OperandOrder::kColumnMajor);
  EXPECT_EQ(order({sliced_c}), OperandOrder::kRowMajor);
  EXPECT_EQ(order({flipped_c}), OperandOrder::kRowMajor);
  EXPECT_EQ(order({c.permute(Dims{1, 0, 2}).value()}), OperandOrder::kColumnMajor);  // neither order
  EXPECT_EQ(order({Tensor(), c}), OperandOrder::kRowMajor);                          // a null handle counts as neither
  EXPECT_EQ(order({}), OperandOrder::kColumnMajor);
  EXPECT_EQ(operand_order_name(OperandOrder::kRowMajor), "row-major");
  EXPECT_EQ(operand_order_name(OperandOrder::kColumnMajor), "column-major");
}

// Note [Row-major operands]: a row-major plan runs the mirrored einsum on the operands
// reversed, into a destination reversed, and returns its result reversed: the same
// values as plain loops, a C-ordered result for C-ordered operands, the caller's spec,
// shapes and output shape; and the one-call einsum chooses it for C-ordered operands.
TEST(Einsum, RowMajorPlansMatchPlainLoopsAndReturnRowMajorResults) {
  auto ctx = cpu::CpuExecutionContext::sequential();
  const int64_t I = 6, J = 5, K = 7, L = 4;
  const Tensor a = row_major(DType::kF64, {I, J, K}, 11);
  const Tensor b = row_major(DType::kF64, {K, L}, 12);
  std::vector<Tensor> ops{a, b};
  auto want = [&](int64_t i, int64_t j, int64_t l) {
    long double acc = 0;
    for (int64_t k = 0; k < K; ++k)
      acc += static_cast<long double>(a.get<double>({i, j, k}).value()) * b.get<double>({k, l}).value();
    return static_cast<double>(acc);
  };
  for (const char* text : {"ijk,kl->ijl", "ijk,kl->lij", "ijk,kl->jil"}) {
    const std::string t(text);
    const std::string out_labels = t.substr(t.find('>') + 1);
    auto plan =
        EinsumPlan::prepare(text, std::vector<Shape>{a.shape(), b.shape()}, DType::kF64, {}, OperandOrder::kRowMajor)
            .value();
    EXPECT_EQ(plan->operand_order(), OperandOrder::kRowMajor);
    ASSERT_EQ(plan->spec().inputs.size(), 2u);
    EXPECT_EQ(plan->spec().inputs[0], (std::vector<Label>{'i', 'j', 'k'}));  // the caller's spec
    Shape out_shape;
    for (char ch : out_labels) out_shape.push_back(ch == 'i' ? I : ch == 'j' ? J : L);
    EXPECT_EQ(plan->output_shape(), out_shape) << text;
    auto value_at = [&](const Tensor& r, int64_t i, int64_t j, int64_t l) {
      Index at;
      for (char ch : out_labels) at.push_back(ch == 'i' ? i : ch == 'j' ? j : l);
      return r.get<double>(at).value();
    };
    // Allocating run: the mirror of the column-major plan's result for the mirrored
    // einsum on the reversed operands.
    const Tensor r = plan->execute(ctx, ops).value();
    ASSERT_EQ(r.shape(), out_shape) << text;
    {
      std::string mirror_text = "kji,lk->" + std::string(out_labels.rbegin(), out_labels.rend());
      std::vector<Tensor> rev_ops{a.permute(Dims{2, 1, 0}).value(), b.permute(Dims{1, 0}).value()};
      auto mirror =
          EinsumPlan::prepare(mirror_text, std::vector<Shape>{rev_ops[0].shape(), rev_ops[1].shape()}, DType::kF64)
              .value();
      const Tensor m = mirror->execute(ctx, rev_ops).value();
      Strides want_strides = m.strides();
      std::reverse(want_strides.begin(), want_strides.end());
      EXPECT_EQ(r.strides(), want_strides) << text;
    }
    // Into a column-major destination and a C-ordered one.
    Tensor into_f = Tensor::full(DType::kF64, out_shape, c128(9, 0)).value();
    ASSERT_TRUE(plan->execute_into(ctx, ops, into_f).has_value()) << text;
    Shape rev = out_shape;
    std::reverse(rev.begin(), rev.end());
    Tensor into_c = Tensor::full(DType::kF64, rev, c128(9, 0)).value().permute(Dims{2, 1, 0}).value();
    ASSERT_TRUE(plan->execute_into(ctx, ops, into_c).has_value()) << text;
    // And the column-major plan on the same operands.
    auto col = EinsumPlan::prepare(text, std::vector<Shape>{a.shape(), b.shape()}, DType::kF64).value();
    const Tensor rc = col->execute(ctx, ops).value();
    for (int64_t i = 0; i < I; ++i)
      for (int64_t j = 0; j < J; ++j)
        for (int64_t l = 0; l < L; ++l) {
          const double w = want(i, j, l);
          for (const Tensor* x : {&r, static_cast<const Tensor*>(&into_f), static_cast<const Tensor*>(&into_c), &rc})
            EXPECT_NEAR(value_at(*x, i, j, l), w, 1e-13) << text;
        }
  }
  // The one-call form plans row-major for C-ordered operands: a gate on the first axis of
  // a C-ordered state gives a C-ordered state.
  const Tensor state = row_major(DType::kF64, {2, 8, 8, 8, 8}, 14);
  const Tensor gate = row_major(DType::kF64, {2, 2}, 15);
  std::vector<Tensor> gate_ops{state, gate};
  const Tensor one = einsum(ctx, "abcde,Za->Zbcde", gate_ops).value();
  EXPECT_TRUE(is_row_major_contiguous(one.layout())) << format_dims(one.strides());
  EXPECT_NEAR(one.get<double>({1, 2, 3, 4, 5}).value(),
              gate.get<double>({1, 0}).value() * state.get<double>({0, 2, 3, 4, 5}).value() +
                  gate.get<double>({1, 1}).value() * state.get<double>({1, 2, 3, 4, 5}).value(),
              1e-14);
  // A repeated output label (a diagonal of a zero-filled result), one operand alone, and
  // a full reduction, under a row-major plan.
  const Tensor sq = row_major(DType::kF64, {J, J, K}, 13);
  std::vector<Tensor> one_op{sq};
  for (const char* text : {"iik->ik", "iik->kii", "ijk->kji", "ijk->"}) {
    auto plan =
        EinsumPlan::prepare(text, std::vector<Shape>{sq.shape()}, DType::kF64, {}, OperandOrder::kRowMajor).value();
    auto colp = EinsumPlan::prepare(text, std::vector<Shape>{sq.shape()}, DType::kF64).value();
    const Tensor got = plan->execute(ctx, one_op).value();
    const Tensor ref = colp->execute(ctx, one_op).value();
    ASSERT_EQ(got.shape(), ref.shape()) << text;
    for_each_index(got.shape(), [&](const Index& at) {
      EXPECT_NEAR(got.get<double>(at).value(), ref.get<double>(at).value(), 1e-12) << text << " at " << format_dims(at);
    });
  }
  // Spot values of the diagonal output against the operand.
  auto diag = EinsumPlan::prepare("iik->kii", std::vector<Shape>{sq.shape()}, DType::kF64, {}, OperandOrder::kRowMajor)
                  .value()
                  ->execute(ctx, one_op)
                  .value();
  EXPECT_EQ(diag.get<double>({3, 2, 2}).value(), sq.get<double>({2, 2, 3}).value());
  EXPECT_EQ(diag.get<double>({3, 1, 2}).value(), 0.0);
  // An order that is neither is a typed error.
  EXPECT_EQ(EinsumPlan::prepare("ij->ji", std::vector<Shape>{{2, 3}}, DType::kF64, {}, static_cast<OperandOrder>(7))
                .error()
                .code(),
            ErrorCode::kInvalidArgument);
}

TEST(Einsum, PlanCacheHitsEvictsAndClears) {
  PlanCache cache(2);
  std::vector<Shape> s1{Shape{2, 3}, Shape{3, 4}}, s2{Shape{2, 3}, Shape{3, 5}}, s3{Shape{4, 3}, Shape{3, 4}};
  auto p1 = cache.get("ij,jk->ik", s1, DType::kF64).value();
  auto again = cache.get("ij,jk->ik", s1, DType::kF64).value();
  EXPECT_EQ(p1.get(), again.get());
  cache.get("ij,jk->ik", s2, DType::kF64).value();
  cache.get("ij,jk->ik", s3, DType::kF64).value();  // evicts s1 (least recent)
  auto st = cache.stats();
  EXPECT_EQ(st.hits, 1);
  EXPECT_EQ(st.misses, 3);
  EXPECT_EQ(st.evictions, 1);
  EXPECT_EQ(st.entries, 2);
  EXPECT_GT(st.retained_bytes, 0);
  PathPolicy other;
  other.algorithm = PathAlgorithm::kOptimal;
  EXPECT_EQ(cache.find("ij,jk->ik", s3, DType::kF64, other), nullptr);  // a find miss plans nothing
  EXPECT_EQ(cache.stats().misses, 3);
  cache.get("ij,jk->ik", s3, DType::kF64, other).value();  // the policy is part of the key
  EXPECT_EQ(cache.stats().misses, 4);
  auto found = cache.find("ij,jk->ik", s3, DType::kF64, other);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found.get(), cache.get("ij,jk->ik", s3, DType::kF64, other).value().get());
  EXPECT_EQ(cache.find("ij,jk->ik", s1, DType::kF64), nullptr);  // evicted
  EXPECT_EQ(cache.stats().hits, 3);
  // The operand order is part of the key.
  auto row = cache.get("ij,jk->ik", s3, DType::kF64, other, OperandOrder::kRowMajor).value();
  EXPECT_EQ(cache.stats().misses, 5);
  EXPECT_EQ(row->operand_order(), OperandOrder::kRowMajor);
  EXPECT_NE(row.get(), found.get());
  EXPECT_EQ(cache.find("ij,jk->ik", s3, DType::kF64, other, OperandOrder::kRowMajor).get(), row.get());
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0);
  EXPECT_EQ(cache.stats().retained_bytes, 0);
}

TEST(Einsum, TypedErrorsBeforeWriting) {
  auto ctx = cpu::CpuExecutionContext::sequential();
  Tensor a = Tensor::ones(DType::kF64, {2, 3}).value();
  Tensor b = Tensor::ones(DType::kF64, {3, 4}).value();
  std::vector<Tensor> ops{a, b};
  EXPECT_EQ(einsum(ctx, "ij,jk->ik,", ops).error().code(), ErrorCode::kParse);
  EXPECT_EQ(einsum(ctx, "ij,il->jl", ops).error().code(), ErrorCode::kShapeMismatch);  // i: 2 vs 3
  auto plan = EinsumPlan::prepare("ij,jk->ik", std::vector<Shape>{a.shape(), b.shape()}, DType::kF64).value();
  Tensor out = Tensor::full(DType::kF64, {2, 4}, c128(5, 0)).value();
  std::vector<Tensor> wrong{a, Tensor::ones(DType::kF32, {3, 4}).value()};
  EXPECT_EQ(plan->execute_into(ctx, wrong, out).error().code(), ErrorCode::kDTypeMismatch);
  std::vector<Tensor> wrong_shape{a, Tensor::ones(DType::kF64, {3, 5}).value()};
  EXPECT_EQ(plan->execute_into(ctx, wrong_shape, out).error().code(), ErrorCode::kShapeMismatch);
  Tensor small = Tensor::zeros(DType::kF64, {2, 3}).value();
  EXPECT_EQ(plan->execute_into(ctx, ops, small).error().code(), ErrorCode::kShapeMismatch);
  Tensor shared = out;  // a second handle: not exclusive
  EXPECT_EQ(plan->execute_into(ctx, ops, out).error().code(), ErrorCode::kNotExclusive);
  shared = Tensor();
  EXPECT_EQ(out.get<double>({1, 3}).value(), 5.0);  // nothing written
  ASSERT_TRUE(plan->execute_into(ctx, ops, out).has_value());
  EXPECT_EQ(out.get<double>({1, 3}).value(), 3.0);
}

}  // namespace
}  // namespace tenferro::einsum

namespace tenferro::einsum {
namespace {

// Explicit capabilities (AVX-512, BLIS and OpenBLAS tuned): the routes the profile
// reports do not depend on the machine (Note [dot_general planner]).
cpu::CpuCaps reference_caps() {
  cpu::CpuCaps c;
  c.detected_isa = cpu::IsaLevel::kAvx512;
  c.built_isa = cpu::IsaLevel::kAvx512;
  c.blis_arch = "zen3";
  c.blis_tuned = true;
  c.openblas_core = "Haswell";
  c.openblas_tuned = true;
  return c;
}

TEST(EinsumProfile, ReportsStepsAndPackedOperands) {
  const cpu::CpuCaps caps = reference_caps();
  cpu::CpuExecutionContext ctx(nullptr, cpu::ParallelMode::kSequential, 1, {}, &caps);
  auto run = [&](const char* text, std::vector<Shape> shapes) {
    auto plan = EinsumPlan::prepare(text, shapes, DType::kF64).value();
    std::vector<Tensor> ops;
    for (size_t i = 0; i < shapes.size(); ++i) ops.push_back(Tensor::random_normal(DType::kF64, shapes[i], i + 1).value());
    EinsumWorkspace ws = plan->make_workspace();
    std::vector<StepProfile> prof;
    EXPECT_TRUE(plan->execute(ctx, ops, ws, nullptr, {}, &prof));
    EXPECT_EQ(prof.size(), plan->tree().steps.size());
    return prof;
  };
  // A matrix chain never needs packing: every intermediate is column-major.
  for (const StepProfile& p : run("ij,jk,kl->il", {{4, 5}, {5, 6}, {6, 7}})) {
    EXPECT_FALSE(p.route.pack_lhs || p.route.pack_rhs || p.route.pack_out) << cpu::describe(p.route);
    EXPECT_GT(p.seconds, 0.0);
  }
  // Contracting a and b of abc with ... of bdf needs a strided operand packed: the
  // labels contracted in one operand are not adjacent in memory in the other.
  bool packed = false;
  for (const StepProfile& p : run("abc,cde,efa,bdf->", {{3, 4, 5}, {5, 2, 3}, {3, 4, 3}, {4, 2, 4}})) {
    packed = packed || p.route.pack_lhs || p.route.pack_rhs;
  }
  EXPECT_TRUE(packed);
}

// Note [Row-major operands]: a C-ordered operand whose free labels a column-major plan
// lists against their memory order ('abc,Za->Zbc', a gate on a state's first axis) is
// packed by that plan and read in place by a row-major one (the same values).
TEST(EinsumProfile, RowMajorPlansReadCOrderedOperandsInPlace) {
  const cpu::CpuCaps caps = reference_caps();
  cpu::CpuExecutionContext ctx(nullptr, cpu::ParallelMode::kSequential, 1, {}, &caps);
  const int64_t A = 16, B = 30, C = 20, Z = 80;
  const std::vector<Shape> shapes{{A, B, C}, {Z, A}};
  std::vector<Tensor> ops;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Shape rev = shapes[i];
    std::reverse(rev.begin(), rev.end());
    SmallVector<int64_t, 8> perm;
    for (int64_t d = static_cast<int64_t>(rev.size()) - 1; d >= 0; --d) perm.push_back(d);
    ops.push_back(Tensor::random_normal(DType::kF64, rev, 60 + i).value().permute(Dims(perm.span())).value());
  }
  ASSERT_EQ(preferred_operand_order(ops), OperandOrder::kRowMajor);
  std::vector<Tensor> results;
  for (OperandOrder order : {OperandOrder::kColumnMajor, OperandOrder::kRowMajor}) {
    auto plan = EinsumPlan::prepare("abc,Za->Zbc", shapes, DType::kF64, {}, order).value();
    EinsumWorkspace ws = plan->make_workspace();
    std::vector<StepProfile> prof;
    results.push_back(plan->execute(ctx, ops, ws, nullptr, {}, &prof).value());
    ASSERT_EQ(prof.size(), 1u);
    const cpu::DotRoute& r = prof[0].route;
    const bool packed = r.pack_lhs || r.pack_rhs || r.pack_out;
    EXPECT_EQ(packed, order == OperandOrder::kColumnMajor) << operand_order_name(order) << ": " << cpu::describe(r);
  }
  for_each_index(results[0].shape(), [&](const Index& at) {
    long double acc = 0;
    for (int64_t a = 0; a < A; ++a)
      acc += static_cast<long double>(ops[0].get<double>({a, at[1], at[2]}).value()) *
             ops[1].get<double>({at[0], a}).value();
    for (const Tensor& r : results) EXPECT_NEAR(r.get<double>(at).value(), static_cast<double>(acc), 1e-12);
  });
}

// Note [Einsum label orders]: an operand whose free labels split around its contracted
// block (an inner run first, the contracted labels, then more free labels) is run
// unpacked by dot_general (Note [Split free groups]), so the planner keeps those free
// labels in memory order instead of reordering them for the consumer. Here B (151200
// elements, memory order x y z | b a | u v) meets the small A first; the consumer then
// contracts y z u. Values against plain loops.
TEST(EinsumProfile, SplitFreeLabelsStayInMemoryOrder) {
  const cpu::CpuCaps caps = reference_caps();
  cpu::CpuExecutionContext ctx(nullptr, cpu::ParallelMode::kSequential, 1, {}, &caps);
  const int64_t I = 11, A = 4, Bx = 6, X = 10, Y = 6, Z = 5, U = 7, V = 3, W = 2;
  const std::vector<Shape> shapes{{I, A, Bx}, {X, Y, Z, Bx, A, U, V}, {Y, Z, U, W}};
  PathPolicy policy;
  policy.algorithm = PathAlgorithm::kExplicit;
  policy.explicit_tree = tree_from_pairs(3, {{0, 1}, {0, 1}}).value();
  auto plan = EinsumPlan::prepare("iab,xyzbauv,yzuw->ixvw", shapes, DType::kF64, policy).value();
  std::vector<Tensor> ops;
  for (size_t i = 0; i < shapes.size(); ++i) ops.push_back(Tensor::random_normal(DType::kF64, shapes[i], 40 + i).value());
  EinsumWorkspace ws = plan->make_workspace();
  std::vector<StepProfile> prof;
  auto got = plan->execute(ctx, ops, ws, nullptr, {}, &prof);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(prof.size(), 2u);
  EXPECT_FALSE(prof[0].route.pack_rhs) << cpu::describe(prof[0].route);  // B, the large operand, in place
  for (int64_t i = 0; i < I; ++i)
    for (int64_t x = 0; x < X; ++x)
      for (int64_t v = 0; v < V; ++v)
        for (int64_t w = 0; w < W; ++w) {
          long double acc = 0, mag = 0;
          for (int64_t a = 0; a < A; ++a)
            for (int64_t b = 0; b < Bx; ++b)
              for (int64_t y = 0; y < Y; ++y)
                for (int64_t z = 0; z < Z; ++z)
                  for (int64_t u = 0; u < U; ++u) {
                    const long double t = static_cast<long double>(ops[0].get<double>({i, a, b}).value()) *
                                          ops[1].get<double>({x, y, z, b, a, u, v}).value() *
                                          ops[2].get<double>({y, z, u, w}).value();
                    acc += t;
                    mag += std::fabs(t);
                  }
          ASSERT_NEAR(got->get<double>({i, x, v, w}).value(), static_cast<double>(acc), 1e-12 * static_cast<double>(mag + 1))
              << "at " << i << "," << x << "," << v << "," << w;
        }
}

// Note [Einsum lanes]: two independent chains of thin products (24-row operands
// against 512 x 512 matrices) run concurrently at 2 threads, one lane each, and the
// joining product runs afterwards with both threads. Values against plain loops, for
// f64 and c128, through the allocating path and repeated warm execute_into.
std::vector<c128> col_major_values(const Tensor& t) {
  Tensor c = t.to_col_major().value();
  std::vector<c128> v(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (c.dtype() == DType::kC128) {
      v[static_cast<size_t>(i)] = static_cast<const c128*>(c.storage()->data())[i];
    } else {
      v[static_cast<size_t>(i)] = c128(static_cast<const double*>(c.storage()->data())[i], 0);
    }
  }
  return v;
}

// C (m x n) = A (m x k) B (k x n), column-major.
std::vector<c128> matmul(const std::vector<c128>& a, const std::vector<c128>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<c128> c(static_cast<size_t>(m * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) {
      const c128 bv = b[static_cast<size_t>(p + j * k)];
      for (int64_t i = 0; i < m; ++i) c[static_cast<size_t>(i + j * m)] += a[static_cast<size_t>(i + p * m)] * bv;
    }
  return c;
}

TEST(EinsumLanes, IndependentThinChainsRunConcurrently) {
  const int64_t I = 24, S = 512, J = 20;
  const std::vector<Shape> shapes{{I, S}, {S, S}, {S, S}, {S, S}, {S, S}, {S, J}};
  PathPolicy policy;
  policy.algorithm = PathAlgorithm::kExplicit;
  policy.explicit_tree = tree_from_nested(6, "(((0,1),2),(3,(4,5)))").value();
  auto executor = cpu::make_tbb_executor(2).value();
  for (DType d : {DType::kF64, DType::kC128}) {
    auto plan = EinsumPlan::prepare("ia,ab,bc,cd,de,ej->ij", shapes, d, policy).value();
    EXPECT_TRUE(plan->lanes(1).empty());
    const auto lanes = plan->lanes(2);
    ASSERT_EQ(lanes.size(), 2u);
    std::vector<int32_t> seen;
    for (const auto& l : lanes) {
      EXPECT_EQ(l.size(), 2u);
      seen.insert(seen.end(), l.begin(), l.end());
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int32_t>{0, 1, 2, 3}));  // the last step (4) joins them
    std::vector<Tensor> ops;
    for (size_t i = 0; i < shapes.size(); ++i) ops.push_back(Tensor::random_normal(d, shapes[i], 70 + i).value());
    std::vector<std::vector<c128>> v;
    for (const Tensor& t : ops) v.push_back(col_major_values(t));
    const auto left = matmul(matmul(v[0], v[1], I, S, S), v[2], I, S, S);
    const auto right = matmul(v[3], matmul(v[4], v[5], S, S, J), S, S, J);
    const auto want = matmul(left, right, I, S, J);
    double scale = 0;
    for (const c128& w : want) scale = std::max(scale, std::abs(w));
    auto check = [&](const Tensor& got, const char* what) {
      const auto g = col_major_values(got);
      ASSERT_EQ(g.size(), want.size());
      for (size_t i = 0; i < g.size(); ++i) {
        ASSERT_LE(std::abs(g[i] - want[i]), 1e-11 * scale) << what << " " << dtype_name(d) << " at " << i;
      }
    };
    auto pool = HostBufferPool::create();
    executor->install([&] {
      cpu::CpuExecutionContext ctx(executor.get(), cpu::ParallelMode::kInner, 2);
      std::vector<StepProfile> prof;
      auto r = plan->execute(ctx, ops, pool, {}, &prof);
      ASSERT_TRUE(r.has_value()) << r.error().to_string();
      check(*r, "execute");
      ASSERT_EQ(prof.size(), 5u);
      for (const StepProfile& p : prof) {
        const bool in_lane = p.step < 4;
        EXPECT_EQ(p.lane >= 0, in_lane) << "step " << p.step;
        if (in_lane) {
          EXPECT_EQ(p.lane, p.step < 2 ? (lanes[0][0] == 0 ? 0 : 1) : (lanes[0][0] == 0 ? 1 : 0));
        }
      }
      EinsumWorkspace ws = plan->make_workspace();
      Tensor out = Tensor::zeros(d, {I, J}).value();
      for (int rep = 0; rep < 3; ++rep) {
        auto st = plan->execute_into(ctx, ops, out, ws, pool);
        ASSERT_TRUE(st.has_value()) << st.error().to_string();
        check(out, "execute_into");
      }
      EXPECT_LE(ws.retained_bytes(), static_cast<int64_t>(4 * S * std::max(I, J) * dtype_size(d)) * 2);
    });
    // Sequential contexts never use lanes.
    auto seq = cpu::CpuExecutionContext::sequential();
    std::vector<StepProfile> prof;
    check(plan->execute(seq, ops, nullptr, {}, &prof).value(), "sequential");
    for (const StepProfile& p : prof) EXPECT_EQ(p.lane, -1);
  }
}

TEST(EinsumLanes, OnlyWhereTheyBeatSplittingEachStep) {
  // Small products: the fork costs more than it saves.
  auto small = EinsumPlan::prepare("ab,bc,cd,de,ef,fg->ag", std::vector<Shape>{{8, 9}, {9, 10}, {10, 11}, {11, 12}, {12, 13}, {13, 14}},
                                   DType::kF64)
                   .value();
  EXPECT_TRUE(small->lanes(2).empty());
  // A left-to-right chain has no independent subtrees.
  PathPolicy ltr;
  ltr.algorithm = PathAlgorithm::kLeftToRight;
  auto chain = EinsumPlan::prepare("ia,ab,bc,cd->id", std::vector<Shape>{{24, 512}, {512, 512}, {512, 512}, {512, 512}},
                                   DType::kF64, ltr)
                   .value();
  EXPECT_TRUE(chain->lanes(2).empty());
  EXPECT_TRUE(chain->lanes(8).empty());
  // Two independent square products split well over the threads themselves: no lanes.
  PathPolicy pairs;
  pairs.algorithm = PathAlgorithm::kExplicit;
  pairs.explicit_tree = tree_from_nested(4, "((0,1),(2,3))").value();
  auto square = EinsumPlan::prepare("ab,bc,cd,de->ae", std::vector<Shape>{{512, 512}, {512, 512}, {512, 512}, {512, 512}},
                                    DType::kF64, pairs)
                    .value();
  EXPECT_TRUE(square->lanes(2).empty());
  // The same tree of thin products (a 24-row side) does get two lanes.
  auto thin = EinsumPlan::prepare("ab,bc,cd,de->ae", std::vector<Shape>{{24, 512}, {512, 512}, {512, 512}, {512, 24}},
                                  DType::kF64, pairs)
                  .value();
  EXPECT_EQ(thin->lanes(2).size(), 2u);
}

}  // namespace
}  // namespace tenferro::einsum
