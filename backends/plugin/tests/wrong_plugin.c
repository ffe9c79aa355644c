/*
 * Deliberately wrong backend plugins for tests: built once per MM_FAULT_* macro (see
 * backends/plugin/CMakeLists.txt). Without a fault (MM_FAULT_NONE) it is a correct float-only
 * plugin named "wrong_none"; each fault breaks exactly one promise of mm/mm_backend_plugin.h.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mm/mm_backend_plugin.h"

#if defined(MM_FAULT_TWIN)
#define PLUGIN_NAME "wrong_none" /* Same name as the fault-free build: a clash. */
#elif defined(MM_FAULT_EMPTY_NAME)
#define PLUGIN_NAME ""
#elif defined(MM_FAULT_BAD_NAME)
#define PLUGIN_NAME "my gemm"
#elif defined(MM_FAULT_NAME_REFERENCE)
#define PLUGIN_NAME "reference"
#else
#define PLUGIN_NAME "wrong_" FAULT_NAME
#endif

/* Faults at load time, in the library's constructor: mm must see them in a child process. */
#if defined(MM_FAULT_CTOR_SIGTERM)
static void wrong_on_sigterm(int signal_number) { (void)signal_number; }
#endif
#if defined(MM_FAULT_CTOR_CRASH) || defined(MM_FAULT_CTOR_EXIT) || defined(MM_FAULT_CTOR_HANG) || \
    defined(MM_FAULT_CTOR_SIGTERM) || defined(MM_FAULT_CTOR_HANGS_WHEN_MARKED)
__attribute__((constructor)) static void wrong_constructor(void) {
#if defined(MM_FAULT_CTOR_CRASH)
  raise(SIGSEGV);
#elif defined(MM_FAULT_CTOR_EXIT)
  exit(7);
#elif defined(MM_FAULT_CTOR_HANG)
  for (;;) pause();
#elif defined(MM_FAULT_CTOR_SIGTERM)
  /* Ignores SIGTERM: a process where this runs can no longer be interrupted by it. */
  signal(SIGTERM, wrong_on_sigterm);
#elif defined(MM_FAULT_CTOR_HANGS_WHEN_MARKED)
  /* The first load (mm's load child) creates the file $MM_TEST_LOAD_MARKER; every later one
   * writes its process id to $MM_TEST_LOAD_MARKER.blocked and hangs. */
  const char* marker = getenv("MM_TEST_LOAD_MARKER");
  if (marker != NULL) {
    FILE* file = fopen(marker, "r");
    if (file == NULL) {
      file = fopen(marker, "w");
      if (file != NULL) fclose(file);
      return;
    }
    fclose(file);
    {
      char blocked[4096];
      snprintf(blocked, sizeof(blocked), "%s.blocked", marker);
      file = fopen(blocked, "w");
      if (file != NULL) {
        fprintf(file, "%d\n", (int)getpid());
        fclose(file);
      }
    }
    for (;;) pause();
  }
#endif
}
#endif

typedef struct handle {
  int64_t m, n, k, batch;
  int32_t batch_rank;
  int64_t batch_dims[16], a_strides[16], b_strides[16];
} handle;

/* The problem of mm's load-time probe, [2,3] x [3,4]: the PROBE_* faults strike on it. */
static int is_probe_problem(const mm_matmul_problem* problem) {
  return problem->m == 2 && problem->k == 3 && problem->n == 4 && problem->batch == 1;
}

static int32_t wrong_supports(const mm_matmul_problem* problem, char* text, size_t capacity) {
#if defined(MM_FAULT_PROBE_CRASH)
  if (is_probe_problem(problem)) raise(SIGSEGV);
#elif defined(MM_FAULT_PROBE_ABORT)
  if (is_probe_problem(problem)) abort();
#elif defined(MM_FAULT_PROBE_EXIT)
  if (is_probe_problem(problem)) exit(3);
#elif defined(MM_FAULT_PROBE_HANG)
  while (is_probe_problem(problem)) pause();
#else
  (void)is_probe_problem;
#endif
#if defined(MM_FAULT_SUPPORT_OUT_OF_RANGE)
  (void)problem;
  (void)text;
  (void)capacity;
  return 7;
#else
  if (problem->dtype == MM_DTYPE_FLOAT) return MM_SUPPORT_NATIVE;
#if defined(MM_FAULT_MESSY_TEXT)
  /* A newline, a terminal escape, a stray byte, a valid UTF-8 e-acute, then CSI as a C1 control
   * (U+009B). */
  snprintf(text, capacity, "float only\n\x1b[31m\xff\xc3\xa9\xc2\x9b");
#elif !defined(MM_FAULT_NOTE_MISSING)
  snprintf(text, capacity, "float only");
#endif
  return MM_SUPPORT_NO;
#endif
}

static int32_t wrong_prepare(const mm_matmul_problem* problem, void** out, char* text,
                             size_t capacity) {
  handle* h;
  int32_t axis;
#if defined(MM_FAULT_PREPARE_ERROR_NO_MESSAGE)
  (void)problem;
  (void)out;
  (void)text;
  (void)capacity;
  return MM_STATUS_INTERNAL;
#endif
#if defined(MM_FAULT_PREPARE_FAILS)
  (void)problem;
  (void)out;
  snprintf(text, capacity, "no device available");
  return MM_STATUS_RESOURCE_EXHAUSTED;
#endif
  if (problem->batch_rank > 16) {
    snprintf(text, capacity, "more than 16 batch axes");
    return MM_STATUS_UNIMPLEMENTED;
  }
  h = (handle*)calloc(1, sizeof(handle));
  if (h == NULL) {
    snprintf(text, capacity, "out of memory");
    return MM_STATUS_RESOURCE_EXHAUSTED;
  }
  h->m = problem->m;
  h->n = problem->n;
  h->k = problem->k;
  h->batch = problem->batch;
  h->batch_rank = problem->batch_rank;
  for (axis = 0; axis < problem->batch_rank; ++axis) {
    h->batch_dims[axis] = problem->batch_dims[axis];
    h->a_strides[axis] = problem->a_batch_strides[axis];
    h->b_strides[axis] = problem->b_batch_strides[axis];
  }
  *out = h;
  return MM_STATUS_OK;
}

#if defined(MM_FAULT_LEAK) || defined(MM_FAULT_LEAK_64)
static char* volatile leaked = NULL;
#endif

#if defined(MM_FAULT_SPINNING_THREAD) || defined(MM_FAULT_THREAD_PER_CALL)
/* SPINNING_THREAD: burns CPU without a pause, for at most 20 s (a stray copy cannot burn a core
 * for ever). THREAD_PER_CALL: sleeps until the process ends. */
static void* wrong_thread(void* unused) {
  (void)unused;
#if defined(MM_FAULT_SPINNING_THREAD)
  {
    struct timespec start, now;
    volatile unsigned long spins = 0;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
      ++spins;
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < 20);
  }
#else
  for (;;) pause();
#endif
  return NULL;
}

static void wrong_start_thread(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, wrong_thread, NULL) == 0) pthread_detach(thread);
}
#endif

static int32_t wrong_execute(void* opaque, const mm_const_tensor* a, const mm_const_tensor* b,
                             const mm_tensor* y, char* text, size_t capacity) {
  const handle* h = (const handle*)opaque;
  const float* ad = (const float*)a->data;
  const float* bd = (const float*)b->data;
  float* yd = (float*)y->data;
  int64_t entry, i, j, p, count = h->batch * h->m * h->n;
  (void)text;
  (void)capacity;
#if defined(MM_FAULT_EXECUTE_ERROR_NO_MESSAGE)
  return MM_STATUS_INTERNAL;
#endif
#if defined(MM_FAULT_SLOW)
  usleep(20000); /* 20 ms per call: a run long enough to be interrupted in the middle. */
#endif
#if defined(MM_FAULT_EXECUTE_FORKS)
  {
    /* A process left behind (its id appended to $MM_TEST_FORKED_PIDS), then a copy of the caller
     * that returns from execute too: the answer comes from two processes. */
    const pid_t sleeper = fork();
    const char* pids = getenv("MM_TEST_FORKED_PIDS");
    if (sleeper == 0) {
      for (;;) pause();
    }
    if (sleeper > 0 && pids != NULL) {
      FILE* file = fopen(pids, "a");
      if (file != NULL) {
        fprintf(file, "%d\n", (int)sleeper);
        fclose(file);
      }
    }
    (void)fork();
  }
#elif defined(MM_FAULT_EXECUTE_SETSID)
  {
    /* A process in a session of its own, out of the caller's process group, left sleeping. */
    const pid_t daemon = fork();
    if (daemon == 0) {
      setsid();
      for (;;) pause();
    }
  }
#endif
#if defined(MM_FAULT_STATE_CHDIR) || defined(MM_FAULT_STATE_NOFILE) || \
    defined(MM_FAULT_STATE_UMASK) || defined(MM_FAULT_STATE_SIGCHLD)
  /* STATE_*: the call on a problem of K = 7 (and no other) changes the calling process's state,
   * one kind each: its current directory, its soft limit of open files, its umask, or SIGCHLD's
   * disposition (ignored: children are reaped unasked, a waitpid fails). */
  if (h->k == 7) {
#if defined(MM_FAULT_STATE_CHDIR)
    if (chdir("/") != 0) return MM_STATUS_INTERNAL;
#elif defined(MM_FAULT_STATE_NOFILE)
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = 16;
    setrlimit(RLIMIT_NOFILE, &files);
#elif defined(MM_FAULT_STATE_UMASK)
    umask(077);
#else
    signal(SIGCHLD, SIG_IGN);
#endif
  }
#endif
#if defined(MM_FAULT_SPINNING_THREAD)
  {
    /* One thread, started by the first call, left spinning after every return. */
    static int started = 0;
    if (!started) wrong_start_thread();
    started = 1;
  }
#elif defined(MM_FAULT_THREAD_PER_CALL)
  wrong_start_thread(); /* A sleeping thread left behind by every call. */
#elif defined(MM_FAULT_FD_PER_CALL)
  (void)open("/dev/null", O_RDONLY); /* A descriptor left open by every call. */
#endif
#if defined(MM_FAULT_LEAK) || defined(MM_FAULT_LEAK_64)
  {
    /* 128 MiB (LEAK_64: 64 MiB) per call, touched (resident) and never freed. */
#if defined(MM_FAULT_LEAK_64)
    const size_t leak = (size_t)64 << 20;
#else
    const size_t leak = (size_t)128 << 20;
#endif
    char* lost = (char*)malloc(leak);
    if (lost != NULL) {
      memset(lost, 1, leak);
      *(char**)lost = leaked; /* Kept reachable, so the compiler cannot drop the allocation. */
      leaked = lost;
    }
  }
#endif
  for (entry = 0; entry < h->batch; ++entry) {
    int64_t rest = entry, a_offset = 0, b_offset = 0;
    int32_t axis;
    for (axis = h->batch_rank - 1; axis >= 0; --axis) {
      const int64_t index = rest % h->batch_dims[axis];
      rest /= h->batch_dims[axis];
      a_offset += index * h->a_strides[axis];
      b_offset += index * h->b_strides[axis];
    }
    for (i = 0; i < h->m; ++i) {
      for (j = 0; j < h->n; ++j) {
        double sum = 0;
        for (p = 0; p < h->k; ++p) {
          sum += (double)ad[a_offset + i * h->k + p] * bd[b_offset + p * h->n + j];
        }
        yd[entry * h->m * h->n + i * h->n + j] = (float)sum;
      }
    }
  }
#if defined(MM_FAULT_WRITE_PAST_END)
  yd[count] = 1.0f; /* One float right after Y. */
#elif defined(MM_FAULT_WRITE_BEFORE_START)
  yd[-2] = 1.0f;        /* Two floats before Y: 8 bytes. */
#elif defined(MM_FAULT_MODIFY_A)
  ((float*)a->data)[0] += 1.0f;
#elif defined(MM_FAULT_MODIFY_B)
  ((float*)b->data)[1] = -((float*)b->data)[1] - 1.0f;
#endif
  (void)count;
  return MM_STATUS_OK;
}

static void wrong_release(void* opaque) { free(opaque); }

#if defined(MM_FAULT_ARITHMETIC_NOT_A_DTYPE) || defined(MM_FAULT_ARITHMETIC_INT_FOR_FLOAT) || \
    defined(MM_FAULT_ARITHMETIC_WIDER_INT) || defined(MM_FAULT_ARITHMETIC_FLUSH_FLAG) ||      \
    defined(MM_FAULT_ARITHMETIC_INT_FLUSHES) || defined(MM_FAULT_ARITHMETIC_CRASH)
#define HAS_ARITHMETIC 1
/* Each fault declares one invalid answer, for one dtype; the other dtypes keep the default. */
static void wrong_arithmetic(int32_t dtype, mm_arithmetic* answer) {
#if defined(MM_FAULT_ARITHMETIC_NOT_A_DTYPE)
  if (dtype == MM_DTYPE_FLOAT16) answer->accumulation = 99;
#elif defined(MM_FAULT_ARITHMETIC_INT_FOR_FLOAT)
  if (dtype == MM_DTYPE_FLOAT) answer->accumulation = MM_DTYPE_INT32;
#elif defined(MM_FAULT_ARITHMETIC_WIDER_INT)
  if (dtype == MM_DTYPE_INT32) answer->accumulation = MM_DTYPE_INT64;
#elif defined(MM_FAULT_ARITHMETIC_FLUSH_FLAG)
  if (dtype == MM_DTYPE_BFLOAT16) answer->flushes_subnormals = 2;
#elif defined(MM_FAULT_ARITHMETIC_INT_FLUSHES)
  if (dtype == MM_DTYPE_UINT64) answer->flushes_subnormals = 1;
#elif defined(MM_FAULT_ARITHMETIC_CRASH)
  (void)answer;
  if (dtype == MM_DTYPE_DOUBLE) raise(SIGSEGV);
#endif
}
#endif

static const mm_backend_plugin kTable = {
#if defined(MM_FAULT_ABI_VERSION_4)
    4,
#else
    MM_BACKEND_PLUGIN_ABI_VERSION,
#endif
    PLUGIN_NAME,
    "a deliberately wrong plugin for tests",
#if defined(MM_FAULT_NULL_FUNCTIONS)
    wrong_supports,
    NULL,
    NULL,
#else
    wrong_supports,
    wrong_prepare,
    wrong_execute,
#endif
    wrong_release,
    NULL,
#if defined(HAS_ARITHMETIC)
    wrong_arithmetic,
#else
    NULL,
#endif
};

#if defined(MM_FAULT_NO_ENTRY)
/* A near miss: the entry's name with a typo. */
MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entri(void) { return &kTable; }
#elif defined(MM_FAULT_TABLE_CHANGES)
/* Another table from the second call of the entry on in a process: the same version and name, and
 * a correct execute, where the first call's table adds 1 to Y's first element. mm's load child
 * calls the entry twice (to read the table, then to open the library for the probe); a process
 * that calls it once would run the table no probe saw. */
static int32_t wrong_execute_unprobed(void* opaque, const mm_const_tensor* a,
                                      const mm_const_tensor* b, const mm_tensor* y, char* text,
                                      size_t capacity) {
  const int32_t status = wrong_execute(opaque, a, b, y, text, capacity);
  ((float*)y->data)[0] += 1.0f;
  return status;
}
static const mm_backend_plugin kFirstCallTable = {
    MM_BACKEND_PLUGIN_ABI_VERSION,
    PLUGIN_NAME,
    "a deliberately wrong plugin for tests",
    wrong_supports,
    wrong_prepare,
    wrong_execute_unprobed,
    wrong_release,
    NULL,
    NULL,
};
MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void) {
  static int calls = 0;
  return calls++ == 0 ? &kFirstCallTable : &kTable;
}
#else
MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void) { return &kTable; }
#endif
