// mm-loader-fuzz-seeds OUT_DIR [DATA_ROOT...]: writes the seed corpus of the loader's fuzz target
// into OUT_DIR: for every case directory under the data roots (the official ONNX MatMul node tests
// in CI) and every built-in example (as the node-test writer makes it), one whole-case input, one
// model input and one input per tensor file (see fuzz_input.h). Run by scripts/fuzz-loader.sh.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/engine/testdata/onnx_matmul_examples.h"

namespace {

namespace fs = std::filesystem;
using namespace mm::conformance::loader_fuzz;

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

bool Write(const fs::path& path, const std::string& bytes) {
  return mm::conformance::WriteFileBytes(path, bytes).ok();
}

// Writes the seeds of one case given as (file index into kCaseFiles, bytes).
bool WriteSeeds(const fs::path& out, const std::string& name,
                const std::vector<std::pair<std::uint8_t, std::string>>& files) {
  bool ok = Write(out / ("case-" + name), JoinCase(files));
  for (const auto& [index, bytes] : files) {
    const char mode = index == 0 ? kModel : kTensor;
    std::string file(kCaseFiles[index]);
    for (char& c : file) c = c == '/' ? '-' : c;
    ok &= Write(out / ((mode == kModel ? "model-" : "tensor-") + name + "-" + file),
                std::string(1, mode) + bytes);
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: mm-loader-fuzz-seeds OUT_DIR [DATA_ROOT...]\n";
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  int cases = 0;
  bool ok = true;
  for (int i = 2; i < argc; ++i) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(argv[i], ec)) {
      if (!fs::is_regular_file(entry.path() / "model.onnx")) continue;
      std::vector<std::pair<std::uint8_t, std::string>> files;
      for (std::uint8_t index = 0; index < kCaseFiles.size(); ++index) {
        const fs::path file = entry.path() / kCaseFiles[index];
        if (fs::is_regular_file(file)) files.emplace_back(index, ReadBytes(file));
      }
      ok &= WriteSeeds(out, entry.path().filename().string(), files);
      ++cases;
    }
    if (ec) {
      std::cerr << "mm-loader-fuzz-seeds: cannot list " << argv[i] << ": " << ec.message() << "\n";
      return 1;
    }
  }
  auto examples = mm::BuiltinExamples();
  if (!examples.ok()) {
    std::cerr << "mm-loader-fuzz-seeds: " << examples.status() << "\n";
    return 1;
  }
  for (const mm::ExampleCase& example : *examples) {
    const mm::conformance::NodeTest test =
        mm::conformance::MatMulNodeTest(example.a, example.b, example.y);
    const mm::conformance::NodeTestDataSet& set = test.data_sets[0];
    ok &= WriteSeeds(out, example.name,
                     {{0, test.model.SerializeAsString()},
                      {1, set.inputs[0].SerializeAsString()},
                      {2, set.inputs[1].SerializeAsString()},
                      {3, set.outputs[0].SerializeAsString()}});
    ++cases;
  }
  if (!ok) {
    std::cerr << "mm-loader-fuzz-seeds: cannot write into " << out << "\n";
    return 1;
  }
  std::cout << "mm-loader-fuzz-seeds: seeds of " << cases << " cases in " << out.string() << "\n";
  return 0;
}
