#include "mm/conformance/cli/names.h"

#include <re2/re2.h>

#include <algorithm>

namespace mm::conformance {

StatusOr<NamePattern> NamePattern::Compile(std::string_view pattern) {
  RE2::Options options;
  options.set_log_errors(false);  // The error is returned, not written to stderr by RE2.
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    std::string why = re->error();
    // What std::regex (ECMAScript) took and RE2 has not: say so rather than only "invalid".
    if (re->error_code() == RE2::ErrorBadEscape || re->error_code() == RE2::ErrorBadPerlOp) {
      why += " (RE2 syntax: no backreferences, lookahead or lookbehind)";
    }
    return InvalidArgumentError("invalid regular expression '" + std::string(pattern) +
                                "': " + why);
  }
  NamePattern out;
  out.pattern_ = std::string(pattern);
  out.re_ = std::move(re);
  return out;
}

bool NamePattern::Matches(std::string_view name) const {
  return RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *re_);
}

namespace cli {

void AppendOnce(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<std::string> NewNames(const std::vector<std::string>& before,
                                  const std::vector<std::string>& after) {
  std::vector<std::string> added;
  for (const std::string& name : after) {
    if (std::find(before.begin(), before.end(), name) == before.end()) added.push_back(name);
  }
  return added;
}

}  // namespace cli
}  // namespace mm::conformance
