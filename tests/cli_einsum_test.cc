// End-to-end: `tenferro einsum` on .npy files written by the library, checked against a
// naive contraction; malformed input files and bad options give non-zero exits.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tenferro/tensor/npy.h"
#include "tenferro/test_support/temp_dir.h"

namespace tenferro {
namespace {

// This process's own directory, removed at exit (temp_dir.h).
std::string dir() {
  static const test_support::TempDirectory d("tenferro_cli_");
  return d.path();
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

// Note [Row-major operands]: C-ordered files (numpy's default) are planned as row-major,
// Fortran-ordered ones as column-major; the values are the same.
TEST(CliEinsum, COrderedFilesArePlannedRowMajor) {
  const Tensor f = Tensor::random_normal(DType::kF64, {16, 24, 20}, 7).value();                   // Fortran order
  const Tensor c = f.permute({2, 1, 0}).value().contiguous().value().permute({2, 1, 0}).value();  // C order
  const Tensor g = Tensor::random_normal(DType::kF64, {3, 16}, 8).value();
  ASSERT_TRUE(write_npy(dir() + "of.npy", f).has_value());
  ASSERT_TRUE(write_npy(dir() + "oc.npy", c).has_value());
  ASSERT_TRUE(write_npy(dir() + "og.npy", g).has_value());
  for (const char* name : {"of", "oc"}) {
    const bool row = std::string(name) == "oc";
    ASSERT_EQ(run("einsum 'abc,Za->Zbc' " + dir() + name + ".npy " + dir() + "og.npy --json -o " + dir() + "oo.npy"), 0)
        << output();
    EXPECT_NE(output().find(row ? "\"operand_order\":\"row-major\"" : "\"operand_order\":\"column-major\""),
              std::string::npos)
        << output();
    const Tensor r = read_npy(dir() + "oo.npy").value();
    ASSERT_EQ(r.shape(), (Shape{3, 24, 20}));
    for (int64_t z = 0; z < 3; ++z)
      for (int64_t b = 0; b < 24; b += 5)
        for (int64_t cc = 0; cc < 20; cc += 3) {
          double want = 0;
          for (int64_t a = 0; a < 16; ++a) want += g.get<double>({z, a}).value() * f.get<double>({a, b, cc}).value();
          EXPECT_NEAR(r.get<double>({z, b, cc}).value(), want, 1e-12) << name;
        }
  }
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CliEinsum, ProfilePrintsEachStepsRouteAndKeepsTheValues) {
  // A three-operand chain: two binary steps, each with its sizes and dot_general route.
  Tensor a = Tensor::random_normal(DType::kF64, {6, 5}, 3).value();
  Tensor b = Tensor::random_normal(DType::kF64, {5, 4}, 4).value();
  Tensor c = Tensor::random_normal(DType::kF64, {4, 3}, 5).value();
  for (const char* n : {"pa", "pb", "pc"}) {
    ASSERT_TRUE(write_npy(dir() + n + ".npy", n[1] == 'a' ? a : n[1] == 'b' ? b : c).has_value());
  }
  const std::string files = dir() + "pa.npy " + dir() + "pb.npy " + dir() + "pc.npy";
  ASSERT_EQ(run("einsum 'ij,jk,kl->il' " + files + " --optimize left-to-right --profile -o " + dir() + "pr.npy"), 0)
      << output();
  std::string text = output();
  EXPECT_NE(text.find("step 0: "), std::string::npos) << text;
  EXPECT_NE(text.find("step 1: "), std::string::npos) << text;
  EXPECT_EQ(count(text, "    kernel "), 2u) << text;                 // one route line per step
  EXPECT_NE(text.find("m 6, n 4, k 5"), std::string::npos) << text;  // (ij,jk) first
  const Tensor r = read_npy(dir() + "pr.npy").value();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t l = 0; l < 3; ++l) {
      double want = 0;
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 4; ++k)
          want += a.get<double>({i, j}).value() * b.get<double>({j, k}).value() * c.get<double>({k, l}).value();
      EXPECT_NEAR(r.get<double>({i, l}).value(), want, 1e-12);
    }
  ASSERT_EQ(run("einsum 'ij,jk,kl->il' " + files + " --optimize left-to-right --profile --json --repeat 3"), 0)
      << output();
  text = output();
  EXPECT_NE(text.find("\"steps\":["), std::string::npos) << text;
  EXPECT_EQ(count(text, "\"route\":\"kernel "), 2u) << text;  // the last run's steps only
  EXPECT_EQ(count(text, "\"kernel\":\""), 2u) << text;
  // Without --profile nothing about steps is printed.
  ASSERT_EQ(run("einsum 'ij,jk,kl->il' " + files + " --json"), 0) << output();
  EXPECT_EQ(output().find("\"steps\""), std::string::npos) << output();
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

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

// Hostile or unusual command lines: typed errors and exit codes, never a crash.
TEST(CliEinsum, HostileOptionsGiveTypedErrors) {
  Tensor v = Tensor::from_col_major<double>({3}, {1, 2, 3}).value();
  Tensor s = Tensor::from_col_major<double>({}, {2}).value();
  ASSERT_TRUE(write_npy(dir() + "v.npy", v).has_value());
  ASSERT_TRUE(write_npy(dir() + "s.npy", s).has_value());
  const std::string vv = dir() + "v.npy " + dir() + "v.npy";
  // Subscripts may begin with '-' (a scalar output) or be empty, as in numpy.
  ASSERT_EQ(exit_code(run("einsum '->' " + dir() + "s.npy")), 0) << output();
  EXPECT_NE(output().find("2"), std::string::npos) << output();
  ASSERT_EQ(exit_code(run("einsum '' " + dir() + "s.npy")), 0) << output();
  ASSERT_EQ(exit_code(run("einsum 'i,i->' " + vv)), 0) << output();
  EXPECT_NE(output().find("14"), std::string::npos) << output();
  // Path positions are non-negative integers; numbers past int32 are rejected.
  EXPECT_EQ(exit_code(run("einsum 'i,i->' " + vv + " --optimize 'path=[(-1,0)]'")), 1);
  EXPECT_NE(output().find("unexpected character '-'"), std::string::npos) << output();
  EXPECT_EQ(exit_code(run("einsum 'i,i->' " + vv + " --optimize 'path=[(99999999999999999999,0)]'")), 1);
  // Deep nesting is a parse error, not a stack overflow.
  EXPECT_EQ(exit_code(run("einsum 'i,i->' " + vv + " --optimize 'path=" + std::string(30000, '(') + "'")), 1);
  EXPECT_NE(output().find("nesting deeper"), std::string::npos) << output();
  // Counts are checked whole numbers.
  for (const char* bad : {"99999999999", "100000", "0", "-1", "2x", ""}) {
    EXPECT_EQ(exit_code(run("einsum 'i,i->' " + vv + " --threads '" + bad + "'")), 2) << bad;
  }
  EXPECT_EQ(exit_code(run("einsum 'i,i->' " + vv + " --repeat 99999999999")), 2);
  // -o /dev/null discards the result and leaves the device in place (a rename over it
  // once replaced it with a regular file when run as root).
  ASSERT_EQ(exit_code(run("einsum 'i,i->' " + vv + " -o /dev/null")), 0) << output();
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A file name that is not UTF-8 still gives valid JSON (the bad byte replaced).
  ASSERT_EQ(exit_code(run("einsum 'i,i->' " + vv + " --json -o \"" + dir() + "out$(printf '\\377').npy\"")), 0)
      << output();
  EXPECT_NE(output().find("\"output\""), std::string::npos) << output();
  // Every subcommand answers --help with exit 0.
  for (const char* cmd : {"einsum", "bench einsum", "bench kernels", "bench eager", "bench linalg", "bench runtime",
                          "bench ad", "ir run", "ir eval", "demo", "demo trg"}) {
    EXPECT_EQ(exit_code(run(std::string(cmd) + " --help")), 0) << cmd << ": " << output();
    EXPECT_NE(output().find("usage"), std::string::npos) << cmd;
  }
}

// The numbers of `demo trg` and `bench ad` are checked like every other command's: out of
// range, not finite, junk or past int64 is a usage error (exit 2) before anything runs.
TEST(CliOptions, DemoTrgAndBenchAdCheckTheirNumbers) {
  for (const char* bad :
       {"--beta nan", "--beta inf", "--beta 1e400", "--beta abc", "--beta -1", "--beta 0", "--beta 0.3 --chi 1",
        "--beta 0.3 --chi 99999999999999999999", "--beta 0.3 --steps 0", "--beta 0.3 --steps 100000000000",
        "--beta 0.3 --threads 0", "--beta 0.3 --threads 99999999999"}) {
    EXPECT_EQ(exit_code(run(std::string("demo trg ") + bad)), 2) << bad << ": " << output();
    EXPECT_NE(output().find("--beta in (0,"), std::string::npos) << bad << ": " << output();
  }
  for (const char* bad : {"--threads 0", "--threads 99999999999", "--trg-chi 1", "--trg-steps x"}) {
    EXPECT_EQ(exit_code(run(std::string("bench ad ") + bad)), 2) << bad << ": " << output();
  }
  // A small valid run: the free energy next to Onsager's.
  ASSERT_EQ(exit_code(run("demo trg --beta 0.4 --chi 4 --steps 4 --threads 1 --json")), 0) << output();
  EXPECT_NE(output().find("\"free_energy\""), std::string::npos) << output();
}

// A selection that selects nothing is a usage error, not an empty table with exit 0.
TEST(CliOptions, EmptySelectionsAreUsageErrors) {
  EXPECT_EQ(exit_code(run("bench kernels --only no-such-case")), 2) << output();
  EXPECT_NE(output().find("no case matches"), std::string::npos) << output();
  EXPECT_EQ(exit_code(run("bench linalg --only no-such-case")), 2) << output();
  EXPECT_NE(output().find("no case matches"), std::string::npos) << output();
  const std::string empty = dir() + "no_instances";
  std::filesystem::create_directories(empty);
  EXPECT_EQ(exit_code(run("bench einsum " + empty)), 2) << output();
  EXPECT_NE(output().find("no instance files"), std::string::npos) << output();
  // Endless inputs are read up to a bound, not until memory runs out.
  EXPECT_EQ(exit_code(run("bench einsum /dev/zero")), 1) << output();
  EXPECT_NE(output().find("is larger than"), std::string::npos) << output();
  EXPECT_EQ(exit_code(run("einsum i->i /dev/zero")), 1) << output();
  EXPECT_NE(output().find("bad magic"), std::string::npos) << output();
}

// Instance files of the wrong shape: one typed error each, the command goes on.
TEST(CliEinsum, MalformedInstanceFilesAreTypedErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"null", "not a JSON object"},
      {R"({"format_string": 5, "shapes": [[2]]})", "not a string"},
      {R"({"format_string": "i->", "shapes": [["4"]]})", "not an integer"},
      {R"({"format_string": "i->", "shapes": [[-4]]})", "negative"},
      {R"({"format_string": "ij->", "shapes": [[4611686018427387904, 4]]})", "2^62"},
      {R"({"format_string": "i->", "shapes": [[2]], "paths": {"opt_flops": {"path": [["a"]]}}})", "path entry"},
      {"{not json", "not a JSON object"},
      {R"({"format_string": "i->", "shapes": [[2]], "dtype": "int64"})", "is not float32"},
      {R"({"format_string": "i->", "shapes": [[2]], "dtype": 7})", "not a string"},
      {R"({"format_string": "i,i->", "shapes": [[2], [2]], "paths": {}})", "holds no paths.opt_flops.path"},
  };
  int k = 0;
  for (const auto& [text, want] : cases) {
    const std::string f = dir() + "inst" + std::to_string(k++) + ".json";
    std::ofstream(f) << text;
    EXPECT_EQ(exit_code(run("bench einsum " + f)), 1) << text << ": " << output();
    EXPECT_NE(output().find(want), std::string::npos) << text << ": " << output();
  }
}

// Instances of each floating dtype run; a single operand needs no path; a pathless
// instance runs with a searched one.
TEST(CliEinsum, InstancesOfEachFloatingDtypeRun) {
  int k = 0;
  for (const char* dtype : {"float32", "float64", "complex64", "complex128"}) {
    const std::string f = dir() + "dtype" + std::to_string(k++) + ".json";
    std::ofstream(f) << R"({"name": "d", "format_string": "ij,jk->ik", "shapes": [[3, 4], [4, 5]], "dtype": ")" << dtype
                     << R"(", "paths": {"opt_flops": {"path": [[0, 1]]}}})";
    EXPECT_EQ(exit_code(run("bench einsum " + f + " --json")), 0) << dtype << ": " << output();
    EXPECT_NE(output().find("\"instance\""), std::string::npos) << output();
  }
  const std::string single = dir() + "single.json";
  std::ofstream(single) << R"({"format_string": "iij->j", "shapes": [[3, 3, 2]]})";
  EXPECT_EQ(exit_code(run("bench einsum " + single)), 0) << output();
  const std::string pathless = dir() + "pathless.json";
  std::ofstream(pathless) << R"({"format_string": "ij,jk,kl->il", "shapes": [[3, 4], [4, 5], [5, 2]]})";
  EXPECT_EQ(exit_code(run("bench einsum " + pathless + " --path greedy")), 0) << output();
  EXPECT_EQ(exit_code(run("bench einsum " + pathless + " --path treesa")), 0) << output();
}

}  // namespace
}  // namespace tenferro
