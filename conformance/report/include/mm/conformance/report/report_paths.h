// A run's report paths checked before the run starts, so that a report that could not be written,
// or that would overwrite another report or one of the run's inputs, is a usage error before any
// case runs. Writing the reports themselves is io::WriteFileAtomically's (engine/io/output_file.h:
// whole or not at all, through a fresh file of an unpredictable name renamed over the path; a
// device, a FIFO or a descriptor written in place), which every file mm writes goes through.
#ifndef MM_CONFORMANCE_REPORT_REPORT_PATHS_H_
#define MM_CONFORMANCE_REPORT_REPORT_PATHS_H_

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mm/engine/status.h"

namespace mm::conformance {

// Whether `a` and `b` name one file: the same inode when both exist, else the same path once
// made absolute and resolved as far as it exists (std::filesystem::weakly_canonical).
bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b);

// INVALID_ARGUMENT "--json and --junit name the same file ('r.json', 'out/../r.json'): each
// report needs its own" for the first two of `outputs` (option, path; an empty path is not
// written and not compared) that name one file; OK otherwise.
Status CheckDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// A file, or a folder of files, that a run reads.
struct RunInput {
  std::string what;  // "the --expectations file" (its path follows), "case 'test_x'" (a folder).
  std::string path;  // A file, or a folder whose files down to 3 levels are read (a case, a tree).
  std::string may_be;  // The report option that may name it (--json for --resume), or "".
};

// What every report path of a run is checked for before the run (INVALID_ARGUMENT, a usage error,
// naming the option and the path): no two name one file (CheckDistinctOutputs); each can be
// written: an existing one written in place (io::WrittenInPlace) open for writing (access(2)),
// any other in a directory that takes a new file (one is created there and removed); a directory
// or a socket is refused. And none is one of `inputs` by any spelling (the same device and inode:
// relative, "..", symbolic or hard link), except under the option its `may_be` names: "--json
// 'm.onnx' is 'x/model.onnx', a file of case 'test_x', which this run reads: a report must not
// overwrite its input". Folders are looked through only when some report path exists.
Status CheckReportPaths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<RunInput>& inputs);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_REPORT_PATHS_H_
