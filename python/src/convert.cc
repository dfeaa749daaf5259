#include "convert.h"

#include <cstdint>
#include <memory>
#include <type_traits>

#include "tenferro/tensor/storage.h"

namespace tenferro::python {

// Note [Zero-copy interop]: a numpy array becomes a tensor over the same bytes: a
// foreign storage spanning every element the array's strides reach (negative strides
// included: the storage starts at the lowest address and the layout's offset points
// back at the array's first element), holding a reference to the array that is dropped
// with the GIL held. The other way, an array is built over the tensor's storage with the
// tensor's strides in bytes, its base a capsule owning a tensor handle, so the buffer
// lives as long as either side. Nothing is copied in either direction; the Python layer
// copies only what tenferro cannot address (non-native byte order, misaligned data) and
// says so in its documentation.

void raise(const Error& e) {
  throw PyError{std::string(error_code_name(e.code())), std::string(error_stage_name(e.stage())), std::string(e.op()),
                e.message()};
}

void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PyError& e) {
      py::object cls = py::module_::import("tenferro._errors").attr("error_class")(e.code);
      py::object exc = cls(e.op.empty() ? e.message : e.op + ": " + e.message, e.code, e.stage, e.op);
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
}

std::optional<DType> dtype_of_kind(char kind, int64_t size) noexcept {
  switch (kind) {
    case 'b': return size == 1 ? std::optional(DType::kBool) : std::nullopt;
    case 'i': return size == 4 ? std::optional(DType::kI32) : size == 8 ? std::optional(DType::kI64) : std::nullopt;
    case 'f': return size == 4 ? std::optional(DType::kF32) : size == 8 ? std::optional(DType::kF64) : std::nullopt;
    case 'c': return size == 8 ? std::optional(DType::kC64) : size == 16 ? std::optional(DType::kC128) : std::nullopt;
    default: return std::nullopt;
  }
}

ArraySpan array_span(int64_t rank, const int64_t* dims, const int64_t* byte_strides, int64_t item) {
  ArraySpan a;
  int64_t hi = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = dims[d], st = byte_strides[d];
    a.shape.push_back(n);
    a.strides.push_back(st / item);
    if (n > 1) (st < 0 ? a.lo : hi) += st * (n - 1);
  }
  a.bytes = hi - a.lo + item;
  return a;
}

DType dtype_of(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  const char order = dt.byteorder();
  if (order == '>')
    throw py::type_error("tenferro: non-native byte order (big-endian " + std::string(py::str(py::handle(dt))) + ")");
  if (auto d = dtype_of_kind(kind, static_cast<int64_t>(size))) return *d;
  throw py::type_error("tenferro: unsupported dtype " + std::string(py::str(py::handle(dt))) +
                       " (supported: bool, int32, int64, float32, float64, complex64, complex128)");
}

Tensor from_numpy(const py::array& array) {
  const DType dtype = dtype_of(array.dtype());
  const auto item = static_cast<int64_t>(array.itemsize());
  const auto rank = static_cast<int64_t>(array.ndim());
  static_assert(std::is_same_v<py::ssize_t, int64_t>, "numpy's extents and strides are read in place");
  const int64_t* dims = array.shape();
  const int64_t* byte_strides = array.strides();
  bool empty = false;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t st = byte_strides[d];
    if (st % item != 0) {
      throw py::value_error("tenferro: array strides must be multiples of the item size (axis " + std::to_string(d) +
                            " has stride " + std::to_string(st) + " bytes for " + std::to_string(item) +
                            "-byte items)");
    }
    if (dims[d] == 0) empty = true;
  }
  ArraySpan span = array_span(rank, dims, byte_strides, item);
  auto* base = static_cast<char*>(const_cast<void*>(array.data()));
  const int64_t lo = empty ? 0 : span.lo;
  auto storage = std::make_shared<NumpyStorage>(base + lo, empty ? 0 : span.bytes, array.writeable(), array.ptr());
  Layout layout{std::move(span.shape), std::move(span.strides), -lo / item};
  if (empty) layout.strides = Strides(static_cast<size_t>(rank), 0);
  return unwrap(Tensor::from_storage(dtype, std::move(storage), std::move(layout)));
}

int numpy_type(DType d) {
  using api = py::detail::npy_api;
  switch (d) {
    case DType::kBool: return api::NPY_BOOL_;
    case DType::kI32: return api::NPY_INT32_;
    case DType::kI64: return api::NPY_INT64_;
    case DType::kF32: return api::NPY_FLOAT_;
    case DType::kF64: return api::NPY_DOUBLE_;
    case DType::kC64: return api::NPY_CFLOAT_;
    case DType::kC128: return api::NPY_CDOUBLE_;
  }
  throw py::type_error("tenferro: no numpy dtype for " + std::string(dtype_name(d)));
}

py::dtype numpy_dtype(DType d) { return py::dtype(numpy_type(d)); }

py::array to_numpy(const Tensor& tensor) {
  // numpy's C API directly: shape and strides from the stack, one capsule as the base.
  auto& api = py::detail::npy_api::get();
  const auto rank = tensor.shape().size();
  if (rank > 64) throw py::value_error("tenferro: numpy arrays have at most 64 dimensions");
  const int64_t item = dtype_size(tensor.dtype());
  Py_intptr_t shape[64], strides[64];
  for (size_t d = 0; d < rank; ++d) {
    shape[d] = static_cast<Py_intptr_t>(tensor.shape()[d]);
    strides[d] = static_cast<Py_intptr_t>(tensor.strides()[d] * item);
  }
  auto* data = static_cast<char*>(tensor.storage()->data()) + tensor.offset() * item;
  const int flags = tensor.storage()->writable() ? py::detail::npy_api::NPY_ARRAY_WRITEABLE_ : 0;
  PyObject* descr = api.PyArray_DescrFromType_(numpy_type(tensor.dtype()));
  if (descr == nullptr) throw py::error_already_set();
  auto arr = py::reinterpret_steal<py::object>(api.PyArray_NewFromDescr_(
      api.PyArray_Type_, descr, static_cast<int>(rank), shape, strides, data, flags, nullptr));
  if (!arr) throw py::error_already_set();
  py::capsule owner(new Tensor(tensor), [](void* p) { delete static_cast<Tensor*>(p); });
  if (api.PyArray_SetBaseObject_(arr.ptr(), owner.release().ptr()) != 0) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(arr.release());
}

// Note [DLPack export]: the structures of the DLPack exchange format (dlpack.h, ABI of
// the "dltensor" capsule protocol that numpy.from_dlpack and torch.from_dlpack read),
// declared here because Debian ships no dlpack header. Strides are in elements.
namespace {
struct DLDevice {
  int32_t device_type;  // 1: CPU
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 5 complex, 6 bool
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// Owns what the exported DLTensor points into: the tensor handle (its storage) and the
// shape/stride arrays.
struct DLHolder {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

void dl_delete(DLManagedTensor* self) { delete static_cast<DLHolder*>(self->manager_ctx); }

DLDataType dl_dtype(DType d) {
  switch (d) {
    case DType::kBool: return {6, 8, 1};
    case DType::kI32: return {0, 32, 1};
    case DType::kI64: return {0, 64, 1};
    case DType::kF32: return {2, 32, 1};
    case DType::kF64: return {2, 64, 1};
    case DType::kC64: return {5, 64, 1};
    case DType::kC128: return {5, 128, 1};
  }
  return {0, 0, 0};
}
}  // namespace

py::capsule to_dlpack(const Tensor& tensor) {
  auto holder = std::make_unique<DLHolder>();
  holder->tensor = tensor;
  holder->shape.assign(tensor.shape().begin(), tensor.shape().end());
  holder->strides.assign(tensor.strides().begin(), tensor.strides().end());
  DLTensor& dl = holder->managed.dl_tensor;
  dl.data = tensor.storage()->data();
  dl.device = {1, 0};
  dl.ndim = static_cast<int32_t>(tensor.rank());
  dl.dtype = dl_dtype(tensor.dtype());
  dl.shape = holder->shape.data();
  dl.strides = holder->strides.data();
  dl.byte_offset = static_cast<uint64_t>(tensor.offset() * dtype_size(tensor.dtype()));
  holder->managed.manager_ctx = holder.get();
  holder->managed.deleter = &dl_delete;
  DLManagedTensor* managed = &holder.release()->managed;
  // An unconsumed capsule frees the export itself; a consumer renames it to
  // "used_dltensor" and calls the deleter when done.
  PyObject* cap = PyCapsule_New(managed, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (cap == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

std::optional<int64_t> int64_of(py::handle h, const char* what) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
  if (!i) {
    PyErr_Clear();
    throw py::type_error(std::string("tenferro: ") + what + " must be an integer, got " +
                         std::string(py::str(py::type::of(h).attr("__name__"))));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0) return std::nullopt;
  return static_cast<int64_t>(v);
}

int64_t int_arg(py::handle h, const char* what) {
  const std::optional<int64_t> v = int64_of(h, what);
  if (!v) {
    throw py::value_error(std::string("tenferro: ") + what + " " + std::string(py::str(h)) + " does not fit in int64");
  }
  return *v;
}

}  // namespace tenferro::python
