#include "bad_cases.h"

#include "onnx_fixtures.h"

namespace mm::conformance::testing {
namespace {

namespace fs = std::filesystem;

// The valid case every row starts from: A [2,3] x B [3,4] = Y [2,4], float, opset 13.
const Dims kA = {2, 3};
const Dims kB = {3, 4};
const Dims kY = {2, 4};

fs::path Input0(const fs::path& dir) { return dir / "test_data_set_0" / "input_0.pb"; }
fs::path Output0(const fs::path& dir) { return dir / "test_data_set_0" / "output_0.pb"; }

// Row whose input_0.pb is the valid A after `edit` changed it.
BadCase TensorRow(std::string why, std::function<void(onnx::TensorProto&)> edit,
                  std::string expected) {
  return {std::move(why),
          [edit](const fs::path& root, const std::string& name) {
            NodeTest test = FloatMatMulTest(kA, kB);
            edit(test.data_sets[0].inputs[0]);
            WriteTest(root / name, test);
          },
          std::move(expected), "test_data_set_0/input_0.pb"};
}

// Row whose model.onnx is the valid model after `edit` changed it.
BadCase ModelRow(std::string why, std::function<void(onnx::ModelProto&)> edit,
                 std::string expected) {
  return {std::move(why),
          [edit](const fs::path& root, const std::string& name) {
            NodeTest test = FloatMatMulTest(kA, kB);
            edit(test.model);
            WriteTest(root / name, test);
          },
          std::move(expected), "model.onnx"};
}

// Row that changes the files of the case directory.
BadCase FilesRow(std::string why, std::function<void(const fs::path& dir)> edit,
                 std::string expected, std::string bad_file) {
  return {std::move(why),
          [edit](const fs::path& root, const std::string& name) {
            edit(WriteFloatCase(root, name, kA, kB));
          },
          std::move(expected), std::move(bad_file)};
}

std::vector<BadCase> MakeBadCases() {
  std::vector<BadCase> rows;
  // --- Files that are not TensorProtos at all.
  rows.push_back(FilesRow(
      "empty tensor file", [](const fs::path& dir) { WriteBytes(Input0(dir), ""); },
      "file is empty", "test_data_set_0/input_0.pb"));
  rows.push_back(FilesRow(
      "unparsable tensor file",
      [](const fs::path& dir) { WriteBytes(Input0(dir), std::string("\xff\xff\xff\xff\x0f", 5)); },
      "cannot parse as onnx.TensorProto", "test_data_set_0/input_0.pb"));
  rows.push_back(FilesRow(
      "tensor file truncated inside raw_data",
      [](const fs::path& dir) {
        const std::string bytes = RawTensorProto(FloatTensor(kA), "a").SerializeAsString();
        WriteBytes(Input0(dir), bytes.substr(0, bytes.size() - 5));
      },
      "cannot parse as onnx.TensorProto", "test_data_set_0/input_0.pb"));
  rows.push_back(FilesRow(
      "file is a directory",
      [](const fs::path& dir) {
        fs::remove(Input0(dir));
        fs::create_directories(Input0(dir));
      },
      "not a regular file", "test_data_set_0/input_0.pb"));
  // --- Tensor contents.
  rows.push_back(TensorRow(
      "raw_data shorter than the dims need",
      [](onnx::TensorProto& p) { p.mutable_raw_data()->resize(20); },
      "has 5 values for shape [2,3] (6) in raw_data"));
  rows.push_back(TensorRow(
      "raw_data holding a partial value",
      [](onnx::TensorProto& p) { p.mutable_raw_data()->resize(22); },
      "has 5 values and 2 bytes for shape [2,3] (6) in raw_data"));
  rows.push_back(TensorRow(
      "typed field with the wrong count",
      [](onnx::TensorProto& p) {
        p.clear_raw_data();
        for (int i = 0; i < 5; ++i) p.add_float_data(1.0f);
      },
      "has 5 values for shape [2,3] (6) in float_data"));
  rows.push_back(TensorRow(
      "raw_data and a typed field together",
      [](onnx::TensorProto& p) {
        for (int i = 0; i < 6; ++i) p.add_float_data(1.0f);
      },
      "both raw_data"));
  rows.push_back(TensorRow(
      "typed field of another dtype",
      [](onnx::TensorProto& p) {
        p.clear_raw_data();
        for (int i = 0; i < 6; ++i) p.add_int64_data(1);
      },
      "int64_data holds 6 values"));
  rows.push_back(TensorRow(
      "no values at all", [](onnx::TensorProto& p) { p.clear_raw_data(); }, "no values"));
  rows.push_back(TensorRow(
      "negative dim", [](onnx::TensorProto& p) { p.set_dims(1, -3); }, "negative dim -3"));
  rows.push_back(TensorRow(
      "dims whose byte count overflows int64",
      [](onnx::TensorProto& p) {
        p.set_dims(0, std::int64_t{1} << 40);
        p.set_dims(1, std::int64_t{1} << 40);
      },
      "too large"));
  rows.push_back(TensorRow(
      "dims claiming more values than the file holds (checked before allocating)",
      [](onnx::TensorProto& p) {
        p.clear_raw_data();
        p.set_dims(0, std::int64_t{1} << 28);
        p.add_float_data(1.0f);
      },
      "has 1 value for shape [268435456,3] (805306368) in float_data"));
  rows.push_back(TensorRow(
      "UNDEFINED dtype",
      [](onnx::TensorProto& p) { p.set_data_type(onnx::TensorProto::UNDEFINED); },
      "UNDEFINED (0)"));
  rows.push_back(TensorRow(
      "unknown dtype number", [](onnx::TensorProto& p) { p.set_data_type(999); }, "UNKNOWN(999)"));
  rows.push_back(TensorRow(
      "non-MatMul dtype (INT8)",
      [](onnx::TensorProto& p) {
        p.set_data_type(onnx::TensorProto::INT8);
        p.mutable_raw_data()->resize(6);
      },
      "INT8 (3) is not a MatMul dtype"));
  rows.push_back(TensorRow(
      "external data",
      [](onnx::TensorProto& p) {
        p.clear_raw_data();
        p.set_data_location(onnx::TensorProto::EXTERNAL);
        auto* entry = p.add_external_data();
        entry->set_key("location");
        entry->set_value("/etc/passwd");
      },
      "external data"));
  rows.push_back(TensorRow(
      "input dtype disagreeing with the model",
      [](onnx::TensorProto& p) {
        p.set_data_type(onnx::TensorProto::DOUBLE);
        p.mutable_raw_data()->resize(6 * sizeof(double));  // A valid double tensor in itself.
      },
      "dtype double disagrees with the model, which declares 'a' as float"));
  rows.push_back(TensorRow(
      "input shape disagreeing with the model",
      [](onnx::TensorProto& p) {
        p.set_dims(0, 3);
        p.set_dims(1, 2);
      },
      "shape [3,2] disagrees with the model"));
  rows.push_back(FilesRow(
      "float16 pattern above 0xFFFF",
      [](const fs::path& dir) {
        WriteMessage(dir / "model.onnx", MatMulModel(onnx::TensorProto::FLOAT16, kA, kB, kY));
        onnx::TensorProto p;
        p.set_data_type(onnx::TensorProto::FLOAT16);
        p.add_dims(2);
        p.add_dims(3);
        for (int i = 0; i < 6; ++i) p.add_int32_data(i == 4 ? 0x10000 : 0x3C00);
        WriteMessage(Input0(dir), p);
      },
      "int32_data[4] = 65536 is not a 16-bit float16 bit pattern", "test_data_set_0/input_0.pb"));
  // --- Model structure.
  rows.push_back(ModelRow(
      "dtype the opset forbids (int32 under opset 8: MatMul-1)",
      [](onnx::ModelProto& m) {
        m.mutable_opset_import(0)->set_version(8);
        for (auto* info : {m.mutable_graph()->mutable_input(0), m.mutable_graph()->mutable_input(1),
                           m.mutable_graph()->mutable_output(0)}) {
          info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
        }
      },
      "which MatMul-1 (selected by opset 8) does not allow"));
  rows.push_back(ModelRow(
      "no opset import", [](onnx::ModelProto& m) { m.clear_opset_import(); }, "no opset import"));
  rows.push_back(ModelRow(
      "undefined input reference",
      [](onnx::ModelProto& m) { m.mutable_graph()->mutable_node(0)->set_input(1, "nowhere"); },
      "'nowhere' is not a graph input (undefined input reference)"));
  rows.push_back(ModelRow(
      "MatMul in another domain",
      [](onnx::ModelProto& m) { m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft"); },
      "domain 'com.microsoft'"));
  rows.push_back(ModelRow(
      "three node inputs",
      [](onnx::ModelProto& m) { m.mutable_graph()->mutable_node(0)->add_input("c"); },
      "MatMul node has 3 inputs"));
  rows.push_back(ModelRow(
      "extra graph input",
      [](onnx::ModelProto& m) {
        auto* extra = m.mutable_graph()->add_input();
        *extra = m.graph().input(0);
        extra->set_name("c");
      },
      "graph input 'c' is not used by the MatMul node (extra input)"));
  rows.push_back(ModelRow(
      "graph output not produced by the node",
      [](onnx::ModelProto& m) { m.mutable_graph()->mutable_output(0)->set_name("z"); },
      "graph output 'z' is not the MatMul node's output"));
  rows.push_back(FilesRow(
      "unparsable model",
      [](const fs::path& dir) {
        WriteBytes(dir / "model.onnx", std::string("\x0a\xff\xff\xff\xff\x0f", 6));
      },
      "cannot parse as onnx.ModelProto", "model.onnx"));
  rows.push_back(FilesRow(
      "empty model", [](const fs::path& dir) { WriteBytes(dir / "model.onnx", ""); },
      "file is empty", "model.onnx"));
  // --- Data set layout.
  rows.push_back(FilesRow(
      "missing input",
      [](const fs::path& dir) { fs::remove(dir / "test_data_set_0" / "input_1.pb"); },
      "missing input_1.pb", "test_data_set_0"));
  rows.push_back(FilesRow(
      "extra input",
      [](const fs::path& dir) {
        fs::copy_file(Input0(dir), dir / "test_data_set_0" / "input_2.pb");
      },
      "extra input", "test_data_set_0/input_2.pb"));
  rows.push_back(FilesRow(
      "missing output", [](const fs::path& dir) { fs::remove(Output0(dir)); },
      "missing output_0.pb", "test_data_set_0"));
  rows.push_back(FilesRow(
      "extra output",
      [](const fs::path& dir) {
        fs::copy_file(Output0(dir), dir / "test_data_set_0" / "output_1.pb");
      },
      "extra output", "test_data_set_0/output_1.pb"));
  rows.push_back(FilesRow(
      "no data set", [](const fs::path& dir) { fs::remove_all(dir / "test_data_set_0"); },
      "no test_data_set_N folder", ""));
  rows.push_back(FilesRow(
      "expected output of the wrong shape for the inputs",
      [](const fs::path& dir) {
        WriteMessage(dir / "model.onnx", MatMulModel(onnx::TensorProto::FLOAT, kA, kB, {2, 5}));
        WriteMessage(Output0(dir), RawTensorProto(FloatTensor({2, 5}), "y"));
      },
      "gives [2,4] but output_0.pb has shape [2,5]", ""));
  return rows;
}

}  // namespace

const std::vector<BadCase>& BadCases() {
  static const std::vector<BadCase>* const rows = new std::vector<BadCase>(MakeBadCases());
  return *rows;
}

}  // namespace mm::conformance::testing
