// tenferro.fft: the FFTW kernels on numpy arrays (an engine's domain, its plan cache) and
// the eager transforms (src/fft_eager) on eager tensors. numpy.fft's names, argument
// handling (n / s cropping and padding, default axes) live in python/tenferro/fft.py
// for arrays; eager calls pass them to fft_eager, which records for AD.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "eager_internal.h"
#include "engine.h"
#include "tenferro/fft/fft.h"
#include "tenferro/fft_eager/fft_eager.h"

namespace tenferro::python {
namespace {

namespace tf = tenferro::fft;
namespace ef = tenferro::eager::fft;

// Arrays smaller than this run on the calling thread (as the eager API's inline calls).
constexpr int64_t kInlineElements = int64_t{1} << 15;

tf::Norm norm_of(const std::string& s) {
  if (s == "backward") return tf::Norm::kBackward;
  if (s == "ortho") return tf::Norm::kOrtho;
  if (s == "forward") return tf::Norm::kForward;
  throw py::value_error("Invalid norm value " + s + "; should be \"backward\", \"ortho\" or \"forward\".");
}

tf::Kind kind_of(const std::string& s) {
  if (s == "c2c") return tf::Kind::kC2C;
  if (s == "c2c_inverse") return tf::Kind::kC2CInverse;
  if (s == "r2c") return tf::Kind::kR2C;
  if (s == "c2r") return tf::Kind::kC2R;
  throw py::value_error("unknown transform kind " + s);
}

}  // namespace

void bind_fft(py::module_& m) {
  m.def(
      "transform",
      [](Engine& e, const py::array& a, const std::string& kind, std::vector<int64_t> axes, const std::string& norm,
         int64_t last_length) {
        const Tensor t = from_numpy(a);
        tf::FftSpec spec{kind_of(kind), norm_of(norm), std::move(axes)};
        spec.last_length = last_length;
        std::optional<Result<Tensor>> out;
        {
          py::gil_scoped_release nogil;
          if (t.numel() < kInlineElements) {  // not worth an executor entry
            out.emplace(tf::fft(cpu::CpuExecutionContext::sequential(), t, spec, e.engine->pool(0), e.fft_plans.get()));
          } else {
            Result<void> status =
                e.engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
                  out.emplace(tf::fft(ctx, t, spec, e.engine->pool(0), e.fft_plans.get()));
                  return {};
                });
            if (!status) out.emplace(status.error());
          }
        }
        return to_numpy(unwrap(std::move(*out)));
      },
      py::arg("engine"), py::arg("array"), py::arg("kind"), py::arg("axes"), py::arg("norm"), py::arg("last_length"));
  m.def("plan_cache_stats", [](Engine& e) {
    const tf::PlanCache::Stats s = e.fft_plans->stats();
    py::dict d;
    d["entries"] = s.entries;
    d["capacity"] = s.capacity;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["evictions"] = s.evictions;
    d["estimated_bytes"] = s.estimated_bytes;
    return d;
  });
}

void bind_eager_fft(py::module_ m) {
  m.def(
      "fftn",
      [](const EagerTensor& x, const std::string& family, std::vector<int64_t> s, std::vector<int64_t> axes,
         const std::string& norm, const std::string& name) {
        const tf::Norm n = norm_of(norm);
        return nogil([&]() -> Result<EagerTensor> {
          const eg::Context c = ctx_of(x);
          Result<EagerTensor> r = family == "fft"    ? ef::fftn(c, x, s, axes, n)
                                  : family == "ifft" ? ef::ifftn(c, x, s, axes, n)
                                  : family == "rfft" ? ef::rfftn(c, x, s, axes, n)
                                                     : ef::irfftn(c, x, s, axes, n);
          // The transform's own errors name the function the caller called (numpy's
          // fft, hfft, ...), not the n-dimensional transform it runs on.
          if (!r && !name.empty() && r.error().op() == family + "n") {
            return Error(r.error().stage(), r.error().code(), name, r.error().message());
          }
          return r;
        });
      },
      py::arg("x"), py::arg("family"), py::arg("s"), py::arg("axes"), py::arg("norm"), py::arg("name") = "");
  m.def("plan_cache_stats", [](const EagerTensor& x) {
    const tf::PlanCache::Stats s = x.runtime()->fft_plans().stats();
    py::dict d;
    d["entries"] = s.entries;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    return d;
  });
}

}  // namespace tenferro::python
