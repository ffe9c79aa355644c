#include "fuzz_commands.h"

#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mm/conformance/fuzz/fair.h"
#include "mm/conformance/fuzz/family_problem.h"
#include "mm/conformance/fuzz/fuzz_merge.h"
#include "mm/conformance/fuzz/fuzz_report_reader.h"
#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/engine/io/output_file.h"
#include "mm/engine/testdata/onnx_matmul_examples.h"
#include "mm/version.h"

namespace mm::fuzz {
namespace {

using nlohmann::ordered_json;

// Why a corpus is fair, in words, for its README and manifest.
std::string FairnessRule(const FuzzCliOptions& o) {
  const auto& t = o.fuzz.tolerance;
  if (o.keep_unfair) {
    return "none: every generated problem is kept (--keep-unfair), also those a correct "
           "implementation may fail under ONNX's tolerance; judge it by the K-aware error bound "
           "(mm-conformance --tolerance bound)";
  }
  return "ONNX's rule (|got - expected| <= atol + rtol |expected| with rtol " +
         conformance::FormatDouble(t.rtol) + ", atol " + conformance::FormatDouble(t.atol) +
         ", NaN equals NaN, integers exact) for any implementation that sums the products in "
         "float32 (double for double; float16 and bfloat16 widened to float32) in any order, "
         "subnormals flushed or not, and rounds once to the output type";
}

// Unless --overwrite: refuses a DIR that holds anything (its README.md would be replaced without a
// word), a corpus written there before included. Returns the usage error, or "".
std::string RefuseNonEmptyOut(const FuzzCliOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (o.overwrite || !fs::is_directory(o.out_dir, ec)) return "";
  fs::directory_iterator entries(o.out_dir, ec);
  if (ec) return "cannot read '" + o.out_dir + "': " + ec.message();
  if (entries == fs::directory_iterator()) return "";
  return "'" + o.out_dir + "' is not empty (it holds '" + entries->path().filename().string() +
         "'); give a new or empty directory, or --overwrite to write the corpus into it (files "
         "of the same names are replaced)";
}

// The cases of a corpus written so far, and the problems replaced as unfair.
struct Written {
  std::int64_t written = 0;
  ordered_json cases = ordered_json::array(), replaced = ordered_json::array();
};

// Writes `count` cases of `generator`'s problems (fair ones unless --keep-unfair) from index
// o.fuzz.first on into o.out_dir, adding them to `w`. Returns the exit code (kExitClean when all
// were written), with the error said on `err`.
int WriteCases(const FuzzCliOptions& o, const GeneratorOptions& generator, std::int64_t count,
               Written& w, std::ostream& err) {
  namespace fs = std::filesystem;
  // Never loop forever on options that make fair problems rare.
  constexpr std::int64_t kMaxReplacedInARow = 10000;
  std::int64_t written = 0, in_a_row = 0;
  for (std::int64_t index = o.fuzz.first; written < count; ++index) {
    Problem p = GenerateProblem(o.fuzz.seed, index, generator);
    auto plan = PlanMatMul(p.desc());
    auto oracle = plan.ok() ? ExactMatMul(*plan, p.a.view(), p.b.view())
                            : StatusOr<OracleResult>(plan.status());
    auto y = oracle.ok() ? CorrectlyRounded(*plan, p.a.view(), p.b.view(), *oracle)
                         : StatusOr<Tensor>(oracle.status());
    if (!y.ok()) {
      err << "mm-fuzz generate: problem " << index << ": " << y.status().ToString() << "\n";
      return kExitFailed;
    }
    const std::string dtype(DTypeName(p.a.dtype()));
    if (!o.keep_unfair) {
      const std::string reason =
          UnfairReason(*plan, p.a.view(), p.b.view(), *oracle, y->view(), o.fuzz.tolerance);
      if (!reason.empty()) {
        w.replaced.push_back({{"index", index},
                              {"dtype", dtype},
                              {"a_shape", p.a.dims()},
                              {"b_shape", p.b.dims()},
                              {"values", p.values},
                              {"reason", reason}});
        if (++in_a_row >= kMaxReplacedInARow) {
          err << "mm-fuzz generate: " << kMaxReplacedInARow
              << " problems in a row are not fair (up to index " << index
              << "); these options make fair problems too rare (see --keep-unfair)\n";
          return kExitFailed;
        }
        continue;
      }
    }
    in_a_row = 0;
    const std::string name =
        "test_mm_fuzz_s" + std::to_string(o.fuzz.seed) + "_" + dtype + "_" + std::to_string(index);
    const Status st =
        conformance::WriteMatMulNodeTest(fs::path(o.out_dir) / name, p.a, p.b, *y, "mm-fuzz");
    if (!st.ok()) {
      err << "mm-fuzz generate: " << st.message() << "\n";
      return kExitUsage;
    }
    w.cases.push_back({{"case", name},
                       {"index", index},
                       {"dtype", dtype},
                       {"form", p.form},
                       {"values", p.values},
                       {"a_shape", p.a.dims()},
                       {"b_shape", p.b.dims()}});
    ++written;
    ++w.written;
  }
  return kExitClean;
}

// What every corpus case's expected output is.
constexpr const char* kExpectedOutput =
    "the exact product of the inputs, correctly rounded to the dtype (nearest even); IEEE's "
    "NaN or infinity where a NaN or infinite input reaches the element";

// The corpus's manifest.json. No time, host or path: the same seed gives the same bytes
// everywhere.
ordered_json CorpusManifest(const FuzzCliOptions& o, const Written& w) {
  ordered_json manifest;
  manifest["tool"] = "mm-fuzz generate";
  manifest["version"] = MM_VERSION;
  manifest["seed"] = o.fuzz.seed;
  manifest["first"] = o.fuzz.first;
  manifest["cases"] = w.written;
  if (o.cases_per_dtype > 0) manifest["cases_per_dtype"] = o.cases_per_dtype;
  manifest["dtypes"] = o.dtypes;
  manifest["max_elements"] = o.fuzz.generator.max_elements;
  if (o.large) manifest["large_products"] = o.fuzz.generator.large_products;
  manifest["fair_under"] = o.keep_unfair ? "none" : "onnx";
  manifest["rtol"] = o.fuzz.tolerance.rtol;
  manifest["atol"] = o.fuzz.tolerance.atol;
  manifest["rule"] = FairnessRule(o);
  manifest["expected_output"] = kExpectedOutput;
  manifest["replaced"] = w.replaced;
  manifest["case_list"] = w.cases;
  return manifest;
}

// The corpus's README.md.
std::string CorpusReadme(const FuzzCliOptions& o, const Written& w) {
  std::ostringstream readme;
  readme << "# MatMul corpus generated by mm-fuzz\n\n"
         << w.written << " ONNX node tests (`test_mm_fuzz_s<seed>_<dtype>_<index>/`), seed "
         << o.fuzz.seed << ", problem indices from " << o.fuzz.first << ", written by `mm-fuzz "
         << MM_VERSION << "`:\n\n```sh\n"
         << GenerateCommand(o) << "\n```\n\nFair under: " << FairnessRule(o) << ".\n\n"
         << "Expected outputs: " << kExpectedOutput << ".\n\n";
  if (!o.keep_unfair) {
    readme << w.replaced.size()
           << " generated problems were not fair and were replaced by the next index of the "
              "seed; `manifest.json` lists them with the reason (`replaced`) and every case "
              "(`case_list`). Case `..._<index>` is problem `<index>` of the seed: `mm-fuzz "
              "--seed "
           << o.fuzz.seed << " --first <index> --cases 1 --dtype <dtype>` fuzzes it again.\n";
  }
  return readme.str();
}

// Writes the corpus's cases into o.out_dir (a new or, unless --overwrite, empty directory).
int WriteCorpusCases(const FuzzCliOptions& o, Written& w, std::ostream& err) {
  if (const int code = PrepareCorpusDir(o, err); code != kExitClean) return code;
  GeneratorOptions generator = o.fuzz.generator;
  for (const auto& name : o.dtypes) generator.dtypes.push_back(DTypeFromName(name).value());
  if (o.cases_per_dtype == 0) return WriteCases(o, generator, o.generate_cases, w, err);
  // One pass per dtype: its problems are the seed's for that dtype alone, so each dtype gets
  // exactly N and every case still replays by its index.
  std::vector<DType> dtypes = generator.dtypes;
  if (dtypes.empty()) dtypes.assign(kAllDTypes.begin(), kAllDTypes.end());
  for (DType dtype : dtypes) {
    generator.dtypes = {dtype};
    if (const int code = WriteCases(o, generator, o.cases_per_dtype, w, err); code != kExitClean) {
      return code;
    }
  }
  return kExitClean;
}

// The node test of a shape-class case: its data sets in order; a sequence's model declares every
// dim symbolic ("a_0", "b_1", "y_0"...), so a runtime runs all of them through one model.
StatusOr<conformance::NodeTest> ShapeCaseNodeTest(const conformance::ShapeCase& shape_case) {
  conformance::ModelProtoOptions options;
  options.opset = conformance::OpsetFor(shape_case.dtype);
  options.graph_name = shape_case.name;
  options.producer_name = "mm-fuzz";
  conformance::NodeTest test;
  for (std::size_t d = 0; d < shape_case.shape_class->problems.size(); ++d) {
    MM_ASSIGN_OR_RETURN(conformance::DataSet set, conformance::ShapeCaseDataSet(shape_case, d));
    if (d == 0) {
      test.model = conformance::MatMulModelProto(GetDTypeInfo(shape_case.dtype).onnx_enum,
                                                 set.a.dims(), set.b.dims(), set.y.dims(), options);
    }
    test.data_sets.push_back(
        {{conformance::TensorToProto(set.a, "a"), conformance::TensorToProto(set.b, "b")},
         {conformance::TensorToProto(set.y, "y")}});
  }
  if (shape_case.shape_class->sequence()) {
    onnx::GraphProto& graph = *test.model.mutable_graph();
    for (auto* values : {graph.mutable_input(), graph.mutable_output()}) {
      for (onnx::ValueInfoProto& value : *values) {
        auto* dims = value.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
        for (int i = 0; i < dims->size(); ++i) {
          dims->at(i).set_dim_param(value.name() + "_" + std::to_string(i));
        }
      }
    }
  }
  return test;
}

}  // namespace

int PrepareCorpusDir(const FuzzCliOptions& o, std::ostream& err) {
  if (const std::string refused = RefuseNonEmptyOut(o); !refused.empty()) {
    err << "mm-fuzz generate: " << refused << "\n";
    return kExitUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    err << "mm-fuzz generate: cannot create '" << o.out_dir << "': " << ec.message() << "\n";
    return kExitUsage;
  }
  return kExitClean;
}

int WriteCorpusFiles(const FuzzCliOptions& o, const std::string& manifest,
                     const std::string& readme, std::ostream& err) {
  namespace fs = std::filesystem;
  for (Status written : {io::WriteFileAtomically(fs::path(o.out_dir) / "manifest.json", manifest),
                         io::WriteFileAtomically(fs::path(o.out_dir) / "README.md", readme)}) {
    if (!written.ok()) {
      err << "mm-fuzz generate: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return kExitClean;
}

std::string GenerateCommand(const FuzzCliOptions& o) {
  std::ostringstream command;
  command << "mm-fuzz generate "
          << (IsFamilyOp(o.fuzz.op) ? "--op " + std::string(family::OpName(o.fuzz.op)) + " " : "")
          << "--out DIR "
          << (o.cases_per_dtype > 0 ? "--cases-per-dtype " + std::to_string(o.cases_per_dtype)
                                    : "--cases " + std::to_string(o.generate_cases))
          << " --seed " << o.fuzz.seed;
  if (o.fuzz.first != 0) command << " --first " << o.fuzz.first;
  for (const auto& d : o.dtypes) command << " --dtype " << d;
  if (o.fuzz.generator.max_elements != GeneratorOptions{}.max_elements) {
    command << " --max-elements " << o.fuzz.generator.max_elements;
  }
  if (o.large) command << " --large --large-products " << o.fuzz.generator.large_products;
  if (o.fuzz.tolerance.rtol != conformance::Tolerance{}.rtol) {
    command << " --rtol " << conformance::FormatDouble(o.fuzz.tolerance.rtol);
  }
  if (o.fuzz.tolerance.atol != conformance::Tolerance{}.atol) {
    command << " --atol " << conformance::FormatDouble(o.fuzz.tolerance.atol);
  }
  if (o.keep_unfair) command << " --keep-unfair";
  return command.str();
}

int Generate(const FuzzCliOptions& o, std::ostream& out, std::ostream& err) {
  if (IsFamilyOp(o.fuzz.op)) return GenerateFamily(o, out, err);
  Written w;
  if (const int code = WriteCorpusCases(o, w, err); code != kExitClean) return code;
  if (const int code =
          WriteCorpusFiles(o, CorpusManifest(o, w).dump(2) + "\n", CorpusReadme(o, w), err);
      code != kExitClean) {
    return code;
  }
  out << "mm-fuzz generate: wrote " << w.written << " cases ("
      << (o.cases_per_dtype > 0 ? std::to_string(o.cases_per_dtype) + " per dtype, " : "")
      << "seed " << o.fuzz.seed << ", first " << o.fuzz.first << ") to " << o.out_dir;
  if (o.keep_unfair) {
    out << ", unfair problems kept\n";
  } else {
    out << ", fair under ONNX's rule; " << w.replaced.size() << " unfair problems replaced\n";
  }
  return kExitClean;
}

int ExportBuiltin(const FuzzCliOptions& o, std::ostream& out, std::ostream& err) {
  auto examples = BuiltinExamples();
  if (!examples.ok()) {
    err << "mm-fuzz export-builtin: " << examples.status().message() << "\n";
    return kExitFailed;
  }
  for (const ExampleCase& example : *examples) {
    const Status st =
        conformance::WriteMatMulNodeTest(std::filesystem::path(o.out_dir) / example.name, example.a,
                                         example.b, example.y, "mm-fuzz");
    if (!st.ok()) {
      err << "mm-fuzz export-builtin: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  const std::vector<conformance::ShapeCase> shape_cases = conformance::ShapeCases();
  for (const conformance::ShapeCase& shape_case : shape_cases) {
    auto test = ShapeCaseNodeTest(shape_case);
    if (!test.ok()) {
      err << "mm-fuzz export-builtin: " << shape_case.name << ": " << test.status().message()
          << "\n";
      return kExitFailed;
    }
    const Status st =
        conformance::WriteNodeTest(std::filesystem::path(o.out_dir) / shape_case.name, *test);
    if (!st.ok()) {
      err << "mm-fuzz export-builtin: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  const std::vector<conformance::FamilyCase> family_cases = conformance::BuiltinFamilyCases();
  for (const conformance::FamilyCase& c : family_cases) {
    auto y = conformance::FamilyCaseExpectedY(c);
    if (!y.ok()) {
      err << "mm-fuzz export-builtin: " << c.name << ": " << y.status().message() << "\n";
      return kExitFailed;
    }
    const Status st = conformance::WriteFamilyNodeTest(std::filesystem::path(o.out_dir) / c.name,
                                                       c.problem, *y, "mm-fuzz");
    if (!st.ok()) {
      err << "mm-fuzz export-builtin: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  out << "mm-fuzz export-builtin: wrote "
      << examples->size() + shape_cases.size() + family_cases.size() << " cases ("
      << examples->size() << " examples of the ONNX MatMul page, " << shape_cases.size()
      << " of the shape-class catalogue, " << family_cases.size()
      << " of the family catalogue: Gemm, MatMulInteger, QLinearMatMul) to " << o.out_dir << "\n";
  return kExitClean;
}

int Merge(const FuzzCliOptions& o, std::ostream& out, std::ostream& err) {
  std::vector<ShardReport> shards;
  for (const std::string& path : o.merge_inputs) {
    auto shard = ReadFuzzReport(path);
    if (!shard.ok()) {
      err << "mm-fuzz merge: " << shard.status().message() << "\n";
      return kExitUsage;
    }
    shards.push_back(std::move(shard).value());
  }
  auto merged = MergeFuzzReports(shards);
  if (!merged.ok()) {
    err << "mm-fuzz merge: " << merged.status().message() << "\n";
    return kExitUsage;
  }
  const ordered_json& m = *merged;
  const ordered_json& s = m.at("stats");
  if (!o.quiet) {
    for (const auto& [name, counts] : s.at("backends").items()) {
      out << "  " << std::left << std::setw(10) << name;
      for (const auto& [verdict, n] : counts.items()) out << " " << verdict << " " << n;
      out << "\n";
    }
    for (const auto& f : m.at("findings")) {
      out << f.at("kind").get<std::string>() << " " << f.at("backend").get<std::string>() << " ";
      if (f.at("op") != "MatMul") out << f.at("op").get<std::string>() << " ";
      out << f.at("dtype").get<std::string>() << "\n  replay: " << f.at("replay").get<std::string>()
          << "\n";
    }
  }
  // The operator of a family campaign (reports read without one are MatMul's).
  const std::string op = m.at("options").at("op").get<std::string>();
  out << "summary: " << shards.size() << " shards merged: " << (op == "MatMul" ? "" : op + ", ")
      << "seed " << m.at("options").at("seed") << ", " << s.at("problems") << " problems, "
      << s.at("results") << " results, " << s.at("failures") << " failing, "
      << m.at("findings").size() << " findings; exit " << m.at("exit_code") << "\n";
  if (!o.json.empty()) {
    if (Status written = io::WriteFileAtomically(o.json, m.dump(2) + "\n"); !written.ok()) {
      err << "mm-fuzz merge: " << written.message() << "\n";
      return kExitUsage;
    }
  }
  return m.at("exit_code").get<int>();
}

}  // namespace mm::fuzz
