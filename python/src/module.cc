// The _tenferro extension module: engines, zero-copy tensors and einsum. The public API
// (argument forms, numpy conventions, exceptions) is the pure-Python layer in
// python/tenferro; this file binds the C++ library under it.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "einsum_call.h"
#include "engine.h"
#include "tenferro/cpu/caps.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/einsum/path.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/einsum_cpu/einsum.h"

namespace tenferro::python {

cpu::CpuEngineConfig engine_config(const py::object& threads, const cpu::CpuTopology& topo, const char* what) {
  const int64_t t = threads.is_none() ? static_cast<int64_t>(topo.allowed_cpus.size()) : int_arg(threads, "threads");
  if (t < 1 || t > 1024) {
    throw py::value_error(std::string(what) + ": threads must be in [1, 1024], got " + std::to_string(t));
  }
  const int n = static_cast<int>(t);
  cpu::CpuEngineConfig cfg;
  std::vector<int> cpus = topo.allowed_cpus;
  if (static_cast<int>(cpus.size()) > n) cpus.resize(static_cast<size_t>(n));
  cfg.domains = {cpu::CpuDomainConfig{0, cpus, n, nullptr}};
  // Workers pinned to their CPUs as the CLI does (only the engine's own threads).
  cfg.pin_workers = static_cast<int>(topo.allowed_cpus.size()) >= n;
  return cfg;
}

namespace {

// A CPU engine with one domain of `threads` workers and its einsum plan cache. Owned by
// Python objects (no global engine); thread-safe, so several Python threads may call it.
Engine make_engine(const py::object& threads, size_t plan_capacity) {
  auto topo = unwrap(cpu::CpuTopology::discover());
  const cpu::CpuEngineConfig cfg = engine_config(threads, topo, "tenferro.Engine");
  Engine e;
  e.engine = unwrap(cpu::CpuEngine::create(cfg, &topo));
  e.plans = std::make_shared<einsum::PlanCache>(plan_capacity);
  e.threads = cfg.domains[0].threads;
  return e;
}

}  // namespace

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
      const int64_t v = int_arg(i, "path position");
      if (v < 0 || v > (int64_t{1} << 30))
        throw py::value_error("tenferro.einsum: path position " + std::to_string(v) + " is out of range");
      entry.push_back(static_cast<int32_t>(v));
    }
    pairs.push_back(std::move(entry));
  }
  p.algorithm = einsum::PathAlgorithm::kExplicit;
  p.explicit_tree = unwrap(einsum::tree_from_pairs(static_cast<int32_t>(operands), pairs));
  return p;
}

namespace {

bool supported(const py::dtype& dt) { return dtype_of_kind(dt.kind(), static_cast<int64_t>(dt.itemsize())).has_value(); }

}  // namespace

// Plans `subscripts` over `operands` for the memory order they fit (Note [Row-major
// operands] in einsum.cc) through the engine's plan cache.
std::shared_ptr<const einsum::EinsumPlan> plan_for(Engine& e, std::string_view subscripts,
                                                   std::span<const Tensor> operands, DType dtype,
                                                   const einsum::PathPolicy& policy) {
  std::vector<Shape> shapes;
  shapes.reserve(operands.size());
  for (const Tensor& t : operands) shapes.push_back(t.shape());
  const einsum::OperandOrder order = einsum::preferred_operand_order(operands);
  // A cached plan is taken with the GIL held (releasing and retaking it costs more than
  // the lookup); only a miss, whose path search may take a while, releases it.
  if (auto cached = e.plans->find(subscripts, shapes, dtype, policy, order)) return cached;
  std::optional<Result<std::shared_ptr<const einsum::EinsumPlan>>> plan;
  {
    py::gil_scoped_release nogil;
    plan.emplace(e.plans->get(subscripts, shapes, dtype, policy, order));
  }
  return unwrap(std::move(*plan));
}

struct Prepared {
  std::vector<Tensor> operands;
  std::shared_ptr<const einsum::EinsumPlan> plan;
};

static Prepared prepare(Engine& e, const std::string& subscripts, const py::list& arrays, const py::object& optimize) {
  Prepared p;
  std::optional<DType> dtype;
  for (const py::handle a : arrays) {
    p.operands.push_back(from_numpy(py::reinterpret_borrow<py::array>(a)));
    if (dtype && *dtype != p.operands.back().dtype()) {
      throw py::type_error("tenferro.einsum: operands have different dtypes (convert them first)");
    }
    dtype = p.operands.back().dtype();
  }
  if (!dtype) throw py::value_error("tenferro.einsum: no operands");
  const einsum::PathPolicy policy = path_policy(optimize, p.operands.size());
  p.plan = plan_for(e, subscripts, p.operands, *dtype, policy);
  return p;
}

// Note [Python fast path] in einsum_call.h.
Result<void> execute(Engine& e, const std::shared_ptr<const einsum::EinsumPlan>& plan_ptr,
                     std::span<const Tensor> operands, Tensor* dst, Tensor& result) {
  const einsum::EinsumPlan& plan = *plan_ptr;
  WorkspacePool::Entry ws = e.workspaces->take(plan_ptr);
  auto body = [&](const cpu::CpuExecutionContext& ctx) -> Result<void> {
    if (dst != nullptr) return plan.execute_into(ctx, operands, *dst, ws.workspace, e.engine->pool(0));
    TENFERRO_TRY(result, plan.execute(ctx, operands, ws.workspace, e.engine->pool(0)));
    return {};
  };
  Result<void> status = run_plan_body(e, plan, body);
  e.workspaces->give_back(std::move(ws));
  return status;
}

Result<void> run_plan_body(Engine& e, const einsum::EinsumPlan& plan,
                           FunctionRef<Result<void>(const cpu::CpuExecutionContext&)> body) {
  if (plan.cost().flops <= kInlineFlops) {
    cpu::CpuExecutionContext ctx(nullptr, cpu::ParallelMode::kSequential, 1, e.engine->config().batch,
                                 &e.engine->caps());
    return body(ctx);
  }
  py::gil_scoped_release nogil;  // reacquired on every way out, exceptions included
  return e.engine->run(0, cpu::ParallelMode::kInner, [&](cpu::CpuExecutionContext& ctx) { return body(ctx); });
}

py::object scalar_or_array(const Tensor& t) {
  py::array a = to_numpy(t);
  if (t.rank() == 0) return a[py::tuple()];  // numpy returns a scalar for a scalar result
  return a;
}

namespace {

py::object run_einsum(Engine& e, const std::string& subscripts, const py::list& arrays, const py::object& optimize,
                      const py::object& out) {
  Prepared p = prepare(e, subscripts, arrays, optimize);
  std::optional<Tensor> dst;
  if (!out.is_none()) {
    dst = from_numpy(py::reinterpret_borrow<py::array>(out));
  }
  Tensor result;
  unwrap(execute(e, p.plan, p.operands, dst ? &*dst : nullptr, result));
  if (dst) return out;
  return scalar_or_array(result);
}

py::object einsum_fast(Engine& e, const py::tuple& args, const py::object& optimize) {
  const auto n = args.size();
  if (n < 2 || !PyUnicode_Check(args[0].ptr()) || !PyUnicode_Check(optimize.ptr()))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  Py_ssize_t len = 0;
  const char* text = PyUnicode_AsUTF8AndSize(args[0].ptr(), &len);
  if (text == nullptr) throw py::error_already_set();
  std::vector<Tensor> operands;
  operands.reserve(n - 1);
  const py::dtype* first = nullptr;
  py::dtype first_dt;
  for (size_t i = 1; i < n; ++i) {
    PyObject* o = args[i].ptr();
    if (!py::isinstance<py::array>(o)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    const auto a = py::reinterpret_borrow<py::array>(o);
    if (first == nullptr) {
      first_dt = a.dtype();
      first = &first_dt;
    } else if (!a.dtype().is(first_dt) && !a.dtype().equal(first_dt)) {
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);  // mixed dtypes: numpy's promotion first
    }
    const char order = a.dtype().byteorder();
    if (order == '>' || !(a.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) || !supported(a.dtype())) {
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    }
    operands.push_back(from_numpy(a));
  }
  einsum::PathPolicy policy = path_policy(optimize, operands.size());
  const std::string_view subscripts(text, static_cast<size_t>(len));
  const auto plan = plan_for(e, subscripts, operands, operands[0].dtype(), policy);
  Tensor result;
  unwrap(execute(e, plan, std::span<const Tensor>(operands.data(), operands.size()), nullptr, result));
  return scalar_or_array(result);
}

py::tuple contract_path(Engine& e, const std::string& subscripts, const py::list& arrays, const py::object& optimize) {
  Prepared p = prepare(e, subscripts, arrays, optimize);
  py::list path;
  for (const auto& [a, b] : einsum::pairs_from_tree(p.plan->tree())) path.append(py::make_tuple(a, b));
  py::dict cost;
  cost["flops"] = p.plan->cost().flops;
  cost["log10_flops"] = p.plan->cost().log10_flops();
  cost["largest_intermediate"] = p.plan->cost().largest_intermediate;
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
      .def(py::init(
               [](const py::object& threads, size_t plan_capacity) { return tp::make_engine(threads, plan_capacity); }),
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
      .def("clear_plan_cache",
           [](tp::Engine& e) {
             e.plans->clear();
             e.workspaces->clear();
             tp::clear_call_cache(*e.calls);
           })
      .def("call_cache_stats",
           [](tp::Engine& e) {
             const auto s = tp::call_cache_stats(*e.calls);
             py::dict d;
             d["entries"] = s.entries;
             d["served"] = s.served;
             return d;
           })
      .def("workspace_bytes", [](const tp::Engine& e) { return e.workspaces->retained_bytes(); })
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
      .def("numpy", [](const Tensor& t) { return tp::to_numpy(t); })
      .def(
          "__dlpack__", [](const Tensor& t, const py::object&) { return tp::to_dlpack(t); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(1, 0); });

  m.def(
      "from_numpy", [](const py::array& a) { return tp::from_numpy(a); }, py::arg("array"));
  py::module_ linalg = m.def_submodule("linalg", "linalg bindings (use tenferro.linalg)");
  tp::bind_linalg(linalg);
  py::module_ fft = m.def_submodule("fft", "fft bindings (use tenferro.fft)");
  tp::bind_fft(fft);
  tp::bind_eager(m);
  tp::bind_einsum_entry(m);
  m.def("einsum_fast", &tp::einsum_fast, py::arg("engine"), py::arg("args"), py::arg("optimize"));
  m.def("einsum", &tp::run_einsum, py::arg("engine"), py::arg("subscripts"), py::arg("operands"), py::arg("optimize"),
        py::arg("out"));
  m.def("contract_path", &tp::contract_path, py::arg("engine"), py::arg("subscripts"), py::arg("operands"),
        py::arg("optimize"));
}
