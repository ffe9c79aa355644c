// The machine description knows no library: the kernel variables it records are those its caller
// names, each with its value or "unset", and the one-line text shows those that are set.
#include "mm/engine/machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

namespace mm {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::Pair;

TEST(MachineTest, RecordsTheKernelVariablesItIsGivenWithTheirValuesOrUnset) {
  setenv("MM_TEST_KERNEL_SET", "AVX2", 1);
  unsetenv("MM_TEST_KERNEL_UNSET");
  const MachineInfo machine = DescribeMachine({"MM_TEST_KERNEL_SET", "MM_TEST_KERNEL_UNSET"});
  EXPECT_THAT(machine.kernel_variables, ElementsAre(Pair("MM_TEST_KERNEL_SET", "AVX2"),
                                                    Pair("MM_TEST_KERNEL_UNSET", "unset")));
  EXPECT_EQ(machine.KernelVariable("MM_TEST_KERNEL_SET"), "AVX2");
  EXPECT_EQ(machine.KernelVariable("MM_TEST_KERNEL_UNSET"), "unset");
  EXPECT_EQ(machine.KernelVariable("NOT_GIVEN"), "") << "a variable not asked for is not read";
  EXPECT_TRUE(DescribeMachine().kernel_variables.empty());
  unsetenv("MM_TEST_KERNEL_SET");
}

TEST(MachineTest, TheTextNamesTheKernelVariablesThatAreSet) {
  MachineInfo machine;
  machine.cpu_model = "CPU";
  machine.logical_cpus = 2;
  machine.cpu_features = "avx2";
  machine.omp_num_threads = "2";
  machine.kernel_variables = {{"A_ISA", "unset"}, {"B_ISA", "SSE41"}};
  EXPECT_EQ(machine.ToString(), "CPU, 2 logical CPUs (avx2), OMP_NUM_THREADS=2, B_ISA=SSE41");
  machine.kernel_variables = {{"B_ISA", "unset"}};
  EXPECT_THAT(machine.ToString(), EndsWith("OMP_NUM_THREADS=2"));
}

double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The machine's busy time includes this process's: spinning 0.3 s of CPU time shows in it (to
// within the kernel's tick), whatever else runs.
TEST(MachineCpuTimesTest, CountThisProcesssOwnWork) {
  const std::optional<MachineCpuTimes> before = ReadMachineCpuTimes();
  ASSERT_TRUE(before.has_value()) << "/proc/stat unreadable";
  const double start = ProcessCpuSeconds();
  volatile double sink = 0;
  while (ProcessCpuSeconds() - start < 0.3) sink = sink + 1;
  const double spun = ProcessCpuSeconds() - start;
  const std::optional<MachineCpuTimes> after = ReadMachineCpuTimes();
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(after->busy - before->busy, spun - 0.05);
  EXPECT_GE(after->steal, before->steal);
}

}  // namespace
}  // namespace mm
