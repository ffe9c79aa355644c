#include "mm/conformance/self_check/self_check.h"

#include <bit>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/report/escape.h"
#include "mm/conformance/report/json_report.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/session/run.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/process/process.h"
#include "mm/oracle/error_bound.h"
#include "self_check_internal.h"

namespace mm::self_check {
namespace {

using conformance::CaseEntry;
using conformance::DataSet;
using conformance::Result;
using conformance::Verdict;

// The source name of the in-memory cases.
constexpr std::string_view kSelfCheckSource = "self-check";

conformance::DeclaredTensor Declare(const char* name, DType dtype, const Dims& dims) {
  conformance::DeclaredTensor d{name, dtype, true, {}};
  for (std::int64_t dim : dims) d.dims.emplace_back(dim);
  return d;
}

// A case of data sets (A's and B's values, row-major) whose expected Y is the exact oracle's;
// `y_dims`, when given, is the shape the expected Y is stored in instead of the product's.
template <class T>
CaseEntry MakeCase(std::string name, Dims a_dims, Dims b_dims,
                   std::vector<std::pair<std::vector<T>, std::vector<T>>> sets,
                   std::optional<Dims> y_dims = std::nullopt) {
  const DType dtype = DTypeOf<T>();
  const MatMulPlan plan = PlanMatMul({dtype, a_dims, b_dims}).value();
  const Dims stored_y = y_dims.value_or(plan.y_dims);
  CaseEntry entry;
  entry.name = std::move(name);
  entry.shared_source = std::make_shared<const std::string>(kSelfCheckSource);
  conformance::MatMulModel model;
  model.opset = 13;
  model.matmul_version = 13;
  model.allowed_dtypes = {dtype};
  model.a = Declare("a", dtype, a_dims);
  model.b = Declare("b", dtype, b_dims);
  model.y = Declare("y", dtype, stored_y);
  entry.model = std::move(model);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    entry.data_sets.push_back({"test_data_set_" + std::to_string(i), {}, {}, {}});
  }
  auto shared = std::make_shared<const decltype(sets)>(std::move(sets));
  entry.make_data_set = std::make_shared<const conformance::DataSetMaker>(
      [shared, plan, a_dims, b_dims, stored_y](std::size_t index) -> StatusOr<DataSet> {
        const auto& [a_values, b_values] = shared->at(index);
        MM_ASSIGN_OR_RETURN(Tensor a, Tensor::FromValues<T>(a_dims, a_values));
        MM_ASSIGN_OR_RETURN(Tensor b, Tensor::FromValues<T>(b_dims, b_values));
        MM_ASSIGN_OR_RETURN(OracleResult oracle, ExactMatMul(plan, a.view(), b.view()));
        MM_ASSIGN_OR_RETURN(Tensor y,
                            Tensor::FromValues<T>(stored_y, oracle.y.template Values<T>()));
        return DataSet{"test_data_set_" + std::to_string(index), std::move(a), std::move(b),
                       std::move(y)};
      });
  return entry;
}

// `count` values from a small deterministic pattern (distinct neighbours, both signs, fractions).
template <class T>
std::vector<T> Pattern(std::size_t count, int seed) {
  std::vector<T> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const int v = static_cast<int>((i * 7 + static_cast<std::size_t>(seed) * 3) % 11) - 5;
    out[i] = static_cast<T>(v + (i % 2 == 0 ? 0.5 : 0.25));
  }
  return out;
}

// A = ones [1, K], B = [first, rest, rest, ...]: the partial sums stay at `first`'s binade, where
// one rounding of each sum decides the result.
template <class T>
std::pair<std::vector<T>, std::vector<T>> LongSum(std::size_t k, double first, double rest) {
  std::vector<T> a(k, RoundFromDouble<T>(1.0)), b(k, RoundFromDouble<T>(rest));
  b[0] = RoundFromDouble<T>(first);
  return {a, b};
}

std::string Truncated(std::string text, std::size_t limit) {
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  return text;
}

}  // namespace

PlantedOutcome Judge(std::string name, std::string why, Verdict needed,
                     conformance::ToleranceRule rule, std::vector<Result> results,
                     const SelfCheckOptions& options, std::string needed_text,
                     const ResultsCheck& check) {
  PlantedOutcome o;
  o.name = std::move(name);
  o.why = std::move(why);
  o.needed = needed;
  o.needed_text = std::move(needed_text);
  o.rule = rule;
  o.needed_exit_code =
      needed == Verdict::kPass ? conformance::kExitPassed : conformance::kExitFailed;
  conformance::Report report;
  report.rule = rule;
  report.backends = {o.name};
  report.results = std::move(results);
  auto read_back = conformance::ReportFromJson(conformance::ToJson(report));
  if (!read_back.ok()) {
    o.got = Verdict::kError;
    o.exit_code = -1;
    o.evidence = "the JSON report does not read back: " + read_back.status().message();
    return o;
  }
  if (check) o.unmet = check(read_back->results);
  o.got = Verdict::kPass;
  for (const Result& r : read_back->results) o.got = conformance::WorseVerdict(o.got, r.verdict);
  o.exit_code = options.exit_code(*read_back, !read_back->results.empty(), std::nullopt);
  if (read_back->results.empty()) o.evidence = "no result";
  for (const Result& r : read_back->results) {
    if (r.verdict == o.got) {
      o.evidence = r.case_name + "/" + r.data_set + ": " + Truncated(r.message, 200);
      // Past the cut, so the check sees the whole message.
      if (!o.needed_text.empty() && r.message.find(o.needed_text) != std::string::npos &&
          o.evidence.find(o.needed_text) == std::string::npos) {
        o.evidence += " [" + o.needed_text + "]";
      }
      break;
    }
  }
  return o;
}

namespace {

// A fault planted through the runtime protocol: `planted_driver.py FAULT`, and the verdict it
// deserves (under ONNX's rule), with the text its worst result must say when an ERROR could
// have another cause.
struct DriverFault {
  const char* fault;
  const char* why;
  Verdict needed;
  const char* needed_text;
};

constexpr DriverFault kDriverFaults[] = {
    {"correct", "the control: numpy through the Python SDK", Verdict::kPass, ""},
    {"off_by_one", "1 added to Y's first element", Verdict::kFail, ""},
    {"unwritten", "Y's last element (of two or more) left as the offered buffer's poison",
     Verdict::kFail, ""},
    {"half_sum", "float16/bfloat16 partial sums rounded to their type, float32 declared",
     Verdict::kFail, ""},
    {"wrong_shape", "Y answered flattened to 1-D", Verdict::kError, " is awaited"},
    {"crash", "SIGSEGV when Y has one element", Verdict::kError, "SIGSEGV"},
    {"hang", "no answer for A of shape [3,17], past the timeout", Verdict::kError,
     "did not answer within"},
    {"gap", "operands of rank above 2 refused on supported dtypes", Verdict::kError,
     "conformance gap: "},
};

std::string DriverBackendName(const DriverFault& fault) {
  return std::string("driver_") + fault.fault;
}

// planted_driver.py: installed beside the SDK, else the source tree's.
std::filesystem::path PlantedDriverPath() {
  std::error_code ec;
  const std::filesystem::path installed = runtime::DriversDir() / "planted_driver.py";
  if (std::filesystem::exists(installed, ec)) return installed;
  return MM_PLANTED_DRIVER_SOURCE;
}

// Why the planted driver cannot run here (no python3, SDK or numpy), or "".
std::string DriversMissing(const std::string& python, const std::filesystem::path& driver,
                           const std::filesystem::path& sdk) {
  std::error_code ec;
  if (!std::filesystem::exists(python, ec)) return python + " not found (set MM_PYTHON)";
  if (!std::filesystem::exists(sdk / "mm_runtime/__init__.py", ec)) {
    return "the Python SDK " + (sdk / "mm_runtime").string() + " not found (set MM_RUNTIMES_DIR)";
  }
  if (!std::filesystem::exists(driver, ec)) return "the driver " + driver.string() + " not found";
  auto probe = process::Program::Start({python, "-c", "import numpy"});
  if (!probe.ok()) return probe.status().message();
  auto ended = probe->Wait();
  if (!ended.ok() || ended->wait_status != 0) {
    return python + " cannot import numpy (Debian package python3-numpy; scripts/setup.sh)";
  }
  return "";
}

// The faults planted through the runtime protocol, run over `catalog` as a gate run would run
// them, judged into `out`; or why they cannot run here, in `out.drivers_not_run`.
void RunDriverFaults(const conformance::Catalog& catalog, const SelfCheckOptions& options,
                     SelfCheckResult& out) {
  const std::string python = runtime::PythonPath();
  const std::filesystem::path sdk = runtime::DriversDir(), driver = PlantedDriverPath();
  out.drivers_not_run = DriversMissing(python, driver, sdk);
  if (!out.drivers_not_run.empty()) return;
  BackendRegistry registry;
  for (const DriverFault& fault : kDriverFaults) {
    runtime::DriverCommand command;
    command.name = DriverBackendName(fault);
    command.argv = {python, driver.string(), fault.fault, sdk.string()};
    command.command = python + " " + driver.string() + " " + fault.fault + " " + sdk.string();
    command.timeout_seconds = std::string_view(fault.fault) == "hang" ? options.hang_timeout_seconds
                                                                      : options.timeout_seconds;
    (void)registry.Register(command.name,
                            std::string("planted fault through the runtime protocol: ") + fault.why,
                            [command]() -> StatusOr<std::unique_ptr<Backend>> {
                              return runtime::StartCommandBackend(command);
                            });
  }
  conformance::RunOptions run;
  run.backends = registry.Names();
  run.isolate = true;
  run.jobs = std::max(1, options.jobs);
  // The driver's own timeout must be what ends the hang, before the worker's.
  run.timeout_seconds = std::max(options.timeout_seconds, 2 * options.hang_timeout_seconds);
  const std::vector<Result> results = conformance::RunConformance(catalog, registry, run);
  for (const DriverFault& fault : kDriverFaults) {
    const std::string name = DriverBackendName(fault);
    std::vector<Result> own;
    for (const Result& r : results) {
      if (r.backend == name) own.push_back(r);
    }
    out.outcomes.push_back(Judge(name, fault.why, fault.needed, conformance::ToleranceRule::kOnnx,
                                 std::move(own), options, fault.needed_text));
  }
}

}  // namespace

std::vector<CaseEntry> SelfCheckCases() {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<CaseEntry> cases;
  // B not square (K != N): read transposed, it gives other sums.
  cases.push_back(MakeCase<float>("self_check_rectangular", {2, 3}, {3, 4},
                                  {{Pattern<float>(6, 1), Pattern<float>(12, 2)}}));
  // K = 17 has a tail past a block of 16, and M = 3 is odd with a last row.
  cases.push_back(MakeCase<float>("self_check_k_tail", {3, 17}, {17, 2},
                                  {{Pattern<float>(51, 3), Pattern<float>(34, 4)}}));
  // Both sides broadcast (A [2,1,...], B [3,...]): batch i reads A's matrix i / 3, B's i % 3.
  cases.push_back(MakeCase<float>("self_check_broadcast", {2, 1, 2, 3}, {3, 3, 2},
                                  {{Pattern<float>(12, 5), Pattern<float>(18, 6)}}));
  // NaN and inf meet a zero of B: IEEE gives NaN (NaN * 0, inf * 0), never a number.
  cases.push_back(
      MakeCase<float>("self_check_nan_inputs", {2, 2}, {2, 2},
                      {{{kNan, 1, 2, 3}, {0, 1, 1, 1}}, {{kInf, 1, 2, 3}, {0, 1, 1, 1}}}));
  // A result of 3e-36, normal but tiny, beside an ordinary one.
  cases.push_back(MakeCase<float>("self_check_tiny", {1, 2}, {2, 2},
                                  {{{1e-18f, 2e-18f}, {1e-18f, 3, 1e-18f, 1}}}));
  // 3.4e38, just below the largest float, with S = |Y| (no intermediate sum can overflow).
  cases.push_back(
      MakeCase<float>("self_check_near_max", {1, 2}, {2, 2}, {{{1.7e38f, 0}, {2, 1, 0, 1}}}));
  // A's last row is zero, so Y's last row is exactly 0.
  cases.push_back(MakeCase<float>("self_check_zero_row", {2, 3}, {3, 2},
                                  {{{1, 2, 3, 0, 0, 0}, Pattern<float>(6, 7)}}));
  // Three data sets of one shape and different values.
  cases.push_back(MakeCase<float>("self_check_data_sets", {2, 2}, {2, 2},
                                  {{Pattern<float>(4, 8), Pattern<float>(4, 9)},
                                   {Pattern<float>(4, 10), Pattern<float>(4, 11)},
                                   {Pattern<float>(4, 12), Pattern<float>(4, 13)}}));
  // 16 terms from the bottom of a binade whose ULP is 2: data set 0 adds 2 - 2^-10 (float16) or
  // 2 - 2^-7 (bfloat16) each time, which rounding toward zero loses entirely (outside the
  // bound); data set 1 adds 1, a tie that nearest-even sums in the type lose (outside ONNX's
  // tolerance and the bound of a wide accumulator).
  cases.push_back(
      MakeCase<float16>("self_check_float16_sums", {1, 16}, {16, 1},
                        {LongSum<float16>(16, 2048, 2 - 0x1p-10), LongSum<float16>(16, 2048, 1)}));
  cases.push_back(
      MakeCase<bfloat16>("self_check_bfloat16_sums", {1, 16}, {16, 1},
                         {LongSum<bfloat16>(16, 256, 2 - 0x1p-7), LongSum<bfloat16>(16, 256, 1)}));
  // 1 + 128 x 2^-8 = 1.5 exactly; summed in bfloat16 each 1 + 2^-8 is a tie that nearest-even
  // loses, leaving 1. A bound widened by a bfloat16 computation of the expected Y (K u S = 0.76)
  // would take 1 as within it: the exact expected Y and the declared float32 accumulation do not.
  cases.push_back(MakeCase<bfloat16>("self_check_bfloat16_k129", {1, 129}, {129, 1},
                                     {LongSum<bfloat16>(129, 1, 0x1p-8)}));
  // 2^24 + 63 x (2 - 2^-23): each float sum rounded toward zero stays at 2^24 (an error of 126,
  // inside ONNX's tolerance, outside the bound of 65); rounded to nearest it is exact.
  cases.push_back(MakeCase<float>("self_check_float_sums", {1, 64}, {64, 1},
                                  {LongSum<float>(64, 0x1p24, 2 - 0x1p-23)}));
  // int32 products of 2^31 that wrap (the exact sum modulo 2^32 is 0; saturating gives -2^31), and
  // a sum past the largest int32 (wrapping to the smallest; saturating stays at the largest).
  cases.push_back(MakeCase<std::int32_t>(
      "self_check_int32_limits", {1, 4}, {4, 1},
      {{{1 << 30, 1 << 30, 1 << 30, 1 << 30}, {2, 2, -2, -2}},
       {{std::numeric_limits<std::int32_t>::max(), 1, 0, 0}, {1, 1, 0, 0}}}));
  // 64-bit integers above 2^53, which double cannot hold.
  cases.push_back(MakeCase<std::int64_t>("self_check_int64_large", {1, 2}, {2, 1},
                                         {{{(std::int64_t{1} << 53) + 1, 1}, {1, 2}}}));
  cases.push_back(MakeCase<std::uint64_t>("self_check_uint64_large", {1, 2}, {2, 1},
                                          {{{(std::uint64_t{1} << 60) + 1, 3}, {1, 1}}}));
  // 2 + 2^-40: exact in double, 2 in float (inside ONNX's tolerance, far outside the bound).
  cases.push_back(MakeCase<double>("self_check_double_precision", {1, 2}, {2, 1},
                                   {{{1 + 0x1p-40, 1}, {1, 1}}}));
  return cases;
}

CaseEntry WrongShapeCase() {
  return MakeCase<float>("self_check_wrong_shape", {2, 3}, {3, 3},
                         {{Pattern<float>(6, 14), Pattern<float>(9, 15)}}, Dims{3, 2});
}

PlantedOutcome JudgePlanted(const PlantedBackend& planted, std::vector<Result> results,
                            const SelfCheckOptions& options) {
  return Judge(planted.name, planted.why, planted.needed, planted.rule, std::move(results), options,
               planted.needed_text);
}

std::vector<std::string> SelfCheckResult::Missed() const {
  std::vector<std::string> missed;
  for (const PlantedOutcome& o : outcomes) {
    if (!o.caught()) missed.push_back(o.name);
  }
  return missed;
}

SelfCheckResult RunSelfCheck(const SelfCheckOptions& options) {
  conformance::DiscoverOptions discover;
  discover.builtin = options.builtin;
  // The shape-class catalogue proves nothing more about the judgement than the self-check's own
  // cases do, and over every planted backend it would multiply the self-check's time.
  discover.shape_classes = false;
  conformance::Catalog catalog = conformance::Discover(options.roots, discover);
  // These planted faults are MatMul's: they refuse a case of MatMul's family (UNSUPPORTED), which
  // would then be a result of the control's, proving nothing.
  std::erase_if(catalog.cases, [](const CaseEntry& c) { return c.op != family::Op::kMatMul; });
  for (CaseEntry& entry : SelfCheckCases()) catalog.cases.push_back(std::move(entry));

  const BackendRegistry registry = PlantedRegistry();
  conformance::RunOptions run;
  run.backends = registry.Names();
  run.isolate = true;
  run.jobs = std::max(1, options.jobs);
  run.timeout_seconds = options.timeout_seconds;
  const std::vector<Result> results = conformance::RunConformance(catalog, registry, run);

  // The wrong shape is a fault of the case: the control runs it alone.
  conformance::Catalog shape_catalog;
  shape_catalog.cases.push_back(WrongShapeCase());
  const std::string control = PlantedBackends().front().name;
  conformance::RunOptions shape_run = run;
  shape_run.backends = {control};
  shape_run.jobs = 1;
  std::vector<Result> shape_results =
      conformance::RunConformance(shape_catalog, registry, shape_run);

  SelfCheckResult out;
  out.cases = static_cast<int>(catalog.cases.size() + shape_catalog.cases.size());
  for (const PlantedBackend& planted : PlantedBackends()) {
    std::vector<Result> own;
    for (const Result& r : results) {
      if (r.backend == planted.name) own.push_back(r);
    }
    out.outcomes.push_back(JudgePlanted(planted, std::move(own), options));
  }
  out.outcomes.push_back(Judge(std::string(kWrongShapeFault),
                               "a data set's expected Y stored as [3,2] for a [2,3] product",
                               Verdict::kError, conformance::ToleranceRule::kOnnx,
                               std::move(shape_results), options, std::string(kWrongShapeText)));
  RunFamilyPlants(options, out);
  if (options.drivers) RunDriverFaults(catalog, options, out);
  return out;
}

void WriteSelfCheck(const SelfCheckResult& result, std::ostream& out, bool quiet) {
  auto rule_name = [](conformance::ToleranceRule rule) {
    return rule == conformance::ToleranceRule::kBound ? "bound" : "onnx";
  };
  for (const PlantedOutcome& o : result.outcomes) {
    if (quiet && o.caught()) continue;
    out << (o.caught() ? "  caught  " : "  MISSED  ") << o.name << ": "
        << conformance::VerdictName(o.got) << ", exit " << o.exit_code << " (needed "
        << conformance::VerdictName(o.needed) << ", exit " << o.needed_exit_code
        << (o.needed_text.empty() ? "" : " saying '" + o.needed_text + "'") << " under --tolerance "
        << rule_name(o.rule) << "): " << o.why;
    if (!o.caught()) out << "\n          worst result: " << conformance::PrintableText(o.evidence);
    if (!o.unmet.empty()) {
      out << "\n          not as deserved: " << conformance::PrintableText(o.unmet);
    }
    out << "\n";
  }
  const std::vector<std::string> missed = result.Missed();
  if (!result.drivers_not_run.empty()) {
    out << "  NOT RUN the runtime-protocol faults (driver_*): " << result.drivers_not_run << "\n";
  }
  out << "self-check: " << (result.outcomes.size() - missed.size()) << " of "
      << result.outcomes.size() << " planted faults (the control included) judged as needed over "
      << result.cases << " cases";
  if (!result.drivers_not_run.empty()) out << " (the runtime-protocol path not proven)";
  if (missed.empty()) {
    out << "; the gate can fail\n";
  } else {
    out << "; MISSED:";
    for (const std::string& name : missed) out << " " << name;
    out << "\n";
  }
}

int RunSelfCheckCommand(const std::vector<conformance::DataRoot>& roots, bool builtin, int jobs,
                        bool quiet, std::ostream& out) {
  SelfCheckOptions options;
  options.roots = roots;
  options.builtin = builtin;
  options.jobs = jobs;
  const SelfCheckResult result = RunSelfCheck(options);
  WriteSelfCheck(result, out, quiet);
  return result.Missed().empty() ? conformance::kExitPassed : conformance::kExitFailed;
}

}  // namespace mm::self_check
