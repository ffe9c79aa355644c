// The JUnit XML report.
#ifndef MM_CONFORMANCE_REPORT_JUNIT_REPORT_H_
#define MM_CONFORMANCE_REPORT_JUNIT_REPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "mm/conformance/report/renderer.h"
#include "mm/conformance/report/report.h"

namespace mm::conformance {

// JUnit XML (written with pugixml): one <testsuite> per backend with <properties> (machine,
// runs_on), one <testcase> per (case, data set) in it, named "<case>/<data set>" with classname
// "conformance.<backend>" and a property "implementation"; FAIL as <failure>, ERROR as <error>,
// UNSUPPORTED as <skipped> (as <failure> under --strict); plus a suite "official-corpus".
std::string ToJUnitXml(const Report& report);
// ToJUnitXml as results arrive (the same bytes), for ReportFiles: the suites are `backends`.
std::unique_ptr<ReportRenderer> NewJUnitRenderer(const std::vector<std::string>& backends,
                                                 const Tolerance& tolerance, ToleranceRule rule,
                                                 bool strict);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_JUNIT_REPORT_H_
