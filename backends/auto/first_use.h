// auto's calibration runner: the table auto chooses from, made on first use (the calibrator run
// under the table's lock, table_lock.h) when it is missing or refused. Each wait has a limit and
// ends on a stop request (SIGINT/SIGTERM as mm's tools record it), so a calibration that never
// ends costs a first use its limit and not for ever.
#ifndef MM_BACKENDS_AUTO_FIRST_USE_H_
#define MM_BACKENDS_AUTO_FIRST_USE_H_

#include <optional>
#include <string>

#include "mm/backends/auto/auto_backend.h"
#include "mm/engine/status.h"
#include "table_lock.h"

namespace mm::auto_first_use {

// Runs `calibrator --mm_calibrate=TABLE --mm_set=quick` (MM_AUTO_CALIBRATE=0 in its environment:
// an auto it creates would otherwise wait for the lock this process holds) in a process group of
// its own. Past `limits.seconds`, or on a stop request, kills that group and says so:
// RESOURCE_EXHAUSTED (its time) or CANCELLED naming the command and its pid. INTERNAL, with the end
// of its stderr, when it fails.
Status RunCalibrator(const std::string& calibrator, const std::string& table, const Limits& limits);

// The table auto chooses from, and where the choices come from (for RunsOn).
struct LoadedTable {
  std::optional<AutoTable> table;
  std::string note;
};

// The table at options.table_path made for `identity` (see AutoBackend::Create): read; made first
// (a quick calibration by options.calibrator, one process at a time) when it is missing, refused or
// malformed and options.calibrate; else none, the note saying why. A failed first use means the
// built-in defaults, with a warning on stderr.
StatusOr<LoadedTable> LoadTable(const AutoOptions& options, const AutoIdentity& identity);

}  // namespace mm::auto_first_use

#endif  // MM_BACKENDS_AUTO_FIRST_USE_H_
