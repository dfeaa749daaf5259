#include "tenferro/tensor/npy.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tenferro {

namespace {

std::string s(int64_t v) { return std::to_string(v); }
Error perr(std::string message) { return usage_error(ErrorCode::kParse, "npy", std::move(message)); }

constexpr char kMagic[] = "\x93NUMPY";

struct Header {
  DType dtype = DType::kF64;
  bool swap = false;
  bool fortran = false;
  Shape shape;
};

// Parses the header dictionary: {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
Result<Header> parse_header(std::string_view h) {
  Header out;
  size_t pos = 0;
  auto skip = [&] {
    while (pos < h.size() && (h[pos] == ' ' || h[pos] == '\n' || h[pos] == '\t' || h[pos] == '\r')) ++pos;
  };
  auto expect = [&](char c) -> Result<void> {
    skip();
    if (pos >= h.size() || h[pos] != c) return perr(std::string("header: expected '") + c + "' at offset " + s(static_cast<int64_t>(pos)));
    ++pos;
    return ok();
  };
  auto string_lit = [&]() -> Result<std::string> {
    skip();
    if (pos >= h.size() || (h[pos] != '\'' && h[pos] != '"')) return perr("header: expected a string at offset " + s(static_cast<int64_t>(pos)));
    const char q = h[pos++];
    const size_t end = h.find(q, pos);
    if (end == std::string_view::npos) return perr("header: unterminated string");
    std::string v(h.substr(pos, end - pos));
    pos = end + 1;
    return v;
  };
  TENFERRO_TRY_VOID(expect('{'));
  bool have_descr = false, have_order = false, have_shape = false;
  for (;;) {
    skip();
    if (pos < h.size() && h[pos] == '}') {
      ++pos;
      break;
    }
    TENFERRO_TRY(std::string key, string_lit());
    TENFERRO_TRY_VOID(expect(':'));
    skip();
    if (key == "descr") {
      TENFERRO_TRY(std::string d, string_lit());
      if (d.size() < 3) return usage_error(ErrorCode::kUnsupported, "npy", "descr '" + d + "' is not supported");
      const char order = d[0];
      const std::string t = d.substr(1);
      if (t == "b1") out.dtype = DType::kBool;
      else if (t == "i4") out.dtype = DType::kI32;
      else if (t == "i8") out.dtype = DType::kI64;
      else if (t == "f4") out.dtype = DType::kF32;
      else if (t == "f8") out.dtype = DType::kF64;
      else if (t == "c8") out.dtype = DType::kC64;
      else if (t == "c16") out.dtype = DType::kC128;
      else return usage_error(ErrorCode::kUnsupported, "npy", "descr '" + d + "' is not supported (bool, i4, i8, f4, f8, c8, c16)");
      if (order != '<' && order != '>' && order != '|' && order != '=') return perr("descr '" + d + "' has an unknown byte order");
      out.swap = order == '>' && out.dtype != DType::kBool;
      have_descr = true;
    } else if (key == "fortran_order") {
      if (h.substr(pos, 4) == "True") {
        out.fortran = true;
        pos += 4;
      } else if (h.substr(pos, 5) == "False") {
        out.fortran = false;
        pos += 5;
      } else {
        return perr("header: fortran_order is not True or False");
      }
      have_order = true;
    } else if (key == "shape") {
      TENFERRO_TRY_VOID(expect('('));
      for (;;) {
        skip();
        if (pos < h.size() && h[pos] == ')') {
          ++pos;
          break;
        }
        if (pos >= h.size() || h[pos] < '0' || h[pos] > '9') return perr("header: bad shape entry at offset " + s(static_cast<int64_t>(pos)));
        int64_t v = 0;
        while (pos < h.size() && h[pos] >= '0' && h[pos] <= '9') {
          if (v > (int64_t{1} << 58)) return usage_error(ErrorCode::kInvalidShape, "npy", "shape extent overflows");
          v = v * 10 + (h[pos++] - '0');
        }
        out.shape.push_back(v);
        skip();
        if (pos < h.size() && h[pos] == ',') ++pos;
      }
      have_shape = true;
    } else {
      return perr("header: unknown key '" + key + "'");
    }
    skip();
    if (pos < h.size() && h[pos] == ',') ++pos;
  }
  if (!have_descr || !have_order || !have_shape) return perr("header lacks descr, fortran_order or shape");
  return out;
}

uint32_t read_le(std::string_view b, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

}  // namespace

Result<Tensor> npy_decode(std::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kMagic, 6)) return perr("not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = read_le(bytes, 8, 2);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return perr("truncated header length");
    header_len = read_le(bytes, 8, 4);
    header_at = 12;
  } else {
    return perr("unsupported format version " + s(major));
  }
  if (bytes.size() < header_at + header_len) return perr("truncated header");
  TENFERRO_TRY(Header h, parse_header(bytes.substr(header_at, header_len)));
  TENFERRO_TRY_VOID(validate_shape(h.shape, "npy"));
  TENFERRO_TRY(int64_t nbytes, checked_byte_count(h.shape, h.dtype, "npy"));
  const size_t data_at = header_at + header_len;
  if (bytes.size() - data_at < static_cast<size_t>(nbytes)) {
    return perr("truncated data: " + s(static_cast<int64_t>(bytes.size() - data_at)) + " bytes for " + s(nbytes));
  }
  if (bytes.size() - data_at > static_cast<size_t>(nbytes)) return perr("extra bytes after the data");
  // Fortran order: the shape as given, column-major. C order: the reversed shape
  // column-major, then the axes reversed (a row-major view).
  Shape stored = h.shape;
  if (!h.fortran) std::reverse(stored.begin(), stored.end());
  TENFERRO_TRY(Tensor t, Tensor::uninitialized(h.dtype, stored));
  auto* dst = static_cast<char*>(t.storage()->data());
  if (nbytes > 0) std::memcpy(dst, bytes.data() + data_at, static_cast<size_t>(nbytes));
  if (h.swap) {
    const int64_t width = is_complex(h.dtype) ? dtype_size(h.dtype) / 2 : dtype_size(h.dtype);
    for (int64_t i = 0; i < nbytes; i += width) std::reverse(dst + i, dst + i + width);
  }
  if (h.dtype == DType::kBool) {
    for (int64_t i = 0; i < nbytes; ++i) {
      if (static_cast<unsigned char>(dst[i]) > 1) return perr("bool element " + s(i) + " is not 0 or 1");
    }
  }
  if (h.fortran || h.shape.size() < 2) return t;
  SmallVector<int64_t, 8> rev;
  for (size_t i = h.shape.size(); i-- > 0;) rev.push_back(static_cast<int64_t>(i));
  return t.permute(Dims(rev.span()));
}

Result<std::string> npy_encode(const Tensor& tensor) {
  if (!tensor.defined()) return usage_error(ErrorCode::kInvalidArgument, "npy", "tensor handle is null");
  const char* descr = nullptr;
  switch (tensor.dtype()) {
    case DType::kBool: descr = "|b1"; break;
    case DType::kI32: descr = "<i4"; break;
    case DType::kI64: descr = "<i8"; break;
    case DType::kF32: descr = "<f4"; break;
    case DType::kF64: descr = "<f8"; break;
    case DType::kC64: descr = "<c8"; break;
    case DType::kC128: descr = "<c16"; break;
  }
  if constexpr (std::endian::native != std::endian::little) {
    return usage_error(ErrorCode::kUnsupported, "npy", "writing needs a little-endian host");
  }
  Tensor src = tensor;
  bool fortran = true;
  if (is_col_major_contiguous(src.layout())) {
    fortran = true;
  } else if (is_row_major_contiguous(src.layout())) {
    fortran = false;
  } else {
    TENFERRO_TRY(src, tensor.to_col_major());
  }
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': (";
  for (size_t i = 0; i < src.shape().size(); ++i) {
    dict.append(s(src.shape()[i]));
    if (src.shape().size() == 1 || i + 1 < src.shape().size()) dict.append(",");
    if (i + 1 < src.shape().size()) dict.append(" ");
  }
  dict.append("), }");
  // Pad so that the data starts at a multiple of 64 bytes; the header ends with '\n'.
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  int major = 1;
  if (total + 64 > 65535 + 10) {
    major = 2;
    prefix = 12;
    total = prefix + dict.size() + 1;
  }
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string out(kMagic, 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const size_t hl = dict.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out.push_back(static_cast<char>((hl >> (8 * i)) & 0xFF));
  out.append(dict);
  const int64_t nbytes = src.numel() * src.element_size();
  const char* base = static_cast<const char*>(src.storage()->data()) + src.offset() * src.element_size();
  if (nbytes > 0) out.append(base, static_cast<size_t>(nbytes));
  return out;
}

// Note [Bounded npy reads]: a file is read as far as its header says and no further: the
// prefix, the header, then the data bytes the header's shape and dtype declare, then one
// probe byte (extra bytes are an error). A device or pipe that never ends (/dev/zero,
// /dev/urandom) or a stream with a huge tail is then a parse error after a few bytes, or a
// typed allocation error, instead of being read until memory runs out.
Result<Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(ErrorCode::kIo, "npy", "cannot open '" + path + "': " + std::strerror(errno));
  std::string buf;
  // Appends up to `n` more bytes (fewer at the end of the input).
  const auto read_more = [&](size_t n) {
    constexpr size_t kChunk = size_t{64} << 20;
    while (n > 0 && in) {
      const size_t step = std::min(n, kChunk), old = buf.size();
      buf.resize(old + step);
      in.read(buf.data() + old, static_cast<std::streamsize>(step));
      buf.resize(old + static_cast<size_t>(in.gcount()));
      n -= step;
    }
  };
  try {
    read_more(12);
    const bool magic = buf.size() >= 10 && std::string_view(buf).substr(0, 6) == std::string_view(kMagic, 6);
    const int major = buf.size() > 6 ? static_cast<unsigned char>(buf[6]) : 0;
    if (magic && (major == 1 || ((major == 2 || major == 3) && buf.size() >= 12))) {
      const size_t header_at = major == 1 ? 10 : 12;
      const size_t header_end = header_at + read_le(buf, 8, major == 1 ? 2 : 4);
      constexpr size_t kMaxHeader = size_t{1} << 24;  // numpy writes headers of a few KiB
      if (header_end > buf.size() && header_end <= kMaxHeader) read_more(header_end - buf.size());
      if (buf.size() >= header_end) {
        const Result<Header> h = parse_header(std::string_view(buf).substr(header_at, header_end - header_at));
        const Result<int64_t> nbytes = h ? checked_byte_count(h->shape, h->dtype, "npy") : Result<int64_t>(h.error());
        if (nbytes && *nbytes >= 0) {
          // A regular file's size bounds what there is to read (a header that declares more
          // is reported as truncated, without reserving memory for it).
          struct stat st {};
          const bool regular = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
          const size_t want = header_end + static_cast<size_t>(*nbytes);
          if (regular && static_cast<size_t>(st.st_size) >= want) buf.reserve(want + 1);
          if (want > buf.size()) read_more(want - buf.size());
        }
      }
    }
    read_more(1);  // the probe: a byte past the declared end is reported as extra
  } catch (const std::bad_alloc&) {
    return usage_error(ErrorCode::kAllocationFailed, "npy", "'" + path + "': not enough memory to read it");
  }
  if (in.bad()) return usage_error(ErrorCode::kIo, "npy", "cannot read '" + path + "'");
  auto r = npy_decode(buf);
  if (!r) return Error(r.error().stage(), r.error().code(), "npy", "'" + path + "': " + r.error().message());
  return r;
}

// Note [Atomic npy writes]: each file goes to a temporary created with mkstemp beside
// its target (O_CREAT|O_EXCL: an existing file or link there is never opened or
// followed), is written fully, fsync'ed and closed, and is then renamed over the target
// (rename replaces a link at the target, not the file it points to). Temporaries get
// mode 0644. Several files are renamed only after all were written. A target that
// exists and is a character device or a FIFO (`-o /dev/null`, `-o /dev/stdout`, a
// pipe) is written directly instead, after every temporary was written and before the
// renames: renaming over it would replace the device node with a regular file (as root,
// /dev/null itself); a link to one (/dev/stdout) is written through. A target that is
// (or links to) a directory, a block device or a socket is an error before anything is
// written.
namespace {

Error io_error(const std::string& msg) { return usage_error(ErrorCode::kIo, "write_files", msg); }

enum class Target { kRename, kDirect };

// How `path` is written: through a renamed temporary (absent, a regular file, a link to
// one or a dangling link: the link is replaced), or directly (a character device or FIFO,
// or a link to one, e.g. /dev/stdout); an error for the rest.
Result<Target> classify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Target::kRename;  // absent, dangling (or unreadable: reported later)
  if (S_ISREG(st.st_mode)) return Target::kRename;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return Target::kDirect;
  const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISBLK(st.st_mode) ? "a block device" : "a socket";
  return io_error("cannot write '" + path + "': it is " + kind);
}

// Writes all of `bytes` to `fd`.
bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(w);
  }
  return true;
}

Result<void> write_direct(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open '" + path + "': " + std::strerror(errno));
  if (!write_all(fd, bytes)) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return io_error("cannot write '" + path + "': " + why);
  }
  if (::close(fd) != 0) return io_error("cannot close '" + path + "': " + std::strerror(errno));
  return ok();
}

Result<std::string> write_temporary(const std::string& path, const std::string& bytes) {
  std::string name = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return io_error("cannot create a temporary file beside '" + path + "': " + std::strerror(errno));
  const auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(name.c_str());
    return io_error("cannot " + what + " '" + name + "': " + why);
  };
  if (!write_all(fd, bytes)) return fail("write");
  if (::fchmod(fd, 0644) != 0) return fail("set the mode of");
  if (::fsync(fd) != 0) return fail("flush");
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(name.c_str());
    return io_error("cannot close '" + name + "': " + why);
  }
  return name;
}

}  // namespace

Result<void> write_npy_files(std::span<const std::string> paths, std::span<const Tensor> tensors) {
  if (paths.size() != tensors.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "npy",
                       std::to_string(paths.size()) + " paths for " + std::to_string(tensors.size()) + " tensors");
  }
  // The file errors of write_files, reported as this function's.
  const auto as_npy = [](const Error& e) { return usage_error(e.code(), "npy", e.message()); };
  std::vector<std::string> bytes;
  for (size_t i = 0; i < paths.size(); ++i) {
    // A directory target fails before anything is encoded.
    if (auto c = classify(paths[i]); !c) return as_npy(c.error());
    TENFERRO_TRY(std::string b, npy_encode(tensors[i]));
    bytes.push_back(std::move(b));
  }
  if (auto w = write_files(paths, bytes); !w) return as_npy(w.error());
  return ok();
}

Result<void> write_files(std::span<const std::string> paths, std::span<const std::string> bytes) {
  if (paths.size() != bytes.size()) {
    return usage_error(ErrorCode::kInvalidArgument, "write_files",
                       std::to_string(paths.size()) + " paths for " + std::to_string(bytes.size()) + " contents");
  }
  std::vector<Target> targets;
  for (size_t i = 0; i < paths.size(); ++i) {
    TENFERRO_TRY(Target target, classify(paths[i]));
    targets.push_back(target);
  }
  // temps[i] is empty for direct targets.
  std::vector<std::string> temps(paths.size());
  const auto discard = [&](size_t from) {
    for (size_t k = from; k < temps.size(); ++k) {
      if (!temps[k].empty()) ::unlink(temps[k].c_str());
    }
  };
  for (size_t i = 0; i < paths.size(); ++i) {
    if (targets[i] == Target::kDirect) continue;
    Result<std::string> t = write_temporary(paths[i], bytes[i]);
    if (!t) {
      discard(0);
      return t.error();
    }
    temps[i] = std::move(*t);
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (targets[i] != Target::kDirect) continue;
    if (Result<void> r = write_direct(paths[i], bytes[i]); !r) {
      discard(0);
      return r.error();
    }
  }
  size_t placed = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (temps[i].empty()) continue;
    if (std::rename(temps[i].c_str(), paths[i].c_str()) != 0) {
      const std::string why = std::strerror(errno);
      discard(i);
      return io_error("cannot rename '" + temps[i] + "' to '" + paths[i] + "': " + why +
                      (placed > 0 ? " (" + std::to_string(placed) + " earlier files were already in place)" : ""));
    }
    ++placed;
  }
  return ok();
}

Result<void> write_npy(const std::string& path, const Tensor& tensor) {
  return write_npy_files(std::span<const std::string>(&path, 1), std::span<const Tensor>(&tensor, 1));
}

}  // namespace tenferro
