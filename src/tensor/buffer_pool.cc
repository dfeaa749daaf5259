#include "tenferro/tensor/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
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
  if (std::shared_ptr<HostBufferPool> pool = pool_.lock()) {
    pool->recycle(data, capacity);
  } else {
    detail::free_host(data);
  }
  pool_.reset();
}

std::shared_ptr<HostBufferPool> HostBufferPool::create(HostBufferPoolConfig config) {
  return std::make_shared<HostBufferPool>(Tag{}, config);
}

HostBufferPool::~HostBufferPool() {
  for (auto& [capacity, data] : free_) detail::free_host(data);
  for (auto& list : small_) {
    for (void* data : list) detail::free_host(data);
  }
}

Result<PooledBuffer> HostBufferPool::acquire(int64_t bytes) {
  if (bytes < 0) {
    return usage_error(ErrorCode::kInvalidArgument, "HostBufferPool::acquire",
                       "requested size " + std::to_string(bytes) + " is negative");
  }
  const int64_t want = detail::round_up(bytes > 0 ? bytes : 1, detail::kAlign);
  {
    std::lock_guard lock(mu_);
    if (want <= kSmallMax) {
      // Best fit among the small classes within the waste factor (exact class first).
      for (int64_t cap = want; cap <= kSmallMax && cap / config_.max_waste_factor <= want; cap += detail::kAlign) {
        std::vector<void*>& list = small_[static_cast<size_t>(cap / detail::kAlign - 1)];
        if (list.empty()) continue;
        void* data = list.back();
        list.pop_back();
        stats_.hits++;
        stats_.retained_buffers--;
        stats_.retained_bytes -= cap;
        stats_.outstanding_buffers++;
        stats_.outstanding_bytes += cap;
        return PooledBuffer(data, cap, weak_from_this());
      }
    }
    auto it = free_.lower_bound(want);
    if (it != free_.end() && it->first / config_.max_waste_factor <= want) {
      const int64_t capacity = it->first;
      void* data = it->second;
      free_.erase(it);
      stats_.hits++;
      stats_.retained_buffers--;
      stats_.retained_bytes -= capacity;
      stats_.outstanding_buffers++;
      stats_.outstanding_bytes += capacity;
      return PooledBuffer(data, capacity, weak_from_this());
    }
  }
  const bool huge = want >= config_.huge_page_threshold;
  const int64_t capacity = huge ? detail::round_up(want, detail::kHugePage) : want;
  void* data = detail::allocate_host(capacity, config_.huge_page_threshold);
  if (data == nullptr) {
    return usage_error(ErrorCode::kAllocationFailed, "HostBufferPool::acquire",
                       "could not allocate " + std::to_string(capacity) + " bytes");
  }
  std::lock_guard lock(mu_);
  stats_.misses++;
  stats_.outstanding_buffers++;
  stats_.outstanding_bytes += capacity;
  return PooledBuffer(data, capacity, weak_from_this());
}

void HostBufferPool::recycle(void* data, int64_t capacity) noexcept {
  bool keep = false;
  {
    std::lock_guard lock(mu_);
    stats_.outstanding_buffers--;
    stats_.outstanding_bytes -= capacity;
    keep = stats_.retained_buffers < config_.max_retained_buffers &&
           stats_.retained_bytes + capacity <= config_.max_retained_bytes;
    if (keep) {
      try {
        if (capacity <= kSmallMax && capacity % detail::kAlign == 0) {
          std::vector<void*>& list = small_[static_cast<size_t>(capacity / detail::kAlign - 1)];
          if (list.capacity() == 0) list.reserve(64);
          list.push_back(data);
        } else {
          free_.emplace(capacity, data);
        }
      } catch (...) {
        keep = false;
      }
    }
    if (keep) {
      stats_.returns++;
      stats_.retained_buffers++;
      stats_.retained_bytes += capacity;
    } else {
      stats_.evictions++;
    }
  }
  if (!keep) detail::free_host(data);
}

HostBufferPoolStats HostBufferPool::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void HostBufferPool::clear() {
  std::multimap<int64_t, void*> dropped;
  std::vector<void*> dropped_small;
  {
    std::lock_guard lock(mu_);
    dropped.swap(free_);
    for (auto& list : small_) {
      dropped_small.insert(dropped_small.end(), list.begin(), list.end());
      list.clear();
    }
    stats_.evictions += stats_.retained_buffers;
    stats_.retained_buffers = 0;
    stats_.retained_bytes = 0;
  }
  for (auto& [capacity, data] : dropped) detail::free_host(data);
  for (void* data : dropped_small) detail::free_host(data);
}

}  // namespace tenferro
