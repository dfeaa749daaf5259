#include "tenferro/tensor/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tenferro/tensor/tensor.h"

namespace tenferro {
namespace {

TEST(BufferPool, RecyclesExactlyOnce) {
  auto pool = HostBufferPool::create();
  void* first = nullptr;
  {
    PooledBuffer a = pool->acquire(1000).value();
    first = a.data();
    EXPECT_GE(a.capacity(), 1000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
    PooledBuffer moved = std::move(a);  // the moved-from lease returns nothing
    EXPECT_EQ(a.data(), nullptr);        // NOLINT(bugprone-use-after-move)
    moved.release();
    moved.release();  // second release is a no-op
    EXPECT_EQ(pool->stats().returns, 1);
  }
  HostBufferPoolStats s = pool->stats();
  EXPECT_EQ(s.returns, 1) << "destroying released/moved leases returns nothing more";
  EXPECT_EQ(s.retained_buffers, 1);
  EXPECT_EQ(s.outstanding_buffers, 0);
  PooledBuffer again = pool->acquire(900).value();
  EXPECT_EQ(again.data(), first) << "a retained buffer is reused";
  EXPECT_EQ(pool->stats().hits, 1);
  // A tiny request does not pin a much larger retained buffer.
  again.release();
  PooledBuffer tiny = pool->acquire(8).value();
  EXPECT_NE(tiny.data(), first);
  EXPECT_EQ(pool->stats().misses, 2);
}

TEST(BufferPool, PoolDestroyedBeforeItsBuffers) {
  std::vector<PooledBuffer> leases;
  Tensor t;
  {
    auto pool = HostBufferPool::create();
    for (int i = 0; i < 3; ++i) leases.push_back(pool->acquire(4096).value());
    t = Tensor::ones(DType::kF64, {100}, pool).value();
  }
  // The pool is gone: leases and tensors stay valid and free their memory themselves.
  std::memset(leases[0].data(), 1, 4096);
  EXPECT_EQ(t.get<double>({99}).value(), 1.0);
  leases.clear();
  t = Tensor();  // freed, not returned: the sanitizer build checks for leaks
}

TEST(BufferPool, LimitsEvictAndClearEmpties) {
  HostBufferPoolConfig cfg;
  cfg.max_retained_buffers = 2;
  cfg.max_retained_bytes = 1 << 20;
  auto pool = HostBufferPool::create(cfg);
  {
    std::vector<PooledBuffer> v;
    for (int i = 0; i < 4; ++i) v.push_back(pool->acquire(1024).value());
    EXPECT_EQ(pool->stats().outstanding_buffers, 4);
    EXPECT_EQ(pool->stats().outstanding_bytes, 4 * 1024);
  }
  HostBufferPoolStats s = pool->stats();
  EXPECT_EQ(s.returns, 2);
  EXPECT_EQ(s.evictions, 2);
  EXPECT_EQ(s.retained_buffers, 2);
  EXPECT_EQ(s.retained_bytes, 2048);
  { PooledBuffer big = pool->acquire(2 << 20).value(); }  // over the byte limit: freed
  EXPECT_EQ(pool->stats().evictions, 3);
  pool->clear();
  s = pool->stats();
  EXPECT_EQ(s.retained_buffers, 0);
  EXPECT_EQ(s.retained_bytes, 0);
  EXPECT_EQ(s.evictions, 5);
  EXPECT_EQ(pool->acquire(-1).error().code(), ErrorCode::kInvalidArgument);
}

TEST(BufferPool, HugeBuffersArePageAligned) {
  auto pool = HostBufferPool::create();
  PooledBuffer b = pool->acquire(int64_t{5} << 20).value();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (2u << 20), 0u);
  EXPECT_EQ(b.capacity() % (int64_t{2} << 20), 0);
}

TEST(BufferPool, ConcurrentUseKeepsCountsConsistent) {
  auto pool = HostBufferPool::create();
  constexpr int kThreads = 4;
  constexpr int kRounds = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < kRounds; ++i) {
        PooledBuffer b = pool->acquire(64 * (1 + (i + t) % 4)).value();
        static_cast<char*>(b.data())[0] = static_cast<char>(i);
      }
    });
  }
  for (auto& th : threads) th.join();
  HostBufferPoolStats s = pool->stats();
  EXPECT_EQ(s.hits + s.misses, kThreads * kRounds);
  EXPECT_EQ(s.returns + s.evictions, kThreads * kRounds);
  EXPECT_EQ(s.outstanding_buffers, 0);
  EXPECT_LE(s.misses, kThreads * 4 * 2);
}

}  // namespace
}  // namespace tenferro
