// Large pixel buffers (internal to the image module). A fresh multi-megabyte buffer costs one page
// fault per 4 KiB page on first touch, which for a 12-megapixel image is more time than the
// arithmetic; on Linux the buffer is marked for transparent huge pages before it is touched, so it
// faults in 2 MiB at a time (a hint: without huge pages nothing changes but the speed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace smolvlm::image_detail {

// Room for `n` elements in `v` (its size does not change), marked for huge pages when large.
template <class T>
void reserve_pixels(std::vector<T>& v, size_t n) {
  if (v.capacity() < n) {
    std::vector<T> fresh;
    fresh.reserve(n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHuge = uintptr_t{2} << 20;
    const size_t bytes = n * sizeof(T);
    if (bytes >= 2 * kHuge) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(fresh.data());
      const uintptr_t b = (start + kHuge - 1) & ~(kHuge - 1), e = (start + bytes) & ~(kHuge - 1);
      if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
    }
#endif
    fresh.assign(v.begin(), v.end());
    v.swap(fresh);
  }
}

// `v` gets exactly `n` elements (value-initialised), in storage marked for huge pages when large.
template <class T>
void resize_pixels(std::vector<T>& v, size_t n) {
  reserve_pixels(v, n);
  v.resize(n);
}

}  // namespace smolvlm::image_detail
