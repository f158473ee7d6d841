#include "kernels/cpu.h"

#include <atomic>
#include <cstdlib>
#include <string>

#if SMOLVLM_HAVE_NEON_KERNELS && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "core/error.h"

namespace smolvlm {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if SMOLVLM_HAVE_X86_KERNELS
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  // f16c and avx512bf16 are not known to every compiler's __builtin_cpu_supports: ask cpuid.
  unsigned a, b, c, d;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
  f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "Auth" "enti" "cAMD"
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  f.family = int((a >> 8) & 0xF) + (((a >> 8) & 0xF) == 0xF ? int((a >> 20) & 0xFF) : 0);
  f.f16c = (c >> 29) & 1;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  f.avx512vnni = f.avx512f && ((c >> 11) & 1);
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
  f.avx512bf16 = f.avx512f && ((a >> 5) & 1);
  f.avxvnni = f.avx2 && ((a >> 4) & 1);
#endif
#if SMOLVLM_HAVE_NEON_KERNELS && defined(__linux__)
  f.neon = (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
  f.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif SMOLVLM_HAVE_NEON_KERNELS
  f.neon = true;  // every aarch64 (Apple M-series included) has Advanced SIMD
#if defined(__ARM_FEATURE_DOTPROD)
  f.dotprod = true;  // the build's target has it (Apple M-series do)
#endif
#endif
  return f;
}

std::atomic<int> g_forced{-1};      // set_kernel_path(), -1 when not set
thread_local int t_scoped_path = -1;  // the innermost ScopedKernelPath of this thread, -1 when none

KernelPath parse_path(const std::string& s) {
  for (KernelPath p : kAllKernelPaths)
    if (s == kernel_path_name(p)) return p;
  throw bad_input("SMOLVLM_KERNELS=" + s + ": unknown kernel path (scalar, avx2, avx512, neon)");
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

const char* kernel_path_name(KernelPath p) {
  switch (p) {
    case KernelPath::Scalar: return "scalar";
    case KernelPath::Avx2: return "avx2";
    case KernelPath::Avx512: return "avx512";
    case KernelPath::Neon: return "neon";
  }
  return "?";
}

bool kernel_path_supported(KernelPath p) {
  const CpuFeatures& f = cpu_features();
  switch (p) {
    case KernelPath::Scalar: return true;
    case KernelPath::Avx2: return f.avx2 && f.fma && f.f16c;
    case KernelPath::Avx512: return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.fma && f.f16c;
    case KernelPath::Neon: return f.neon;
  }
  return false;
}

const char* precision_name(Precision p) { return p == Precision::Fast ? "fast" : "exact"; }

bool precision_supported(KernelPath path, Precision p) {
  if (p == Precision::Exact) return kernel_path_supported(path);
  if (path == KernelPath::Avx2 || path == KernelPath::Neon) return kernel_path_supported(path);
  return path == KernelPath::Avx512 && kernel_path_supported(path) && cpu_features().avx512bf16;
}

void require_precision(KernelPath path, Precision p) {
  if (precision_supported(path, p)) return;
  if (p == Precision::Exact)
    throw unsupported(std::string("kernel path ") + kernel_path_name(path) + " is not supported by this CPU");
  throw unsupported(std::string("precision fast needs the avx2 or neon kernel path, or the avx512 one on a CPU "
                                "with avx512_bf16 (kernel path ") +
                    kernel_path_name(path) + (cpu_features().avx512bf16 ? "" : "; this CPU has no avx512_bf16") + ")");
}

std::vector<KernelPath> supported_kernel_paths() {
  std::vector<KernelPath> v;
  for (KernelPath p : kAllKernelPaths)
    if (kernel_path_supported(p)) v.push_back(p);
  return v;
}

KernelPath best_kernel_path() { return supported_kernel_paths().back(); }

void set_kernel_path(KernelPath p) {
  if (!kernel_path_supported(p))
    throw unsupported(std::string("kernel path ") + kernel_path_name(p) + " is not supported by this CPU");
  g_forced.store(static_cast<int>(p));
}

void reset_kernel_path() { g_forced.store(-1); }

ScopedKernelPath::ScopedKernelPath(KernelPath p) : previous_(t_scoped_path) {
  if (!kernel_path_supported(p))
    throw unsupported(std::string("kernel path ") + kernel_path_name(p) + " is not supported by this CPU");
  t_scoped_path = static_cast<int>(p);
}

ScopedKernelPath::~ScopedKernelPath() { t_scoped_path = previous_; }

namespace {
std::atomic<bool> g_fault{false};
std::atomic<int> g_row_streams{static_cast<int>(RowStreams::AsCpuPrefers)};
}  // namespace

void force_row_streams(RowStreams s) { g_row_streams.store(static_cast<int>(s)); }

bool read_four_streams(bool cpu_prefers) {
  const auto s = static_cast<RowStreams>(g_row_streams.load(std::memory_order_relaxed));
  return s == RowStreams::AsCpuPrefers ? cpu_prefers : s == RowStreams::Four;
}

void set_kernel_fault_injection(bool on) { g_fault.store(on); }
bool kernel_fault_injection() { return g_fault.load(std::memory_order_relaxed); }

namespace {

// SMOLVLM_KERNELS and the CPU's best path, read once: kernels ask for the active path on every call.
// An invalid setting is not cached, so every call reports it.
KernelPath default_kernel_path() {
  static const KernelPath path = [] {
    if (const char* env = std::getenv("SMOLVLM_KERNELS"); env && *env) {
      KernelPath p = parse_path(env);
      if (!kernel_path_supported(p))
        throw unsupported(std::string("SMOLVLM_KERNELS=") + env + ": this CPU cannot run that kernel path");
      return p;
    }
    return best_kernel_path();
  }();
  return path;
}

}  // namespace

KernelPath active_kernel_path() {
  if (t_scoped_path >= 0) return static_cast<KernelPath>(t_scoped_path);
  int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<KernelPath>(forced);
  return default_kernel_path();
}

}  // namespace smolvlm
