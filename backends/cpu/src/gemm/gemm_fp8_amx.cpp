// FP8 GEMM on AMX tiles (gemm/gemm_fp8_amx.hpp), level amx.
//
// TDPBF16PS multiplies a 16 x 32 BF16 tile of A' rows by a 16 x 16 tile of
// B' values in pairs (row p holds B'[j, 2p] and B'[j, 2p + 1] for the 16
// columns j) and adds the 16 x 16 FP32 products into an accumulator tile:
// 8192 multiply-adds an instruction. Every E4M3/E5M2 value is exactly a
// BF16 value and the product of two is exact in FP32, so only the order of
// the FP32 additions differs from the reference (numerics.md section 8).
//
// Decoding: VbmiDecoder (codecs/decode_fp8_avx512_vbmi.hpp) turns 64 codes
// into two vectors of 16 BF16 pairs each, in an order permuted inside the
// 64 (adjacent codes stay in one pair); both operands are decoded the same
// way from the same k offsets, so each product pairs the codes of one k.
// A' rows go as decoded into a row buffer (the tiles' A operand); the 16 B'
// rows of a column tile are decoded and each 16 x 16 block of pairs is
// transposed in registers, giving the pair-interleaved B operand. A
// transposed operand's codes are first byte-transposed into rows (the row
// kernels' transpose_bytes), block by block.
//
// Blocking: a thread owns a range of columns (or of rows, when there are
// too few columns); per 256 columns and 2048-k panel it decodes the B'
// block once (1 MiB of tiles, L2), then for each 32 rows of A' decodes
// them (128 KiB) and sums each 32 x 32 block of acc on four accumulator
// tiles (two where the rows fit one tile), loaded from acc for every panel
// after the first. Padding: k up to a multiple of 64 and rows and columns
// up to 16 are zero codes (+0, whose products add nothing), and partial
// accumulator tiles go through a 16 x 16 buffer.
#include "gemm/gemm_fp8_amx.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "codecs/decode_fp8_tables.hpp"
#include "dispatch/parallel_policy.hpp"
#include "elementwise/row_kernels.hpp"
#include "plugin/errors.hpp"
#include "plugin/kernels.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#define OCTET_CPU_HAVE_AMX_PATH 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi,amx-tile,amx-bf16,avx2,fma,f16c")
// GCC 12 warns about the undefined vectors inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "codecs/decode_fp8_avx512.hpp"
#include "codecs/decode_fp8_avx512_vbmi.hpp"

namespace octet_cpu {
namespace {

// 64 codes as two vectors of 32 BF16 in their order (VPERMI2W,
// Perm16Decoder): the decoder of the block-scaled GEMM's 32-wide k-blocks,
// whose tile steps must each hold one k-block's codes. VbmiDecoder's
// interface.
struct InOrderDecoder {
  static constexpr int64_t kChunk = 64;
  using Tab = Table;
  static Tab load(int32_t dtype) { return load_table(fp8_bf16_codes(dtype)); }
  static void chunk(const uint8_t* p, int64_t count, const Tab& t, __m512i* out) {
    out[0] = decode32(load_bytes(p, count), t);
    out[1] = decode32(load_bytes(p + 32, count - 32), t);
  }
};

constexpr int64_t kTileK = 32;               // BF16 values in a tile row
constexpr int64_t kChunk = 64;               // codes a decoder step: two tile k-steps
constexpr int64_t kNC = 256;                 // columns per B' block
constexpr int64_t kKC = 2048;                // k per panel (a multiple of kChunk)
constexpr int64_t kMB = 32;                  // rows per A' block: two row tiles
constexpr int64_t kTileElems = 16 * kTileK;  // BF16 values in one tile (1 KiB)

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// The decoded A' rows' stride in BF16 values: one cache line more than the
// panel, so that the 16 rows a tile load reads do not all fall in one L1
// set (a stride of 4 KiB would map them there).
constexpr int64_t row_stride(int64_t kcp) { return kcp + 32; }

struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Tiles 0-3: accumulators (16 x 16 FP32); 4-5: A' rows (16 x 32 BF16);
// 6-7: B' pairs (16 x 16 pairs). All 16 rows of 64 bytes.
void configure_tiles() {
  TileConfig c{};
  c.palette = 1;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  _tile_loadconfig(&c);
}

// r[j] becomes column j of the 16 x 16 matrix of 32-bit lanes r held.
void transpose16(__m512i (&r)[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4g + c], lane l: rows 4g..4g+3 of column 4l + c.
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i v = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), w = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xDD);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i w2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_i32x4(v, v2, 0x88);
    r[8 + c] = _mm512_shuffle_i32x4(v, v2, 0xDD);
    r[4 + c] = _mm512_shuffle_i32x4(w, w2, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(w, w2, 0xDD);
  }
}

struct Scratch {
  uint16_t* b_tiles;  // (kNC / 16) x (kKC / kTileK) tiles
  uint16_t* a_rows;   // kMB rows of kKC BF16
  uint8_t* codes;     // kMB rows of kKC codes: a transposed operand's rows
  float* edge;        // 4 tiles of 16 x 16 FP32
  uint8_t* a_panel;   // A' stored transposed: the thread's rows' codes of one panel (row stride kKC), else null
  int64_t a_first;    // the row a_panel starts at
};

constexpr std::size_t kBTileBytes = (kNC / 16) * (kKC / kTileK) * kTileElems * 2;
constexpr std::size_t kARowBytes = kMB * row_stride(kKC) * 2;
constexpr std::size_t kCodeBytes = kMB * kKC;
constexpr std::size_t kEdgeBytes = 4 * 256 * 4;
constexpr std::size_t kScratchBytes = kBTileBytes + kARowBytes + kCodeBytes + kEdgeBytes;

// The k codes [pc, pc + kc) of `rows` rows of X' from row r0, as `rows`
// pointers: in place, or (x.trans) byte-transposed into `codes` (row
// stride kKC).
void row_pointers(const Fp8Operand& x, int64_t r0, int64_t rows, int64_t pc, int64_t kc, uint8_t* codes,
                  const uint8_t** out) {
  if (x.trans) {  // stored [k, outer]
    row_kernels().transpose_bytes(x.data + pc * x.ld + r0, x.ld, kc, rows, codes, kKC);
    for (int64_t r = 0; r < rows; ++r) out[r] = codes + r * kKC;
  } else {
    for (int64_t r = 0; r < rows; ++r) out[r] = x.data + (r0 + r) * x.ld + pc;
  }
}

// B' columns [j0, j0 + nc) x k [pc, pc + kc) as pair tiles: tile (g, t)
// at b_tiles + (g * kt + t) * kTileElems holds columns j0 + 16g .. + 15 and
// k-step t (kt = kcp / kTileK).
template <class Decoder>
void pack_b(const Fp8Operand& b, const typename Decoder::Tab& tab, int64_t j0, int64_t nc, int64_t pc, int64_t kc,
            int64_t kcp, const Scratch& s) {
  const int64_t kt = kcp / kTileK;
  const uint8_t* rows[16];
  for (int64_t g = 0; g * 16 < nc; ++g) {
    const int64_t h = std::min<int64_t>(16, nc - g * 16);
    row_pointers(b, j0 + g * 16, h, pc, kc, s.codes, rows);
    for (int64_t c = 0; c * kChunk < kcp; ++c) {
      const int64_t count = std::min(kChunk, kc - c * kChunk);
      __m512i lo[16], hi[16];
      for (int64_t r = 0; r < 16; ++r) {
        if (r < h) {
          __m512i v[2];
          Decoder::chunk(rows[r] + c * kChunk, count, tab, v);
          lo[r] = v[0];
          hi[r] = v[1];
        } else {
          lo[r] = hi[r] = _mm512_setzero_si512();
        }
      }
      transpose16(lo);
      transpose16(hi);
      uint16_t* t0 = s.b_tiles + (g * kt + 2 * c) * kTileElems;
      uint16_t* t1 = t0 + kTileElems;
      for (int p = 0; p < 16; ++p) {
        _mm512_store_si512(t0 + p * kTileK, lo[p]);
        _mm512_store_si512(t1 + p * kTileK, hi[p]);
      }
    }
  }
}

// A' rows [i0, i0 + h) x k [pc, pc + kc) decoded into a_rows (row stride
// row_stride(kcp)), rows h .. rows_out - 1 zero.
template <class Decoder>
void decode_a(const Fp8Operand& a, const typename Decoder::Tab& tab, int64_t i0, int64_t h, int64_t rows_out,
              int64_t pc, int64_t kc, int64_t kcp, const Scratch& s) {
  const uint8_t* rows[kMB];
  if (s.a_panel != nullptr) {
    for (int64_t r = 0; r < h; ++r) rows[r] = s.a_panel + (i0 - s.a_first + r) * kKC;
  } else {
    row_pointers(a, i0, h, pc, kc, s.codes, rows);
  }
  for (int64_t r = 0; r < rows_out; ++r) {
    uint16_t* out = s.a_rows + r * row_stride(kcp);
    for (int64_t c = 0; c * kChunk < kcp; ++c) {
      __m512i v[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
      if (r < h) Decoder::chunk(rows[r] + c * kChunk, std::min(kChunk, kc - c * kChunk), tab, v);
      _mm512_store_si512(out + c * kChunk, v[0]);
      _mm512_store_si512(out + c * kChunk + kTileK, v[1]);
    }
  }
}

// Copies acc's part of tile (rows x cols of 16 x 16) into e (row stride
// 16), zeros elsewhere, and back.
void tile_in(const float* c, int64_t ldc, int64_t rows, int64_t cols, float* e) {
  std::memset(e, 0, 256 * 4);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(e + r * 16, c + r * ldc, cols * 4);
}
void tile_out(const float* e, int64_t rows, int64_t cols, float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, e + r * 16, cols * 4);
}

// acc[i, j] (i < h <= 32, j < w <= 32) += the sums over kt k-steps of the
// A' rows at a (row stride a_stride BF16) and the pair tiles at b (column
// tile 1 one tile group later: b + kt * kTileElems); on the first panel
// acc is not read. With two row and two column tiles, tiles 0-3 hold the
// four 16 x 16 accumulators. With fewer, the even and the odd k-steps go
// to two accumulators each, added at the end (an FP32 add per element,
// the same for every layout and thread count), so that enough TDPBF16PS
// are in flight to cover its latency.
template <int kMT, int kNT>
void sum_block(const uint16_t* a, int64_t a_stride, const uint16_t* b, int64_t kt, float* acc, int64_t ldc, int64_t h,
               int64_t w, bool first, float* edge) {
  static_assert(kMT >= 1 && kMT <= 2 && kNT >= 1 && kNT <= 2, "one or two tiles each way");
  const int64_t a_bytes = a_stride * 2, acc_stride = ldc * 4;
  const uint16_t* b1 = b + kt * kTileElems;
  auto rows_of = [&](int mi) { return std::min<int64_t>(16, h - mi * 16); };
  auto cols_of = [&](int ni) { return std::min<int64_t>(16, w - ni * 16); };
  auto c_at = [&](int mi, int ni) { return acc + (mi * 16) * ldc + ni * 16; };
  if constexpr (kMT == 2 && kNT == 2) {
    const bool whole = h == 32 && w == 32;
    if (first) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
    } else if (whole) {
      _tile_loadd(0, c_at(0, 0), acc_stride);
      _tile_loadd(1, c_at(0, 1), acc_stride);
      _tile_loadd(2, c_at(1, 0), acc_stride);
      _tile_loadd(3, c_at(1, 1), acc_stride);
    } else {
      tile_in(c_at(0, 0), ldc, rows_of(0), cols_of(0), edge);
      tile_in(c_at(0, 1), ldc, rows_of(0), cols_of(1), edge + 256);
      tile_in(c_at(1, 0), ldc, rows_of(1), cols_of(0), edge + 512);
      tile_in(c_at(1, 1), ldc, rows_of(1), cols_of(1), edge + 768);
      _tile_loadd(0, edge, 64);
      _tile_loadd(1, edge + 256, 64);
      _tile_loadd(2, edge + 512, 64);
      _tile_loadd(3, edge + 768, 64);
    }
    for (int64_t t = 0; t < kt; ++t) {
      _tile_loadd(4, a + t * kTileK, a_bytes);
      _tile_loadd(6, b + t * kTileElems, 64);
      _tile_loadd(7, b1 + t * kTileElems, 64);
      _tile_loadd(5, a + 16 * a_stride + t * kTileK, a_bytes);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    if (whole) {
      _tile_stored(0, c_at(0, 0), acc_stride);
      _tile_stored(1, c_at(0, 1), acc_stride);
      _tile_stored(2, c_at(1, 0), acc_stride);
      _tile_stored(3, c_at(1, 1), acc_stride);
      return;
    }
    _tile_stored(0, edge, 64);
    _tile_stored(1, edge + 256, 64);
    _tile_stored(2, edge + 512, 64);
    _tile_stored(3, edge + 768, 64);
    tile_out(edge, rows_of(0), cols_of(0), c_at(0, 0), ldc);
    tile_out(edge + 256, rows_of(0), cols_of(1), c_at(0, 1), ldc);
    tile_out(edge + 512, rows_of(1), cols_of(0), c_at(1, 0), ldc);
    tile_out(edge + 768, rows_of(1), cols_of(1), c_at(1, 1), ldc);
  } else {
    // Tiles 0 and 1: the (up to two) outputs' even k-steps; 2 and 3 their
    // odd ones (kt is even: k is padded to whole 64-code chunks).
    constexpr int kOut = kMT * kNT;
    auto mi_of = [](int o) { return kMT == 2 ? o : 0; };
    auto ni_of = [](int o) { return kNT == 2 ? o : 0; };
    _tile_zero(2);
    _tile_zero(3);
    if (first) {
      _tile_zero(0);
      _tile_zero(1);
    } else {
      for (int o = 0; o < kOut; ++o)
        tile_in(c_at(mi_of(o), ni_of(o)), ldc, rows_of(mi_of(o)), cols_of(ni_of(o)), edge + o * 256);
      _tile_loadd(0, edge, 64);
      if (kOut == 2) _tile_loadd(1, edge + 256, 64);
    }
    for (int64_t t = 0; t < kt; t += 2) {
      if constexpr (kNT == 2) {  // one row tile, two column tiles
        _tile_loadd(4, a + t * kTileK, a_bytes);
        _tile_loadd(6, b + t * kTileElems, 64);
        _tile_loadd(7, b1 + t * kTileElems, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a + (t + 1) * kTileK, a_bytes);
        _tile_loadd(6, b + (t + 1) * kTileElems, 64);
        _tile_loadd(7, b1 + (t + 1) * kTileElems, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      } else if constexpr (kMT == 2) {  // two row tiles, one column tile
        _tile_loadd(6, b + t * kTileElems, 64);
        _tile_loadd(4, a + t * kTileK, a_bytes);
        _tile_loadd(5, a + 16 * a_stride + t * kTileK, a_bytes);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 5, 6);
        _tile_loadd(7, b + (t + 1) * kTileElems, 64);
        _tile_loadd(4, a + (t + 1) * kTileK, a_bytes);
        _tile_loadd(5, a + 16 * a_stride + (t + 1) * kTileK, a_bytes);
        _tile_dpbf16ps(2, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
      } else {  // one tile
        _tile_loadd(4, a + t * kTileK, a_bytes);
        _tile_loadd(6, b + t * kTileElems, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(5, a + (t + 1) * kTileK, a_bytes);
        _tile_loadd(7, b + (t + 1) * kTileElems, 64);
        _tile_dpbf16ps(2, 5, 7);
      }
    }
    _tile_stored(0, edge, 64);
    _tile_stored(2, edge + 512, 64);
    if (kOut == 2) {
      _tile_stored(1, edge + 256, 64);
      _tile_stored(3, edge + 768, 64);
    }
    for (int o = 0; o < kOut; ++o) {
      float* even = edge + o * 256;
      const float* odd = edge + 512 + o * 256;
      for (int e = 0; e < 256; e += 16) {
        _mm512_store_ps(even + e, _mm512_add_ps(_mm512_load_ps(even + e), _mm512_load_ps(odd + e)));
      }
      tile_out(even, rows_of(mi_of(o)), cols_of(ni_of(o)), c_at(mi_of(o), ni_of(o)), ldc);
    }
  }
}

// acc rows [m0, m1) x columns [n0, n1) on this thread (tiles configured).
void gemm_range(const Fp8Operand& a, const Fp8Operand& b, const VbmiDecoder::Tab& ta, const VbmiDecoder::Tab& tb,
                int64_t k, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* acc, int64_t ldc, const Scratch& s) {
  for (int64_t pc = 0; pc < k; pc += kKC) {
    const int64_t kc = std::min(kKC, k - pc), kcp = round_up(kc, kChunk), kt = kcp / kTileK;
    // A transposed A' panel is byte-transposed once into rows, not once per
    // block of B' columns.
    if (s.a_panel != nullptr) row_kernels().transpose_bytes(a.data + pc * a.ld + m0, a.ld, kc, m1 - m0, s.a_panel, kKC);
    for (int64_t j0 = n0; j0 < n1; j0 += kNC) {
      const int64_t nc = std::min(kNC, n1 - j0), groups = (nc + 15) / 16;
      pack_b<VbmiDecoder>(b, tb, j0, nc, pc, kc, kcp, s);
      for (int64_t i0 = m0; i0 < m1; i0 += kMB) {
        const int64_t h = std::min(kMB, m1 - i0);
        const bool two_rows = h > 16;
        decode_a<VbmiDecoder>(a, ta, i0, h, two_rows ? 32 : 16, pc, kc, kcp, s);
        for (int64_t g = 0; g < groups; g += 2) {
          const bool two_cols = g + 1 < groups;
          const int64_t w = std::min<int64_t>(32, nc - g * 16);
          const uint16_t* bt = s.b_tiles + g * kt * kTileElems;
          float* c = acc + i0 * ldc + j0 + g * 16;
          if (two_rows && two_cols) {
            sum_block<2, 2>(s.a_rows, row_stride(kcp), bt, kt, c, ldc, h, w, pc == 0, s.edge);
          } else if (two_rows) {
            sum_block<2, 1>(s.a_rows, row_stride(kcp), bt, kt, c, ldc, h, w, pc == 0, s.edge);
          } else if (two_cols) {
            sum_block<1, 2>(s.a_rows, row_stride(kcp), bt, kt, c, ldc, h, w, pc == 0, s.edge);
          } else {
            sum_block<1, 1>(s.a_rows, row_stride(kcp), bt, kt, c, ldc, h, w, pc == 0, s.edge);
          }
        }
      }
    }
  }
}

// The block-scaled GEMM's partial sums over tile steps [t0, t0 + steps)
// of one k-block, for the kMT x kNT tiles of a 32 x 32 output block, from
// zero, stored into edge (tile (mi, ni) at edge + (mi * 2 + ni) * 256).
template <int kMT, int kNT>
void block_partials(const uint16_t* a, int64_t a_stride, const uint16_t* b, int64_t kt, int64_t t0, int64_t steps,
                    float* edge) {
  const int64_t a_bytes = a_stride * 2;
  const uint16_t* b1 = b + kt * kTileElems;
  _tile_zero(0);
  if (kNT == 2) _tile_zero(1);
  if (kMT == 2) _tile_zero(2);
  if (kMT == 2 && kNT == 2) _tile_zero(3);
  for (int64_t t = t0; t < t0 + steps; ++t) {
    _tile_loadd(4, a + t * kTileK, a_bytes);
    _tile_loadd(6, b + t * kTileElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    if (kNT == 2) {
      _tile_loadd(7, b1 + t * kTileElems, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if (kMT == 2) {
      _tile_loadd(5, a + 16 * a_stride + t * kTileK, a_bytes);
      _tile_dpbf16ps(2, 5, 6);
      if (kNT == 2) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, edge, 64);
  if (kNT == 2) _tile_stored(1, edge + 256, 64);
  if (kMT == 2) _tile_stored(2, edge + 512, 64);
  if (kMT == 2 && kNT == 2) _tile_stored(3, edge + 768, 64);
}

// acc rows [m0, m1) x columns [n0, n1) of the block-scaled GEMM on this
// thread: for each 32 x 32 output block and k-block kb in ascending
// order, acc = acc + P_kb * (sa(i, kb) * sb(j, kb)) element by element
// (numerics.md section 12), acc starting from +0 at the first k-block.
template <class Decoder>
void block_range(const Fp8Operand& a, const Fp8Operand& b, const typename Decoder::Tab& ta,
                 const typename Decoder::Tab& tb, int64_t k, int64_t bk, const BlockScaleTable& sa,
                 const BlockScaleTable& sb, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* acc, int64_t ldc,
                 const Scratch& s) {
  const int64_t steps = bk / kTileK;
  for (int64_t pc = 0; pc < k; pc += kKC) {
    const int64_t kc = std::min(kKC, k - pc), kcp = round_up(kc, kChunk), kt = kcp / kTileK;
    for (int64_t j0 = n0; j0 < n1; j0 += kNC) {
      const int64_t nc = std::min(kNC, n1 - j0), groups = (nc + 15) / 16;
      pack_b<Decoder>(b, tb, j0, nc, pc, kc, kcp, s);
      for (int64_t i0 = m0; i0 < m1; i0 += kMB) {
        const int64_t h = std::min(kMB, m1 - i0);
        const bool two_rows = h > 16;
        decode_a<Decoder>(a, ta, i0, h, two_rows ? 32 : 16, pc, kc, kcp, s);
        for (int64_t g = 0; g < groups; g += 2) {
          const bool two_cols = g + 1 < groups;
          const int64_t w = std::min<int64_t>(32, nc - g * 16), jb = j0 + g * 16;
          const uint16_t* bt = s.b_tiles + g * kt * kTileElems;
          for (int64_t t0 = 0; t0 * kTileK < kc; t0 += steps) {
            const int64_t kb = (pc + t0 * kTileK) / bk;
            const int64_t ts = std::min(steps, kt - t0);
            if (two_rows && two_cols) {
              block_partials<2, 2>(s.a_rows, row_stride(kcp), bt, kt, t0, ts, s.edge);
            } else if (two_rows) {
              block_partials<2, 1>(s.a_rows, row_stride(kcp), bt, kt, t0, ts, s.edge);
            } else if (two_cols) {
              block_partials<1, 2>(s.a_rows, row_stride(kcp), bt, kt, t0, ts, s.edge);
            } else {
              block_partials<1, 1>(s.a_rows, row_stride(kcp), bt, kt, t0, ts, s.edge);
            }
            const bool first = kb == 0;
            float sb_row[32];
            for (int64_t c = 0; c < w; ++c) sb_row[c] = sb.at(jb + c, kb);
            for (int64_t r = 0; r < h; ++r) {
              const float s_a = sa.at(i0 + r, kb);
              const float* p = s.edge + (r / 16) * 512 + (r % 16) * 16;
              float* out = acc + (i0 + r) * ldc + jb;
              for (int64_t c = 0; c < w; ++c) {
                const float v = (c < 16 ? p[c] : p[256 + c - 16]) * (s_a * sb_row[c]);
                out[c] = (first ? 0.0f : out[c]) + v;
              }
            }
          }
        }
      }
    }
  }
}

// Runs range(s, m0, m1, n0, n1) on every OpenMP thread for its share of
// the m x n output, tiles configured: the columns in 32s, or the rows in
// kMB when there are fewer column pairs than threads and rows. Each
// thread has its Scratch; with a_trans, also a panel of A' row codes.
template <typename Range>
void on_threads(int64_t m, int64_t n, int64_t k, bool a_trans, Range&& range) {
  const int threads = threads_for(2.0 * double(m) * double(n) * double(k), kGemmFlopsPerThread);
  const int64_t n_units = (n + 31) / 32, m_units = (m + kMB - 1) / kMB;
  const bool split_n = n_units >= threads || n_units >= m_units;
  Buffer<unsigned char> memory(kScratchBytes * static_cast<std::size_t>(threads));
  // A' stored transposed: each thread's panel of row codes (at most all m
  // rows of one 2048-k panel).
  const std::size_t panel_bytes = a_trans ? element_count(m, kKC) : 0;
  Buffer<uint8_t> panels;
  if (a_trans) panels.reset(panel_bytes * static_cast<std::size_t>(threads));
  (void)row_kernels();  // chosen before the threads need it
#pragma omp parallel num_threads(threads)
  {
    const octet::DefaultFloatMode float_mode;  // this thread, for the region (dispatch/parallel_policy.hpp)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    unsigned char* base = memory.get() + kScratchBytes * static_cast<std::size_t>(t);
    const int64_t units = split_n ? n_units : m_units;
    const int64_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
    const Scratch s{reinterpret_cast<uint16_t*>(base),
                    reinterpret_cast<uint16_t*>(base + kBTileBytes),
                    base + kBTileBytes + kARowBytes,
                    reinterpret_cast<float*>(base + kBTileBytes + kARowBytes + kCodeBytes),
                    a_trans ? panels.get() + panel_bytes * static_cast<std::size_t>(t) : nullptr,
                    split_n ? 0 : u0 * kMB};
    if (u0 < u1) {
      configure_tiles();
      if (split_n) {
        range(s, int64_t{0}, m, u0 * 32, std::min(n, u1 * 32));
      } else {
        range(s, u0 * kMB, std::min(m, u1 * kMB), int64_t{0}, n);
      }
      _tile_release();
    }
  }
}

void fp8_gemm_amx_impl(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc,
                       int64_t ldc) {
  const VbmiDecoder::Tab ta = VbmiDecoder::load(a.dtype), tb = VbmiDecoder::load(b.dtype);
  on_threads(m, n, k, a.trans, [&](const Scratch& s, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    gemm_range(a, b, ta, tb, k, m0, m1, n0, n1, acc, ldc, s);
  });
}

// The block GEMM's operands are never transposed (gemm/gemm_fp8.hpp).
template <class Decoder>
void fp8_block_gemm_amx_impl(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                             const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc) {
  const typename Decoder::Tab ta = Decoder::load(a.dtype), tb = Decoder::load(b.dtype);
  on_threads(m, n, k, false, [&](const Scratch& s, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    block_range<Decoder>(a, b, ta, tb, k, bk, sa, sb, m0, m1, n0, n1, acc, ldc, s);
  });
}

}  // namespace

void fp8_gemm_amx(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, float* acc, int64_t ldc) {
  // Build both code tables before any thread needs them.
  (void)fp8_bf16_codes(a.dtype);
  (void)fp8_bf16_codes(b.dtype);
  fp8_gemm_amx_impl(a, b, m, n, k, acc, ldc);
}

void fp8_block_gemm_amx(const Fp8Operand& a, const Fp8Operand& b, int64_t m, int64_t n, int64_t k, int64_t bk,
                        const BlockScaleTable& sa, const BlockScaleTable& sb, float* acc, int64_t ldc) {
  (void)fp8_bf16_codes(a.dtype);
  (void)fp8_bf16_codes(b.dtype);
  // 32-wide k-blocks need each tile step's codes in order; wider ones take
  // the faster VPERMI2B decoder (its 64-code chunks stay inside a block).
  if (bk == 32) {
    fp8_block_gemm_amx_impl<InOrderDecoder>(a, b, m, n, k, bk, sa, sb, acc, ldc);
  } else {
    fp8_block_gemm_amx_impl<VbmiDecoder>(a, b, m, n, k, bk, sa, sb, acc, ldc);
  }
}

}  // namespace octet_cpu

#pragma GCC pop_options
#endif

namespace octet_cpu {

bool fp8_gemm_amx_built() {
#if defined(OCTET_CPU_HAVE_AMX_PATH)
  return true;
#else
  return false;
#endif
}

#if !defined(OCTET_CPU_HAVE_AMX_PATH)
void fp8_gemm_amx(const Fp8Operand&, const Fp8Operand&, int64_t, int64_t, int64_t, float*, int64_t) {}
void fp8_block_gemm_amx(const Fp8Operand&, const Fp8Operand&, int64_t, int64_t, int64_t, int64_t,
                        const BlockScaleTable&, const BlockScaleTable&, float*, int64_t) {}
#endif

}  // namespace octet_cpu
