#include "einsum_call.h"

#include <pybind11/numpy.h>

#include <array>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "convert.h"
#include "tenferro/cpu/engine.h"

namespace tenferro::python {

// Note [Python call cache]: a small einsum from Python costs what happens around the
// product: argument parsing, one storage object and one handle per array, the plan-cache
// key (the subscripts parsed, a string built and hashed), a workspace taken from a locked
// list, the result buffer and the capsule that keeps it alive behind the returned array.
// numpy's own einsum does less of that, so a call that repeats (same subscripts,
// optimize name or path, dtype, shapes and strides; numpy arrays) is served here instead:
// - `tenferro.einsum` is a C function (METH_FASTCALL): no Python frame, the keyword
//   names compared by pointer (interned), anything it does not serve handed unchanged to
//   the Python layer, which also raises every error (a failed fast attempt leaves no
//   trace: it writes only into the array it allocated itself);
// - an explicit path (opt_einsum's list of int tuples) is part of the key as text;
// - each engine keeps kEntries calls keyed by their text and geometry (byte compares, no
//   hashing), each with its plan, its own workspace and one tensor handle per operand and
//   for the destination, built once over a storage object that each call points at its
//   arrays (same geometry, so the validated layouts stay valid): a handle is reused only while the entry holds its
//   storage alone, and the plan's run keeps no operand or destination handle
//   (EinsumPlan::run clears its slots), so a pointer is read only during the call whose
//   arguments keep its array alive;
// - numpy allocates the result (its small-size allocation cache), column-major for the
//   plan as the tenferro result would be (C order for a row-major plan, Note [Row-major
//   operands] in einsum.cc),
//   and the plan writes into it (execute_into): the returned array owns its memory, no
//   capsule. Results above kCachedResultMaxBytes take the Python path, whose result
//   comes from the engine's pool;
// - a plan below kInlineFlops runs on the calling thread with the GIL held; a larger one
//   releases the GIL and enters the engine's domain (Note [Python fast path]).
// A call holds its engine's cache through an atomic flag for its whole run (also while
// it has released the GIL); a second caller meanwhile (another thread, a finalizer run
// by an allocation) takes the Python path. Clears during a call are deferred. Calls
// whose result is too large are remembered as such and go to the Python path at once.
// Serving the larger plans too halved the per-call cost of small non-inline products
// (docs/benchmarks.md "Python").

namespace {

using Api = py::detail::npy_api;

constexpr size_t kEntries = 16;
// Largest result the cache allocates through numpy (Note [Python call cache]): above it
// numpy's allocator maps fresh pages for every call (glibc hands blocks past its mmap
// threshold, at most 32 MiB, straight to the kernel), while the Python path draws the
// result from the engine's pool.
constexpr int64_t kCachedResultMaxBytes = int64_t{4} << 20;
constexpr size_t kMaxOperands = 16;
constexpr int kMaxRank = 16;
constexpr size_t kMaxGeometry = kMaxOperands * (1 + 2 * kMaxRank);

// Storage over memory that a call's arguments keep alive; rebound per call (above).
class CallStorage final : public Storage {
 public:
  explicit CallStorage(bool writable) noexcept : Storage(nullptr, 0, StorageKind::kForeign, writable) {}
  void bind(void* data, int64_t bytes) noexcept { reset_data(data, bytes); }
};

// One call's key: texts and, per operand, rank, extents and byte strides.
struct Probe {
  std::string_view subscripts, optimize;  // optimize: the name, or an explicit path's text
  PyObject* path = nullptr;               // the explicit path (a list), borrowed
  std::array<char, 256> path_text;
  DType dtype = DType::kF64;
  size_t n = 0;
  PyObject* const* arrays = nullptr;
  std::array<int64_t, kMaxGeometry> geometry;
  size_t geometry_len = 0;
};

struct CallEntry {
  std::string subscripts, optimize;
  DType dtype = DType::kF64;
  std::vector<int64_t> geometry;
  bool served = false;  // false: the Python path runs it (a result too large, rank > kMaxRank)
  std::shared_ptr<const einsum::EinsumPlan> plan;
  einsum::EinsumWorkspace workspace;
  // Handles over CallStorage, kept between calls and rebound to each call's arrays:
  // operands, then the destination. `lo` / `bytes`: where a handle's storage starts
  // relative to the array's data pointer (the lowest byte reached) and its size.
  std::vector<Tensor> handles;
  std::vector<int64_t> lo, bytes;
  int out_type = 0;  // numpy type number of the result

  bool matches(const Probe& p) const noexcept {
    return dtype == p.dtype && geometry.size() == p.geometry_len && subscripts == p.subscripts &&
           optimize == p.optimize &&
           std::memcmp(geometry.data(), p.geometry.data(), p.geometry_len * sizeof(int64_t)) == 0;
  }
};

std::optional<DType> dtype_of_descr(const py::detail::PyArrayDescr_Proxy& d) {
  if (d.byteorder == '>') return std::nullopt;
  return dtype_of_kind(d.kind, d.elsize);
}

}  // namespace

class CallCache {
 public:
  // Taken for a whole cached call (Note [Python call cache]); never waited for.
  bool try_enter() noexcept { return !busy_.test_and_set(std::memory_order_acquire); }
  void leave() {
    if (clear_pending_) {
      clear_pending_ = false;
      for (auto& e : entries_) e.reset();
    }
    busy_.clear(std::memory_order_release);
  }
  // Inside: the entry for `p`, or null.
  CallEntry* find(const Probe& p) noexcept {
    for (auto& e : entries_) {
      if (e && e->matches(p)) return e.get();
    }
    return nullptr;
  }
  // Inside: keeps `e`, replacing the oldest entry.
  CallEntry* insert(std::unique_ptr<CallEntry> e) {
    auto& slot = entries_[next_];
    next_ = (next_ + 1) % kEntries;
    slot = std::move(e);
    return slot.get();
  }
  void count_served() noexcept { ++served_; }
  CallCacheStats stats() {
    CallCacheStats s;
    if (!try_enter()) return s;
    for (auto& e : entries_) s.entries += e ? 1 : 0;
    s.served = served_;
    leave();
    return s;
  }
  void clear() {
    if (!try_enter()) {
      clear_pending_ = true;  // the call in progress clears when it leaves
      return;
    }
    for (auto& e : entries_) e.reset();
    leave();
  }

 private:
  std::atomic_flag busy_;
  bool clear_pending_ = false;
  std::array<std::unique_ptr<CallEntry>, kEntries> entries_;
  size_t next_ = 0;
  int64_t served_ = 0;
};

std::shared_ptr<CallCache> make_call_cache() { return std::make_shared<CallCache>(); }
void clear_call_cache(CallCache& cache) { cache.clear(); }
CallCacheStats call_cache_stats(CallCache& cache) { return cache.stats(); }

namespace {

// The entry point's state, owned by the function object (a capsule as its `self`).
struct EntryState {
  PyObject* general = nullptr;         // the Python layer's einsum
  PyObject* default_engine_fn = nullptr;
  PyObject* default_engine = nullptr;  // default_engine_fn() once called
  Engine* default_ptr = nullptr;
  PyObject* last_engine = nullptr;     // the last engine= object and its Engine
  Engine* last_ptr = nullptr;
  PyObject* kw_optimize = nullptr;
  PyObject* kw_out = nullptr;
  PyObject* kw_threads = nullptr;
  PyObject* kw_engine = nullptr;
  PyObject* empty_tuple = nullptr;
  std::string doc;
  PyMethodDef def{};

  ~EntryState() {
    for (PyObject* o : {general, default_engine_fn, default_engine, last_engine, kw_optimize, kw_out, kw_threads,
                        kw_engine, empty_tuple}) {
      Py_XDECREF(o);
    }
  }
};

// The Engine behind a tenferro.Engine object, or null.
Engine* engine_of(PyObject* o) {
  try {
    return py::cast<Engine*>(py::handle(o));
  } catch (...) {
    PyErr_Clear();
    return nullptr;
  }
}

Engine* resolve_engine(EntryState& st, PyObject* engine) {
  if (engine == Py_None) {
    if (st.default_ptr == nullptr) {
      PyObject* eng = PyObject_CallNoArgs(st.default_engine_fn);
      if (eng == nullptr) {
        PyErr_Clear();
        return nullptr;
      }
      Engine* p = engine_of(eng);
      if (p == nullptr) {
        Py_DECREF(eng);
        return nullptr;
      }
      st.default_engine = eng;
      st.default_ptr = p;
    }
    return st.default_ptr;
  }
  if (engine == st.last_engine) return st.last_ptr;
  Engine* p = engine_of(engine);
  if (p == nullptr) return nullptr;
  Py_INCREF(engine);
  Py_XSETREF(st.last_engine, engine);
  st.last_ptr = p;
  return p;
}

// Fills `p` from the call's arguments; false when the call is not of the served form.
bool probe_call(EntryState& st, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, Probe& p,
                PyObject*& engine) {
  if (nargs < 2 || !PyUnicode_CheckExact(args[0])) return false;
  PyObject* optimize = nullptr;
  engine = Py_None;
  if (kwnames != nullptr) {
    const Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nk; ++k) {
      PyObject* name = PyTuple_GET_ITEM(kwnames, k);
      PyObject* value = args[nargs + k];
      if (name == st.kw_engine) {
        engine = value;
      } else if (name == st.kw_optimize) {
        optimize = value;
      } else if (name == st.kw_out || name == st.kw_threads) {
        if (value != Py_None) return false;
      } else {
        return false;  // unknown or not interned: the Python layer decides
      }
    }
  }
  Py_ssize_t len = 0;
  const char* text = PyUnicode_AsUTF8AndSize(args[0], &len);
  if (text == nullptr) {
    PyErr_Clear();
    return false;
  }
  p.subscripts = std::string_view(text, static_cast<size_t>(len));
  if (optimize == nullptr) {
    p.optimize = "greedy";
  } else if (PyList_CheckExact(optimize)) {
    // An explicit path (a list of int tuples), keyed by its text "[a,b;c,d;...": the
    // steps compared, no hashing; anything else goes to the Python layer.
    size_t at = 0;
    auto put = [&](char c) {
      if (at < p.path_text.size()) p.path_text[at] = c;
      ++at;
    };
    put('[');
    const Py_ssize_t steps = PyList_GET_SIZE(optimize);
    for (Py_ssize_t k = 0; k < steps; ++k) {
      PyObject* step = PyList_GET_ITEM(optimize, k);
      if (!PyTuple_CheckExact(step)) return false;
      for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(step); ++j) {
        PyObject* v = PyTuple_GET_ITEM(step, j);
        if (!PyLong_CheckExact(v)) return false;
        const long x = PyLong_AsLong(v);
        if (x < 0 || x > 9999) {  // also -1 for an overflow (its error cleared below)
          PyErr_Clear();
          return false;
        }
        char digits[8];
        int nd = 0;
        long y = x;
        do {
          digits[nd++] = static_cast<char>('0' + y % 10);
          y /= 10;
        } while (y > 0);
        while (nd > 0) put(digits[--nd]);
        put(',');
      }
      put(';');
    }
    if (at > p.path_text.size()) return false;
    p.optimize = std::string_view(p.path_text.data(), at);
    p.path = optimize;
  } else {
    if (!PyUnicode_CheckExact(optimize)) return false;
    const char* o = PyUnicode_AsUTF8AndSize(optimize, &len);
    if (o == nullptr) {
      PyErr_Clear();
      return false;
    }
    p.optimize = std::string_view(o, static_cast<size_t>(len));
  }
  p.n = static_cast<size_t>(nargs - 1);
  if (p.n > kMaxOperands) return false;
  p.arrays = args + 1;
  auto& api = Api::get();
  p.geometry_len = 0;
  for (size_t i = 0; i < p.n; ++i) {
    PyObject* o = p.arrays[i];
    if (Py_TYPE(o) != api.PyArray_Type_) return false;  // subclasses and array-likes: Python layer
    const auto* a = py::detail::array_proxy(o);
    if ((a->flags & Api::NPY_ARRAY_ALIGNED_) == 0 || a->nd > kMaxRank) return false;
    const auto dt = dtype_of_descr(*py::detail::array_descriptor_proxy(a->descr));
    if (!dt || (i > 0 && *dt != p.dtype)) return false;  // unsupported or mixed: numpy's promotion first
    p.dtype = *dt;
    p.geometry[p.geometry_len++] = a->nd;
    for (int d = 0; d < a->nd; ++d) {
      if (a->dimensions[d] == 0) return false;  // empty operands: the general path
      p.geometry[p.geometry_len++] = a->dimensions[d];
    }
    for (int d = 0; d < a->nd; ++d) p.geometry[p.geometry_len++] = a->strides[d];
  }
  return true;
}

// A new entry for the probed call: planned through the engine's plan cache. Null (no
// Python error set) when planning fails; the Python path then raises the error.
std::unique_ptr<CallEntry> make_entry(Engine& e, const Probe& p) {
  try {
    std::vector<Tensor> operands;
    operands.reserve(p.n);
    for (size_t i = 0; i < p.n; ++i) operands.push_back(from_numpy(py::reinterpret_borrow<py::array>(p.arrays[i])));
    const einsum::PathPolicy policy =
        p.path != nullptr ? path_policy(py::reinterpret_borrow<py::object>(p.path), p.n)
                          : path_policy(py::str(p.optimize.data(), p.optimize.size()), p.n);
    auto plan = plan_for(e, p.subscripts, operands, p.dtype, policy);
    auto entry = std::make_unique<CallEntry>();
    entry->subscripts = std::string(p.subscripts);
    entry->optimize = std::string(p.optimize);
    entry->dtype = p.dtype;
    entry->geometry.assign(p.geometry.begin(), p.geometry.begin() + static_cast<ptrdiff_t>(p.geometry_len));
    const Shape& out_shape = plan->output_shape();
    const int64_t out_bytes = element_count(out_shape) * dtype_size(p.dtype);
    entry->served = out_shape.size() <= static_cast<size_t>(kMaxRank) && out_bytes <= kCachedResultMaxBytes;
    entry->out_type = numpy_type(p.dtype);
    if (entry->served) {
      entry->workspace = plan->make_workspace();
      entry->handles.resize(p.n + 1);
      entry->lo.resize(p.n + 1);
      entry->bytes.resize(p.n + 1);
    }
    entry->plan = std::move(plan);
    return entry;
  } catch (...) {
    PyErr_Clear();
    return nullptr;
  }
}

// A handle of `dtype` over a CallStorage of `writable` memory with the given extents and
// byte strides; `lo` and `bytes` receive the storage's start relative to the array's
// data pointer and its size. The storage is bound to nothing yet.
Result<Tensor> make_handle(bool writable, DType dtype, int rank, const int64_t* dims, const int64_t* byte_strides,
                           int64_t& lo, int64_t& bytes) {
  const int64_t item = dtype_size(dtype);
  ArraySpan span = array_span(rank, dims, byte_strides, item);  // strides: from_numpy checked them
  lo = span.lo;
  bytes = span.bytes;
  auto storage = std::make_shared<CallStorage>(writable);
  storage->bind(nullptr, bytes);  // the capacity the layout is validated against
  return Tensor::from_storage(dtype, std::move(storage),
                              Layout{std::move(span.shape), std::move(span.strides), -lo / item});
}

// Points entry.handles[i] at `data` (an array's data pointer); false when no handle can
// be made. A handle is reused only while the entry holds its storage alone.
bool bind_handle(CallEntry& entry, size_t i, bool writable, char* data, int rank, const int64_t* dims,
                 const int64_t* byte_strides) {
  Tensor& t = entry.handles[i];
  if (!t.defined() || t.storage().use_count() != 1 || t.storage()->writable() != writable) {
    auto made = make_handle(writable, entry.dtype, rank, dims, byte_strides, entry.lo[i], entry.bytes[i]);
    if (!made) return false;
    t = std::move(*made);
  }
  static_cast<CallStorage*>(t.storage().get())->bind(data + entry.lo[i], entry.bytes[i]);
  return true;
}

// Runs a served entry on the probed arrays; the result, or null (no Python error set)
// when anything fails.
PyObject* run_entry(Engine& e, CallEntry& entry, const Probe& p) {
  auto& api = Api::get();
  const size_t n = p.n;
  const einsum::EinsumPlan& plan = *entry.plan;
  const Shape& out_shape = plan.output_shape();
  const int out_rank = static_cast<int>(out_shape.size());
  const bool row_major = plan.operand_order() == einsum::OperandOrder::kRowMajor;
  // numpy's result in the order the plan writes in place: Fortran order, or C order for a
  // row-major plan (Note [Row-major operands] in einsum.cc).
  Py_intptr_t out_dims[kMaxRank];
  for (int d = 0; d < out_rank; ++d) out_dims[d] = static_cast<Py_intptr_t>(out_shape[static_cast<size_t>(d)]);
  PyObject* descr = api.PyArray_DescrFromType_(entry.out_type);
  if (descr == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  // (Nonzero flags with no strides and no data: Fortran order; zero: C order.)
  PyObject* out = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, out_rank, out_dims, nullptr, nullptr,
                                            row_major ? 0 : 1, nullptr);
  if (out == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  bool ok = true;
  const int64_t* g = p.geometry.data();
  for (size_t i = 0; i < n && ok; ++i) {
    const auto* a = py::detail::array_proxy(p.arrays[i]);
    const int rank = static_cast<int>(*g++);
    ok = bind_handle(entry, i, (a->flags & Api::NPY_ARRAY_WRITEABLE_) != 0, a->data, rank, g, g + rank);
    g += 2 * rank;
  }
  if (ok) {
    const auto* o = py::detail::array_proxy(out);
    int64_t dims[kMaxRank], strides[kMaxRank];
    for (int d = 0; d < out_rank; ++d) {
      dims[d] = o->dimensions[d];
      strides[d] = o->strides[d];
    }
    ok = bind_handle(entry, n, true, o->data, out_rank, dims, strides);
  }
  if (ok) {
    // Note [Python fast path]: inline, or with the GIL released on the engine's threads;
    // the arrays stay alive (the caller's arguments and `out`), and the entry is held
    // through the cache's flag, so no other call touches it meanwhile.
    const std::span<const Tensor> operands(entry.handles.data(), n);
    ok = run_plan_body(e, plan, [&](const cpu::CpuExecutionContext& ctx) -> Result<void> {
           return plan.execute_into(ctx, operands, entry.handles[n], entry.workspace, e.engine->pool(0));
         }).has_value();
  }
  if (!ok) {
    Py_DECREF(out);
    return nullptr;
  }
  return out;
}

// The cached form of a call, or null (no Python error set) for the Python path.
PyObject* try_cached(EntryState& st, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Probe p;
  PyObject* engine_obj = nullptr;
  if (!probe_call(st, args, nargs, kwnames, p, engine_obj)) return nullptr;
  Engine* e = resolve_engine(st, engine_obj);
  if (e == nullptr) return nullptr;
  CallCache& cache = *e->calls;
  if (!cache.try_enter()) return nullptr;
  CallEntry* entry = cache.find(p);
  if (entry == nullptr) {
    cache.leave();  // planning may release the GIL
    auto made = make_entry(*e, p);
    if (!made || !cache.try_enter()) return nullptr;
    entry = cache.insert(std::move(made));
  }
  PyObject* out = nullptr;
  if (entry->served) {
    try {
      out = run_entry(*e, *entry, p);
      if (out != nullptr) cache.count_served();
    } catch (...) {
      PyErr_Clear();
      out = nullptr;
    }
  }
  cache.leave();
  if (out != nullptr && py::detail::array_proxy(out)->nd == 0) {
    PyObject* scalar = PyObject_GetItem(out, st.empty_tuple);  // numpy returns a scalar for a scalar result
    Py_DECREF(out);
    if (scalar == nullptr) PyErr_Clear();
    return scalar;
  }
  return out;
}

PyObject* einsum_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  auto* st = static_cast<EntryState*>(PyCapsule_GetPointer(self, nullptr));
  if (st == nullptr) return nullptr;
  if (PyObject* r = try_cached(*st, args, PyVectorcall_NARGS(nargsf), kwnames)) return r;
  return PyObject_Vectorcall(st->general, args, nargsf, kwnames);
}

}  // namespace

void bind_einsum_entry(py::module_& m) {
  m.def(
      "make_einsum",
      [](py::object general, py::object default_engine, const std::string& signature, const std::string& doc) {
        auto st = std::make_unique<EntryState>();
        st->general = general.release().ptr();
        st->default_engine_fn = default_engine.release().ptr();
        st->kw_optimize = PyUnicode_InternFromString("optimize");
        st->kw_out = PyUnicode_InternFromString("out");
        st->kw_threads = PyUnicode_InternFromString("threads");
        st->kw_engine = PyUnicode_InternFromString("engine");
        st->empty_tuple = PyTuple_New(0);
        if (!st->kw_optimize || !st->kw_out || !st->kw_threads || !st->kw_engine || !st->empty_tuple) {
          throw py::error_already_set();
        }
        st->doc = "einsum" + signature + "\n--\n\n" + doc;
        st->def.ml_name = "einsum";
        st->def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&einsum_entry));
        st->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
        st->def.ml_doc = st->doc.c_str();
        PyObject* cap = PyCapsule_New(st.get(), nullptr, [](PyObject* c) {
          delete static_cast<EntryState*>(PyCapsule_GetPointer(c, nullptr));
        });
        if (cap == nullptr) throw py::error_already_set();
        EntryState* raw = st.release();
        auto capsule = py::reinterpret_steal<py::object>(cap);
        py::str module_name("tenferro");
        PyObject* fn = PyCFunction_NewEx(&raw->def, capsule.ptr(), module_name.ptr());
        if (fn == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
      },
      py::arg("general"), py::arg("default_engine"), py::arg("signature"), py::arg("doc"));
}

}  // namespace tenferro::python
