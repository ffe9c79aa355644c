// The structured input of the loader's fuzz target, shared by the target and the seed maker: one
// byte choosing what is fuzzed, then that thing's bytes.
//   kTensor: a serialized onnx.TensorProto (an input_K.pb / output_K.pb).
//   kModel:  a serialized onnx.ModelProto (a model.onnx), classified.
//   kCase:   a whole case directory as records [file index: 1 byte][length: 4 bytes LE][bytes];
//            the file index picks one of kCaseFiles (modulo its size); a length past the end of
//            the input takes what is left.
#ifndef MM_CONFORMANCE_LOADER_LIBFUZZER_FUZZ_INPUT_H_
#define MM_CONFORMANCE_LOADER_LIBFUZZER_FUZZ_INPUT_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mm::conformance::loader_fuzz {

enum Mode : std::uint8_t { kTensor = 0, kModel = 1, kCase = 2, kNumModes = 3 };

// The files a case directory input can hold, by index.
inline constexpr std::array<std::string_view, 8> kCaseFiles = {
    "model.onnx",
    "test_data_set_0/input_0.pb",
    "test_data_set_0/input_1.pb",
    "test_data_set_0/output_0.pb",
    "test_data_set_1/input_0.pb",
    "test_data_set_1/input_1.pb",
    "test_data_set_1/output_0.pb",
    "test_data_set_0/input_2.pb",
};

// Splits a kCase payload (without the mode byte) into (relative path, bytes); a later record for
// the same file replaces an earlier one.
inline std::vector<std::pair<std::string_view, std::string_view>> SplitCase(std::string_view in) {
  std::vector<std::pair<std::string_view, std::string_view>> files;
  while (in.size() >= 5) {
    const std::string_view name = kCaseFiles[static_cast<std::uint8_t>(in[0]) % kCaseFiles.size()];
    std::uint32_t length = 0;
    for (int i = 0; i < 4; ++i)
      length |= std::uint32_t{static_cast<std::uint8_t>(in[1 + i])} << (8 * i);
    in.remove_prefix(5);
    const std::size_t take = std::min<std::size_t>(length, in.size());
    files.emplace_back(name, in.substr(0, take));
    in.remove_prefix(take);
  }
  return files;
}

// The inverse: one kCase input from (file index, bytes) records.
inline std::string JoinCase(const std::vector<std::pair<std::uint8_t, std::string>>& files) {
  std::string out(1, static_cast<char>(kCase));
  for (const auto& [index, bytes] : files) {
    out += static_cast<char>(index);
    const auto length = static_cast<std::uint32_t>(bytes.size());
    for (int i = 0; i < 4; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
    out += bytes;
  }
  return out;
}

}  // namespace mm::conformance::loader_fuzz

#endif  // MM_CONFORMANCE_LOADER_LIBFUZZER_FUZZ_INPUT_H_
