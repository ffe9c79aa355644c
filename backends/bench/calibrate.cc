#include "backends/bench/calibrate.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "backends/auto/auto_backend.h"
#include "backends/backend_list.h"

extern char** environ;

namespace mm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Measured {
  std::string name;
  Backend* backend;
  std::unique_ptr<MatMulPrimitive> primitive;
  std::vector<double> samples;  // Seconds per call, one per round.
  std::int64_t calls = 1;       // Calls per sample.
};

// Every candidate computing (dtype, shape), timed side by side: `rounds` rounds, each calling every
// candidate `calls` times in turn (interleaved, so a slow phase of the machine hits all alike);
// ranked by median seconds per call.
AutoCell MeasureCell(
    const std::vector<std::pair<std::string, std::unique_ptr<Backend>>>& candidates, DType dtype,
    const BenchShape& shape, int threads) {
  AutoCell cell;
  cell.dtype = dtype;
  cell.threads = threads;
  cell.a_dims = shape.a_dims;
  cell.b_dims = shape.b_dims;
  const MatMulPlan plan = PlanMatMul({dtype, shape.a_dims, shape.b_dims}).value();
  std::vector<Measured> measured;
  for (const auto& [name, backend] : candidates) {
    if (name == "reference" && shape.Large()) continue;
    if (!backend->Supports(plan.desc).supported()) continue;
    auto primitive = backend->Prepare(plan);
    if (!primitive.ok()) continue;
    measured.push_back({name, backend.get(), std::move(primitive).value(), {}, 1});
  }
  if (measured.size() == 1) {
    cell.ranking = {measured[0].name};
    return cell;
  }
  const Tensor a = BenchInput(dtype, shape.a_dims, 1);
  const Tensor b = BenchInput(dtype, shape.b_dims, 2);
  Tensor y = Tensor::Create(dtype, plan.y_dims).value();
  // Warm-up call; it also sizes the samples (about 10 ms each, at least one call).
  for (Measured& m : measured) {
    (void)m.primitive->Execute(a.view(), b.view(), y.mutable_view());
    const auto start = Clock::now();
    (void)m.primitive->Execute(a.view(), b.view(), y.mutable_view());
    const double once = std::max(Seconds(Clock::now() - start), 1e-9);
    m.calls = std::max<std::int64_t>(1, static_cast<std::int64_t>(0.01 / once));
  }
  const int rounds = 5;
  for (int round = 0; round < rounds; ++round) {
    for (Measured& m : measured) {
      const auto start = Clock::now();
      for (std::int64_t i = 0; i < m.calls; ++i) {
        (void)m.primitive->Execute(a.view(), b.view(), y.mutable_view());
      }
      m.samples.push_back(Seconds(Clock::now() - start) / static_cast<double>(m.calls));
    }
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (Measured& m : measured) {
    std::sort(m.samples.begin(), m.samples.end());
    ranked.emplace_back(m.samples[m.samples.size() / 2], m.name);
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [seconds, name] : ranked) {
    cell.ranking.push_back(name);
    cell.seconds.push_back(seconds);
  }
  return cell;
}

// Runs this executable again with OMP_NUM_THREADS=threads to measure that thread count's cells
// (libraries read their thread count when they start, so it cannot change in-process).
int RunPart(const std::string& self, int threads, const std::string& out, ShapeSet set) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("OMP_NUM_THREADS=")) continue;
    env_strings.push_back(*e);
  }
  env_strings.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {self, "--mm_calibrate_part=" + out,
                                   set == ShapeSet::kQuick ? "--mm_set=quick" : "--mm_set=full"};
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace

int CalibratePart(const std::string& out, ShapeSet set) {
  // Created once: creating a backend (oneDNN's probes) costs more than timing a small cell.
  const BackendRegistry registry = AutoCandidateBackends();
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> candidates;
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name);
    if (backend.ok()) candidates.emplace_back(name, std::move(backend).value());
  }
  const int threads = std::max(
      1,
      std::atoi(std::getenv("OMP_NUM_THREADS") != nullptr ? std::getenv("OMP_NUM_THREADS") : "1"));
  nlohmann::json cells = nlohmann::json::array();
  AutoTable part;
  for (DType dtype : BenchDTypes(set)) {
    for (const BenchShape& shape : Shapes(set)) {
      if (!Benchmarked(shape, dtype)) continue;
      const auto start = Clock::now();
      AutoCell cell = MeasureCell(candidates, dtype, shape, threads);
      if (cell.ranking.empty()) continue;
      std::cerr << "mm-bench: calibrated " << DTypeName(dtype) << " " << shape.name << " at "
                << threads << " thread(s): " << cell.ranking[0] << " ("
                << Seconds(Clock::now() - start) << " s)\n";
      part.cells.push_back(std::move(cell));
    }
  }
  std::ofstream(out) << part.ToJson()["cells"].dump();
  return 0;
}

int Calibrate(const std::string& path, ShapeSet set) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> thread_counts = {1};
  if (all > 1) thread_counts.push_back(all);
  AutoTable table;
  table.identity = CurrentAutoIdentity(AutoCandidateBackends());
  table.created = UtcNow();
  const auto start = Clock::now();
  for (int threads : thread_counts) {
    const std::string part = path + ".part" + std::to_string(threads);
    const int code = RunPart(self, threads, part, set);
    std::ifstream in(part);
    if (code != 0 || !in) {
      std::cerr << "mm-bench: calibration at " << threads << " thread(s) failed (exit " << code
                << ")\n";
      return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();
    in.close();
    std::filesystem::remove(part);
    // The part is parsed as a table of this identity, so a cell the parser would refuse is found
    // here rather than when auto loads the file.
    nlohmann::json wrapped = table.ToJson();
    wrapped["cells"] = nlohmann::json::parse(text.str());
    auto parsed = ParseAutoTable(wrapped.dump(), part, table.identity);
    if (!parsed.ok()) {
      std::cerr << "mm-bench: " << parsed.status().message() << "\n";
      return 1;
    }
    for (AutoCell& cell : parsed->cells) table.cells.push_back(std::move(cell));
  }
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  std::ofstream out(path);
  out << table.ToJson().dump(1) << "\n";
  if (!out) {
    std::cerr << "mm-bench: cannot write " << path << "\n";
    return 1;
  }
  std::cerr << "mm-bench: wrote " << table.cells.size() << " cells to " << path << " in "
            << Seconds(Clock::now() - start) << " s\n";
  return 0;
}

}  // namespace mm::bench
