#include "mm/engine/memory_reuse.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace mm {

bool KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  // Setting either one also stops glibc's own moving of the thresholds, so both are set.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapBlockLimit)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(kKeptFreeMemory)) == 1;
#else
  return false;
#endif
}

}  // namespace mm
