#pragma once
/// \file
/// `SmallVector<T, N>`: a vector of trivially copyable values with N elements stored
/// inline; larger sizes spill to the heap.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <span>
#include <type_traits>

namespace tenferro {

/// A contiguous sequence of trivially copyable `T` with inline capacity `N`.
///
/// Sizes up to N never allocate; beyond N the storage moves to the heap (and stays
/// there until the object dies or shrinks by assignment from a small vector). Copying
/// a small vector is a memcpy. Not thread-safe for concurrent mutation.
template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");
  static_assert(N > 0);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() noexcept = default;
  explicit SmallVector(size_t n, T value = T{}) { assign_fill(n, value); }
  SmallVector(std::initializer_list<T> init) { assign(init.begin(), init.size()); }
  explicit SmallVector(std::span<const T> src) { assign(src.data(), src.size()); }
  SmallVector(const SmallVector& other) {
    if (other.heap_ == nullptr) {
      copy_inline(other);
    } else {
      assign(other.data(), other.size());
    }
  }
  // Note [Moves without a zeroed detour]: a moved-to vector is not zeroed first and then
  // overwritten: the inline buffer is either copied whole (a small source) or zeroed (a
  // heap source), so each byte is written once. The heap fields are read only for a heap
  // source (a small one has none): the compiler would otherwise fuse the loads of
  // `heap_capacity_` and `size_` into one 16-byte load, which stalls on the two 8-byte
  // stores that wrote them a moment before (no store-to-load forwarding across them) —
  // tensor handles move their layouts several times per eager call.
  SmallVector(SmallVector&& other) noexcept {
    T* const heap = other.heap_;
    if (heap != nullptr) {
      std::memset(static_cast<void*>(inline_), 0, sizeof(inline_));
      heap_ = heap;
      heap_capacity_ = other.heap_capacity_;
      other.heap_ = nullptr;
      other.heap_capacity_ = 0;
    } else {
      std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(inline_));
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  SmallVector& operator=(const SmallVector& other) {
    if (this == &other) return *this;
    if (other.heap_ == nullptr && heap_ == nullptr) {
      copy_inline(other);
    } else {
      assign(other.data(), other.size());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const noexcept { return size_; }
  int64_t ssize() const noexcept { return static_cast<int64_t>(size_); }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return heap_ ? heap_capacity_ : N; }
  /// True when the elements live in the inline buffer (no heap allocation).
  bool is_inline() const noexcept { return heap_ == nullptr; }

  T* data() noexcept { return heap_ ? heap_ : inline_; }
  const T* data() const noexcept { return heap_ ? heap_ : inline_; }
  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }

  std::span<const T> span() const noexcept { return {data(), size_}; }
  std::span<T> mutable_span() noexcept { return {data(), size_}; }

  void clear() noexcept { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity()) grow(n);
  }
  void push_back(T value) {
    if (size_ == capacity()) grow(std::max<size_t>(2 * capacity(), size_ + 1));
    data()[size_++] = value;
  }
  void pop_back() noexcept { --size_; }
  /// Resizes; new elements are set to `value`.
  void resize(size_t n, T value = T{}) {
    reserve(n);
    T* d = data();
    for (size_t i = size_; i < n; ++i) d[i] = value;
    size_ = n;
  }
  /// Resizes without assigning new elements: the caller overwrites [old size, n).
  /// (New inline elements hold stale but initialized values.)
  void resize_for_overwrite(size_t n) {
    reserve(n);
    size_ = n;
  }
  /// Inserts `value` before position `pos` (0 <= pos <= size()).
  void insert(size_t pos, T value) {
    if (size_ == capacity()) grow(std::max<size_t>(2 * capacity(), size_ + 1));
    T* d = data();
    std::memmove(static_cast<void*>(d + pos + 1), d + pos, (size_ - pos) * sizeof(T));
    d[pos] = value;
    ++size_;
  }
  /// Removes the element at `pos`.
  void erase(size_t pos) noexcept {
    T* d = data();
    std::memmove(static_cast<void*>(d + pos), d + pos + 1, (size_ - pos - 1) * sizeof(T));
    --size_;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) noexcept {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void assign(const T* src, size_t n) {
    if (n > capacity()) {
      release();
      grow(n);
    }
    if (n > 0) std::memmove(static_cast<void*>(data()), src, n * sizeof(T));
    size_ = n;
  }
  void assign_fill(size_t n, T value) {
    reserve(n);
    std::fill_n(data(), n, value);
    size_ = n;
  }
  void grow(size_t n) {
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T)));
    if (size_ > 0) std::memcpy(static_cast<void*>(fresh), data(), size_ * sizeof(T));
    if (heap_) ::operator delete(heap_);
    heap_ = fresh;
    heap_capacity_ = n;
  }
  void release() noexcept {
    if (heap_) ::operator delete(heap_);
    heap_ = nullptr;
    heap_capacity_ = 0;
    size_ = 0;
  }
  void steal(SmallVector& other) noexcept {
    if (other.heap_) {
      heap_ = other.heap_;
      heap_capacity_ = other.heap_capacity_;
      other.heap_ = nullptr;
      other.heap_capacity_ = 0;
    } else {
      std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(inline_));
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  // Note [Fixed-size inline copies]: copying the whole inline buffer (a constant size the
  // compiler turns into a few vector moves) is faster than a variable-length memmove
  // call for the tiny sizes metadata has. The buffer is always initialized (zeroed at
  // construction), so no indeterminate bytes are read.
  void copy_inline(const SmallVector& other) noexcept {
    std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(inline_));
    size_ = other.size_;
  }

  T inline_[N] = {};
  T* heap_ = nullptr;
  size_t heap_capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace tenferro
