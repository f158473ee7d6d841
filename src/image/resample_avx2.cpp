// The AVX2 resampling kernels (compiled with -mavx2, chosen at run time). Same integer arithmetic as
// the portable code, so the bytes are the same on every path. No standard-library templates here:
// a weak symbol compiled for AVX2 must never be picked by the linker for the portable code.
#include <immintrin.h>

#include <cstring>

#include "image/resample_rows.h"

namespace smolvlm::resample_detail {
namespace {

// 32 int32 sums -> 32 clipped bytes (clip8 of each): >> 22 then saturating packs (a negative sum
// packs to 0, one >= 2^30 to 255), lanes put back in order.
inline __m256i pack_32(__m256i a0, __m256i a1, __m256i a2, __m256i a3) {
  a0 = _mm256_srai_epi32(a0, kPrecisionBits);
  a1 = _mm256_srai_epi32(a1, kPrecisionBits);
  a2 = _mm256_srai_epi32(a2, kPrecisionBits);
  a3 = _mm256_srai_epi32(a3, kPrecisionBits);
  const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(a0, a1), _mm256_packs_epi32(a2, a3));
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <int C, int R>
void horizontal_block(const HorizontalAvx2& h, const uint8_t* in, int64_t in_stride, uint8_t* out) {
  // Per 128-bit lane, two pixels' channels as int16 pairs (p0.c, p1.c) for c = 0..3 (zero for a
  // missing 4th channel): lane 0 takes taps 0 and 1 of the group, lane 1 taps 2 and 3.
  const __m256i mask = C == 3 ? _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                                                 6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1)
                              : _mm256_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1,  //
                                                 8, -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1);
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  const __m256i init = _mm256_setr_epi32(kHalf, kHalf, kHalf, kHalf, 0, 0, 0, 0);
  const int groups = h.groups;
  const int64_t out_stride = h.out_w * C;
  for (int64_t x = 0; x < h.out_w; ++x) {
    const int16_t* k = h.coeffs + x * groups * 32;
    const uint8_t* s = in + static_cast<int64_t>(h.first[x]) * C;
    __m256i hi[R], lo[R];
    for (int r = 0; r < R; ++r) {
      hi[r] = _mm256_setzero_si256();
      lo[r] = init;
    }
    for (int g = 0; g < groups; ++g, k += 32, s += 4 * C) {
      const __m256i kh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k));
      const __m256i kl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + 16));
      for (int r = 0; r < R; ++r) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + r * in_stride));
        const __m256i px = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(raw), mask);
        hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(px, kh));
        lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(px, kl));
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256i sum = _mm256_add_epi32(_mm256_slli_epi32(hi[r], 15), lo[r]);
      __m128i t = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
      t = _mm_srai_epi32(t, kPrecisionBits);
      t = _mm_packus_epi16(_mm_packs_epi32(t, t), t);
      const uint32_t v = static_cast<uint32_t>(_mm_cvtsi128_si32(t));
      uint8_t* d = out + r * out_stride + x * C;
      // Four bytes even for RGB (the fourth is rewritten by the next pixel), except at the row end.
      if (C == 4 || x + 1 < h.out_w) std::memcpy(d, &v, 4);
      else std::memcpy(d, &v, 3);
    }
  }
}

template <int C>
void horizontal_rows(const HorizontalAvx2& h, const uint8_t* in, int64_t in_row_bytes, int64_t rows, uint8_t* out) {
  const int64_t out_stride = h.out_w * C;
  int64_t y = 0;
  for (; y + 4 <= rows; y += 4) horizontal_block<C, 4>(h, in + y * in_row_bytes, in_row_bytes, out + y * out_stride);
  for (; y < rows; ++y) horizontal_block<C, 1>(h, in + y * in_row_bytes, in_row_bytes, out + y * out_stride);
}

}  // namespace

void horizontal_rows_avx2(const HorizontalAvx2& h, const uint8_t* in, int64_t in_row_bytes, int64_t rows,
                          uint8_t* out) {
  if (h.channels == 3) horizontal_rows<3>(h, in, in_row_bytes, rows, out);
  else horizontal_rows<4>(h, in, in_row_bytes, rows, out);
}

void convolve_rows_avx2(const uint8_t* in, int64_t row_bytes, const int32_t* first, const int32_t* count,
                        const int32_t* coeffs, int taps, int64_t row_offset, int64_t out_rows, uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  for (int64_t y = 0; y < out_rows; ++y) {
    const int32_t* k = coeffs + y * taps;
    const int n = count[y];
    const uint8_t* rows = in + (first[y] - row_offset) * row_bytes;
    uint8_t* dst = out + y * row_bytes;
    int64_t x = 0;
    for (; x + 32 <= row_bytes; x += 32) {
      __m256i a0 = half, a1 = half, a2 = half, a3 = half;
      const uint8_t* s = rows + x;
      for (int j = 0; j < n; ++j, s += row_bytes) {
        const __m256i kj = _mm256_set1_epi32(k[j]);
        const auto load8 = [](const uint8_t* p) {
          return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        };
        a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(load8(s), kj));
        a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(load8(s + 8), kj));
        a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(load8(s + 16), kj));
        a3 = _mm256_add_epi32(a3, _mm256_mullo_epi32(load8(s + 24), kj));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + x), pack_32(a0, a1, a2, a3));
    }
    for (; x < row_bytes; ++x) {
      int32_t acc = 1 << (kPrecisionBits - 1);
      for (int j = 0; j < n; ++j) acc += rows[j * row_bytes + x] * k[j];
      dst[x] = clip8(acc);
    }
  }
}

void rgb_to_planes_avx2(const uint8_t* rgb, int64_t n, uint8_t* r, uint8_t* g, uint8_t* b) {
  // 16 pixels = 48 bytes in three vectors; each plane gathers its bytes from all three.
  const __m128i ra = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i rb = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
  const __m128i rc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
  const __m128i ga = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i gb = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
  const __m128i gc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
  const __m128i ba = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i bb = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
  const __m128i bc = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 3 * i));
    const __m128i bv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 3 * i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 3 * i + 32));
    const auto plane = [&](__m128i ma, __m128i mb, __m128i mc) {
      return _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, ma), _mm_shuffle_epi8(bv, mb)), _mm_shuffle_epi8(c, mc));
    };
    _mm_storeu_si128(reinterpret_cast<__m128i*>(r + i), plane(ra, rb, rc));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(g + i), plane(ga, gb, gc));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i), plane(ba, bb, bc));
  }
  for (; i < n; ++i) {
    r[i] = rgb[3 * i];
    g[i] = rgb[3 * i + 1];
    b[i] = rgb[3 * i + 2];
  }
}

}  // namespace smolvlm::resample_detail
