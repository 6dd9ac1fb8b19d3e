/* The address table of opencl_memory.h: a sorted array under one mutex
 * (backend contexts may allocate and look up from several threads). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "opencl_memory.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct range {
  uintptr_t base;
  size_t bytes;
  cl_mem mem;
  cl_context context;
} range;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static range* table;
static size_t table_count;
static size_t table_capacity;

/* Index of the last range whose base is <= address, or table_count. */
static size_t last_at_or_below(uintptr_t address) {
  size_t low = 0, high = table_count;
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (table[mid].base <= address)
      low = mid + 1;
    else
      high = mid;
  }
  return low == 0 ? table_count : low - 1;
}

void* opencl_memory_register(cl_mem mem, cl_context context, size_t bytes) {
  void* address;
  size_t index;
  if (bytes == 0) return NULL;
  address = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (address == MAP_FAILED) return NULL;
  pthread_mutex_lock(&table_lock);
  if (table_count == table_capacity) {
    const size_t capacity = table_capacity == 0 ? 64 : table_capacity * 2;
    range* grown = (range*)realloc(table, capacity * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&table_lock);
      munmap(address, bytes);
      return NULL;
    }
    table = grown;
    table_capacity = capacity;
  }
  index = last_at_or_below((uintptr_t)address);
  index = index == table_count ? 0 : index + 1;
  memmove(table + index + 1, table + index, (table_count - index) * sizeof *table);
  table[index].base = (uintptr_t)address;
  table[index].bytes = bytes;
  table[index].mem = mem;
  table[index].context = context;
  ++table_count;
  pthread_mutex_unlock(&table_lock);
  return address;
}

int opencl_memory_release(const void* address) {
  range found;
  size_t index;
  pthread_mutex_lock(&table_lock);
  index = last_at_or_below((uintptr_t)address);
  if (index == table_count || table[index].base != (uintptr_t)address) {
    pthread_mutex_unlock(&table_lock);
    return 0;
  }
  found = table[index];
  memmove(table + index, table + index + 1, (table_count - index - 1) * sizeof *table);
  --table_count;
  pthread_mutex_unlock(&table_lock);
  /* OpenCL frees the buffer once the commands queued on it have finished. */
  clReleaseMemObject(found.mem);
  munmap((void*)found.base, found.bytes);
  return 1;
}

int opencl_memory_find(const void* address, size_t bytes, cl_mem* mem, size_t* offset, cl_context* context) {
  const uintptr_t at = (uintptr_t)address;
  size_t index;
  int ok = 0;
  pthread_mutex_lock(&table_lock);
  index = last_at_or_below(at);
  if (index != table_count) {
    const range* r = &table[index];
    const size_t into = (size_t)(at - r->base);
    if (into < r->bytes && bytes <= r->bytes - into) {
      *mem = r->mem;
      *offset = into;
      if (context != NULL) *context = r->context;
      ok = 1;
    }
  }
  pthread_mutex_unlock(&table_lock);
  return ok;
}
