// End-to-end: `tenferro ir check|compile|eval|run` on a program file, checked against a naive
// computation; malformed programs and bad options give non-zero exits.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
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
  static const test_support::TempDirectory d("tenferro_cli_ir_");
  return d.path();
}

int run(const std::string& args) {
  const std::string cmd = std::string(TENFERRO_CLI) + " " + args + " > " + dir() + "out.txt 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string output() {
  std::ifstream in(dir() + "out.txt");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write(const std::string& name, const std::string& text) { std::ofstream(dir() + name) << text; }

constexpr const char* kProgram = R"(# y = (x^T)^T . w  and a dead exp
program {
  symbol n <= 100
  %0 = input "x" : f64[n, 3]
  %1 = binding "w" : f64[3, 2]
  %2 = transpose(%0) {dims=[1, 0]} : f64[3, n]
  %3 = transpose(%2) {dims=[1, 0]} : f64[n, 3] loc("model.py:2")
  %4 = dot_general(%3, %1) {lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0]} : f64[n, 2]
  %5 = exp(%0) : f64[n, 3]
  output %4, %5
}
)";

TEST(CliIr, CheckCompileAndEvalEndToEnd) {
  write("p.tf", kProgram);
  ASSERT_EQ(run("ir check " + dir() + "p.tf"), 0) << output();
  EXPECT_NE(output().find("ok: 2 inputs (1 bindings), 4 ops, 2 outputs"), std::string::npos) << output();
  EXPECT_NE(output().find("fingerprint "), std::string::npos);

  ASSERT_EQ(run("ir compile " + dir() + "p.tf"), 0) << output();
  EXPECT_EQ(output().find("transpose"), std::string::npos) << output();  // folded away
  EXPECT_NE(output().find("dot_general(%0, %1)"), std::string::npos) << output();
  ASSERT_EQ(run("ir compile " + dir() + "p.tf --explain"), 0) << output();
  EXPECT_NE(output().find("transpose of a transpose cancels"), std::string::npos) << output();

  Tensor x = Tensor::random_normal(DType::kF64, {4, 3}, 3).value();
  Tensor w = Tensor::random_normal(DType::kF64, {3, 2}, 4).value();
  ASSERT_TRUE(write_npy(dir() + "x.npy", x));
  ASSERT_TRUE(write_npy(dir() + "w.npy", w));
  for (const std::string mode : {"eval", "eval --compiled", "run", "run --threads 2 --repeat 3"}) {
    const std::string sub = mode.substr(0, mode.find(' '));
    const std::string flags = mode.size() > sub.size() ? mode.substr(sub.size()) : "";
    ASSERT_EQ(run("ir " + sub + " " + dir() + "p.tf " + dir() + "x.npy --binding " + dir() + "w.npy -o " + dir() +
                  "y.npy -o " + dir() + "e.npy" + flags),
              0)
        << output();
    Tensor y = read_npy(dir() + "y.npy").value();
    Tensor e = read_npy(dir() + "e.npy").value();
    ASSERT_EQ(y.shape(), (Shape{4, 2}));
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 3; ++k) want += x.get<double>({i, k}).value() * w.get<double>({k, j}).value();
        EXPECT_NEAR(y.get<double>({i, j}).value(), want, 1e-12);
      }
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(e.get<double>({i, k}).value(), std::exp(x.get<double>({i, k}).value()));
    }
  }
}

TEST(CliIr, RunExplainsAndReportsJson) {
  write("p.tf", kProgram);
  ASSERT_TRUE(write_npy(dir() + "x.npy", Tensor::random_normal(DType::kF64, {5, 3}, 3).value()));
  ASSERT_TRUE(write_npy(dir() + "w.npy", Tensor::random_normal(DType::kF64, {3, 2}, 4).value()));
  ASSERT_EQ(run("ir run " + dir() + "p.tf " + dir() + "x.npy --binding " + dir() + "w.npy --explain"), 0) << output();
  EXPECT_NE(output().find("provider cpu.dot_general"), std::string::npos) << output();
  EXPECT_NE(output().find("output 1:"), std::string::npos) << output();
  ASSERT_EQ(run("ir run " + dir() + "p.tf " + dir() + "x.npy --binding " + dir() + "w.npy --json --repeat 4"), 0)
      << output();
  EXPECT_NE(output().find("\"repeat\": 4"), std::string::npos) << output();
  EXPECT_NE(output().find("\"nodes\": 2"), std::string::npos) << output();
  for (const char* bad : {"--threads 0", "--threads 99999999999", "--threads x", "--repeat -1", "--threads"}) {
    EXPECT_EQ(run("ir run " + dir() + "p.tf " + dir() + "x.npy --binding " + dir() + "w.npy " + bad), 2) << bad;
  }
  EXPECT_EQ(run("ir run " + dir() + "p.tf " + dir() + "x.npy"), 1);  // binding missing
  EXPECT_EQ(run("ir eval " + dir() + "p.tf --threads 2"), 2);  // run-only option
}

TEST(CliIr, EinsumOpsRunNativelyAndInTheInterpreter) {
  write("e.tf", R"(program {
  %0 = input "a" : f64[3, 4]
  %1 = input "b" : f64[4, 2]
  %2 = extension "einsum" "ij,jk->ki;optimal"(%0, %1) : f64[2, 3]
  output %2
}
)");
  const Tensor a = Tensor::random_normal(DType::kF64, {3, 4}, 5).value();
  const Tensor b = Tensor::random_normal(DType::kF64, {4, 2}, 6).value();
  ASSERT_TRUE(write_npy(dir() + "a.npy", a));
  ASSERT_TRUE(write_npy(dir() + "b.npy", b));
  for (const std::string sub : {"eval", "run"}) {
    const std::string flags = sub == "run" ? " --explain" : "";
    ASSERT_EQ(run("ir " + sub + " " + dir() + "e.tf " + dir() + "a.npy " + dir() + "b.npy -o " + dir() + "c.npy" + flags),
              0)
        << output();
    if (sub != "eval") {
      EXPECT_NE(output().find("provider cpu.einsum"), std::string::npos) << output();
    }
    const Tensor c = read_npy(dir() + "c.npy").value();
    ASSERT_EQ(c.shape(), (Shape{2, 3}));
    for (int64_t k = 0; k < 2; ++k) {
      for (int64_t i = 0; i < 3; ++i) {
        double want = 0;
        for (int64_t j = 0; j < 4; ++j) want += a.get<double>({i, j}).value() * b.get<double>({j, k}).value();
        EXPECT_NEAR(c.get<double>({k, i}).value(), want, 1e-12);
      }
    }
  }
}

TEST(CliIr, FftAndLinalgOpsRunNativelyAndInTheInterpreter) {
  // |rfft(x)|^2 along the last axis, and det of a 2 x 2 matrix.
  write("f.tf", R"(program {
  %0 = input "x" : f64[2, 6]
  %1 = input "m" : f64[2, 2]
  %2 = extension "fft" "r2c;norm=backward;axes=1"(%0) : c128[2, 4]
  %3 = conj(%2) : c128[2, 4]
  %4 = mul(%2, %3) : c128[2, 4]
  %5 = real(%4) : f64[2, 4]
  %6 = extension "linalg" "det"(%1) : f64[]
  output %5, %6
}
)");
  const Tensor x = Tensor::random_normal(DType::kF64, {2, 6}, 7).value();
  const Tensor m = Tensor::random_normal(DType::kF64, {2, 2}, 8).value();
  ASSERT_TRUE(write_npy(dir() + "x.npy", x));
  ASSERT_TRUE(write_npy(dir() + "m.npy", m));
  for (const std::string sub : {"eval", "run"}) {
    const std::string flags = sub == "run" ? " --explain" : "";
    ASSERT_EQ(run("ir " + sub + " " + dir() + "f.tf " + dir() + "x.npy " + dir() + "m.npy -o " + dir() + "p.npy -o " +
                  dir() + "d.npy" + flags),
              0)
        << output();
    if (sub == "run") {
      EXPECT_NE(output().find("cpu.fft"), std::string::npos) << output();
      EXPECT_NE(output().find("cpu.linalg"), std::string::npos) << output();
    }
    const Tensor p = read_npy(dir() + "p.npy").value();
    ASSERT_EQ(p.shape(), (Shape{2, 4}));
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t k = 0; k < 4; ++k) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < 6; ++j) {
          const double a = -2 * M_PI * static_cast<double>(j * k) / 6.0, v = x.get<double>({b, j}).value();
          re += v * std::cos(a);
          im += v * std::sin(a);
        }
        EXPECT_NEAR(p.get<double>({b, k}).value(), re * re + im * im, 1e-10);
      }
    }
    const double det = m.get<double>({0, 0}).value() * m.get<double>({1, 1}).value() -
                       m.get<double>({0, 1}).value() * m.get<double>({1, 0}).value();
    EXPECT_NEAR(read_npy(dir() + "d.npy").value().get<double>({}).value(), det, 1e-12);
  }
}

// `tenferro bench runtime`: the MLP case runs and reports its reference; bad options
// exit 2.
// `ir lower`: the symbolic program kProgram lowered for the shapes of its IN.npy files,
// bindings as trailing arguments or inlined; errors typed, nothing half-written.
TEST(CliIr, LowerPrintsStableHlo) {
  write("p.tf", kProgram);
  const Tensor x = Tensor::random_normal(DType::kF64, {5, 3}, 1).value();
  const Tensor w = Tensor::from_col_major<double>({3, 2}, {1, 2, 3, 4, 5, 6}).value();
  ASSERT_TRUE(write_npy(dir() + "x.npy", x));
  ASSERT_TRUE(write_npy(dir() + "w.npy", w));
  // Symbolic n and no input: a typed error naming the way out.
  EXPECT_EQ(run("ir lower " + dir() + "p.tf"), 1);
  EXPECT_NE(output().find("unsupported"), std::string::npos) << output();
  EXPECT_NE(output().find("input shapes"), std::string::npos) << output();
  ASSERT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy"), 0) << output();
  EXPECT_NE(output().find("func.func public @main(%arg0: tensor<5x3xf64>, %arg1: tensor<3x2xf64>) -> "
                          "(tensor<5x2xf64>, tensor<5x3xf64>)"),
            std::string::npos)
      << output();
  EXPECT_NE(output().find("\"stablehlo.transpose\""), std::string::npos) << output();  // as written
  ASSERT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy --compiled"), 0) << output();
  EXPECT_EQ(output().find("\"stablehlo.transpose\""), std::string::npos) << output();  // folded by the compiler
  ASSERT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy --inline-bindings --binding " + dir() + "w.npy -o " +
                dir() + "p.mlir"),
            0)
      << output();
  std::ifstream in(dir() + "p.mlir");
  const std::string mlir((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(mlir.find("@main(%arg0: tensor<5x3xf64>) -> "), std::string::npos) << mlir;
  EXPECT_NE(mlir.find("dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf64>"), std::string::npos) << mlir;
  // A directory as the output: a typed I/O error of the file writer (of the npy writer
  // for ir eval's outputs).
  EXPECT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy -o " + dir()), 1);
  EXPECT_NE(output().find("usage/io in write_files: cannot write"), std::string::npos) << output();
  EXPECT_EQ(run("ir eval " + dir() + "p.tf " + dir() + "x.npy --binding " + dir() + "w.npy -o " + dir() + " -o " +
                dir() + "y.npy"),
            1);
  EXPECT_NE(output().find("usage/io in npy: cannot write"), std::string::npos) << output();
  EXPECT_FALSE(std::filesystem::exists(dir() + "y.npy"));
  // An input file of another dtype than the program's input.
  ASSERT_TRUE(write_npy(dir() + "xf.npy", Tensor::zeros(DType::kF32, {5, 3}).value()));
  EXPECT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "xf.npy"), 1);
  EXPECT_NE(output().find("dtype_mismatch"), std::string::npos) << output();
  // Wrong argument count, two -o files, --inline-bindings without the binding data.
  EXPECT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy " + dir() + "x.npy"), 2);
  EXPECT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy -o " + dir() + "a.mlir -o " + dir() + "b.mlir"), 2);
  EXPECT_FALSE(std::filesystem::exists(dir() + "a.mlir"));
  EXPECT_EQ(run("ir lower " + dir() + "p.tf " + dir() + "x.npy --inline-bindings"), 1) << output();
}

TEST(CliIr, BenchRuntimeRunsAndValidatesOptions) {
  ASSERT_EQ(run("bench runtime --no-peer --json --only mlp"), 0) << output();
  EXPECT_NE(output().find("\"case\":\"MLP forward 3 x 512, batch 256, f64\""), std::string::npos) << output();
  EXPECT_NE(output().find("\"ratio\":"), std::string::npos) << output();
  EXPECT_EQ(run("bench runtime --only nothing"), 2) << output();
  EXPECT_EQ(run("bench runtime --threads 0"), 2) << output();
  EXPECT_EQ(run("bench runtime --bogus"), 2) << output();
}

// Hostile programs: bounded parsing, bounded shape algebra, typed allocation failures, no
// integer overflow (UBSan runs these too), all-or-nothing output files.
TEST(CliIr, HostileProgramsGiveTypedErrors) {
  write("deep.tf", "program {\n  symbol n\n  %0 = input \"x\" : f64[" + std::string(20000, '(') + "n" +
                       std::string(20000, ')') + "]\n  output %0\n}\n");
  EXPECT_EQ(run("ir check " + dir() + "deep.tf"), 1) << output();
  EXPECT_NE(output().find("nests deeper"), std::string::npos) << output();
  std::string syms, ins, sum;
  for (int i = 0; i < 12; ++i) {
    syms += "  symbol s" + std::to_string(i) + "\n";
    ins += "  %" + std::to_string(i) + " = input \"x" + std::to_string(i) + "\" : f64[s" + std::to_string(i) + "]\n";
    sum += (i ? "+s" : "s") + std::to_string(i);
  }
  std::string power;
  for (int i = 0; i < 14; ++i) power += (i ? "*(" : "(") + sum + ")";
  write("poly.tf", "program {\n" + syms + ins + "  guard " + power + " == s0 \"c\"\n  output %0\n}\n");
  EXPECT_EQ(run("ir check " + dir() + "poly.tf"), 1) << output();
  EXPECT_NE(output().find("size cap"), std::string::npos) << output();
  write("iota.tf", "program {\n  %0 = iota() {shape=[4611686018427387904], axis=0, dtype=f32} : f32[4611686018427387904]\n  output %0\n}\n");
  EXPECT_EQ(run("ir eval " + dir() + "iota.tf"), 1) << output();
  EXPECT_NE(output().find("allocation_failed"), std::string::npos) << output();
  write("lit.tf", "program {\n  %0 = constant() {value=f64[4611686018427387904]{}} : f64[4611686018427387904]\n  output %0\n}\n");
  EXPECT_EQ(run("ir check " + dir() + "lit.tf"), 1) << output();
  write("slice.tf", "program {\n  %0 = input \"x\" : f64[5]\n  %1 = slice(%0) {start=[1], limit=[5], stride=[9223372036854775807]} : f64[1]\n  output %1\n}\n");
  EXPECT_EQ(run("ir check " + dir() + "slice.tf"), 0) << output();
  // Two outputs, the second into a missing directory: neither file is written.
  write("two.tf", "program {\n  %0 = input \"x\" : f64[2]\n  %1 = neg(%0) : f64[2]\n  output %0, %1\n}\n");
  ASSERT_TRUE(write_npy(dir() + "x2.npy", Tensor::ones(DType::kF64, {2}).value()));
  EXPECT_EQ(run("ir eval " + dir() + "two.tf " + dir() + "x2.npy -o " + dir() + "first.npy -o " + dir() +
                "missing/second.npy"),
            1)
      << output();
  EXPECT_FALSE(std::filesystem::exists(dir() + "first.npy"));
  // A link where a fixed temporary name used to be is never written through.
  std::ofstream(dir() + "victim.txt") << "keep";
  std::filesystem::remove(dir() + "first.npy.tmp");
  std::filesystem::create_symlink(dir() + "victim.txt", dir() + "first.npy.tmp");
  ASSERT_EQ(run("ir eval " + dir() + "two.tf " + dir() + "x2.npy -o " + dir() + "first.npy -o " + dir() + "second.npy"),
            0)
      << output();
  std::ifstream victim(dir() + "victim.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(victim), std::istreambuf_iterator<char>()), "keep");
  EXPECT_EQ(read_npy(dir() + "second.npy").value().get<double>({1}).value(), -1.0);
  for (const auto& e : std::filesystem::directory_iterator(dir())) {
    EXPECT_EQ(e.path().filename().string().find(".npy.tmp."), std::string::npos) << e.path();  // none left
  }
}

TEST(CliIr, ErrorsAreTypedAndExitNonZero) {
  write("bad.tf", "program {\n  %0 = input \"x\" : f64[2]\n  %1 = input \"y\" : f64[3]\n  %2 = add(%0, %1) : f64[2]\n  output %2\n}\n");
  EXPECT_EQ(run("ir check " + dir() + "bad.tf"), 1);
  EXPECT_NE(output().find("add_c2"), std::string::npos) << output();
  write("syntax.tf", "program {\n  %0 = inptu \"x\" : f64[2]\n}\n");
  EXPECT_EQ(run("ir check " + dir() + "syntax.tf"), 1);
  EXPECT_NE(output().find("line 2"), std::string::npos) << output();
  EXPECT_EQ(run("ir check " + dir() + "missing.tf"), 1);
  EXPECT_EQ(run("ir frobnicate " + dir() + "bad.tf"), 2);
  EXPECT_EQ(run("ir compile " + dir() + "bad.tf --bogus"), 2);
  // eval needs the binding data and the right operand shapes (guards and symbol bounds).
  write("p.tf", kProgram);
  Tensor x = Tensor::random_normal(DType::kF64, {101, 3}, 3).value();
  ASSERT_TRUE(write_npy(dir() + "big.npy", x));
  EXPECT_EQ(run("ir eval " + dir() + "p.tf " + dir() + "big.npy"), 1);
  EXPECT_NE(output().find("--binding"), std::string::npos) << output();
  Tensor w = Tensor::random_normal(DType::kF64, {3, 2}, 4).value();
  ASSERT_TRUE(write_npy(dir() + "w.npy", w));
  EXPECT_EQ(run("ir eval " + dir() + "p.tf " + dir() + "big.npy --binding " + dir() + "w.npy"), 1);
  EXPECT_NE(output().find("exceeds its bound 100"), std::string::npos) << output();
  EXPECT_EQ(run("ir eval " + dir() + "p.tf " + dir() + "big.npy --binding " + dir() + "w.npy -o " + dir() + "only_one.npy"), 2);
}

// `tenferro info`: the capabilities report, as text and as one JSON object.
TEST(CliInfo, ReportsCapabilitiesAsTextAndJson) {
  ASSERT_EQ(run("info"), 0) << output();
  for (const char* field : {"cpu ", "isa ", "blis ", "openblas ", "engine ", "fft        fftw-3"}) {
    EXPECT_NE(output().find(field), std::string::npos) << field << "\n" << output();
  }
  ASSERT_EQ(run("info --json"), 0) << output();
  const std::string json = output();
  EXPECT_EQ(json.front(), '{');
  for (const char* key :
       {"\"detected_isa\"", "\"blis_tuned\"", "\"openblas_core\"", "\"l1d_bytes\"", "\"fft_library\": \"fftw-3"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_EQ(run("info --help"), 0);
  EXPECT_EQ(run("info --bogus"), 2);
}

}  // namespace
}  // namespace tenferro
