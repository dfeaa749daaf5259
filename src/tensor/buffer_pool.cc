#include "tenferro/tensor/buffer_pool.h"

#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tenferro {

namespace detail {

namespace {
constexpr int64_t kAlign = 64;
constexpr int64_t kHugePage = int64_t{2} << 20;
int64_t round_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }
}  // namespace

void* allocate_host(int64_t bytes, int64_t huge_page_threshold) noexcept {
  if (bytes < 0) return nullptr;
  const bool huge = bytes >= huge_page_threshold;
  const int64_t align = huge ? kHugePage : kAlign;
  const int64_t size = round_up(bytes > 0 ? bytes : 1, align);
  void* p = std::aligned_alloc(static_cast<size_t>(align), static_cast<size_t>(size));
  if (p != nullptr && huge) {
    // A hint only: transparent huge pages cut TLB misses on large tensors.
    (void)madvise(p, static_cast<size_t>(size), MADV_HUGEPAGE);
  }
  return p;
}

void free_host(void* data) noexcept { std::free(data); }

}  // namespace detail

// Note [Pool state]: the lists, counters and lock live in a state object that the pool
// and every lease share. A lease's release is then one call on the state it holds (no
// weak reference to lock and drop: two fewer atomic operations per buffer), and a pool
// destroyed while buffers are leased only marks its state closed: those buffers are
// freed when their leases end.
//
// Note [Pool lock]: the critical sections are a few loads and stores (a pop or push on a
// reserved list, the counters), so the lock is a test-and-test-and-set spin lock that
// yields the CPU after a short spin: an uncontended acquire-and-release costs one atomic
// exchange and one store, against a mutex's two atomic operations and two calls; a
// holder descheduled mid-section costs waiters a yield each, not a busy core.
namespace detail {

class SpinLock {
 public:
  void lock() noexcept {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      for (int spin = 0; locked_.load(std::memory_order_relaxed); ++spin) {
        if (spin >= 64) {
          std::this_thread::yield();
        } else {
          __builtin_ia32_pause();
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

struct PoolState {
  explicit PoolState(HostBufferPoolConfig c) : config(c) {}
  ~PoolState() { drop_retained(); }

  // Note [Small size classes]: buffers of at most kSmallMax bytes (capacities are
  // multiples of 64) live in one free list per exact capacity, so acquiring and
  // returning a small buffer once warm is a pop/push on a vector with reserved room: no
  // map node, no operator new (the eager fast path's outputs). Larger buffers use the
  // size-ordered map (best fit within max_waste_factor).
  static constexpr int64_t kSmallMax = 4096;

  void recycle(void* data, int64_t capacity) noexcept;
  // Counts a retained buffer of `capacity` bytes leased again (the caller holds the lock).
  void count_reuse(int64_t capacity) noexcept {
    stats.hits++;
    stats.retained_buffers--;
    stats.retained_bytes -= capacity;
    stats.outstanding_buffers++;
    stats.outstanding_bytes += capacity;
  }
  // Frees every retained buffer; the caller holds no lock.
  void drop_retained() noexcept;

  const HostBufferPoolConfig config;
  mutable SpinLock mu;
  bool closed = false;  // the pool is gone: returned buffers are freed
  std::array<std::vector<void*>, kSmallMax / 64> small;
  std::multimap<int64_t, void*> large;  // capacity -> buffer
  HostBufferPoolStats stats;
};

void PoolState::drop_retained() noexcept {
  std::multimap<int64_t, void*> dropped;
  std::array<std::vector<void*>, kSmallMax / 64> dropped_small;
  {
    std::lock_guard lock(mu);
    dropped.swap(large);
    dropped_small.swap(small);
    stats.evictions += stats.retained_buffers;
    stats.retained_buffers = 0;
    stats.retained_bytes = 0;
  }
  for (auto& [capacity, data] : dropped) free_host(data);
  for (auto& list : dropped_small) {
    for (void* data : list) free_host(data);
  }
}

void PoolState::recycle(void* data, int64_t capacity) noexcept {
  bool keep = false;
  {
    std::lock_guard lock(mu);
    stats.outstanding_buffers--;
    stats.outstanding_bytes -= capacity;
    keep = !closed && stats.retained_buffers < config.max_retained_buffers &&
           stats.retained_bytes + capacity <= config.max_retained_bytes;
    if (keep) {
      try {
        if (capacity <= kSmallMax && capacity % kAlign == 0) {
          std::vector<void*>& list = small[static_cast<size_t>(capacity / kAlign - 1)];
          if (list.capacity() == 0) list.reserve(64);
          list.push_back(data);
        } else {
          large.emplace(capacity, data);
        }
      } catch (...) {
        keep = false;
      }
    }
    if (keep) {
      stats.returns++;
      stats.retained_buffers++;
      stats.retained_bytes += capacity;
    } else {
      stats.evictions++;
    }
  }
  if (!keep) free_host(data);
}

}  // namespace detail

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      pool_(std::move(other.pool_)) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    pool_ = std::move(other.pool_);
  }
  return *this;
}

void PooledBuffer::release() noexcept {
  if (data_ == nullptr) return;
  void* data = std::exchange(data_, nullptr);
  const int64_t capacity = std::exchange(capacity_, 0);
  if (pool_) {
    pool_->recycle(data, capacity);
    pool_.reset();
  } else {
    detail::free_host(data);
  }
}

std::shared_ptr<HostBufferPool> HostBufferPool::create(HostBufferPoolConfig config) {
  return std::make_shared<HostBufferPool>(Tag{}, config);
}

HostBufferPool::HostBufferPool(Tag, HostBufferPoolConfig config)
    : config_(config), state_(std::make_shared<detail::PoolState>(config)) {}

HostBufferPool::~HostBufferPool() {
  {
    std::lock_guard lock(state_->mu);
    state_->closed = true;
  }
  state_->drop_retained();
}

Result<PooledBuffer> HostBufferPool::acquire(int64_t bytes) {
  if (bytes < 0) {
    return usage_error(ErrorCode::kInvalidArgument, "HostBufferPool::acquire",
                       "requested size " + std::to_string(bytes) + " is negative");
  }
  detail::PoolState& st = *state_;
  const int64_t want = detail::round_up(bytes > 0 ? bytes : 1, detail::kAlign);
  {
    std::lock_guard lock(st.mu);
    if (want <= detail::PoolState::kSmallMax) {
      // Best fit among the small classes within the waste factor (exact class first).
      for (int64_t cap = want; cap <= detail::PoolState::kSmallMax && cap / config_.max_waste_factor <= want;
           cap += detail::kAlign) {
        std::vector<void*>& list = st.small[static_cast<size_t>(cap / detail::kAlign - 1)];
        if (list.empty()) continue;
        void* data = list.back();
        list.pop_back();
        st.count_reuse(cap);
        return PooledBuffer(data, cap, state_);
      }
    }
    auto it = st.large.lower_bound(want);
    if (it != st.large.end() && it->first / config_.max_waste_factor <= want) {
      const int64_t capacity = it->first;
      void* data = it->second;
      st.large.erase(it);
      st.count_reuse(capacity);
      return PooledBuffer(data, capacity, state_);
    }
  }
  const bool huge = want >= config_.huge_page_threshold;
  const int64_t capacity = huge ? detail::round_up(want, detail::kHugePage) : want;
  void* data = detail::allocate_host(capacity, config_.huge_page_threshold);
  if (data == nullptr) {
    return usage_error(ErrorCode::kAllocationFailed, "HostBufferPool::acquire",
                       "could not allocate " + std::to_string(capacity) + " bytes");
  }
  std::lock_guard lock(st.mu);
  st.stats.misses++;
  st.stats.outstanding_buffers++;
  st.stats.outstanding_bytes += capacity;
  return PooledBuffer(data, capacity, state_);
}

HostBufferPoolStats HostBufferPool::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

void HostBufferPool::clear() { state_->drop_retained(); }

}  // namespace tenferro
