// MM_UNDER_ASAN: 1 where this unit is compiled with AddressSanitizer, by g++ or by clang (clang 14
// does not define g++'s __SANITIZE_ADDRESS__), else 0. Tests use it where the sanitizer changes
// what they can observe (a crash it reports itself, its shadow memory and quarantine).
#ifndef MM_ENGINE_TESTING_SANITIZERS_H_
#define MM_ENGINE_TESTING_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define MM_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MM_UNDER_ASAN 1
#endif
#endif
#ifndef MM_UNDER_ASAN
#define MM_UNDER_ASAN 0
#endif

#endif  // MM_ENGINE_TESTING_SANITIZERS_H_
