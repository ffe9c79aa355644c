// mm-fuzz generate --op OP: fair corpora of Gemm, MatMulInteger and QLinearMatMul as ONNX node
// tests (fuzz_commands.h, GenerateFamily).
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fuzz_commands.h"
#include "mm/conformance/fuzz/fair.h"
#include "mm/conformance/fuzz/family_problem.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"
#include "mm/version.h"

namespace mm::fuzz {
namespace {

using nlohmann::ordered_json;

// The cases written so far, per signature, and the problems replaced as unfair.
struct FamilyCorpus {
  std::int64_t written = 0;
  std::map<std::string, std::int64_t> per_signature;
  ordered_json cases = ordered_json::array(), replaced = ordered_json::array();
};

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// test_mm_fuzz_s<seed>_<op><version>_<types, '_'-separated>_<index>, as the built-in catalogue
// names its cases (mm_family_<op><version>_<types>_...).
std::string CaseName(const FamilyProblem& p) {
  std::string types = p.Types();
  for (char& c : types) c = c == '/' ? '_' : c;
  return "test_mm_fuzz_s" + std::to_string(p.seed) + "_" + Lower(family::OpName(p.op)) +
         std::to_string(p.version) + "_" + types + "_" + std::to_string(p.index);
}

// The exact answer of `p` into `y`, and why `p` is not fair ("" when it is, or when unfair
// problems are kept).
StatusOr<std::string> ExactAndFairness(const FuzzCliOptions& o, const FamilyProblem& p, Tensor& y) {
  MM_ASSIGN_OR_RETURN(const family::Plan plan, family::PlanProblem(p.View()));
  MM_ASSIGN_OR_RETURN(family::FamilyOracle oracle,
                      family::ExactFamily(plan, FairArithmetic(plan.y_dtype)));
  std::string reason = o.keep_unfair ? "" : UnfairFamilyReason(plan, oracle, o.fuzz.tolerance);
  y = std::move(oracle.y);
  return reason;
}

// Writes the problems of `generator` from index o.fuzz.first on into o.out_dir while `wanted`
// wants them: per signature (FamilyProblem::Signature), or any signature under the key "". Returns
// the exit code, the error said on `err`.
int WriteFamilyCases(const FuzzCliOptions& o, const GeneratorOptions& generator,
                     std::map<std::string, std::int64_t> wanted, FamilyCorpus& c,
                     std::ostream& err) {
  // Never loop forever on options that make a signature's fair problems rare.
  constexpr std::int64_t kMaxWithoutACase = 20000;
  std::int64_t left = 0, without = 0;
  for (const auto& [signature, count] : wanted) left += count;
  const bool any = wanted.count("") > 0;
  for (std::int64_t index = o.fuzz.first; left > 0; ++index) {
    if (++without > kMaxWithoutACase) {
      err << "mm-fuzz generate: " << kMaxWithoutACase << " problems in a row gave no case (up to "
          << "index " << index - 1 << "); these options make fair problems of the signatures "
          << "still wanted too rare (see --keep-unfair)\n";
      return kExitFailed;
    }
    const FamilyProblem p = GenerateFamilyProblem(o.fuzz.seed, index, o.fuzz.op, generator);
    const auto slot = wanted.find(any ? "" : p.Signature());
    if (slot == wanted.end() || slot->second == 0) continue;
    Tensor y;
    const auto reason = ExactAndFairness(o, p, y);
    if (!reason.ok()) {
      err << "mm-fuzz generate: problem " << index << " (" << p.ToString()
          << "): " << reason.status().ToString() << "\n";
      return kExitFailed;
    }
    if (!reason->empty()) {
      c.replaced.push_back({{"index", index},
                            {"signature", p.Signature()},
                            {"problem", p.ToString()},
                            {"values", p.values},
                            {"reason", *reason}});
      continue;
    }
    const std::string name = CaseName(p);
    const Status st = conformance::WriteFamilyNodeTest(std::filesystem::path(o.out_dir) / name,
                                                       p.View(), y, "mm-fuzz");
    if (!st.ok()) {
      err << "mm-fuzz generate: " << st.message() << "\n";
      return kExitUsage;
    }
    c.cases.push_back({{"case", name},
                       {"index", index},
                       {"signature", p.Signature()},
                       {"form", p.form},
                       {"values", p.values},
                       {"problem", p.ToString()}});
    ++c.per_signature[p.Signature()];
    ++c.written;
    --slot->second;
    --left;
    without = 0;
  }
  return kExitClean;
}

// The corpus's cases: --cases N of any signature, or --cases-per-dtype N of each (Gemm: one pass
// per element type, whose problems are the seed's for that type alone, as MatMul's).
int WriteFamilyCorpusCases(const FuzzCliOptions& o, FamilyCorpus& c, std::ostream& err) {
  GeneratorOptions generator = o.fuzz.generator;
  for (const auto& name : o.dtypes) generator.dtypes.push_back(DTypeFromName(name).value());
  if (o.cases_per_dtype == 0) {
    return WriteFamilyCases(o, generator, {{"", o.generate_cases}}, c, err);
  }
  std::vector<std::vector<DType>> passes = {generator.dtypes};
  if (o.fuzz.op == family::Op::kGemm) {
    passes.clear();
    for (DType dtype : generator.dtypes.empty()
                           ? std::vector<DType>(kAllDTypes.begin(), kAllDTypes.end())
                           : generator.dtypes) {
      passes.push_back({dtype});
    }
  }
  for (const std::vector<DType>& dtypes : passes) {
    generator.dtypes = dtypes;
    std::map<std::string, std::int64_t> wanted;
    for (const std::string& s : FamilySignatures(o.fuzz.op, dtypes)) wanted[s] = o.cases_per_dtype;
    if (const int code = WriteFamilyCases(o, generator, wanted, c, err); code != kExitClean) {
      return code;
    }
  }
  return kExitClean;
}

// Why a family corpus is fair, in words.
std::string FamilyFairnessRule(const FuzzCliOptions& o) {
  if (o.keep_unfair) {
    return "none: every generated problem is kept (--keep-unfair); judge it by the bound "
           "(mm-conformance --tolerance bound)";
  }
  return "every correct implementation gives the expected output under ONNX's rule (rtol " +
         conformance::FormatDouble(o.fuzz.tolerance.rtol) + ", atol " +
         conformance::FormatDouble(o.fuzz.tolerance.atol) +
         ", integers exact): MatMulInteger and QLinearMatMul exactly (no exact accumulation "
         "leaves int32; no QLinearMatMul element where a float32 evaluation of the multiplier "
         "may round to a neighbour), integer Gemm exactly modulo 2^bits, float Gemm for any "
         "evaluation in float32 (double for double; float16 and bfloat16 widened) in any order, "
         "subnormals flushed or not, rounded once (no NaN or infinite input, no overflow, no "
         "ambiguity of the standard)";
}

// manifest.json: no time, host or path, so the same seed gives the same bytes everywhere.
ordered_json FamilyManifest(const FuzzCliOptions& o, const FamilyCorpus& c) {
  ordered_json m;
  m["tool"] = "mm-fuzz generate";
  m["version"] = MM_VERSION;
  m["op"] = family::OpName(o.fuzz.op);
  m["seed"] = o.fuzz.seed;
  m["first"] = o.fuzz.first;
  m["cases"] = c.written;
  if (o.cases_per_dtype > 0) m["cases_per_signature"] = o.cases_per_dtype;
  m["dtypes"] = o.dtypes;
  m["max_elements"] = o.fuzz.generator.max_elements;
  m["fair_under"] = o.keep_unfair ? "none" : "onnx";
  m["rtol"] = o.fuzz.tolerance.rtol;
  m["atol"] = o.fuzz.tolerance.atol;
  m["rule"] = FamilyFairnessRule(o);
  m["expected_output"] =
      "the exact answer (mm::family's ExactFamily): MatMulInteger's exact int32, QLinearMatMul's "
      "exact requantization (round half to even), Gemm's exact value rounded to nearest even";
  m["signatures"] = ordered_json::object();
  for (const auto& [signature, count] : c.per_signature) m["signatures"][signature] = count;
  m["replaced"] = c.replaced;
  m["case_list"] = c.cases;
  return m;
}

std::string FamilyReadme(const FuzzCliOptions& o, const FamilyCorpus& c) {
  const std::string op(family::OpName(o.fuzz.op));
  std::ostringstream readme;
  readme << "# " << op << " corpus generated by mm-fuzz\n\n"
         << c.written << " ONNX node tests (`test_mm_fuzz_s<seed>_<op><version>_<types>_<index>/`"
         << "), seed " << o.fuzz.seed << ", problem indices from " << o.fuzz.first
         << ", written by `mm-fuzz " << MM_VERSION << "`:\n\n```sh\n"
         << GenerateCommand(o) << "\n```\n\nFair under: " << FamilyFairnessRule(o)
         << ".\n\nCases per signature (the operator at its version, its types):\n\n"
         << "| signature | cases |\n| --- | --- |\n";
  for (const auto& [signature, count] : c.per_signature) {
    readme << "| " << signature << " | " << count << " |\n";
  }
  readme << "\n"
         << c.replaced.size()
         << " generated problems were not fair and were replaced by the next index of the seed; "
            "`manifest.json` lists them with the reason (`replaced`) and every case "
            "(`case_list`). Case `..._<index>` is problem `<index>` of the seed: `mm-fuzz --op "
         << op << " --seed " << o.fuzz.seed << " --first <index> --cases 1"
         << (o.fuzz.op == family::Op::kGemm ? " --dtype <type>" : "") << "` fuzzes it again.\n";
  return readme.str();
}

}  // namespace

int GenerateFamily(const FuzzCliOptions& o, std::ostream& out, std::ostream& err) {
  if (const int code = PrepareCorpusDir(o, err); code != kExitClean) return code;
  FamilyCorpus c;
  if (const int code = WriteFamilyCorpusCases(o, c, err); code != kExitClean) return code;
  if (const int code =
          WriteCorpusFiles(o, FamilyManifest(o, c).dump(2) + "\n", FamilyReadme(o, c), err);
      code != kExitClean) {
    return code;
  }
  out << "mm-fuzz generate: wrote " << c.written << " " << family::OpName(o.fuzz.op) << " cases ("
      << (o.cases_per_dtype > 0 ? std::to_string(o.cases_per_dtype) + " per signature, " : "")
      << c.per_signature.size() << " signatures, seed " << o.fuzz.seed << ", first " << o.fuzz.first
      << ") to " << o.out_dir
      << (o.keep_unfair ? ", unfair problems kept\n"
                        : ", fair under ONNX's rule; " + std::to_string(c.replaced.size()) +
                              " unfair problems replaced\n");
  return kExitClean;
}

}  // namespace mm::fuzz
