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
  SmallVector(SmallVector&& other) noexcept { steal(other); }
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

  // A plain loop: metadata is a few elements, where a memcmp call costs more.
  friend bool operator==(const SmallVector& a, const SmallVector& b) noexcept {
    if (a.size_ != b.size_) return false;
    const T* x = a.data();
    const T* y = b.data();
    for (size_t i = 0; i < a.size_; ++i) {
      if (!(x[i] == y[i])) return false;
    }
    return true;
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
    T* const heap = other.heap_;
    if (heap != nullptr) {
      heap_ = heap;
      heap_capacity_ = other.heap_capacity_;
      other.heap_ = nullptr;
      other.heap_capacity_ = 0;
    } else {
      copy_words(other.inline_, other.size_);
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  // Note [Word copies of small vectors]: shapes and strides are written an element at a
  // time and then copied or moved a moment later (a tensor handle's layout moves several
  // times per eager call). A 16-byte vector load over two 8-byte stores still in the
  // store buffer cannot be forwarded and waits for them to retire, so an inline buffer
  // is copied in 8-byte words, only as many as hold `size` elements (the rest of the
  // destination keeps its zeros or old elements: initialized bytes either way, never
  // read as elements). The empty asm keeps each word in a register so the compiler does
  // not fuse the words back into vector moves. No variable-length memmove call either:
  // metadata sizes are a few words. The heap fields are read only for a heap source, for
  // the same reason (fused loads of `heap_capacity_` and `size_`).
  void copy_words(const T* src, size_t n) noexcept {
    if constexpr (sizeof(inline_) % 8 == 0) {
      const size_t words = std::min((n * sizeof(T) + 7) / 8, sizeof(inline_) / 8);
      const auto* s = reinterpret_cast<const unsigned char*>(src);
      auto* d = reinterpret_cast<unsigned char*>(inline_);
      for (size_t w = 0; w < words; ++w) {
        uint64_t v;
        std::memcpy(&v, s + 8 * w, 8);
        asm("" : "+r"(v));
        std::memcpy(d + 8 * w, &v, 8);
      }
    } else {
      std::memcpy(static_cast<void*>(inline_), src, sizeof(inline_));
    }
  }
  void copy_inline(const SmallVector& other) noexcept {
    copy_words(other.inline_, other.size_);
    size_ = other.size_;
  }

  T inline_[N] = {};
  T* heap_ = nullptr;
  size_t heap_capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace tenferro
