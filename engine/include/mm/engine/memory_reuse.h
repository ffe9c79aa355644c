// How a tool's process hands freed memory back to the system. mm's tools call the oracle and the
// backends over and over with arrays of megabytes; by default glibc returns such blocks to the
// system on free (munmap, or a trim of the heap's top), so every call faults its pages in again
// and, with threads on other cores, pays a TLB shootdown per release.
#ifndef MM_ENGINE_MEMORY_REUSE_H_
#define MM_ENGINE_MEMORY_REUSE_H_

#include <cstddef>

namespace mm {

// Blocks below this size come from malloc's heap, not from mmap: 32 MiB, the largest glibc accepts
// (half its heap size) and the largest it reaches by itself after freeing such a block.
inline constexpr std::size_t kHeapBlockLimit = std::size_t{32} << 20;
// The heap's free top is given back to the system only beyond this size.
inline constexpr std::size_t kKeptFreeMemory = std::size_t{512} << 20;

// Makes this process keep freed memory for reuse (glibc's M_MMAP_THRESHOLD = kHeapBlockLimit,
// M_TRIM_THRESHOLD = kKeptFreeMemory): for the mains of mm's tools, before their first large
// allocation, never for a library's caller. Peak memory is unchanged (what is kept was in use);
// blocks of kHeapBlockLimit and more are mapped and unmapped as before. Returns false when the
// allocator refused or is not glibc's (a sanitizer's): nothing changed then.
bool KeepFreedMemoryForReuse();

}  // namespace mm

#endif  // MM_ENGINE_MEMORY_REUSE_H_
