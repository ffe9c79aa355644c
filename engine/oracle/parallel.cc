#include "mm/oracle/parallel.h"

#include <omp.h>

#include <algorithm>

namespace mm {

int RangeCount(std::int64_t n, std::int64_t grain) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const std::int64_t by_size = grain > 0 ? n / grain : n;
  return static_cast<int>(std::clamp<std::int64_t>(by_size, 1, std::max(threads, 1)));
}

void ForEachRange(std::int64_t n, int parts,
                  const std::function<void(int part, std::int64_t begin, std::int64_t end)>& body) {
#pragma omp parallel for schedule(static, 1) num_threads(parts) if (parts > 1)
  for (int part = 0; part < parts; ++part) {
    body(part, n * part / parts, n * (part + 1) / parts);
  }
}

}  // namespace mm
