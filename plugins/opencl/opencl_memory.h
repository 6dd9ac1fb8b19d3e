/* Device addresses for cl_mem buffers.
 *
 * The plugin ABI hands the core device memory as pointers and the core does
 * pointer arithmetic on them (components at offsets, views with a leading
 * dimension), but an OpenCL buffer is an opaque cl_mem. So each buffer gets
 * an address range of its own: mem_alloc reserves `bytes` of virtual address
 * space with no access rights (mmap PROT_NONE: nothing is committed, and a
 * host read or write through it faults at once instead of touching some
 * other memory), and this table maps any address inside a range back to its
 * cl_mem and the byte offset. A kernel then gets (cl_mem, offset) pairs. */
#ifndef OCTET_OPENCL_MEMORY_H
#define OCTET_OPENCL_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

/* Reserves an address range for `mem` (which the table then owns: it is
 * released by opencl_memory_release). Returns the address, or NULL when the
 * host has no address space or memory left for it. */
void* opencl_memory_register(cl_mem mem, cl_context context, size_t bytes);

/* Forgets the range that starts at `address` and releases its cl_mem.
 * Returns 0 when `address` starts no live range (nothing is released). */
int opencl_memory_release(const void* address);

/* The buffer holding [address, address + bytes): its cl_mem, the offset of
 * `address` in it and its cl_context. Returns 0 when no live range holds all
 * of it. bytes may be 0 (then `address` must still lie in a range). */
int opencl_memory_find(const void* address, size_t bytes, cl_mem* mem, size_t* offset, cl_context* context);

#endif /* OCTET_OPENCL_MEMORY_H */
