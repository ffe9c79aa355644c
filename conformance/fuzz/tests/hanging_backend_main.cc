// mm-fuzz with one more backend, "hangs_after": the exact product for the first MM_TEST_CALLS
// problems it prepares, then it creates the file MM_TEST_MARKER and blocks for ever, as a backend's
// call that no stop request reaches (fuzz_stop_test.cc).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/engine/testing/fake_backend.h"

int main(int argc, char** argv) {
  const char* calls = std::getenv("MM_TEST_CALLS");
  const char* marker = std::getenv("MM_TEST_MARKER");
  if (calls == nullptr || marker == nullptr) {
    std::cerr << "MM_TEST_CALLS and MM_TEST_MARKER must be set\n";
    return 2;
  }
  const int answered = std::atoi(calls);
  mm::BackendRegistry registry = mm::BuiltinBackends();
  // Counted at Prepare, once per problem the engine does not answer itself (an empty one).
  const mm::testing::FakeBackend hangs =
      mm::testing::FakeBackend("hangs_after")
          .WhenPrepared(
              [answered, marker, count = std::make_shared<int>(0)](const mm::MatMulPlan&) {
                if (++*count > answered) {
                  std::ofstream(marker) << "blocked\n";
                  mm::testing::BlockForever();
                }
              });
  if (!registry.Register("hangs_after", "blocks after a few calls", hangs.Factory()).ok()) return 2;
  std::vector<std::string> args(argv + 1, argv + argc);
  return mm::fuzz::RunFuzzCli(args, registry, std::cout, std::cerr);
}
