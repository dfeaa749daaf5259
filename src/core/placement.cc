#include "tenferro/core/placement.h"

namespace tenferro {

std::string Placement::to_string() const {
  switch (kind_) {
    case Kind::kCpuDefault: return "cpu";
    case Kind::kCpuDomain: return "cpu:domain(" + std::to_string(id_) + ")";
    case Kind::kGpuDevice: return "gpu:" + std::to_string(id_);
  }
  return "unknown";
}

}  // namespace tenferro
