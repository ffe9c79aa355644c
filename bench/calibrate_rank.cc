// The calibration's statistic: how a candidate's samples are measured, which cells are timed
// again, and how the measures rank (calibrate.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "mm/bench/calibrate.h"

namespace mm::bench {

double OneCallPruneThreshold(double best) {
  // Well above kPruneFactor^2: a candidate pruned on one call is one the two-call rule prunes too.
  constexpr double kFactor = 10;
  constexpr double kAtLeast = 0.01;
  return std::max(kFactor * best, kAtLeast);
}

double FastestBlockMedian(std::span<const double> samples, int block) {
  auto median = [](std::span<const double> values) {
    std::vector<double> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  };
  if (samples.empty()) return std::numeric_limits<double>::infinity();
  const std::size_t size = static_cast<std::size_t>(std::max(block, 1));
  if (samples.size() < size) return median(samples);
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t start = 0; start + size <= samples.size(); start += size) {
    best = std::min(best, median(samples.subspan(start, size)));
  }
  return best;
}

std::vector<std::size_t> CloseContenders(std::span<const double> measures, double margin) {
  const auto fastest = std::min_element(measures.begin(), measures.end());
  if (fastest == measures.end() || !std::isfinite(*fastest)) return {};
  const std::size_t first = static_cast<std::size_t>(fastest - measures.begin());
  std::vector<std::size_t> close = {first};
  for (std::size_t i = 0; i < measures.size(); ++i) {
    if (i != first && measures[i] <= *fastest * (1 + margin)) close.push_back(i);
  }
  if (close.size() == 1) return {};
  return close;
}

std::vector<std::pair<double, std::string>> RankEntries(
    std::vector<std::pair<double, std::string>> measures,
    const std::vector<std::string>& preference, double tie_margin) {
  std::sort(measures.begin(), measures.end());
  // An entry's place in the preference: its backend's rank, then all threads before "@N".
  auto preferred = [&](const std::string& entry) {
    const std::size_t at = entry.find('@');
    const std::string name = entry.substr(0, at);
    const auto rank = std::find(preference.begin(), preference.end(), name) - preference.begin();
    return std::pair{rank, at != std::string::npos};
  };
  std::size_t winner = 0;
  for (std::size_t i = 1; i < measures.size(); ++i) {
    if (measures[i].first <= measures[0].first * (1 + tie_margin) &&
        preferred(measures[i].second) < preferred(measures[winner].second)) {
      winner = i;
    }
  }
  std::rotate(measures.begin(), measures.begin() + static_cast<std::ptrdiff_t>(winner),
              measures.begin() + static_cast<std::ptrdiff_t>(winner) + 1);
  return measures;
}

}  // namespace mm::bench
