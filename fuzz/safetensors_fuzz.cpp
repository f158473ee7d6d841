// Fuzzes the safetensors header and tensor-table validation on arbitrary bytes. Errors are
// expected; a crash, leak, out-of-bounds tensor view or UB is a bug.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    smolvlm::SafetensorsFile file(data, size, "fuzz.safetensors");
    // Every view handed out must lie inside the input: touch its first and last byte.
    volatile uint8_t sink = 0;
    for (const smolvlm::TensorView& t : file.tensors()) {
      if (t.nbytes == 0) continue;
      const uint8_t* p = static_cast<const uint8_t*>(t.data);
      if (p < data || p + t.nbytes > data + size) __builtin_trap();
      sink = sink ^ p[0] ^ p[t.nbytes - 1];
    }
    (void)sink;
  } catch (const smolvlm::Error&) {
  }
  return 0;
}
