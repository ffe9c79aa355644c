// Readable names for parameterised tests built from each row's "why" comment.
#ifndef MM_ENGINE_TESTING_TEST_NAMES_H_
#define MM_ENGINE_TESTING_TEST_NAMES_H_

#include <cctype>
#include <string>
#include <string_view>

namespace mm::testing {

// "K = 0: Y is all zeros" -> "K_0_Y_is_all_zeros": letters and digits kept, runs of anything else
// folded into one '_', so GoogleTest accepts it as a test name.
inline std::string TestNameFromWhy(std::string_view why) {
  std::string name;
  for (char c : why) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      name += c;
    } else if (!name.empty() && name.back() != '_') {
      name += '_';
    }
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name.empty() ? "unnamed" : name;
}

// For INSTANTIATE_TEST_SUITE_P: names each row after its `why` member.
struct NameFromWhy {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    return TestNameFromWhy(info.param.why);
  }
};

}  // namespace mm::testing

#endif  // MM_ENGINE_TESTING_TEST_NAMES_H_
