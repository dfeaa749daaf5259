// .npy encode/decode: round trips for every dtype and order, hand-built files of every
// format version (the format spec as oracle), big-endian data, and malformed files.

#include "tenferro/tensor/npy.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tenferro {
namespace {

// A .npy file built by hand: magic, version, header length, header (padded), data.
std::string make_npy(int major, const std::string& dict, const std::string& data) {
  std::string h = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out.push_back(static_cast<char>((h.size() >> (8 * i)) & 0xFF));
  return out + h + data;
}

template <class T>
std::string raw(std::initializer_list<T> v) {
  std::string out;
  for (const T& x : v) out.append(reinterpret_cast<const char*>(&x), sizeof(T));
  return out;
}

TEST(Npy, DecodesCAndFortranOrderOfEveryVersion) {
  // [[1, 2, 3], [4, 5, 6]] in C order and in Fortran order.
  const std::string c_data = raw<double>({1, 2, 3, 4, 5, 6});
  const std::string f_data = raw<double>({1, 4, 2, 5, 3, 6});
  for (int major : {1, 2, 3}) {
    Tensor c = npy_decode(make_npy(major, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", c_data)).value();
    Tensor f = npy_decode(make_npy(major, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f_data)).value();
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(c.get<double>({i, j}).value(), static_cast<double>(1 + 3 * i + j));
        EXPECT_EQ(f.get<double>({i, j}).value(), static_cast<double>(1 + 3 * i + j));
      }
  }
  // Big-endian int32 and a scalar.
  std::string be;
  for (int32_t v : {1, -2}) {
    const auto u = static_cast<uint32_t>(v);
    for (int k = 3; k >= 0; --k) be.push_back(static_cast<char>((u >> (8 * k)) & 0xFF));
  }
  Tensor b = npy_decode(make_npy(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be)).value();
  EXPECT_EQ(b.get<int32_t>({1}).value(), -2);
  Tensor sc = npy_decode(make_npy(1, "{'descr': '<c16', 'fortran_order': False, 'shape': (), }",
                                  raw<c128>({c128(1.5, -2)})))
                  .value();
  EXPECT_EQ(sc.rank(), 0);
  EXPECT_EQ(sc.get<c128>({}).value(), c128(1.5, -2));
}

TEST(Npy, RoundTripsEveryDtypeAndLayout) {
  for (DType d : {DType::kBool, DType::kI32, DType::kI64, DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
    Tensor t = d == DType::kBool ? Tensor::ones(d, {3, 4, 2}).value()
               : is_integral(d) ? Tensor::arange(d, 24).value().reshape({3, 4, 2}).value()
                                : Tensor::random_normal(d, {3, 4, 2}, 5).value();
    for (int layout = 0; layout < 3; ++layout) {
      Tensor v = layout == 0 ? t : layout == 1 ? t.permute({2, 1, 0}).value().contiguous().value().permute({2, 1, 0}).value()
                                              : t.permute({1, 0, 2}).value();
      const std::string bytes = npy_encode(v).value();
      EXPECT_EQ(bytes.find("\n") % 64, 63u) << "data starts on a 64-byte boundary";
      Tensor back = npy_decode(bytes).value();
      ASSERT_EQ(back.shape(), v.shape());
      ASSERT_EQ(back.dtype(), d);
      for (int64_t i = 0; i < v.dim(0); ++i)
        for (int64_t j = 0; j < v.dim(1); ++j)
          for (int64_t k = 0; k < v.dim(2); ++k)
            EXPECT_EQ(back.get_as_c128({i, j, k}).value(), v.get_as_c128({i, j, k}).value());
    }
  }
}

TEST(Npy, RejectsMalformedFiles) {
  const std::string ok_dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = raw<double>({1, 2});
  auto code = [](const std::string& bytes) { return npy_decode(bytes).error().code(); };
  EXPECT_EQ(code("not a numpy file"), ErrorCode::kParse);
  std::string v9 = make_npy(1, ok_dict, data);
  v9[6] = 9;
  EXPECT_EQ(code(v9), ErrorCode::kParse);
  EXPECT_EQ(code(make_npy(1, ok_dict, data).substr(0, 20)), ErrorCode::kParse);          // truncated header
  EXPECT_EQ(code(make_npy(1, ok_dict, data.substr(0, 12))), ErrorCode::kParse);          // truncated data
  EXPECT_EQ(code(make_npy(1, ok_dict, data + "xx")), ErrorCode::kParse);                 // extra data
  EXPECT_EQ(code(make_npy(1, "{'descr': '<U8', 'fortran_order': False, 'shape': (2,), }", data)), ErrorCode::kUnsupported);
  EXPECT_EQ(code(make_npy(1, "{'descr': '<f8', 'shape': (2,), }", data)), ErrorCode::kParse);
  EXPECT_EQ(code(make_npy(1, "{'descr': '<f8', 'fortran_order': maybe, 'shape': (2,), }", data)), ErrorCode::kParse);
  EXPECT_EQ(code(make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (x,), }", data)), ErrorCode::kParse);
  EXPECT_EQ(code(make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", std::string(1, '\x07'))),
            ErrorCode::kParse);
}

TEST(Npy, FilesAreWrittenWholeOrNotAtAll) {
  const std::string path = ::testing::TempDir() + "tenferro_npy_test.npy";
  Tensor t = Tensor::random_normal(DType::kF32, {5, 7}, 1).value();
  ASSERT_TRUE(write_npy(path, t).has_value());
  Tensor back = read_npy(path).value();
  EXPECT_EQ(back.get<float>({4, 6}).value(), t.get<float>({4, 6}).value());
  std::remove(path.c_str());
  EXPECT_EQ(read_npy(path).error().code(), ErrorCode::kIo);
  EXPECT_EQ(write_npy("/nonexistent-dir/x.npy", t).error().code(), ErrorCode::kIo);
}

// Several files are written all-or-nothing through unique temporaries (never through a
// link at a fixed temporary name); nothing is left behind.
TEST(Npy, WritesSeveralFilesAllOrNothing) {
  const std::string dir = ::testing::TempDir() + "tenferro_npy_" + std::to_string(::getpid()) + "/";
  std::filesystem::remove_all(dir);  // a stale one of an earlier process with this pid
  std::filesystem::create_directories(dir);
  const Tensor a = Tensor::from_col_major<double>({2}, {1, 2}).value();
  const Tensor b = Tensor::from_col_major<double>({3}, {3, 4, 5}).value();
  const std::vector<Tensor> both{a, b};
  const std::vector<std::string> bad{dir + "a.npy", dir + "no/such/dir/b.npy"};
  auto r = write_npy_files(bad, both);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kIo);
  EXPECT_FALSE(std::filesystem::exists(dir + "a.npy"));
  std::ofstream(dir + "victim") << "keep";
  std::filesystem::create_symlink(dir + "victim", dir + "a.npy.tmp");
  const std::vector<std::string> good{dir + "a.npy", dir + "b.npy"};
  ASSERT_TRUE(write_npy_files(good, both));
  EXPECT_EQ(read_npy(dir + "b.npy").value().get<double>({2}).value(), 5.0);
  EXPECT_EQ(read_npy(dir + "a.npy").value().get<double>({1}).value(), 2.0);
  std::ifstream victim(dir + "victim");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(victim), std::istreambuf_iterator<char>()), "keep");
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 4);  // a.npy, b.npy, victim, the link
  EXPECT_EQ(write_npy_files(good, std::vector<Tensor>{a}).error().code(), ErrorCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

// Note [Bounded npy reads]: endless sources are read only as far as a header allows: bad
// magic after a few bytes of /dev/zero, and a valid file followed by an endless tail
// (through a FIFO) is "extra bytes" after one probe byte, not a read until memory runs out.
TEST(Npy, EndlessSourcesAreReadOnlyAsFarAsTheHeaderSays) {
  const auto zero = read_npy("/dev/zero");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code(), ErrorCode::kParse);
  const std::string dir = ::testing::TempDir() + "tenferro_npy_read_" + std::to_string(::getpid()) + "/";
  std::filesystem::remove_all(dir);  // a stale one of an earlier process with this pid
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Tensor a = Tensor::from_col_major<double>({3}, {1, 2, 3}).value();
  const std::string bytes = npy_encode(a).value();
  std::thread writer([&] {
    // The file, then an endless tail: writing stops only when the reader is gone (reading
    // to the end, as before, would never finish).
    std::signal(SIGPIPE, SIG_IGN);
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    const std::string tail(1 << 16, '\0');
    while (ok) ok = ::write(fd, tail.data(), tail.size()) > 0;
    ::close(fd);
  });
  const auto r = read_npy(fifo);
  writer.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kParse);
  EXPECT_NE(r.error().message().find("extra bytes"), std::string::npos) << r.error().message();
  std::filesystem::remove_all(dir);
}

// Note [Atomic npy writes]: character devices and FIFOs (and links to them) are written
// directly, never replaced by a renamed file (as root that replaced /dev/null); a
// directory is an error before anything is written.
TEST(Npy, DevicesAndPipesAreWrittenNotReplaced) {
  const Tensor a = Tensor::from_col_major<double>({3}, {1, 2, 3}).value();
  ASSERT_TRUE(write_npy("/dev/null", a)) << "writing to /dev/null";
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is still a character device";

  const std::string dir = ::testing::TempDir() + "tenferro_npy_dev_" + std::to_string(::getpid()) + "/";
  std::filesystem::remove_all(dir);  // a stale one of an earlier process with this pid
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "pipe", link = dir + "pipe_link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink(fifo, link);
  for (const std::string& target : {fifo, link}) {
    std::string got;
    std::thread reader([&] {
      std::ifstream in(fifo, std::ios::binary);
      got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    });
    const auto r = write_npy(target, a);
    reader.join();
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(got, npy_encode(a).value()) << target;
    ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    ASSERT_EQ(::lstat(link.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
  }
  // A directory target fails before any file is written (the other target stays absent).
  std::filesystem::create_directories(dir + "sub");
  const std::vector<std::string> paths{dir + "first.npy", dir + "sub"};
  const auto r = write_npy_files(paths, std::vector<Tensor>{a, a});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kIo);
  EXPECT_NE(r.error().message().find("is a directory"), std::string::npos) << r.error().message();
  EXPECT_FALSE(std::filesystem::exists(dir + "first.npy"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 3);  // pipe, pipe_link, sub: no temporaries left
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tenferro
