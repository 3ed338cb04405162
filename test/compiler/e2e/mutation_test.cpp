// Mutation test: corrupted MLIR, corrupted binaries and corrupted worker
// requests must produce diagnostics and non-zero exits (or error replies),
// never a death by signal.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "subprocess.h"

namespace fs = std::filesystem;
using maia_e2e::compilerPath;
using maia_e2e::ProcessResult;
using maia_e2e::runProcess;

namespace {

const char* const kKernels[] = {"softmax", "row_sum", "elementwise"};

/// Fragments that make mutations likely to reach the verifier and the
/// passes rather than stop in the lexer.
const char* const kFragments[] = {
    "}",         "{",          "%c0",         "index",       "f32",        "vector<0xf32>",
    "i128",      "memref<?xf32>", "maia.program_id 5", "maia.num_programs -1",
    "attributes {maia.kernel}", "{maia.grid_rank = 7}", "tensor<4xf32>", "complex<f32>",
    "scf.yield", "return",     "-> f32",      "0xFFFFFFFF",  "vector<16xi1>", "strided<[?, 2]>",
    "func.func @g() attributes {maia.kernel} { return }", "\"",  "//",  "\0",  "1e400",
};

std::string mutate(const std::string& input, std::mt19937& rng) {
  std::string text = input;
  int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t at = rng() % text.size();
    switch (rng() % 6) {
      case 0: text[at] = char(rng() % 256); break;                   // flip a byte
      case 1: text.erase(at, 1 + rng() % 32); break;                 // delete a span
      case 2: text.resize(at); break;                                // truncate
      case 3: text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 64)); break;
      case 4: {
        const char* fragment = kFragments[rng() % std::size(kFragments)];
        text.insert(at, std::string(fragment, fragment[0] ? strlen(fragment) : 1));
        break;
      }
      default: {  // swap two lines' worth of text
        size_t other = rng() % text.size();
        std::swap(text[at], text[other]);
        break;
      }
    }
  }
  return text;
}

std::string describe(const ProcessResult& r) {
  return "signal " + std::to_string(r.signal) + ", exit " + std::to_string(r.exitCode) +
         ", stderr: " + r.err.substr(0, 2000);
}

class MutationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "maia-mutation-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    for (const char* kernel : kKernels)
      sources_.push_back(maia_e2e::readFile(std::string(MAIA_E2E_KERNEL_DIR) + "/" + kernel + ".mlir"));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_;
  std::vector<std::string> sources_;
};

TEST_F(MutationTest, CorruptedSourcesNeverCrashTheCli) {
  std::mt19937 rng(20240417);
  std::string output = dir_ + "/out.maiabin";
  int failures = 0;
  for (int i = 0; i < 150; ++i) {
    std::string source = mutate(sources_[size_t(i) % sources_.size()], rng);
    ProcessResult result = runProcess({compilerPath(), "-", "-o", output}, source);
    ASSERT_FALSE(result.signaled) << "mutant " << i << " killed the compiler: " << describe(result)
                                  << "\n--- input ---\n" << source;
    if (result.exitCode != 0) {
      ++failures;
      EXPECT_NE(result.err.find("error"), std::string::npos)
          << "mutant " << i << " failed without a diagnostic: " << describe(result);
    }
  }
  // Most mutants are invalid; all of them must have been handled.
  EXPECT_GT(failures, 50);
}

TEST_F(MutationTest, CorruptedBinariesNeverCrashInspect) {
  std::string good = dir_ + "/good.maiabin";
  ProcessResult compiled = runProcess(
      {compilerPath(), std::string(MAIA_E2E_KERNEL_DIR) + "/softmax.mlir", "-o", good});
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;
  std::string binary = maia_e2e::readFile(good);
  ASSERT_FALSE(binary.empty());
  std::mt19937 rng(77);
  std::string path = dir_ + "/mutant.maiabin";
  for (int i = 0; i < 100; ++i) {
    std::string bytes = binary;
    int edits = 1 + int(rng() % 8);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      size_t at = rng() % bytes.size();
      if (rng() % 8 == 0) bytes.resize(at);
      else bytes[at] = char(rng() % 256);
    }
    maia_e2e::writeFile(path, bytes);
    ProcessResult result = runProcess({compilerPath(), "--inspect", path});
    ASSERT_FALSE(result.signaled) << "mutant binary " << i << ": " << describe(result);
    if (result.exitCode != 0) {
      EXPECT_NE(result.err.find("error"), std::string::npos) << describe(result);
    }
  }
  ProcessResult empty = runProcess({compilerPath(), "--inspect", "/dev/null"});
  EXPECT_EQ(empty.exitCode, 1);
  EXPECT_NE(empty.err.find("empty"), std::string::npos) << empty.err;
}

TEST_F(MutationTest, CorruptedRequestsNeverCrashTheWorker) {
  maia_e2e::Worker worker({compilerPath(), "--server"});
  std::mt19937 rng(4242);
  for (int i = 0; i < 300; ++i) {
    std::string line;
    if (i % 3 == 0) {
      // A corrupted JSON line (may not even be JSON).
      nlohmann::json request = {{"id", i}, {"source", sources_[size_t(i) % sources_.size()]}};
      line = mutate(request.dump(), rng);
      for (char& c : line)
        if (c == '\n') c = ' ';
    } else {
      nlohmann::json request = {{"id", i},
                                {"source", mutate(sources_[size_t(i) % sources_.size()], rng)},
                                {"emit", i % 2 ? "obj" : "binary"}};
      line = request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    std::string reply;
    ASSERT_TRUE(worker.request(line, &reply)) << "the worker died on request " << i << ":\n"
                                              << line;
    nlohmann::json parsed = nlohmann::json::parse(reply, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << "reply " << i << " is not JSON: " << reply;
    ASSERT_TRUE(parsed.contains("ok")) << reply;
  }
  std::string reply;
  ASSERT_TRUE(worker.request("{\"id\": \"last\", \"command\": \"version\"}", &reply));
  EXPECT_NE(reply.find("\"ok\":true"), std::string::npos) << reply;
  ProcessResult status = worker.finish();
  EXPECT_FALSE(status.signaled) << describe(status);
  EXPECT_EQ(status.exitCode, 0);
}

}  // namespace
