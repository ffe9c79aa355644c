// libFuzzer target over everything mm reads from untrusted files: TensorProto decoding, model
// classification, and whole case directories (see fuzz_input.h for the input's structure).
// Build and run: scripts/fuzz-loader.sh [SECONDS] (the asan tree, build preset "loader-fuzz":
// clang with -fsanitize=fuzzer,address,undefined). Any crash, sanitizer report, leak or timeout
// is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "mm/conformance/loader/matmul_case.h"
#include "mm/conformance/loader/tensor_proto.h"
#include "mm/engine/matmul_plan.h"
#include "onnx/onnx_pb.h"

namespace {

namespace fs = std::filesystem;
using namespace mm::conformance;

// One scratch directory per fuzzing process, emptied before every case input.
const fs::path& ScratchDir() {
  static const fs::path dir = [] {
    std::string pattern = (fs::temp_directory_path() / "mm-loader-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(ScratchDir(), ec);
    });
    return fs::path(pattern);
  }();
  return dir;
}

void FuzzTensor(std::string_view bytes) {
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  auto tensor = TensorFromProto(proto);
  // A tensor that loads must be exactly as big as it says.
  if (tensor.ok() && tensor->NumBytes() > 0 && tensor->raw_data() == nullptr) std::abort();
}

void FuzzModel(std::string_view bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  (void)ClassifyModel(model);
}

void FuzzCase(std::string_view payload) {
  const fs::path& dir = ScratchDir();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove_all(entry.path(), ec);
  for (const auto& [name, bytes] : loader_fuzz::SplitCase(payload)) {
    const fs::path path = dir / name;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto kind = ClassifyCaseDir(dir);
  if (!kind.ok() || !kind->matmul) return;
  auto sets = ListDataSets(dir, *kind->matmul);
  if (!sets.ok()) return;
  for (const DataSetFiles& files : *sets) {
    auto set = LoadDataSet(files, *kind->matmul);
    // What the runner does next with a loaded data set, short of computing it.
    if (set.ok()) (void)mm::PlanMatMul({set->a.dtype(), set->a.dims(), set->b.dims()});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % loader_fuzz::kNumModes) {
    case loader_fuzz::kTensor:
      FuzzTensor(payload);
      break;
    case loader_fuzz::kModel:
      FuzzModel(payload);
      break;
    default:
      FuzzCase(payload);
      break;
  }
  return 0;
}
