// What a tool's main gets from KeepFreedMemoryForReuse: freed blocks of megabytes stay in the
// process for the next call instead of going back to the system.
#include "mm/engine/memory_reuse.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace mm {
namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MM_TEST_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MM_TEST_SANITIZER_ALLOCATOR 1
#endif

#if defined(MM_TEST_SANITIZER_ALLOCATOR)
TEST(KeepFreedMemoryForReuseTest, ASanitizersAllocatorRefusesAndSaysSo) {
  EXPECT_FALSE(KeepFreedMemoryForReuse());
}
#else
// 24 MiB: below the heap limit, above what glibc's own thresholds reach before a block that large
// was freed once (so without the call it would be mapped and, once freed, unmapped).
constexpr std::size_t kBlock = std::size_t{24} << 20;

TEST(KeepFreedMemoryForReuseTest, ABlockOfMegabytesComesFromTheHeapAndStaysThereWhenFreed) {
  ASSERT_TRUE(KeepFreedMemoryForReuse());
  const std::size_t mapped_before = mallinfo2().hblkhd;
  void* block = std::malloc(kBlock);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBlock);  // Its pages are faulted in, as an oracle's arrays are.
  EXPECT_EQ(mallinfo2().hblkhd, mapped_before) << "the block was mapped on its own";
  std::free(block);
  EXPECT_GE(mallinfo2().fordblks, kBlock) << "the freed block went back to the system";
}

TEST(KeepFreedMemoryForReuseTest, TheLimitsAreOnesGlibcAccepts) {
  // glibc refuses a mmap threshold above half its heap size (32 MiB on 64-bit).
  EXPECT_LE(kHeapBlockLimit, std::size_t{32} << 20);
  EXPECT_GT(kKeptFreeMemory, kHeapBlockLimit);
  EXPECT_TRUE(KeepFreedMemoryForReuse()) << "a second call is refused";
}
#endif

}  // namespace
}  // namespace mm
