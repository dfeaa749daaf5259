// Peer figures for `tenferro bench eager`: libtorch C++ per-call times (µs) of the same
// cases, one JSON object on stdout. Usage: tenferro_peer_libtorch THREADS.
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

double per_call_us(int calls, const std::function<void()>& f) {
  for (int i = 0; i < std::min(calls, 1000); ++i) f();
  std::vector<double> reps;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    reps.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  std::sort(reps.begin(), reps.end());
  return reps[3];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  const auto f64 = torch::kFloat64;
  auto a8 = torch::randn({8}, f64), b8 = torch::randn({8}, f64);
  auto a2 = torch::randn({2, 2}, f64), b2 = torch::randn({2, 2}, f64);
  std::printf("{\"add 8\": %.4f", per_call_us(200000, [&] { auto c = a8 + b8; }));
  std::printf(", \"matmul 2x2\": %.4f", per_call_us(200000, [&] { auto c = at::matmul(a2, b2); }));
  std::printf(", \"einsum ij,jk->ik 2x2\": %.4f", per_call_us(50000, [&] { auto c = at::einsum("ij,jk->ik", {a2, b2}); }));
  std::printf(", \"sum 8\": %.4f", per_call_us(200000, [&] { auto c = a8.sum(); }));
  std::printf(", \"exp 8\": %.4f", per_call_us(200000, [&] { auto c = a8.exp(); }));
  // The runtime bench's chain: 100 ops (add, mul, tanh in turn) on f64[8], per op.
  std::printf(", \"chain100 per op\": %.4f", per_call_us(2000, [&] {
                auto v = a8;
                for (int i = 0; i < 100; ++i) v = i % 3 == 0 ? v + b8 : i % 3 == 1 ? v * b8 : v.tanh();
              }) / 100);
  {
    // Eager reverse mode: forward + backward of sum(mm(x, y)) 2x2 (grad mode on).
    torch::AutoGradMode grad_mode(true);
    auto x = torch::randn({2, 2}, torch::dtype(f64).requires_grad(true));
    auto y = torch::randn({2, 2}, torch::dtype(f64).requires_grad(true));
    std::printf(", \"fwd+bwd sum(matmul 2x2)\": %.4f", per_call_us(20000, [&] {
                  auto l = at::mm(x, y).sum();
                  l.backward();
                }));
  }
  std::printf("}\n");
  return 0;
}
