// Internal to the report library (not published): a result's <testcase> in the JUnit report
// (junit_report.h), written as text as results arrive.
#ifndef MM_CONFORMANCE_REPORT_JUNIT_TESTCASE_H_
#define MM_CONFORMANCE_REPORT_JUNIT_TESTCASE_H_

#include <string>
#include <string_view>

#include "mm/conformance/report/report.h"

namespace mm::conformance {

// Appends the <testcase> of `r` to `out`, as text at the depth of a test case in the document (4
// spaces), the way pugixml indents the rest of it. Written directly rather than through a pugixml
// node, and without building its texts first: a run writes one per result. `tolerance` is
// ToleranceText's; `rule` and `strict` decide which verdicts are failures.
void AppendTestcase(std::string& out, const Result& r, std::string_view tolerance,
                    ToleranceRule rule, bool strict);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_JUNIT_TESTCASE_H_
