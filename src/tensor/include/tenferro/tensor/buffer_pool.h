#pragma once
/// \file
/// Host buffer pool with a weak recycler (ARCHITECTURE §4 "pooled" storage, spec 001 D2/D11).

#include <cstdint>
#include <memory>

#include "tenferro/core/result.h"

namespace tenferro {

class HostBufferPool;
namespace detail {
struct PoolState;  // the pool's lists, lock and counters (buffer_pool.cc)
}  // namespace detail

/// Limits of a HostBufferPool. Buffers returned while the pool is at a limit are freed.
struct HostBufferPoolConfig {
  int64_t max_retained_bytes = int64_t{1} << 30;  ///< total bytes kept for reuse
  int64_t max_retained_buffers = 256;             ///< number of buffers kept for reuse
  /// A retained buffer serves a request of `n` bytes only if its capacity is at most
  /// `n * max_waste_factor` (so a huge buffer is not pinned by a tiny tensor).
  int64_t max_waste_factor = 2;
  /// Buffers of at least this many bytes are 2 MiB aligned and advised as huge pages.
  int64_t huge_page_threshold = int64_t{4} << 20;
};

/// Counters of a HostBufferPool (a snapshot).
struct HostBufferPoolStats {
  int64_t hits = 0;                 ///< acquisitions served from retained buffers
  int64_t misses = 0;               ///< acquisitions that allocated
  int64_t returns = 0;              ///< buffers returned and retained
  int64_t evictions = 0;            ///< buffers returned but freed (limits) or dropped by clear()
  int64_t retained_buffers = 0;     ///< buffers now held for reuse
  int64_t retained_bytes = 0;       ///< their total capacity
  int64_t outstanding_buffers = 0;  ///< buffers now leased out
  int64_t outstanding_bytes = 0;    ///< their total capacity
};

/// An owning lease of one pool buffer (uninitialized bytes). Move-only.
///
/// On destruction the buffer goes back to its pool exactly once if the pool still
/// exists, otherwise it is freed (a lease keeps the pool's bookkeeping alive, never the
/// pool's retained buffers). The pool lock is taken only for that bookkeeping. Not
/// thread-safe for concurrent use of one lease.
class PooledBuffer {
 public:
  PooledBuffer() noexcept = default;
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer() { release(); }

  void* data() const noexcept { return data_; }
  /// Usable bytes (>= the requested size).
  int64_t capacity() const noexcept { return capacity_; }
  /// Returns the buffer to its pool now (or frees it); the lease becomes empty.
  void release() noexcept;

 private:
  friend class HostBufferPool;
  PooledBuffer(void* data, int64_t capacity, std::shared_ptr<detail::PoolState> pool) noexcept
      : data_(data), capacity_(capacity), pool_(std::move(pool)) {}
  void* data_ = nullptr;
  int64_t capacity_ = 0;
  std::shared_ptr<detail::PoolState> pool_;
};

/// A bounded cache of host buffers, shared by the tensors that draw from it.
///
/// Create with `HostBufferPool::create`. Destroying the pool frees its retained buffers;
/// buffers still leased are freed when their leases end. Thread-safe: acquire, return,
/// stats and clear may be called concurrently; the lock is never held while memory is
/// allocated, touched or freed.
class HostBufferPool {
 public:
  static std::shared_ptr<HostBufferPool> create(HostBufferPoolConfig config = {});
  ~HostBufferPool();
  HostBufferPool(const HostBufferPool&) = delete;
  HostBufferPool& operator=(const HostBufferPool&) = delete;

  /// A buffer of at least `bytes` bytes, 64-byte aligned (2 MiB for huge buffers).
  /// Errors: kInvalidArgument (negative size), kAllocationFailed.
  Result<PooledBuffer> acquire(int64_t bytes);
  HostBufferPoolStats stats() const;
  const HostBufferPoolConfig& config() const noexcept { return config_; }
  /// Frees every retained buffer (outstanding leases are unaffected).
  void clear();

 private:
  struct Tag {};

 public:
  explicit HostBufferPool(Tag, HostBufferPoolConfig config);

 private:
  HostBufferPoolConfig config_;
  std::shared_ptr<detail::PoolState> state_;  // shared with the leases (Note [Pool state])
};

namespace detail {
/// Aligned host allocation used by plain and pooled storage; nullptr on failure.
void* allocate_host(int64_t bytes, int64_t huge_page_threshold = int64_t{4} << 20) noexcept;
void free_host(void* data) noexcept;
}  // namespace detail

}  // namespace tenferro
