#pragma once
// numpy <-> tenferro conversions without copies, and tenferro::Error -> Python exception
// (Note [Zero-copy interop] in convert.cc).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "tenferro/core/error.h"
#include "tenferro/tensor/storage.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::python {

namespace py = pybind11;

/// A tenferro::Error on its way to Python; the registered translator raises the
/// tenferro._errors class for its code (a ValueError/TypeError/... subclass).
struct PyError {
  std::string code, stage, op, message;
};
/// Throws PyError for `e`.
[[noreturn]] void raise(const Error& e);
/// The value of `r`, or raise(r.error()).
template <class T>
T unwrap(Result<T> r) {
  if (!r) raise(r.error());
  return std::move(*r);
}
inline void unwrap(Result<void> r) {
  if (!r) raise(r.error());
}
/// Installs the translator of PyError (once, at module import).
void register_error_translator();

/// A Python integer (or an object with __index__) as int64, nullopt when it does not fit;
/// TypeError naming `what` when it is no integer.
std::optional<int64_t> int64_of(py::handle h, const char* what);
/// int64_of, with a ValueError naming `what` when it does not fit (pybind's own cast says
/// only "Unable to cast Python instance").
int64_t int_arg(py::handle h, const char* what);
/// Whether `h` is an integer for indexing and axes: a Python int or anything with
/// __index__ (numpy's integer scalars), but not a bool (numpy gives bools other meanings).
inline bool is_integer(py::handle h) { return PyIndex_Check(h.ptr()) != 0 && !PyBool_Check(h.ptr()); }

/// Storage over a numpy array's bytes holding a reference to the array (one allocation
/// with its control block via make_shared). The reference is dropped with the GIL held,
/// whichever thread releases the storage.
class NumpyStorage final : public Storage {
 public:
  NumpyStorage(void* data, int64_t byte_size, bool writable, PyObject* array) noexcept
      : Storage(data, byte_size, StorageKind::kForeign, writable), array_(array) {
    Py_INCREF(array_);
  }
  ~NumpyStorage() override {
    py::gil_scoped_acquire gil;
    Py_DECREF(array_);
  }

 private:
  PyObject* array_;
};

/// The tenferro dtype of numpy's (kind, item size), or nullopt for one tenferro lacks.
/// The one table of supported numpy dtypes (dtype_of, the einsum fast paths).
std::optional<DType> dtype_of_kind(char kind, int64_t item_size) noexcept;

/// Where an array's elements lie relative to its data pointer: `lo` (<= 0) and `bytes`
/// span every byte its strides reach (negative strides included; the caller handles
/// empty arrays); `strides` are the byte strides in elements (exact multiples of `item`,
/// which the caller checks).
struct ArraySpan {
  Shape shape;
  Strides strides;
  int64_t lo = 0, bytes = 0;
};
ArraySpan array_span(int64_t rank, const int64_t* dims, const int64_t* byte_strides, int64_t item);

/// The tenferro dtype of a numpy dtype; TypeError for unsupported ones (float16, object,
/// strings, structured, non-native byte order).
DType dtype_of(const py::dtype& dt);
/// A tensor sharing `array`'s memory (any strides, negative included); the array is
/// kept alive by the tensor's storage. Read-only arrays give read-only storage.
/// TypeError (dtype) / ValueError (strides not a multiple of the item size, misaligned).
Tensor from_numpy(const py::array& array);
/// numpy's type number of a tenferro dtype.
int numpy_type(DType d);
/// The numpy dtype of a tenferro dtype.
py::dtype numpy_dtype(DType d);
/// An array sharing `tensor`'s memory (its layout as strides); the tensor's storage is
/// kept alive by the array. Read-only storage gives a read-only array.
py::array to_numpy(const Tensor& tensor);

/// A DLPack capsule ("dltensor", DLManagedTensor) over `tensor`'s memory (no copy; the
/// storage stays alive until the consumer calls the deleter, or the unconsumed capsule
/// dies). For `__dlpack__`.
py::capsule to_dlpack(const Tensor& tensor);

}  // namespace tenferro::python
