#pragma once
// Test-only: a fresh temporary directory per test process, for tests that write files.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace tenferro::test_support {

/// A new directory under gtest's TempDir() named `prefix` + six random characters
/// (mkdtemp: ctest runs the tests of one file in parallel processes, and a name built
/// from the pid could be a stale directory of an earlier process with that pid), with a
/// trailing '/'; removed with its contents when the object is destroyed.
class TempDirectory {
 public:
  explicit TempDirectory(const std::string& prefix) {
    std::string pattern = ::testing::TempDir() + prefix + "XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern + "/";
  }
  ~TempDirectory() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tenferro::test_support
