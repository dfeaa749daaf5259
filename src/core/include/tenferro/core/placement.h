#pragma once
/// \file
/// Where a tensor's storage lives.

#include <cstdint>
#include <string>

namespace tenferro {

/// A placement: the CPU default domain, a named CPU resource domain, or a GPU device.
/// Plain value type; comparisons are exact.
class Placement {
 public:
  enum class Kind : uint8_t { kCpuDefault, kCpuDomain, kGpuDevice };

  /// Host memory of the process, not bound to a resource domain.
  static constexpr Placement cpu_default() noexcept { return Placement(Kind::kCpuDefault, 0); }
  /// Host memory of CPU resource domain `id`.
  static constexpr Placement cpu_domain(int32_t id) noexcept { return Placement(Kind::kCpuDomain, id); }
  /// Memory of GPU device `id`.
  static constexpr Placement gpu_device(int32_t id) noexcept { return Placement(Kind::kGpuDevice, id); }

  constexpr Placement() noexcept = default;
  constexpr Kind kind() const noexcept { return kind_; }
  constexpr int32_t id() const noexcept { return id_; }
  constexpr bool is_host() const noexcept { return kind_ != Kind::kGpuDevice; }

  /// "cpu", "cpu:domain(2)", "gpu:0".
  std::string to_string() const;
  friend constexpr bool operator==(Placement, Placement) = default;

 private:
  constexpr Placement(Kind kind, int32_t id) noexcept : kind_(kind), id_(id) {}
  Kind kind_ = Kind::kCpuDefault;
  int32_t id_ = 0;
};

}  // namespace tenferro
