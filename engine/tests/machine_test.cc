// The machine description knows no library: the kernel variables it records are those its caller
// names, each with its value or "unset", and the one-line text shows those that are set.
#include "mm/engine/machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace mm {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
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

TEST(CpuIsaTest, TheCapTakesTheLevelNamesInAnyCaseAndAllForNone) {
  EXPECT_EQ(ParseMaxCpuIsa("baseline").value(), CpuIsa::kBaseline);
  EXPECT_EQ(ParseMaxCpuIsa("AVX2").value(), CpuIsa::kAvx2);
  EXPECT_EQ(ParseMaxCpuIsa("avx512").value(), CpuIsa::kAvx512);
  EXPECT_EQ(ParseMaxCpuIsa("all").value(), std::nullopt);
  EXPECT_EQ(ParseMaxCpuIsa("").value(), std::nullopt) << "unset or empty: no cap";
}

TEST(CpuIsaTest, AnUnknownCapIsAnErrorNamingTheValidValues) {
  for (const char* value : {"avx512f", "sse41", "x86-64-v3", "avx2 "}) {
    const auto cap = ParseMaxCpuIsa(value);
    ASSERT_FALSE(cap.ok()) << value;
    EXPECT_EQ(cap.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(cap.status().message(), HasSubstr("MM_MAX_CPU_ISA=" + std::string(value)));
    EXPECT_THAT(cap.status().message(), HasSubstr("baseline, avx2, avx512"));
  }
}

TEST(CpuIsaTest, TheChoiceIsTheLowerOfTheCpuAndTheCap) {
  EXPECT_EQ(ChooseCpuIsa(CpuIsa::kAvx512, CpuIsa::kAvx2), CpuIsa::kAvx2);
  EXPECT_EQ(ChooseCpuIsa(CpuIsa::kAvx512, CpuIsa::kBaseline), CpuIsa::kBaseline);
  EXPECT_EQ(ChooseCpuIsa(CpuIsa::kAvx2, CpuIsa::kAvx512), CpuIsa::kAvx2) << "never above the CPU";
  EXPECT_EQ(ChooseCpuIsa(CpuIsa::kAvx2, std::nullopt), CpuIsa::kAvx2);
}

// Under ctest's isa variants MM_MAX_CPU_ISA is set: the level chosen in this process is at most
// the cap and at most what the CPU runs, and the machine's description says it.
TEST(CpuIsaTest, ThisProcessRunsAtMostTheCapAndTheCpu) {
  const char* value = std::getenv("MM_MAX_CPU_ISA");
  const StatusOr<CpuIsa> chosen = ChosenCpuIsa();
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_LE(*chosen, SupportedCpuIsa());
  if (value != nullptr && *value != '\0') {
    const std::optional<CpuIsa> cap = ParseMaxCpuIsa(value).value();
    if (cap.has_value()) {
      EXPECT_LE(*chosen, *cap) << "MM_MAX_CPU_ISA=" << value;
    }
    if (cap.has_value() && *cap < SupportedCpuIsa()) {
      EXPECT_THAT(DescribeChosenCpuIsa(),
                  HasSubstr("capped by MM_MAX_CPU_ISA=" + std::string(value)));
    }
  }
  EXPECT_THAT(DescribeMachine().ToString(),
              HasSubstr(", mm kernels " + std::string(CpuIsaName(*chosen)) + " (" +
                        std::string(CpuIsaLevel(*chosen)) + ")"));
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
