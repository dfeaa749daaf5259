#include "tenferro/fft_ir/fft_op.h"

#include <charconv>
#include <functional>

#include "fft_errors.h"

namespace tenferro::fft_ir {

using detail::compile_error;
using fft::FftSpec;
using fft::Kind;
using fft::Norm;
using program::Extent;
using program::Value;
using program::ValueType;

namespace {

Error parse_error(std::string msg) { return usage_error(ErrorCode::kParse, "fft", std::move(msg)); }

constexpr Kind kKinds[] = {Kind::kC2C, Kind::kC2CInverse, Kind::kR2C, Kind::kC2R};
constexpr Norm kNorms[] = {Norm::kBackward, Norm::kOrtho, Norm::kForward};

}  // namespace

std::shared_ptr<const FftOp> FftOp::make(FftSpec spec) {
  return std::shared_ptr<const FftOp>(new FftOp(std::move(spec)));
}

uint64_t FftOp::payload_hash() const { return std::hash<std::string>()(payload_text()); }

bool FftOp::payload_equal(const ExtensionOp& other) const { return static_cast<const FftOp&>(other).spec_ == spec_; }

std::string FftOp::payload_text() const {
  std::string s(fft::kind_name(spec_.kind));
  s += ";norm=";
  s += fft::norm_name(spec_.norm);
  s += ";axes=";
  for (size_t i = 0; i < spec_.axes.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(spec_.axes[i]);
  }
  if (spec_.kind == Kind::kC2R) s += ";n=" + std::to_string(spec_.last_length);
  return s;
}

Result<std::vector<ValueType>> FftOp::infer(std::span<const ValueType> in, std::span<const program::SymbolInfo>,
                                            std::vector<program::PendingGuard>&) const {
  if (in.size() != 1) {
    return compile_error(ErrorCode::kInvalidArgument,
                         "a transform takes one operand, got " + std::to_string(in.size()));
  }
  const ValueType& x = in[0];
  // fft::result_type decides on a concrete shape: symbolic axes (never transformed) as 1.
  Shape probe;
  for (size_t a = 0; a < x.shape.size(); ++a) {
    const bool transformed =
        std::find(spec_.axes.begin(), spec_.axes.end(), static_cast<int64_t>(a)) != spec_.axes.end();
    if (!x.shape[a].is_exact()) {
      if (transformed) {
        return compile_error(ErrorCode::kUnsupported, std::string(fft::kind_name(spec_.kind)) + ": transformed axis " +
                                                          std::to_string(a) +
                                                          " needs an exact extent (other axes may be symbolic)");
      }
      probe.push_back(1);
    } else {
      probe.push_back(x.shape[a].exact_value());
    }
  }
  auto rt = fft::result_type(x.dtype, probe, spec_);
  if (!rt) return compile_error(rt.error().code(), rt.error().message());
  ValueType out{rt->dtype, x.shape};
  const size_t last = static_cast<size_t>(spec_.axes.back());
  out.shape[last] = Extent::exact(rt->shape[last]);
  return std::vector<ValueType>{std::move(out)};
}

Result<std::shared_ptr<const FftOp>> parse_fft_payload(std::string_view payload) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t semi = payload.find(';', start);
    parts.push_back(payload.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start));
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  FftSpec spec;
  bool found = false;
  for (Kind k : kKinds) {
    if (fft::kind_name(k) == parts[0]) {
      spec.kind = k;
      found = true;
    }
  }
  if (!found) return parse_error("unknown transform '" + std::string(parts[0]) + "'");
  bool have_norm = false, have_axes = false, have_n = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) return parse_error("option '" + std::string(parts[i]) + "' lacks '='");
    const std::string_view key = parts[i].substr(0, eq), val = parts[i].substr(eq + 1);
    auto bad = [&] { return parse_error("bad option '" + std::string(parts[i]) + "'"); };
    auto number = [&](std::string_view text, int64_t* dst) {
      const auto r = std::from_chars(text.data(), text.data() + text.size(), *dst);
      return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
    };
    if (key == "norm" && !have_norm) {
      have_norm = true;
      bool ok_norm = false;
      for (Norm n : kNorms) {
        if (fft::norm_name(n) == val) {
          spec.norm = n;
          ok_norm = true;
        }
      }
      if (!ok_norm) return bad();
    } else if (key == "axes" && !have_axes) {
      have_axes = true;
      size_t s = 0;
      while (true) {
        const size_t comma = val.find(',', s);
        int64_t a = 0;
        if (!number(val.substr(s, comma == std::string_view::npos ? std::string_view::npos : comma - s), &a)) {
          return bad();
        }
        spec.axes.push_back(a);
        if (comma == std::string_view::npos) break;
        s = comma + 1;
      }
    } else if (key == "n" && !have_n && spec.kind == Kind::kC2R) {
      have_n = true;
      if (!number(val, &spec.last_length)) return bad();
    } else {
      return bad();
    }
  }
  if (!have_axes) return parse_error("no axes given ('axes=0,1')");
  if (spec.kind == Kind::kC2R && !have_n) return parse_error("c2r needs its output length ('n=8')");
  return FftOp::make(std::move(spec));
}

Result<void> register_fft_family(program::ExtensionRegistry& registry) {
  return registry.add(std::string(kFftFamily),
                      [](std::string_view payload) -> Result<std::shared_ptr<const program::ExtensionOp>> {
                        TENFERRO_TRY(std::shared_ptr<const FftOp> op, parse_fft_payload(payload));
                        return std::shared_ptr<const program::ExtensionOp>(std::move(op));
                      });
}

Result<Value> emit_fft(program::ProgramBuilder& builder, const FftSpec& spec, Value operand) {
  const Value in[] = {operand};
  TENFERRO_TRY(std::vector<Value> out, builder.extension(FftOp::make(spec), in));
  return out.at(0);
}

}  // namespace tenferro::fft_ir
