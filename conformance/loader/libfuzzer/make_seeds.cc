// mm-loader-fuzz-seeds OUT_DIR [DATA_ROOT...]: writes the seed corpus of the loader's fuzz target
// into OUT_DIR: for every case directory under the data roots (the official ONNX MatMul node tests
// in CI) and every built-in example, one whole-case input, one model input and one input per
// tensor file (see fuzz_input.h). Run by scripts/fuzz-loader.sh.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/loader/libfuzzer/fuzz_input.h"
#include "engine/testdata/onnx_matmul_examples.h"
#include "onnx/onnx_pb.h"

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
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
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

onnx::TensorProto ToProto(const mm::Tensor& tensor, const char* name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(mm::GetDTypeInfo(tensor.dtype()).onnx_enum);
  for (std::int64_t d : tensor.dims()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.NumBytes()));
  return proto;
}

onnx::ModelProto ToModel(const mm::ExampleCase& example) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  auto* import = model.add_opset_import();
  import->set_version(13);
  auto* graph = model.mutable_graph();
  auto* node = graph->add_node();
  node->set_op_type("MatMul");
  node->add_input("a");
  node->add_input("b");
  node->add_output("y");
  const int onnx_type = mm::GetDTypeInfo(example.a.dtype()).onnx_enum;
  auto declare = [&](onnx::ValueInfoProto* info, const char* name, const mm::Tensor& t) {
    info->set_name(name);
    auto* tensor_type = info->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(onnx_type);
    auto* shape = tensor_type->mutable_shape();
    for (std::int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  };
  declare(graph->add_input(), "a", example.a);
  declare(graph->add_input(), "b", example.b);
  declare(graph->add_output(), "y", example.y);
  return model;
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
    ok &= WriteSeeds(out, example.name,
                     {{0, ToModel(example).SerializeAsString()},
                      {1, ToProto(example.a, "a").SerializeAsString()},
                      {2, ToProto(example.b, "b").SerializeAsString()},
                      {3, ToProto(example.y, "y").SerializeAsString()}});
    ++cases;
  }
  if (!ok) {
    std::cerr << "mm-loader-fuzz-seeds: cannot write into " << out << "\n";
    return 1;
  }
  std::cout << "mm-loader-fuzz-seeds: seeds of " << cases << " cases in " << out.string() << "\n";
  return 0;
}
