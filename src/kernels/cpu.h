// CPU features, detected once, and the kernel path in use. The path is chosen at run time (never at
// build time): the best the CPU supports, or the one forced with SMOLVLM_KERNELS=scalar|avx2|avx512
// or set_kernel_path() (tests and `smolvlm check` force every path the machine can run).
#pragma once

#include <vector>

namespace smolvlm {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512bf16 = false;
};
const CpuFeatures& cpu_features();

enum class KernelPath { Scalar, Avx2, Avx512 };
const char* kernel_path_name(KernelPath p);          // "scalar", "avx2", "avx512"
bool kernel_path_supported(KernelPath p);
std::vector<KernelPath> supported_kernel_paths();    // every path this CPU can run, scalar first
KernelPath best_kernel_path();
// The path kernels use now: SMOLVLM_KERNELS if set (Error(Unsupported) if the CPU cannot run it,
// Error(BadInput) for an unknown name), else the best.
KernelPath active_kernel_path();
void set_kernel_path(KernelPath p);                  // Error(Unsupported) if the CPU cannot run it
void reset_kernel_path();                            // undoes set_kernel_path (back to env / best)

// The calling thread's path for a scope (first in active_kernel_path's order); nests.
class ScopedKernelPath {
 public:
  explicit ScopedKernelPath(KernelPath p);  // Error(Unsupported) if the CPU cannot run it
  ~ScopedKernelPath();
  ScopedKernelPath(const ScopedKernelPath&) = delete;
  ScopedKernelPath& operator=(const ScopedKernelPath&) = delete;

 private:
  int previous_;
};

// Test hook: while on, linear() returns a slightly wrong result (as a miscompiled or broken kernel
// would), so tests can see `smolvlm check` catch a bad kernel path. Off unless a test turns it on.
void set_kernel_fault_injection(bool on);
bool kernel_fault_injection();

}  // namespace smolvlm
