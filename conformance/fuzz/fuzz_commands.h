// mm-fuzz's subcommands (generate, export-builtin, merge) over parsed options (fuzz_cli.h).
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_COMMANDS_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_COMMANDS_H_

#include <ostream>

#include "mm/conformance/fuzz/fuzz_cli.h"

namespace mm::fuzz {

// generate: writes o.out_dir's corpus of node tests (fair ones unless --keep-unfair), its
// manifest.json and README.md. Returns the exit code, the error said on `err`.
int Generate(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

// generate --op OP (Gemm, MatMulInteger, QLinearMatMul; family_corpus.cc): o.out_dir's corpus of
// the operator's problems, fair ones unless --keep-unfair (fair.h, UnfairFamilyReason), --cases N
// of them or --cases-per-dtype N of each signature (FamilySignatures), with manifest.json and
// README.md. Returns the exit code, the error said on `err`.
int GenerateFamily(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

// The mm-fuzz generate command line that writes o's corpus again (DIR for its directory).
std::string GenerateCommand(const FuzzCliOptions& o);

// Makes o.out_dir ready for a corpus: created, and unless --overwrite new or empty (a directory
// holding anything, a corpus written before included, is refused naming a file in it). Returns
// kExitClean, or kExitUsage with the error said on `err`.
int PrepareCorpusDir(const FuzzCliOptions& o, std::ostream& err);

// Writes a corpus's manifest.json and README.md into o.out_dir. Returns the exit code, the error
// said on `err`.
int WriteCorpusFiles(const FuzzCliOptions& o, const std::string& manifest,
                     const std::string& readme, std::ostream& err);

// export-builtin: writes mm-conformance's built-in cases as node tests into o.out_dir.
int ExportBuiltin(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

// merge: reads o.merge_inputs, merges them (MergeFuzzReports), prints the result and writes
// --json. Returns the campaign's exit code, or kExitUsage.
int Merge(const FuzzCliOptions& o, std::ostream& out, std::ostream& err);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_COMMANDS_H_
