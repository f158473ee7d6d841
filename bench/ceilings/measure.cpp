#include "ceilings/measure.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "ceilings/ceilings.h"
#include "kernels/cpu.h"
#include "kernels/thread_pool.h"

namespace smolvlm::bench {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
} // namespace

double fma_peak_gflops(const std::string &kernel_path, int threads) {
  for (KernelPath p : supported_kernel_paths())
    if (kernel_path == kernel_path_name(p)) {
      ThreadPool pool(threads);
      return measure_fma_peak_gflops(p, pool);
    }
  throw std::runtime_error("kernel path " + kernel_path +
                           " is not supported by this CPU");
}

std::optional<double> bf16_dot_peak_gflops(int threads) {
  if (!bf16_dot_peak_supported()) return std::nullopt;
  ThreadPool pool(threads);
  return measure_bf16_dot_peak_gflops(pool);
}

double triad_gb_s(int threads) {
  ThreadPool pool(threads);
  return measure_triad_gbs(pool);
}

double read_gb_s(int threads) {
  ThreadPool pool(threads);
  return measure_read_gbs(pool);
}

void OpenBlasSgemm::sample(int reps) {
  if (!available_)
    return;
  Result r{};
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error(
        "bench: cannot create a pipe for the OpenBLAS sample");
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error("bench: cannot fork for the OpenBLAS sample");
  }
  if (pid == 0) { // the child: only the calling thread exists here, so it
                  // leaves with _exit
    close(fds[0]);
    r = run_in_child(reps);
    const ssize_t written = write(fds[1], &r, sizeof r);
    _exit(written == ssize_t(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  const ssize_t got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != ssize_t(sizeof r) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0 || r.gflops <= 0) {
    available_ = false;
    return;
  }
  best_ = std::max(best_, r.gflops);
  samples_ += reps;
  config_ = r.config;
}

OpenBlasSgemm::Result OpenBlasSgemm::run_in_child(int reps) const {
  Result r{};
  // The ceiling is OpenBLAS's own best kernel for this CPU: an environment that pins its core type
  // or L2 size (OPENBLAS_CORETYPE=Haswell on an AVX-512 machine, say) would measure another one.
  // Only this forked child forgets them; the library reads them when it is loaded just below.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
  void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return r;
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
  auto sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
  auto set_threads =
      reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
  auto get_config =
      reinterpret_cast<char *(*)()>(dlsym(lib, "openblas_get_config"));
  auto get_core =
      reinterpret_cast<char *(*)()>(dlsym(lib, "openblas_get_corename"));
  if (!sgemm)
    return r;
  if (set_threads)
    set_threads(threads_);
  const std::string config =
      (get_config ? std::string(get_config()) : std::string()) +
      (get_core ? std::string(" core ") + get_core() : "");
  std::snprintf(r.config, sizeof r.config, "%s", config.c_str());
  constexpr int n = 1024, kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f),
      c(size_t(n) * n);
  for (int rep = 0; rep <= reps;
       ++rep) { // the first call starts the library's threads: not timed
    auto t = Clock::now();
    sgemm(kRowMajor, kNoTrans, kTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
          0.f, c.data(), n);
    if (rep > 0)
      r.gflops = std::max(r.gflops, 2.0 * n * n * n / since(t) / 1e9);
  }
  return r;
}

} // namespace smolvlm::bench
