/* Octet's counter-based random bits: the generator of stochastic rounding
 * and of the random Hadamard transform's signs (docs/numerics.md section 15),
 * so that every backend draws the same bits for the same seed, offset and
 * element, in any order and on any number of threads.
 *
 * The generator is Philox-4x32-10 (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC 2011; the generator of cuRAND's and Random123's
 * philox4x32_10): a 128-bit counter and a 64-bit key give four 32-bit words.
 * Octet's use of it:
 *
 *   key     = (lo32(seed), hi32(seed))
 *   counter = (lo32(i >> 2), hi32(i >> 2), lo32(offset), hi32(offset))
 *   bits(seed, offset, i) = word (i & 3) of philox4x32_10(counter, key)
 *
 * i: the element's index, row-major, in the matrix being encoded; offset: a
 * 64-bit stream number (a quantizer's counter, docs/recipes.md). The offset
 * 2^64 - 1 is reserved: its element 0 gives the random Hadamard transform's
 * sign mask (octet_rht_sign_mask).
 *
 * Header-only C99 (also C++ and CUDA: __host__ __device__ under nvcc),
 * integer arithmetic only. */
#ifndef OCTET_OCTET_RANDOM_H
#define OCTET_OCTET_RANDOM_H

#include <stdint.h>

#if defined(__CUDACC__)
#define OCTET_RANDOM_FN static inline __host__ __device__
#else
#define OCTET_RANDOM_FN static inline
#endif

/* Philox-4x32-10: ten rounds; round r uses the key bumped r times by the
 * Weyl constants (0x9E3779B9, 0xBB67AE85). One round, with the 64-bit
 * products p0 = 0xD2511F53 * c0 and p1 = 0xCD9E8D57 * c2:
 *   (c0, c1, c2, c3) <- (hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0)) */
OCTET_RANDOM_FN void octet_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  int round;
  for (round = 0; round < 10; ++round) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = (uint32_t)p1;
    const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = (uint32_t)p0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The 32 random bits of element `index` in stream `offset` of `seed`. */
OCTET_RANDOM_FN uint32_t octet_random_bits(uint64_t seed, uint64_t offset, uint64_t index) {
  const uint64_t block = index >> 2;
  const uint32_t counter[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)offset, (uint32_t)(offset >> 32)};
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  octet_philox4x32_10(counter, key, out);
  return out[index & 3];
}

/* The random Hadamard transform's sign mask of `seed`: the low 16 bits of
 * bits(seed, 2^64 - 1, 0). Bit j set: the transform negates element j of
 * each 16-element group before the Hadamard matrix (numerics.md 15.2). */
OCTET_RANDOM_FN uint32_t octet_rht_sign_mask(uint64_t seed) { return octet_random_bits(seed, UINT64_MAX, 0) & 0xFFFFu; }

#endif /* OCTET_OCTET_RANDOM_H */
