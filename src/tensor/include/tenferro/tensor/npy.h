#pragma once
/// \file
/// numpy .npy files (format versions 1.0, 2.0 and 3.0): read into and write from tensors.

#include <span>
#include <string>
#include <string_view>

#include "tenferro/core/result.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro {

/// Decodes the bytes of a .npy file. Supported element types: bool ('|b1'), int32,
/// int64, float32, float64, complex64, complex128, either byte order (big-endian data is
/// swapped). Fortran-order data becomes a column-major tensor; C-order data a tensor
/// whose layout is row-major (a permuted view of one buffer, no reordering copy). The
/// bytes are copied once. Errors (kParse unless noted): bad magic, unknown version,
/// truncated header or data, a header that is not the expected dictionary, an
/// unsupported descr (kUnsupported), extra data (kParse), bad shape (kInvalidShape).
Result<Tensor> npy_decode(std::string_view bytes);

/// Encodes a tensor as .npy bytes (version 1.0, or 2.0 when the header needs it):
/// Fortran order for column-major-contiguous tensors, C order for row-major-contiguous
/// ones, and a column-major copy otherwise.
Result<std::string> npy_encode(const Tensor& tensor);

/// Reads a .npy file. Errors: kIo (with the path and the system's reason) and those of
/// npy_decode.
Result<Tensor> read_npy(const std::string& path);
/// Writes a .npy file (Note [Atomic npy writes]: a unique temporary in the same
/// directory, flushed to disk, then renamed over `path`; a failed write leaves no partial
/// file and never writes through a link). An existing character device or FIFO at `path`
/// (/dev/null, /dev/stdout, a pipe) is written directly, never replaced. Errors: kIo
/// (also for a directory, block device or socket at `path`), those of npy_encode.
Result<void> write_npy(const std::string& path, const Tensor& tensor);
/// Writes several .npy files all-or-nothing: every tensor is encoded and written to its
/// temporary first; the targets are renamed into place only when all were written, and
/// on any error before that no target is touched and the temporaries are removed
/// (character devices and FIFOs, written directly after the temporaries, cannot be
/// taken back).
/// Errors: kInvalidArgument (count mismatch), kIo, those of npy_encode.
Result<void> write_npy_files(std::span<const std::string> paths, std::span<const Tensor> tensors);
/// Writes byte strings to files with the same all-or-nothing rules as write_npy_files
/// (unique temporaries beside the targets, flushed, renamed only when all were written;
/// character devices and FIFOs written directly). Errors: kInvalidArgument (count
/// mismatch), kIo.
Result<void> write_files(std::span<const std::string> paths, std::span<const std::string> bytes);

}  // namespace tenferro
