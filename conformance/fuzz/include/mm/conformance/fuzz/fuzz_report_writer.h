// The JSON report of an mm-fuzz run (--json), one function per section. fuzz_report_reader.h
// reads it back; fuzz_merge.h merges the reports of shards.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_REPORT_WRITER_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_REPORT_WRITER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mm/conformance/fuzz/fuzzer.h"

namespace mm::fuzz {

// A double as a report writes it: the number, or "nan", "inf", "-inf" (JSON has none of them).
nlohmann::ordered_json JsonNumber(double v);

// What a report says of the options beside FuzzOptions: --dtype as given, --tolerance's word,
// whether --shard was given.
struct ReportOptions {
  std::vector<std::string> dtypes;
  std::string tolerance = "bound";
  bool sharded = false;
};

// The report of a run with `options` (complete, as run), in mm-fuzz's order of sections: tool,
// version, options, shard (when sharded), interrupted (when), stats, statistics, problems,
// problems_capped, problems_limit, findings, expectations, error (when), exit_code.
nlohmann::ordered_json FuzzReportToJson(const FuzzOptions& options, const ReportOptions& given,
                                        const FuzzReport& report, int exit_code);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_REPORT_WRITER_H_
