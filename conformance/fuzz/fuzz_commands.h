// mm-fuzz's subcommands (generate, export-builtin, merge) over parsed options (fuzz_cli.h).
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_COMMANDS_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_COMMANDS_H_

#include <ostream>

#include "mm/conformance/fuzz/fuzz_cli.h"

namespace mm::fuzz {

// generate: writes o.out_dir's corpus of node tests (fair ones unless --keep-unfair), its
// manifest.json and README.md. Returns the exit code, the error said on `err`.
int Generate(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

// export-builtin: writes mm-conformance's built-in cases as node tests into o.out_dir.
int ExportBuiltin(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

// merge: reads o.merge_inputs, merges them (MergeFuzzReports), prints the result and writes
// --json. Returns the campaign's exit code, or kExitUsage.
int Merge(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_COMMANDS_H_
