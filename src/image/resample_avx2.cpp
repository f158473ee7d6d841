// convolve_rows compiled for AVX2 (8 x int32 multiply-adds per instruction); chosen at run time.
#include "image/resample_rows.h"

namespace smolvlm::resample_detail {

void convolve_rows_avx2(const uint8_t* in, int64_t row_bytes, const int32_t* first, const int32_t* count,
                        const int32_t* coeffs, int taps, int64_t row_offset, int64_t out_rows, uint8_t* out) {
  convolve_rows(in, row_bytes, first, count, coeffs, taps, row_offset, out_rows, out);
}

}  // namespace smolvlm::resample_detail
