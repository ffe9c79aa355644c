/*
 * mm backend plugin ABI, version 3 (version-1 and version-2 plugins still load): how a MatMul
 * implementation, and since version 3 one of MatMul's family (Gemm, MatMulInteger,
 * QLinearMatMul), in a shared library (written in C, C++, Rust, Fortran, ...) joins mm's
 * conformance harness and benchmark without changing mm.
 *
 * Pure C (C99 and later, and C++), no dependency beyond <stddef.h> and <stdint.h>.
 *
 * A plugin is a shared object that exports ONE function, MM_BACKEND_PLUGIN_ENTRY_NAME:
 *
 *     MM_BACKEND_PLUGIN_EXPORT const mm_backend_plugin* mm_backend_plugin_entry(void);
 *
 * It returns a pointer to a table (mm_backend_plugin) of a name, a description and function
 * pointers. mm loads the library (`--backend-lib PATH` or MM_BACKEND_LIBS), calls the entry once,
 * checks the table, and from then on the plugin is a backend like the built-in ones.
 *
 * The call sequence for one MatMul problem:
 *
 *     supports(problem)            -> NATIVE / BY_CONVERSION (+ how) / NO (+ why)
 *     prepare(problem, &handle)    -> OK, or an error status with a message   (once per shape)
 *     execute(handle, a, b, y)     -> OK, or an error status with a message   (any number of times)
 *     release(handle)              -> exactly once for every successful prepare
 *
 * Ownership, in one rule: whoever allocates a buffer frees it, and nothing is kept across calls
 * except the plugin's own handle.
 *  - Everything mm passes in (problems, dims arrays, tensors, A, B, Y, text buffers) belongs to mm
 *    and is valid only during the call that receives it. A plugin must not free it and must not
 *    keep a pointer to it after returning (copy what it needs into its handle).
 *  - Everything the plugin returns through the table (the table itself, name, description) belongs
 *    to the plugin and must stay valid and unchanged while the library is loaded. mm never writes
 *    to it and never frees it; mm keeps the library loaded until the process exits.
 *  - Text from the plugin to mm (support notes, error messages, implementation descriptions) is
 *    written by the plugin INTO A BUFFER MM OWNS (`text`, `capacity` bytes, capacity >= 256,
 *    zero-filled before the call). The plugin writes a NUL-terminated UTF-8 string of at most
 *    capacity - 1 bytes (snprintf(text, capacity, ...) does exactly that). Longer text is cut.
 *  - A handle is the plugin's own (opaque to mm, may be NULL); mm gives it back to execute,
 *    describe and release, and calls release exactly once per successful prepare.
 *
 * Threads: mm calls a plugin's functions from one thread at a time (never concurrently), but not
 * necessarily always from the same thread. A plugin needs no locking of its own.
 *
 * Shapes are numpy.matmul's (ONNX MatMul): a 1-D A of [K] acts as [1, K] and that 1 is removed
 * from Y; a 1-D B of [K] acts as [K, 1] likewise; the dims before the last two are batch dims that
 * broadcast numpy-style. mm does all shape logic: the problem carries both the original dims and
 * the derived M, N, K, batch shape and per-operand batch strides, so a plugin never re-derives
 * broadcasting. mm answers K = 0 (Y is all zeros) and empty Y (M, N or a batch dim of 0) itself:
 * prepare and execute are never called for them (supports may be).
 *
 * Every tensor is dense and row-major (C order), elements of the problem's dtype, little-endian as
 * the machine stores them; float16 and bfloat16 are passed as their uint16_t bit patterns.
 *
 * Numbers a plugin is judged by: the harness compares Y with ONNX's expected output at
 * |y - expected| <= 1e-7 + 1e-3 * |expected| (integers exactly, wrapping modulo 2^bits as numpy),
 * and with mm's reference backend; mm-conformance and mm-fuzz also hold every float result to the
 * K-aware error bound of the arithmetic the plugin declares (version 2's arithmetic(); a plugin
 * that declares nothing, and every version-1 plugin, is held to the bound of accumulating in the
 * dtype itself, the loosest a correct implementation meets). A plugin that cannot do a dtype or
 * shape says NO with a reason: UNSUPPORTED is never counted as a failure (unless the user asks),
 * a wrong answer always is.
 *
 * What mm checks, and refuses to load (exit code 2, naming the file and the problem): the file
 * exists and is a loadable shared object; it exports the entry; the table's abi_version is 1, 2 or
 * 3; name, supports, prepare, execute and release are not NULL; the name is 1 to 64 characters of
 * [A-Za-z0-9_-] and not the name of another backend; on a small probe (every dtype, [2,3] x [3,4])
 * supports answers one of the three values with a note where one is required, and prepare and
 * execute return either OK or an error status with a message; (version 2) arithmetic(), when given,
 * declares for every dtype a valid accumulation type and flag (see mm_arithmetic); (version 3)
 * op_supports and op_compute are both set or both NULL, op_arithmetic declares a valid arithmetic
 * for each of Gemm's float types, op_supports answers one of the three values (with a note where
 * one is required) for every operator and type combination of the family, and op_compute, run
 * once on A [2,3] x B [3,4] of zeros for the first of them it supports at the operator's newest
 * version, returns OK or an error with a message. The same
 * contract violations found later, during a run, make that result an ERROR. After every execute
 * the harness also checks that the plugin wrote only Y: A and B unchanged, the bytes right before
 * and after Y untouched.
 *
 * Versions. Version 2 appends one optional function, arithmetic(), to version 1's table; nothing
 * else changed. Version 3 appends the family (see "MatMul's family" below): four functions, after
 * arithmetic(), and the element types int8 and uint8. mm reads a table's abi_version first and
 * never reads past the end of the table of that version, so a plugin built against version 1's or
 * 2's header keeps loading unchanged, with that version's meaning: version 1's kernels are judged
 * as accumulating in their own dtype, and plugins of versions 1 and 2 compute MatMul only (every
 * Gemm, MatMulInteger and QLinearMatMul problem is UNSUPPORTED, the reason naming the version).
 * Rules for every later version: fields are only appended (to the table and to the structs mm
 * passes in, whose first field struct_size says how many bytes mm filled), values of the enums
 * never change, and what a field means never changes.
 *
 * MatMul's family (version 3). A plugin that computes Gemm, MatMulInteger or QLinearMatMul sets
 * op_supports and op_compute (both, or neither: a version-3 plugin without them computes MatMul
 * only). The call sequence for one problem of the family:
 *
 *     op_supports(desc)             -> NATIVE / BY_CONVERSION (+ how) / NO (+ why)
 *     op_compute(problem, y)        -> OK, or an error status with a message
 *
 * mm plans the problem (ONNX's checks, numpy.matmul or Gemm's shapes, the forms of zero points,
 * scales and C) before asking: a plugin never sees a malformed problem. Unlike MatMul, every
 * problem reaches op_compute, K = 0 and empty Y included (a Gemm with K = 0 is beta * C); Y arrives
 * zero-filled. The operators' definitions, and how mm judges each, are in mm's docs/family.md.
 */
#ifndef MM_BACKEND_PLUGIN_H_
#define MM_BACKEND_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes; a plugin puts it in its table's abi_version. mm loads
 * tables of every version from MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST to this one, refuses others. */
#define MM_BACKEND_PLUGIN_ABI_VERSION 3
#define MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST 1

/* The name of the one symbol a plugin exports (as a string, for dlsym). */
#define MM_BACKEND_PLUGIN_ENTRY_NAME "mm_backend_plugin_entry"

/* Put before the entry function's definition so it is exported even with -fvisibility=hidden. */
#if defined(_WIN32)
#define MM_BACKEND_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MM_BACKEND_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Element types: the values of ONNX's TensorProto.DataType, so they never change. */
typedef enum mm_dtype {
  MM_DTYPE_FLOAT = 1,    /* IEEE binary32, C float */
  MM_DTYPE_UINT8 = 2,    /* uint8_t (version 3; MatMulInteger and QLinearMatMul only) */
  MM_DTYPE_INT8 = 3,     /* int8_t (version 3; MatMulInteger and QLinearMatMul only) */
  MM_DTYPE_INT32 = 6,    /* int32_t */
  MM_DTYPE_INT64 = 7,    /* int64_t */
  MM_DTYPE_FLOAT16 = 10, /* IEEE binary16, as uint16_t bits; round to nearest even */
  MM_DTYPE_DOUBLE = 11,  /* IEEE binary64, C double */
  MM_DTYPE_UINT32 = 12,  /* uint32_t */
  MM_DTYPE_UINT64 = 13,  /* uint64_t */
  MM_DTYPE_BFLOAT16 = 16 /* upper half of a binary32, as uint16_t bits; round to nearest even */
} mm_dtype;

/* Answers of supports(). Any other value is a contract violation. */
typedef enum mm_support {
  MM_SUPPORT_NATIVE = 0,        /* Computed in the dtype itself. No note. */
  MM_SUPPORT_BY_CONVERSION = 1, /* Computed through another type; the note says how, e.g.
                                   "float16 via float32 accumulation". */
  MM_SUPPORT_NO = 2             /* Not computed; the note says why, e.g. "no int64 kernel". */
} mm_support;

/* Status codes returned by prepare() and execute(); abseil's numbering. Any non-zero value is an
 * error and must come with a message. Unknown non-zero values are reported as UNKNOWN(n). */
typedef enum mm_status {
  MM_STATUS_OK = 0,
  MM_STATUS_INVALID_ARGUMENT = 3,   /* The inputs make no sense to the plugin. */
  MM_STATUS_RESOURCE_EXHAUSTED = 8, /* Out of memory or device resources. */
  MM_STATUS_UNIMPLEMENTED = 12,     /* Not supported after all (supports() should have said so). */
  MM_STATUS_INTERNAL = 13           /* Anything else that went wrong inside the plugin. */
} mm_status;

/* One MatMul problem, Y = MatMul(A, B): everything is owned by mm and valid during the call only.
 * The first block is what was asked; the second is what mm derived from it (numpy.matmul). */
typedef struct mm_matmul_problem {
  int32_t dtype; /* An mm_dtype; A, B and Y all have it. */

  int32_t a_rank;        /* >= 1 */
  const int64_t* a_dims; /* a_rank extents, outermost first */
  int32_t b_rank;        /* >= 1 */
  const int64_t* b_dims; /* b_rank extents */
  int32_t y_rank;        /* >= 0 (0 for 1-D x 1-D: Y is a scalar) */
  const int64_t* y_dims; /* y_rank extents (NULL when y_rank is 0) */

  int64_t m; /* Rows of every A and Y matrix (1 when A is 1-D). */
  int64_t n; /* Columns of every B and Y matrix (1 when B is 1-D). */
  int64_t k; /* The contraction length. */
  /* Batch: Y holds `batch` m x n matrices, one after another (row-major over batch_dims). For the
   * flat batch index i with multi-index (i_0, ..., i_{batch_rank-1}) over batch_dims, A's m x k
   * matrix starts at element sum_j i_j * a_batch_strides[j] of A, B's k x n matrix at
   * sum_j i_j * b_batch_strides[j] of B, and Y's at i * m * n. A stride is 0 where that operand
   * broadcasts along the axis. */
  int64_t batch;                  /* Product of batch_dims; 1 when there are none. */
  int32_t batch_rank;             /* Number of batch axes of Y (may be 0). */
  const int64_t* batch_dims;      /* batch_rank extents (NULL when batch_rank is 0) */
  const int64_t* a_batch_strides; /* batch_rank element strides of A's matrices */
  const int64_t* b_batch_strides; /* batch_rank element strides of B's matrices */
} mm_matmul_problem;

/* A tensor mm passes in, read-only: owned by mm, valid during the call only. dtype, rank and dims
 * are those of the problem given to prepare(). data holds product(dims) elements, row-major. */
typedef struct mm_const_tensor {
  int32_t dtype;       /* An mm_dtype. */
  int32_t rank;        /* Number of dims. */
  const int64_t* dims; /* rank extents (NULL when rank is 0) */
  const void* data;    /* Must not be written. */
} mm_const_tensor;

/* The output tensor: owned by mm, valid during the call only. The plugin writes every one of its
 * product(dims) elements and nothing else (not one byte before or after, nothing in A or B). */
typedef struct mm_tensor {
  int32_t dtype;
  int32_t rank;
  const int64_t* dims;
  void* data;
} mm_tensor;

/* The arithmetic of one dtype's kernel, as arithmetic() declares it (version 2). mm fills it with
 * the default, {dtype, 0}, before asking. Valid answers: for a float dtype (float, double,
 * float16, bfloat16) accumulation is one of those four; for an integer dtype it is the dtype
 * itself (integers are exact modulo 2^bits, there is nothing else to declare) and
 * flushes_subnormals is 0; flushes_subnormals is 0 or 1. Anything else refuses the load, naming
 * the plugin and the dtype. */
typedef struct mm_arithmetic {
  /* An mm_dtype: the type products and sums are formed in before the one rounding to Y's dtype,
   * e.g. MM_DTYPE_FLOAT for a float16 kernel that converts, multiplies and adds in binary32. */
  int32_t accumulation;
  /* 1 when subnormal inputs may be read as zero and subnormal partial sums flushed to zero (what
   * x86's AVX512-BF16 dot-product instruction does); the bound then allows for it. Else 0. */
  int32_t flushes_subnormals;
} mm_arithmetic;

/* ---- MatMul's family (version 3) ------------------------------------------------------------- */

/* The operators; ONNX's op_type names. Values never change. */
typedef enum mm_op {
  MM_OP_MATMUL = 1,         /* Never passed to the op_ functions: MatMul goes through supports(). */
  MM_OP_GEMM = 2,           /* Y = alpha * A' * B' + beta * C (versions 1, 6, 7, 9, 11, 13) */
  MM_OP_MATMUL_INTEGER = 3, /* Y = (A - a_zero_point) * (B - b_zero_point) in int32 (version 10) */
  MM_OP_QLINEAR_MATMUL = 4  /* requantized MatMulInteger (versions 10, 21) */
} mm_op;

/* What op_supports() and op_arithmetic() are asked about: the operator at its version and the
 * element types. Owned by mm, valid during the call only. */
typedef struct mm_op_desc {
  uint32_t struct_size; /* sizeof(mm_op_desc) of the mm that calls: fields past it are absent */
  int32_t op;           /* An mm_op (never MM_OP_MATMUL). */
  int32_t version;      /* The operator's ONNX version (since_version), e.g. 13 for Gemm-13. */
  int32_t a_dtype;      /* An mm_dtype: A's (QLinearMatMul: a's) element type. */
  int32_t b_dtype;      /* B's (b's). */
  int32_t y_dtype;      /* Y's: Gemm's T; MM_DTYPE_INT32 for MatMulInteger; QLinearMatMul's T3. */
  int32_t scale_dtype;  /* QLinearMatMul: its scales' type (float; float16, bfloat16 from 21);
                           0 for the other operators. */
} mm_op_desc;

/* How a zero point or a scale applies. Values never change.
 * The element of a per-row parameter for row i of the A matrix that starts at element offset o of
 * A (o = sum_j e_j * a_batch_strides[j] for Y's batch entry e) is (o / (m * k)) * m + i: one run
 * of m values per matrix of A's own, row-major over A's own batch dims. Per column of B:
 * (o / (k * n)) * n + j with B's offset. Per tensor: element 0. */
typedef enum mm_quant_form {
  MM_QUANT_ABSENT = 0,     /* MatMulInteger's optional zero point not given: 0. tensor.data NULL. */
  MM_QUANT_PER_TENSOR = 1, /* [] or [1] */
  MM_QUANT_PER_ROW = 2,    /* [M], [M, 1] for a 2-D A; [D1, ..., M, 1] for an N-D A */
  MM_QUANT_PER_COLUMN = 3  /* [N], [1, N] for a 2-D B; [D1, ..., 1, N] for an N-D B */
} mm_quant_form;

/* A zero point or a scale: its form and the tensor as given (rank 0 and data NULL when absent). */
typedef struct mm_quant {
  int32_t form; /* An mm_quant_form. */
  mm_const_tensor tensor;
} mm_quant;

/* The form of Gemm's C (unidirectionally broadcast to [M, N]). Values never change. */
typedef enum mm_c_form {
  MM_C_ABSENT = 0,     /* No C (versions 11 and 13): as a scalar 0. c.data NULL. */
  MM_C_SCALAR = 1,     /* [] */
  MM_C_ONE = 2,        /* [1] */
  MM_C_ROW = 3,        /* [N] */
  MM_C_ONE_BY_ONE = 4, /* [1, 1] */
  MM_C_ONE_BY_N = 5,   /* [1, N] */
  MM_C_M_BY_ONE = 6,   /* [M, 1] */
  MM_C_M_BY_N = 7      /* [M, N] */
} mm_c_form;

/* One problem of the family, planned by mm. Owned by mm, valid during the call only; every tensor
 * is dense, row-major, of the type its desc field says. */
typedef struct mm_op_problem {
  uint32_t struct_size; /* sizeof(mm_op_problem) of the mm that calls: fields past it are absent */
  mm_op_desc desc;      /* The operator, version and types, as op_supports() was asked. */

  mm_const_tensor a; /* A as given (Gemm: before any transpose). */
  mm_const_tensor b; /* B as given. */

  /* The product, derived by mm as for MatMul (mm_matmul_problem's fields of the same names):
   * numpy.matmul of A and B for MatMulInteger and QLinearMatMul; for Gemm, [M, K] x [K, N] of
   * A' and B' (batch 1, batch_rank 0). Y's shape is y_rank, y_dims. */
  int32_t y_rank;
  const int64_t* y_dims;
  int64_t m, n, k, batch;
  int32_t batch_rank;
  const int64_t* batch_dims;
  const int64_t* a_batch_strides;
  const int64_t* b_batch_strides;

  /* Gemm only (zero for the others). A is [K, M] when trans_a, B is [N, K] when trans_b. C's
   * element for Y[i, j] is c.data[i * c_row_stride + j * c_col_stride] (strides 0 where C
   * broadcasts). alpha and beta are ONNX's float attributes; mm has checked they are finite (and
   * integers for an integer Gemm). */
  int32_t trans_a;
  int32_t trans_b;
  float alpha;
  float beta;
  int32_t c_form; /* An mm_c_form. */
  mm_const_tensor c;
  int64_t c_row_stride;
  int64_t c_col_stride;

  /* MatMulInteger: the two zero points (each possibly absent). QLinearMatMul: all six, never
   * absent; y's are per tensor. Zero points have their input's type, scales desc.scale_dtype. */
  mm_quant a_zero_point;
  mm_quant b_zero_point;
  mm_quant a_scale;
  mm_quant b_scale;
  mm_quant y_scale;
  mm_quant y_zero_point;
} mm_op_problem;

/* The table a plugin's entry returns. Owned by the plugin (typically a static const), valid and
 * unchanged while the library is loaded. Fields are in ABI order; never reorder them. */
typedef struct mm_backend_plugin {
  /* Must be MM_BACKEND_PLUGIN_ABI_VERSION. Always the first field, in every version, so mm can say
   * which version a plugin speaks before reading anything else. */
  uint32_t abi_version;

  /* The backend's name in reports, --backend NAME and test names: 1 to 64 characters of
   * [A-Za-z0-9_-], unique among loaded backends. NUL-terminated, owned by the plugin. */
  const char* name;

  /* One line for humans (what it is, which dtypes), shown by --list. NUL-terminated, owned by the
   * plugin; may be NULL or empty. */
  const char* description;

  /* Whether the plugin computes `problem`, and how. Returns an mm_support value; for
   * MM_SUPPORT_BY_CONVERSION and MM_SUPPORT_NO writes a non-empty note into `text` (see the
   * ownership rules above). Cheap and without side effects: mm may ask about problems it never
   * runs. Required (not NULL). */
  int32_t (*supports)(const mm_matmul_problem* problem, char* text, size_t capacity);

  /* Prepares `problem` (called only when supports() said NATIVE or BY_CONVERSION; never for
   * K = 0 or an empty Y). On success returns MM_STATUS_OK and stores the plugin's handle (any
   * value, NULL allowed) in *handle; the expensive work (planning, packing choices, device set-up)
   * belongs here. On failure returns a non-zero mm_status, writes a non-empty message into `text`,
   * and leaves nothing to release. `problem` is valid during the call only: copy what execute will
   * need into the handle. Required. */
  int32_t (*prepare)(const mm_matmul_problem* problem, void** handle, char* text, size_t capacity);

  /* Computes Y = MatMul(A, B) for the problem the handle was prepared for: shapes and dtype match
   * it, and Y does not overlap A or B (mm checks both before calling). Writes all of Y and nothing
   * else. Cheap and repeatable: it may be called many times, with different buffers each time.
   * Returns MM_STATUS_OK, or a non-zero mm_status with a non-empty message in `text`. Required. */
  int32_t (*execute)(void* handle, const mm_const_tensor* a, const mm_const_tensor* b,
                     const mm_tensor* y, char* text, size_t capacity);

  /* Frees everything prepare allocated for `handle`. Called exactly once per successful prepare,
   * after the last execute with it. Required (a plugin with nothing to free provides an empty
   * function). */
  void (*release)(void* handle);

  /* Optional (may be NULL): says what actually runs for `handle`, e.g. "avx2 8x8 micro-kernel" or
   * "naive loops", into `text`. Shown in reports beside the verdict. */
  void (*describe)(void* handle, char* text, size_t capacity);

  /* ---- Version 2 (mm reads this only from a table whose abi_version is >= 2) ---- */

  /* Optional (may be NULL: every dtype is then judged as accumulating in itself): declares the
   * arithmetic of the plugin's kernels for `dtype` (an mm_dtype) by overwriting *answer, which mm
   * filled with the default {dtype, 0}. Called once per dtype at load time, for every dtype
   * (leave the default for one the plugin does not compute); the answers hold for the whole run,
   * on every CPU: declare the arithmetic of the kernel that really runs, including a flush that
   * only some CPUs' kernel does. Every float result is judged against the error bound of this
   * declaration, so a kernel that declares float32 accumulation but sums in float16 fails. */
  void (*arithmetic)(int32_t dtype, mm_arithmetic* answer);

  /* ---- Version 3 (mm reads this only from a table whose abi_version is >= 3) ---- */

  /* Whether the plugin computes the family problem `desc` (Gemm, MatMulInteger, QLinearMatMul at
   * a version, with its types), as supports() answers for MatMul: an mm_support value, with a
   * note for BY_CONVERSION and NO. A plugin that cannot do a form of a problem it accepted here
   * (a per-row zero point, a C of [M, 1]) fails op_compute with MM_STATUS_UNIMPLEMENTED and a
   * message. Cheap, no side effects; asked at load time for every operator and type combination
   * of the family. NULL (with op_compute NULL): the plugin computes MatMul only. */
  int32_t (*op_supports)(const mm_op_desc* desc, char* text, size_t capacity);

  /* Optional (may be NULL): declares the arithmetic of the plugin's Gemm for a float Y type, as
   * arithmetic() does for MatMul: mm fills *answer with {desc->y_dtype, 0} and the plugin
   * overwrites what differs. Asked once per float type (float, double, float16, bfloat16) at load
   * time with desc->version the newest Gemm version; the answer holds for every version. Float
   * Gemm results are judged against the bound of this declaration (docs/family.md); the integer
   * operators are exact and declare nothing. The same valid answers as mm_arithmetic's. */
  void (*op_arithmetic)(const mm_op_desc* desc, mm_arithmetic* answer);

  /* Computes Y of `problem` (whose desc op_supports() accepted) into `y`: Y's type and shape,
   * poisoned (not zero-filled: every element must be written), not overlapping any input. Writes
   * Y and nothing else (mm checks the inputs are unchanged and the bytes around Y intact).
   * Returns MM_STATUS_OK, or a non-zero mm_status with a non-empty message in `text`. Required
   * when op_supports is set. */
  int32_t (*op_compute)(const mm_op_problem* problem, const mm_tensor* y, char* text,
                        size_t capacity);

  /* Optional (may be NULL): what computes `desc`, e.g. "int32 accumulation, avx2", into `text`.
   * Shown in reports beside the verdict. */
  void (*op_describe)(const mm_op_desc* desc, char* text, size_t capacity);
} mm_backend_plugin;

/* The size of a version-1 table: version 1's fields, up to and including describe. */
#define MM_BACKEND_PLUGIN_V1_SIZE \
  (offsetof(mm_backend_plugin, describe) + sizeof(((const mm_backend_plugin*)0)->describe))

/* The size of a version-2 table: up to and including arithmetic. */
#define MM_BACKEND_PLUGIN_V2_SIZE \
  (offsetof(mm_backend_plugin, arithmetic) + sizeof(((const mm_backend_plugin*)0)->arithmetic))

/* The signature of the entry. It takes nothing, returns the plugin's table (never NULL), and may
 * be called more than once (return the same table). */
typedef const mm_backend_plugin* (*mm_backend_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MM_BACKEND_PLUGIN_H_ */
