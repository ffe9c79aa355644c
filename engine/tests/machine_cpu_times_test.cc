// ReadMachineCpuTimes counts every state of /proc/stat's "cpu" line but idle, iowait and steal as
// busy, and steal as steal: checked against the line itself, read just before and just after, so
// a state left out (or counted twice) shows whatever else the machine runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

#include "mm/engine/machine.h"

namespace mm {
namespace {

// Busy and steal seconds from the "cpu" line, by the definition in machine.h.
std::optional<MachineCpuTimes> ProcStatByDefinition() {
  std::ifstream stat("/proc/stat");
  std::string label;
  long long user, nice, system, idle, iowait, irq, softirq, steal;
  if (!(stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu") {
    return std::nullopt;
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return MachineCpuTimes{static_cast<double>(user + nice + system + irq + softirq) / tick,
                         static_cast<double>(steal) / tick};
}

TEST(MachineCpuTimesDefinitionTest, BusyAndStealAreTheLinesStatesBetweenTwoReadings) {
  const std::optional<MachineCpuTimes> before = ProcStatByDefinition();
  const std::optional<MachineCpuTimes> read = ReadMachineCpuTimes();
  const std::optional<MachineCpuTimes> after = ProcStatByDefinition();
  ASSERT_TRUE(before && read && after) << "/proc/stat unreadable";
  // The counters only grow; the three readings are microseconds apart.
  EXPECT_GE(read->busy, before->busy);
  EXPECT_LE(read->busy, after->busy);
  EXPECT_GE(read->steal, before->steal);
  EXPECT_LE(read->steal, after->steal);
}

}  // namespace
}  // namespace mm
