#include <cstdio>
#include <ostream>
#include <string>

#include "tenferro/tensor/tensor.h"

namespace tenferro {

namespace {

template <class T>
std::string format_scalar(const T& v, int precision) {
  char buf[96];
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (detail::ComplexScalar<T>) {
    std::snprintf(buf, sizeof buf, "%.*g%+.*gi", precision, static_cast<double>(v.real()), precision,
                  static_cast<double>(v.imag()));
    return buf;
  } else {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
    return buf;
  }
}

// Prints axis `axis` of the logical array with axis 0 outermost (numpy's nesting).
template <class T>
void print_axis(std::string& out, const T* base, const Layout& layout, size_t axis, int64_t pos, bool summarize,
                const PrintOptions& opt, int indent) {
  const int64_t n = layout.shape[axis];
  const int64_t stride = layout.strides[axis];
  const bool last = axis + 1 == layout.shape.size();
  const bool cut = summarize && n > 2 * opt.edge_items;
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == opt.edge_items) {
      out += last ? "..., " : "...,\n" + std::string(static_cast<size_t>(indent + 1), ' ');
      i = n - opt.edge_items - 1;
      continue;
    }
    if (last) {
      out += format_scalar(base[pos + i * stride], opt.precision);
    } else {
      print_axis(out, base, layout, axis + 1, pos + i * stride, summarize, opt, indent + 1);
    }
    if (i + 1 < n) {
      out += last ? ", " : ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
    }
  }
  out += ']';
}

}  // namespace

std::string Tensor::to_string(const PrintOptions& options) const {
  if (!defined()) return "Tensor(null)";
  std::string out = "Tensor(shape=" + format_dims(shape()) + ", dtype=" + std::string(dtype_name(dtype_)) +
                    ", strides=" + format_dims(strides()) + ", storage=" +
                    std::string(storage_kind_name(storage_->kind())) + ", placement=" + placement_.to_string() + ")\n";
  visit_dtype(dtype_, [&]<class T>() {
    const T* base = static_cast<const T*>(storage_->data());
    if (rank() == 0) {
      out += format_scalar(base[offset()], options.precision);
    } else if (numel() == 0) {
      out += "[]";
    } else {
      print_axis(out, base, layout_, 0, offset(), numel() > options.threshold, options, 0);
    }
  });
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.to_string(); }

}  // namespace tenferro
