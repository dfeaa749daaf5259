// The _tenferro extension module: engines, zero-copy tensors and einsum. The public API
// (argument forms, numpy conventions, exceptions) is the pure-Python layer in
// python/tenferro; this file binds the C++ library under it.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "tenferro/cpu/caps.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/einsum/path.h"
#include "tenferro/einsum_cpu/einsum.h"

namespace tenferro::python {
namespace {

// A CPU engine with one domain of `threads` workers and its einsum plan cache. Owned by
// Python objects (no global engine); thread-safe, so several Python threads may call it.
struct Engine {
  std::shared_ptr<cpu::CpuEngine> engine;
  std::shared_ptr<einsum::PlanCache> plans;
  int threads = 1;
};

Engine make_engine(std::optional<int> threads, size_t plan_capacity) {
  auto topo = unwrap(cpu::CpuTopology::discover());
  const int available = static_cast<int>(topo.allowed_cpus.size());
  const int n = threads.value_or(available);
  if (n < 1 || n > 1024) throw py::value_error("tenferro.Engine: threads must be in [1, 1024], got " + std::to_string(n));
  cpu::CpuEngineConfig cfg;
  std::vector<int> cpus = topo.allowed_cpus;
  if (static_cast<int>(cpus.size()) > n) cpus.resize(static_cast<size_t>(n));
  cfg.domains = {cpu::CpuDomainConfig{0, cpus, n, nullptr}};
  cfg.pin_workers = false;  // the Python process owns its threads' placement
  Engine e;
  e.engine = unwrap(cpu::CpuEngine::create(cfg, &topo));
  e.plans = std::make_shared<einsum::PlanCache>(plan_capacity);
  e.threads = n;
  return e;
}

// optimize: "greedy" | "optimal" | "treesa" | "left-to-right" | a list of index tuples.
einsum::PathPolicy path_policy(const py::object& optimize, size_t operands) {
  einsum::PathPolicy p;
  if (py::isinstance<py::str>(optimize)) {
    const auto v = optimize.cast<std::string>();
    if (v == "greedy") {
      p.algorithm = einsum::PathAlgorithm::kGreedy;
    } else if (v == "optimal") {
      p.algorithm = einsum::PathAlgorithm::kOptimal;
    } else if (v == "treesa") {
      p.algorithm = einsum::PathAlgorithm::kTreeSA;
    } else if (v == "left-to-right") {
      p.algorithm = einsum::PathAlgorithm::kLeftToRight;
    } else {
      throw py::value_error("tenferro.einsum: optimize='" + v +
                            "' is not 'greedy', 'optimal', 'treesa', 'left-to-right' or a path");
    }
    return p;
  }
  std::vector<std::vector<int32_t>> pairs;
  for (const py::handle step : optimize) {
    std::vector<int32_t> entry;
    for (const py::handle i : step) {
      const auto v = i.cast<int64_t>();
      if (v < 0 || v > (int64_t{1} << 30)) throw py::value_error("tenferro.einsum: path position " + std::to_string(v) + " is out of range");
      entry.push_back(static_cast<int32_t>(v));
    }
    pairs.push_back(std::move(entry));
  }
  p.algorithm = einsum::PathAlgorithm::kExplicit;
  p.explicit_tree = unwrap(einsum::tree_from_pairs(static_cast<int32_t>(operands), pairs));
  return p;
}

struct Prepared {
  std::vector<Tensor> operands;
  std::shared_ptr<const einsum::EinsumPlan> plan;
};

Prepared prepare(Engine& e, const std::string& subscripts, const py::list& arrays, const py::object& optimize) {
  Prepared p;
  std::vector<Shape> shapes;
  std::optional<DType> dtype;
  for (const py::handle a : arrays) {
    p.operands.push_back(from_numpy(py::reinterpret_borrow<py::array>(a)));
    shapes.push_back(p.operands.back().shape());
    if (dtype && *dtype != p.operands.back().dtype()) {
      throw py::type_error("tenferro.einsum: operands have different dtypes (convert them first)");
    }
    dtype = p.operands.back().dtype();
  }
  if (!dtype) throw py::value_error("tenferro.einsum: no operands");
  const einsum::PathPolicy policy = path_policy(optimize, p.operands.size());
  std::optional<Result<std::shared_ptr<const einsum::EinsumPlan>>> plan;
  {
    py::gil_scoped_release nogil;  // path search may take a while
    plan.emplace(e.plans->get(subscripts, shapes, *dtype, policy));
  }
  p.plan = unwrap(std::move(*plan));
  return p;
}

py::array run_einsum(Engine& e, const std::string& subscripts, const py::list& arrays, const py::object& optimize,
                     const py::object& out) {
  Prepared p = prepare(e, subscripts, arrays, optimize);
  std::optional<Tensor> dst;
  if (!out.is_none()) dst = from_numpy(py::reinterpret_borrow<py::array>(out));
  Tensor result;
  Result<void> status;
  {
    py::gil_scoped_release nogil;
    status = e.engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) -> Result<void> {
      if (dst) return p.plan->execute_into(ctx, p.operands, *dst, e.engine->pool(0));
      TENFERRO_TRY(result, p.plan->execute(ctx, p.operands, e.engine->pool(0)));
      return {};
    });
  }
  unwrap(std::move(status));
  if (dst) return py::reinterpret_borrow<py::array>(out);
  return to_numpy(result);
}

py::tuple contract_path(Engine& e, const std::string& subscripts, const py::list& arrays, const py::object& optimize) {
  Prepared p = prepare(e, subscripts, arrays, optimize);
  py::list path;
  for (const auto& [a, b] : einsum::pairs_from_tree(p.plan->tree())) path.append(py::make_tuple(a, b));
  py::dict cost;
  cost["flops"] = p.plan->cost().flops;
  cost["log10_flops"] = p.plan->cost().log10_flops();
  cost["largest_intermediate"] = p.plan->cost().largest;
  cost["read_write"] = p.plan->cost().read_write;
  cost["search_seconds"] = p.plan->search_seconds();
  py::list out_shape;
  for (int64_t d : p.plan->output_shape()) out_shape.append(d);
  cost["output_shape"] = py::tuple(out_shape);
  return py::make_tuple(path, cost);
}

}  // namespace
}  // namespace tenferro::python

namespace py = pybind11;

PYBIND11_MODULE(_tenferro, m) {
  namespace tp = tenferro::python;
  using tenferro::Tensor;
  m.doc() = "tenferro C++ core (use the `tenferro` package)";
  tp::register_error_translator();

  py::class_<tp::Engine>(m, "Engine")
      .def(py::init([](std::optional<int> threads, size_t plan_capacity) { return tp::make_engine(threads, plan_capacity); }),
           py::arg("threads") = py::none(), py::arg("plan_capacity") = 256)
      .def_property_readonly("threads", [](const tp::Engine& e) { return e.threads; })
      .def("plan_cache_stats",
           [](const tp::Engine& e) {
             const auto s = e.plans->stats();
             py::dict d;
             d["hits"] = s.hits;
             d["misses"] = s.misses;
             d["evictions"] = s.evictions;
             d["entries"] = s.entries;
             d["retained_bytes"] = s.retained_bytes;
             return d;
           })
      .def("clear_plan_cache", [](tp::Engine& e) { e.plans->clear(); })
      .def("caps_json", [](const tp::Engine& e) { return e.engine->caps().to_json(); });

  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape",
                             [](const Tensor& t) {
                               py::list l;
                               for (int64_t d : t.shape()) l.append(d);
                               return py::tuple(l);
                             })
      .def_property_readonly("strides",
                             [](const Tensor& t) {
                               py::list l;
                               for (int64_t d : t.strides()) l.append(d);
                               return py::tuple(l);
                             })
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(tenferro::dtype_name(t.dtype())); })
      .def_property_readonly("writable", [](const Tensor& t) { return t.storage()->writable(); })
      .def("numpy", [](const Tensor& t) { return tp::to_numpy(t); });

  m.def("from_numpy", [](const py::array& a) { return tp::from_numpy(a); }, py::arg("array"));
  m.def("einsum", &tp::run_einsum, py::arg("engine"), py::arg("subscripts"), py::arg("operands"), py::arg("optimize"),
        py::arg("out"));
  m.def("contract_path", &tp::contract_path, py::arg("engine"), py::arg("subscripts"), py::arg("operands"),
        py::arg("optimize"));
}
