// An environment variable set (or unset) for one scope, as a test needs it.
#ifndef MM_ENGINE_TESTING_SCOPED_ENV_H_
#define MM_ENGINE_TESTING_SCOPED_ENV_H_

#include <cstdlib>
#include <optional>
#include <string>

namespace mm::testing {

// Sets `name` to `value` (unsets it for nullopt) and gives it back its earlier value, or unsets it
// again, when the scope ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    Set(name_, value);
  }
  ~ScopedEnv() { Set(name_, old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void Set(const char* name, const std::optional<std::string>& value) {
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }

  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace mm::testing

#endif  // MM_ENGINE_TESTING_SCOPED_ENV_H_
