// The machine's ceilings for `smolvlm bench`, measured in the same run as the figures set against
// them: FMA peak per kernel path, triad and streaming-read bandwidth, and OpenBLAS sgemm. Kept out of
// the engine library: only the benchmark needs them.
#pragma once

#include <optional>
#include <string>

namespace smolvlm::bench {

// FMA peak of one kernel path ("scalar", "avx2", "avx512") on `threads` threads, GFLOP/s.
double fma_peak_gflops(const std::string& kernel_path, int threads);
// The bf16 dot-product peak (VDPBF16PS) where precision fast runs bf16 products, GFLOP/s; none where
// the CPU has no such products (there fast is integer decode only).
std::optional<double> bf16_dot_peak_gflops(int threads);
// STREAM triad and a streaming read over a buffer far larger than the caches, GB/s.
double triad_gb_s(int threads);
double read_gb_s(int threads);

// OpenBLAS sgemm M=N=K=1024, sampled beside the timed passes of the model so that the best rate and
// the figures set against it come from the same stretch of a run on a shared machine. Each sample
// runs in a child process that loads the library: the engine never links it, its memory stays out
// of this process's peak RSS, and its workers (which otherwise keep a core busy for about 0.11 s
// after each call) are gone before the next timed pass starts.
class OpenBlasSgemm {
 public:
  explicit OpenBlasSgemm(int threads) : threads_(threads) {}
  bool available() const { return available_; }
  const std::string& config() const { return config_; }
  double best_gflops() const { return best_; }
  int samples() const { return samples_; }

  // Times `reps` calls after one warm-up call, keeping the best rate; marks the library unavailable
  // when the child cannot load it.
  void sample(int reps);

 private:
  struct Result {
    double gflops;
    char config[240];
  };
  Result run_in_child(int reps) const;

  int threads_;
  bool available_ = true;
  std::string config_;
  double best_ = 0;
  int samples_ = 0;
};

}  // namespace smolvlm::bench
