// End-to-end: `tenferro einsum` on .npy files written by the library, checked against a
// naive contraction; malformed input files and bad options give non-zero exits.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <filesystem>
#include <unistd.h>

#include "tenferro/tensor/npy.h"

namespace tenferro {
namespace {

// A directory of this process's own (ctest runs the tests of this file in parallel).
std::string dir() {
  static const std::string d = [] {
    std::string p = ::testing::TempDir() + "tenferro_cli_" + std::to_string(getpid()) + "/";
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

int run(const std::string& args) {
  const std::string cmd = std::string(TENFERRO_CLI) + " " + args + " > " + dir() + "cli_out.txt 2>&1";
  return std::system(cmd.c_str());
}

std::string output() {
  std::ifstream in(dir() + "cli_out.txt");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(CliEinsum, ContractsNpyFilesEndToEnd) {
  // a[i, j, k], b[k, j, l] (b in C order) -> c[l, i] = sum_{j,k} a b
  Tensor a = Tensor::random_normal(DType::kF64, {3, 4, 5}, 1).value();
  Tensor b = Tensor::random_normal(DType::kF64, {5, 4, 2}, 2).value().permute({2, 1, 0}).value()
                 .contiguous().value().permute({2, 1, 0}).value();  // row-major storage
  ASSERT_TRUE(write_npy(dir() + "a.npy", a).has_value());
  ASSERT_TRUE(write_npy(dir() + "b.npy", b).has_value());
  for (const char* opt : {"greedy", "optimal", "treesa", "left-to-right", "path=(0,1)", "path=[(0,1)]", "path=[[0,1]]"}) {
    ASSERT_EQ(run("einsum 'ijk,kjl->li' " + dir() + "a.npy " + dir() + "b.npy -o " + dir() + "c.npy --optimize '" +
                  opt + "' --repeat 2 --json"),
              0)
        << output();
    EXPECT_NE(output().find("\"median_ms\""), std::string::npos) << output();
    Tensor c = read_npy(dir() + "c.npy").value();
    ASSERT_EQ(c.shape(), (Shape{2, 3}));
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t i = 0; i < 3; ++i) {
        double want = 0;
        for (int64_t j = 0; j < 4; ++j)
          for (int64_t k = 0; k < 5; ++k) want += a.get<double>({i, j, k}).value() * b.get<double>({k, j, l}).value();
        EXPECT_NEAR(c.get<double>({l, i}).value(), want, 1e-12);
      }
  }
}

TEST(CliEinsum, BadInputsFailWithTypedMessages) {
  {
    std::ofstream bad(dir() + "bad.npy", std::ios::binary);
    bad << "not numpy";
  }
  EXPECT_NE(run("einsum 'ij->ji' " + dir() + "bad.npy"), 0);
  EXPECT_NE(output().find("parse"), std::string::npos) << output();
  EXPECT_NE(run("einsum 'ij->ji' " + dir() + "missing.npy"), 0);
  EXPECT_NE(output().find("io"), std::string::npos) << output();
  Tensor a = Tensor::ones(DType::kF64, {2, 2}).value();
  ASSERT_TRUE(write_npy(dir() + "sq.npy", a).has_value());
  EXPECT_NE(run("einsum 'ij,->ji' " + dir() + "sq.npy"), 0);  // two terms, one operand
  EXPECT_NE(run("einsum 'ij->ji' " + dir() + "sq.npy --optimize fastest"), 0);
  EXPECT_NE(run("einsum"), 0);
  ASSERT_EQ(run("einsum 'ii' " + dir() + "sq.npy"), 0) << output();  // trace, printed
  EXPECT_NE(output().find("2"), std::string::npos) << output();
}

}  // namespace
}  // namespace tenferro
