#pragma once
// Counts heap allocations by replacing the global operator new (tests only). Include this
// header in exactly one translation unit of a test executable: it defines the
// replacement functions. Every allocation and release of the plain and nothrow forms
// goes through malloc/free, so sanitizers see matching pairs.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace tenferro::test_support {
inline std::atomic<int64_t> g_allocations{0};
// Debugging aid: while set, an allocation traps, so a debugger shows where it came from.
inline std::atomic<bool> g_trap_allocations{false};
/// Allocations made so far by this process.
inline int64_t allocations() { return g_allocations.load(std::memory_order_relaxed); }
inline void count_allocation() {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (g_trap_allocations.load(std::memory_order_relaxed)) __builtin_trap();
}
}  // namespace tenferro::test_support

// The replacement pairs malloc with free by construction; GCC cannot see that.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  tenferro::test_support::count_allocation();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  tenferro::test_support::count_allocation();
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& t) noexcept { return operator new(size, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
