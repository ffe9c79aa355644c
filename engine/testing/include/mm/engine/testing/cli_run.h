// Runs a command line in this process, as its tests do: an argv-like list in, the exit code and
// what it printed out.
#ifndef MM_ENGINE_TESTING_CLI_RUN_H_
#define MM_ENGINE_TESTING_CLI_RUN_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace mm::testing {

// What one in-process run of a command line returned and printed.
struct CliRun {
  int code = -1;    // The exit code the entry point returned.
  std::string out;  // What it wrote to its standard output stream.
  std::string err;  // What it wrote to its error stream.
};

// A tool's in-process entry point: the arguments without the program name, its output streams;
// returns the exit code.
using CliEntry =
    std::function<int(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)>;

// Runs `entry` on `args`, capturing both streams.
CliRun RunCli(const CliEntry& entry, const std::vector<std::string>& args);

}  // namespace mm::testing

#endif  // MM_ENGINE_TESTING_CLI_RUN_H_
