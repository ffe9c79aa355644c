// One thread count's part of the calibration: the child process measuring its cells (calibrate.h).
#include <sys/prctl.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "calibrate_cell.h"
#include "mm/backends/backend_list.h"
#include "mm/bench/calibrate.h"

namespace mm::bench {

using internal::Clock;
using internal::Seconds;

std::vector<DType> CalibratedDTypes(ShapeSet set) {
  std::vector<DType> dtypes(BenchDTypes(set).begin(), BenchDTypes(set).end());
  if (std::find(dtypes.begin(), dtypes.end(), DType::kFloat16) == dtypes.end()) {
    dtypes.push_back(DType::kFloat16);
  }
  return dtypes;
}

int CalibratePart(const std::string& out, ShapeSet set) {
  // A part whose parent is gone would measure on for minutes, for nobody, taking the cores.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (!internal::LoadSampleSeconds()) return 1;
  // Created once: creating a backend (oneDNN's probes) costs more than timing a small cell.
  const BackendRegistry registry = AutoCandidateBackends();
  internal::Candidates candidates;
  for (const std::string& name : registry.Names()) {
    auto backend = registry.Create(name);
    if (backend.ok()) candidates.emplace_back(name, std::move(backend).value());
  }
  const int threads = std::max(
      1,
      std::atoi(std::getenv("OMP_NUM_THREADS") != nullptr ? std::getenv("OMP_NUM_THREADS") : "1"));
  AutoTable part;
  for (DType dtype : CalibratedDTypes(set)) {
    for (const BenchShape& shape : Shapes(set)) {
      if (!Benchmarked(shape, dtype)) continue;
      const auto start = Clock::now();
      AutoCell cell = internal::MeasureCell(candidates, dtype, shape, threads);
      if (cell.ranking.empty()) continue;
      std::cerr << "mm-bench: calibrated " << DTypeName(dtype) << " " << shape.name << " at "
                << threads << " thread(s): " << cell.ranking[0] << " ("
                << Seconds(Clock::now() - start) << " s)\n";
      part.cells.push_back(std::move(cell));
    }
  }
  // MatMul's family on the set's 2-D products (a family cell is [M, K] x [K, N]).
  for (const family::OpDesc& desc : CalibratedFamilyDescs()) {
    for (const BenchShape& shape : Shapes(set)) {
      if (shape.a_dims.size() != 2 || shape.b_dims.size() != 2) continue;
      const auto start = Clock::now();
      AutoCell cell = internal::MeasureFamilyCell(candidates, desc, shape, threads);
      if (cell.ranking.empty()) continue;
      std::cerr << "mm-bench: calibrated " << desc.ToString() << " " << shape.name << " at "
                << threads << " thread(s): " << cell.ranking[0] << " ("
                << Seconds(Clock::now() - start) << " s)\n";
      part.cells.push_back(std::move(cell));
    }
  }
  if (!internal::WriteWhole(out, part.ToJson()["cells"].dump())) {
    std::cerr << "mm-bench: cannot write " << out << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mm::bench
