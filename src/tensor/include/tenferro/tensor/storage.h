#pragma once
/// \file
/// Host storage payloads: plain, pooled, managed (custom deleter) and foreign (borrowed
/// with a keep-alive). See ARCHITECTURE §4 and spec 001 D2.

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenferro/core/result.h"
#include "tenferro/tensor/buffer_pool.h"

namespace tenferro {

/// How a storage obtained its memory.
enum class StorageKind : uint8_t {
  kPlain,    ///< allocated by tenferro (or an adopted std::vector), freed on destruction
  kPooled,   ///< leased from a HostBufferPool, returned to it on destruction
  kManaged,  ///< user memory with a custom deleter (pinned memory, MPI windows, ...)
  kForeign,  ///< borrowed user memory kept alive by a keep-alive handle
};
std::string_view storage_kind_name(StorageKind kind) noexcept;

/// A type-erased host buffer. Tensors share it through std::shared_ptr; it never refers
/// to a runtime or engine. Element lifetime is managed by the concrete storage: plain
/// and pooled storages construct and destroy their elements; managed and foreign
/// storages leave elements to their owner.
class Storage {
 public:
  virtual ~Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const noexcept { return data_; }
  int64_t byte_size() const noexcept { return byte_size_; }
  StorageKind kind() const noexcept { return kind_; }
  /// False for memory wrapped read-only; mutable access then fails with kReadOnly.
  bool writable() const noexcept { return writable_; }

 protected:
  Storage(void* data, int64_t byte_size, StorageKind kind, bool writable) noexcept
      : data_(data), byte_size_(byte_size), kind_(kind), writable_(writable) {}
  void reset_data(void* data, int64_t byte_size) noexcept {
    data_ = data;
    byte_size_ = byte_size;
  }

 private:
  void* data_;
  int64_t byte_size_;
  StorageKind kind_;
  bool writable_;
};

namespace detail {

/// Constructs `count` elements at `slots` by calling `construct(slot, i)` for i = 0..count-1
/// in order; if one throws, destroys the ones already built and rethrows.
template <class T, class Construct>
void construct_elements(T* slots, int64_t count, Construct&& construct) {
  int64_t built = 0;
  try {
    for (; built < count; ++built) construct(slots + built, built);
  } catch (...) {
    std::destroy_n(slots, built);
    throw;
  }
}

}  // namespace detail

/// Plain storage: an aligned allocation owning `count` constructed elements of T.
template <class T>
class ArrayStorage final : public Storage {
 public:
  /// Allocates and constructs the elements with `construct(T* slot, int64_t i)`, in order.
  /// Errors: kAllocationFailed. Exceptions thrown by `construct` propagate (after the
  /// already-built elements are destroyed and the memory freed).
  template <class Construct>
  static Result<std::shared_ptr<ArrayStorage>> create(int64_t count, Construct&& construct) {
    const int64_t bytes = count * static_cast<int64_t>(sizeof(T));
    void* mem = detail::allocate_host(bytes);
    if (mem == nullptr) {
      return usage_error(ErrorCode::kAllocationFailed, "allocate",
                         "could not allocate " + std::to_string(bytes) + " bytes");
    }
    struct Guard {
      void* p;
      ~Guard() { detail::free_host(p); }
    } guard{mem};
    detail::construct_elements(static_cast<T*>(mem), count, construct);
    auto storage = std::shared_ptr<ArrayStorage>(new ArrayStorage(static_cast<T*>(mem), count));
    guard.p = nullptr;
    return storage;
  }
  ~ArrayStorage() override {
    std::destroy_n(static_cast<T*>(data()), count_);
    detail::free_host(data());
  }

 private:
  ArrayStorage(T* data, int64_t count) noexcept
      : Storage(data, count * static_cast<int64_t>(sizeof(T)), StorageKind::kPlain, true), count_(count) {}
  int64_t count_;
};

/// Plain storage adopting a std::vector<T> without copying its elements.
template <class T>
class VectorStorage final : public Storage {
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no contiguous elements");

 public:
  static std::shared_ptr<VectorStorage> adopt(std::vector<T>&& v) {
    return std::shared_ptr<VectorStorage>(new VectorStorage(std::move(v)));
  }

 private:
  explicit VectorStorage(std::vector<T>&& v) noexcept
      : Storage(nullptr, 0, StorageKind::kPlain, true), vec_(std::move(v)) {
    reset_data(vec_.data(), static_cast<int64_t>(vec_.size() * sizeof(T)));
  }
  std::vector<T> vec_;
};

/// Pooled storage: `count` constructed elements in a buffer leased from a HostBufferPool.
/// Destruction destroys the elements, then returns the buffer once (or frees it if the
/// pool is gone).
template <class T>
class PooledStorage final : public Storage {
 public:
  template <class Construct>
  static Result<std::shared_ptr<PooledStorage>> create(HostBufferPool& pool, int64_t count,
                                                        Construct&& construct) {
    TENFERRO_TRY(PooledBuffer lease, pool.acquire(count * static_cast<int64_t>(sizeof(T))));
    detail::construct_elements(static_cast<T*>(lease.data()), count, construct);
    // One allocation for the object and its control block (the eager fast path's only
    // allocation per output).
    return std::make_shared<PooledStorage>(Key{}, std::move(lease), count);
  }
  ~PooledStorage() override { std::destroy_n(static_cast<T*>(data()), count_); }

 private:
  struct Key {};

 public:
  /// Use create (the key is private).
  PooledStorage(Key, PooledBuffer&& lease, int64_t count) noexcept
      : Storage(lease.data(), count * static_cast<int64_t>(sizeof(T)), StorageKind::kPooled, true),
        lease_(std::move(lease)),
        count_(count) {}

 private:
  PooledBuffer lease_;
  int64_t count_;
};

/// Small plain storage: up to kBytes of trivially copyable elements held inside the
/// storage object itself, so the handle and the data are one allocation.
///
/// Note [Inline small storage]: a small tensor's data lives in its storage object (one
/// heap block with the shared handle's control block), whether or not a pool was given:
/// for a few dozen bytes the pool's lease (a locked pop, a locked push and a reference to
/// the pool's state, per output) costs more than the arithmetic, and the handle's
/// allocation is made anyway. Larger data is pooled or plain as requested. Data is
/// aligned to 16 bytes (every dtype's element alignment); kind kPlain.
template <class T>
class InlineStorage final : public Storage {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 16);

 public:
  static constexpr int64_t kBytes = 128;
  /// Whether `count` elements fit.
  static constexpr bool fits(int64_t count) noexcept { return count <= kBytes / static_cast<int64_t>(sizeof(T)); }
  /// `count` (fits) elements built by `construct(T* slot, int64_t i)`, in order.
  template <class Construct>
  static std::shared_ptr<InlineStorage> create(int64_t count, Construct&& construct) {
    auto s = std::make_shared<InlineStorage>(Key{}, count);
    detail::construct_elements(static_cast<T*>(s->data()), count, construct);
    return s;
  }

 private:
  struct Key {};

 public:
  /// Use create (the key is private).
  InlineStorage(Key, int64_t count) noexcept
      : Storage(static_cast<void*>(bytes_), count * static_cast<int64_t>(sizeof(T)), StorageKind::kPlain, true) {}

 private:
  alignas(16) unsigned char bytes_[kBytes];
};

/// User memory with an explicit deleter (kManaged) or borrowed memory held alive by a
/// keep-alive handle (kForeign). tenferro never constructs or destroys its elements.
class ExternalStorage final : public Storage {
 public:
  /// Takes ownership: `deleter(data)` runs exactly once when the storage dies.
  static std::shared_ptr<ExternalStorage> managed(void* data, int64_t byte_size,
                                                  std::function<void(void*)> deleter);
  /// Borrows: `keep_alive` is held until the storage dies; nothing is freed.
  static std::shared_ptr<ExternalStorage> foreign(void* data, int64_t byte_size,
                                                  std::shared_ptr<const void> keep_alive, bool writable);
  ~ExternalStorage() override;

 private:
  ExternalStorage(void* data, int64_t byte_size, StorageKind kind, bool writable,
                  std::function<void(void*)> deleter, std::shared_ptr<const void> keep_alive) noexcept
      : Storage(data, byte_size, kind, writable), deleter_(std::move(deleter)), keep_alive_(std::move(keep_alive)) {}
  std::function<void(void*)> deleter_;
  std::shared_ptr<const void> keep_alive_;
};

}  // namespace tenferro
