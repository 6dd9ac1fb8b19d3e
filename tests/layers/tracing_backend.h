/* The record the "tracing" test plugin (tracing_backend.cpp) keeps of every
 * backend entry the core calls, read by linear_step_traffic_test.cpp through
 * dlsym on the loaded plugin. C-compatible layout. */
#ifndef OCTET_TESTS_TRACING_BACKEND_H
#define OCTET_TESTS_TRACING_BACKEND_H

#include <stddef.h>
#include <stdint.h>

typedef struct octet_test_trace_event {
  char entry[32];   /* the octet_backend_api field name: "quantize", "gemm", ... */
  char detail[192]; /* operands: dtypes, shapes, layout, usages; bytes of a copy or allocation */
  /* Bytes of the matrix views the call names (read: inputs, and D when
   * beta != 0; written: outputs). Scalars behind pointers (scale, scale_inv,
   * amax, a quantizer's state) are not counted. */
  uint64_t bytes_read;
  uint64_t bytes_written;
  uint64_t flops;       /* 2 m n k for a GEMM */
  uint64_t alloc_bytes; /* mem_alloc: the size asked for */
} octet_test_trace_event;

typedef void (*octet_test_trace_clear_fn)(void);
typedef size_t (*octet_test_trace_count_fn)(void);
typedef const octet_test_trace_event* (*octet_test_trace_events_fn)(void);
/* Allocation faults: from now on mem_alloc of more than `limit` bytes fails
 * (OCTET_STATUS_OUT_OF_MEMORY, or, with `null_success`, returns NULL with
 * OCTET_STATUS_SUCCESS as a broken plugin would); limit 0 ends the faults. */
typedef void (*octet_test_trace_fail_allocations_fn)(uint64_t limit, int null_success);

#endif /* OCTET_TESTS_TRACING_BACKEND_H */
