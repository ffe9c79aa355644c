#include "mm/conformance/cli/cli_support.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "mm/engine/io/text.h"

namespace mm::conformance {

namespace cli {

const CLI::Validator& NonEmpty() {
  static const CLI::Validator validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "needs a non-empty value" : "";
      },
      "");
  return validator;
}

const CLI::Validator& FiniteNonNegative() {
  static const CLI::Validator validator(
      [](std::string& value) -> std::string {
        double parsed = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(parsed) ||
            parsed < 0) {
          return "'" + value + "' is not a finite number >= 0";
        }
        return "";
      },
      "");
  return validator;
}

const CLI::Validator& Regex() {
  static const CLI::Validator validator(
      [](std::string& value) -> std::string {
        // Checked first: the pattern is then safe to show in NamePattern::Compile's error.
        if (Status control = io::CheckPatternText(value, "the regular expression"); !control.ok()) {
          return control.message();
        }
        auto compiled = NamePattern::Compile(value);
        return compiled.ok() ? "" : compiled.status().message();
      },
      "");
  return validator;
}

HelpFormatter::HelpFormatter() { column_width(26); }

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  return opt->get_option_text().empty() ? "" : " " + opt->get_option_text();
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  // CLI11 indents every line after a '\n' to the description column, so wrapping is inserting
  // line breaks between words.
  const std::size_t width = 100 - get_column_width();
  std::string out, line, word;
  std::istringstream words(opt->get_description());
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

}  // namespace cli

std::optional<std::string> ParseShard(const std::string& text, Shard& shard) {
  const auto slash = text.find('/');
  int index = 0, count = 0;
  auto number = [](std::string_view digits, int& out) {
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && end == digits.data() + digits.size() && !digits.empty();
  };
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), index) ||
      !number(std::string_view(text).substr(slash + 1), count) || count < 1 || index < 1 ||
      index > count) {
    return "'" + text + "' is not a shard I/N with 1 <= I <= N (e.g. 2/4)";
  }
  shard = {index, count};
  return std::nullopt;
}

}  // namespace mm::conformance
