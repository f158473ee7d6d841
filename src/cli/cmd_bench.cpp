// `smolvlm bench`: load, preprocess, vision per tile, prefill at 81 and 1141 tokens, decode, time
// to first token and a whole caption, with the machine's ceilings measured in the same run (FMA
// peak, triad and read bandwidth, OpenBLAS sgemm when the library is installed, sampled beside the
// vision and prefill passes), so every figure is also given as a fraction of what this machine can do.
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "ceilings/ceilings.h"
#include "kernels/cpu.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "runtime/vision_input.h"
#include "text/prompt.h"

namespace smolvlm::cli {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct BenchArgs {
  std::string model;
  std::string image;
  bool split = false, no_split = false;
  int threads = 2;
  int decode_tokens = 64;
  int caption_tokens = 30;
  bool json = false;
  bool skip_ceilings = false;
};

// Warm vision passes after the caption's cold one: up to this many, while they have taken less than
// the budget (a 13-tile image gets one).
constexpr size_t kVisionWarmPasses = 3;
constexpr double kVisionWarmBudgetS = 8.0;

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

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
  void sample(int reps) {
    if (!available_) return;
    Result r{};
    int fds[2];
    if (pipe(fds) != 0) throw io_error("bench: cannot create a pipe for the OpenBLAS sample");
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      throw io_error("bench: cannot fork for the OpenBLAS sample");
    }
    if (pid == 0) {  // the child: only the calling thread exists here, so it leaves with _exit
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
    if (got != ssize_t(sizeof r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || r.gflops <= 0) {
      available_ = false;
      return;
    }
    best_ = std::max(best_, r.gflops);
    samples_ += reps;
    config_ = r.config;
  }

 private:
  struct Result {
    double gflops;
    char config[240];
  };

  Result run_in_child(int reps) const {
    Result r{};
    void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return r;
    using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                           int);
    auto sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
    auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
    auto get_config = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_config"));
    auto get_core = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename"));
    if (!sgemm) return r;
    if (set_threads) set_threads(threads_);
    const std::string config =
        (get_config ? std::string(get_config()) : std::string()) + (get_core ? std::string(" core ") + get_core() : "");
    std::snprintf(r.config, sizeof r.config, "%s", config.c_str());
    constexpr int n = 1024, kRowMajor = 101, kNoTrans = 111, kTrans = 112;
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
    for (int rep = 0; rep <= reps; ++rep) {  // the first call starts the library's threads: not timed
      auto t = Clock::now();
      sgemm(kRowMajor, kNoTrans, kTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
      if (rep > 0) r.gflops = std::max(r.gflops, 2.0 * n * n * n / since(t) / 1e9);
    }
    return r;
  }

  int threads_;
  bool available_ = true;
  std::string config_;
  double best_ = 0;
  int samples_ = 0;
};

// FLOPs of one tile through the vision tower and the connector.
double vision_flops_per_tile(const ModelConfig& c) {
  double P = double(c.vision.image_size / c.vision.patch_size) * double(c.vision.image_size / c.vision.patch_size);
  double D = double(c.vision.hidden_size), I = double(c.vision.intermediate_size);
  double layer = 8 * P * D * D + 4 * P * D * I + 4 * P * P * D;
  double patch = 2 * P * double(c.vision.num_channels * c.vision.patch_size * c.vision.patch_size) * D;
  double s2 = double(c.scale_factor * c.scale_factor);
  double connector = 2 * (P / s2) * (D * s2) * double(c.text.hidden_size);
  return double(c.vision.num_hidden_layers) * layer + patch + connector;
}

// FLOPs of a prefill of `tokens` tokens (weights, attention, and the last position's lm_head).
double prefill_flops(const TextConfig& t, int64_t tokens) {
  double h = double(t.hidden_size), kv = double(t.num_key_value_heads * t.head_dim), q = double(t.num_attention_heads * t.head_dim);
  double per_token = 2 * (h * q + 2 * h * kv + q * h + 3 * h * double(t.intermediate_size));
  double attention = 2.0 * 2.0 * q * double(tokens) * double(tokens + 1) / 2.0;  // QK^T and PV, causal
  return double(t.num_hidden_layers) * (per_token * double(tokens) + attention) + 2 * h * double(t.vocab_size);
}

// Bytes read per decoded token: every decoder weight and the lm_head (tied or not), in their dtype.
double decode_bytes(const Checkpoint& ck) {
  double bytes = 0;
  for (const auto& [name, t] : ck.tensors())
    if (name.find("vision_model") == std::string::npos && name.find("connector") == std::string::npos &&
        name.find("embed_tokens") == std::string::npos)
      bytes += double(t.nbytes);
  if (!ck.find("lm_head.weight")) {
    for (const auto& [name, t] : ck.tensors())
      if (name.find("embed_tokens") != std::string::npos) bytes += double(t.nbytes);
  }
  return bytes;
}

RgbImage synthetic_photo(int64_t w, int64_t h) {
  RgbImage img{w, h, std::vector<uint8_t>(size_t(w * h * 3))};
  std::mt19937 rng(7);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        img.pixels[size_t((y * w + x) * 3 + c)] = uint8_t((x * (c + 1) + y * (3 - c)) / 8 + rng() % 16);
  return img;
}

double prefill_tokens_per_second(const Model& model, ThreadPool& pool, int64_t tokens) {
  std::vector<int64_t> ids(static_cast<size_t>(tokens));
  std::mt19937 rng(11);
  for (auto& id : ids) id = int64_t(rng() % 49000) + 100;
  Session s(model, pool, tokens + 1);
  s.prefill(ids);  // warm-up: first touch of the cache and scratch
  s.reset();
  auto t = Clock::now();
  s.prefill(ids);
  return double(tokens) / since(t);
}

int run_bench(const BenchArgs& a) {
  nlohmann::ordered_json out;
  ThreadPool pool(a.threads);
  out["threads"] = a.threads;
  out["kernel_path"] = kernel_path_name(active_kernel_path());

  std::optional<OpenBlasSgemm> blas;
  if (!a.skip_ceilings) blas.emplace(a.threads);

  auto t = Clock::now();
  std::unique_ptr<Model> model = Model::load(resolve_model_dir(a.model));
  out["load_s"] = since(t);
  const ModelConfig& cfg = model->config();
  std::fprintf(stderr, "loaded %s in %.3f s\n", architecture_name(cfg.arch), out["load_s"].get<double>());

  std::optional<bool> split;
  if (a.split) split = true;
  if (a.no_split) split = false;
  auto bench_image = [&] { return a.image.empty() ? synthetic_photo(2048, 1536) : load_image(a.image); };
  double vision_cold_s = 0;
  if (model->has_vision()) {
    if (!cfg.image_processor) throw bad_input("the model folder has no preprocessor_config.json");
    t = Clock::now();
    RgbImage img = bench_image();
    out["decode_s"] = since(t);
    t = Clock::now();
    const PreprocessedImage p = preprocess_idefics3(img, *cfg.image_processor, split);
    out["preprocess_s"] = since(t);
    out["tiles"] = p.num_tiles;
    std::fprintf(stderr, "preprocessed %lldx%lld into %lld tiles in %.3f s\n", (long long)img.width,
                 (long long)img.height, (long long)p.num_tiles, out["preprocess_s"].get<double>());

    t = Clock::now();
    ImageFeatures f = encode_images(*model, p.pixel_values.data(), p.num_tiles, pool);
    vision_cold_s = since(t);

    // A whole caption: tokenizer, prompt, prefill with the image features, `caption_tokens` greedy tokens.
    t = Clock::now();
    auto text = TextAssets::load(resolve_model_dir(a.model));
    out["tokenizer_load_s"] = since(t);
    BuiltPrompt prompt = build_vlm_prompt(*text, "Describe this image.", {ImageGrid{p.rows, p.cols}});
    std::vector<int64_t> ids(prompt.input_ids.begin(), prompt.input_ids.end());
    t = Clock::now();
    std::vector<float> emb = prompt_embeddings(*model, ids, f);
    Session s(*model, pool, int64_t(ids.size()) + a.caption_tokens + 1);
    s.prefill_embeddings(emb.data(), int64_t(ids.size()));
    double prefill_s = since(t);
    GenerationOptions go;
    go.max_new_tokens = a.caption_tokens;  // no eos: always the full count
    GenerationResult r = generate(s, ids, go);
    double caption_s = out["load_s"].get<double>() + out["tokenizer_load_s"].get<double>() +
                       out["decode_s"].get<double>() + out["preprocess_s"].get<double>() + vision_cold_s + prefill_s +
                       r.decode_seconds;
    out["caption_prompt_tokens"] = ids.size();
    out["time_to_first_token_s"] = out["decode_s"].get<double>() + out["preprocess_s"].get<double>() + vision_cold_s +
                                      prefill_s;
    out["caption_s_incl_load"] = caption_s;
    out["caption_new_tokens"] = r.ids.size();
    std::fprintf(stderr, "caption: %zu prompt tokens, %zu new tokens, %.2f s including load\n", ids.size(),
                 r.ids.size(), caption_s);
  }

  for (int64_t n : {int64_t(81), int64_t(1141)}) {
    if (blas) blas->sample(2);
    double tps = prefill_tokens_per_second(*model, pool, n);
    out["prefill_tok_s_" + std::to_string(n)] = tps;
    out["prefill_gflops_" + std::to_string(n)] = prefill_flops(cfg.text, n) * tps / double(n) / 1e9;
    std::fprintf(stderr, "prefill %lld tokens: %.1f tok/s\n", (long long)n, tps);
  }
  {
    Session s(*model, pool, 8 + a.decode_tokens + 1);
    std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
    s.prefill(ids);
    s.decode(9);  // warm-up
    auto td = Clock::now();
    for (int i = 0; i < a.decode_tokens - 1; ++i) s.decode(10 + i);
    double tps = double(a.decode_tokens - 1) / since(td);
    out["decode_tok_s"] = tps;
    out["decode_gb_s"] = tps * decode_bytes(model->checkpoint()) / 1e9;
    std::fprintf(stderr, "decode: %.1f tok/s (%.1f GB/s of weights)\n", tps, out["decode_gb_s"].get<double>());
  }
  out["peak_rss_mib"] = peak_rss_mib();

  // The caption's vision pass ran cold (first touch of the mapped weights and the scratch); the figure
  // compared with the ceilings is the best of warm passes, the statistic every ceiling takes too. They
  // run after the peak RSS is read, on the image prepared again, so that neither they nor pixel values
  // kept for them raise the peak above the caption's and the prefill and decode runs'.
  if (model->has_vision()) {
    const PreprocessedImage p = preprocess_idefics3(bench_image(), *cfg.image_processor, split);
    std::vector<double> warm;
    for (double spent = 0; warm.size() < kVisionWarmPasses && spent < kVisionWarmBudgetS; spent += warm.back()) {
      if (blas) blas->sample(2);
      auto t = Clock::now();
      encode_images(*model, p.pixel_values.data(), p.num_tiles, pool);
      warm.push_back(since(t));
    }
    std::sort(warm.begin(), warm.end());
    const double tiles = double(p.num_tiles);
    out["vision_cold_s_per_tile"] = vision_cold_s / tiles;
    out["vision_s_per_tile"] = warm.front() / tiles;
    out["vision_median_s_per_tile"] = warm[warm.size() / 2] / tiles;
    out["vision_warm_passes"] = warm.size();
    out["vision_gflops"] = vision_flops_per_tile(cfg) * tiles / warm.front() / 1e9;
    std::fprintf(stderr, "vision: %.3f s per tile cold, %.3f best of %zu warm passes (%.1f GFLOP/s)\n",
                 vision_cold_s / tiles, warm.front() / tiles, warm.size(), out["vision_gflops"].get<double>());
  }

  if (!a.skip_ceilings) {
    nlohmann::ordered_json c;
    for (KernelPath p : supported_kernel_paths())
      c[std::string("fma_peak_gflops_") + kernel_path_name(p)] = measure_fma_peak_gflops(p, pool);
    c["triad_gb_s"] = measure_triad_gbs(pool);
    c["read_gb_s"] = measure_read_gbs(pool);
    double blas_gflops = -1;
    if (blas) blas->sample(4);
    if (blas && blas->available()) {
      blas_gflops = blas->best_gflops();
      c["openblas_sgemm_gflops"] = blas_gflops;
      c["openblas_samples"] = blas->samples();
      c["openblas_config"] = blas->config();
    }
    out["ceilings"] = c;
    nlohmann::ordered_json frac;
    double peak = c[std::string("fma_peak_gflops_") + kernel_path_name(best_kernel_path())].get<double>();
    auto add = [&](const char* name, const char* figure, double ceiling) {
      if (out.contains(figure) && ceiling > 0) frac[name] = out[figure].get<double>() / ceiling;
    };
    add("vision_of_fma_peak", "vision_gflops", peak);
    add("prefill_1141_of_fma_peak", "prefill_gflops_1141", peak);
    if (blas_gflops > 0) {
      add("vision_of_openblas", "vision_gflops", blas_gflops);
      add("prefill_1141_of_openblas", "prefill_gflops_1141", blas_gflops);
    }
    add("decode_of_triad", "decode_gb_s", c["triad_gb_s"].get<double>());
    add("decode_of_read", "decode_gb_s", c["read_gb_s"].get<double>());
    out["fractions"] = frac;
  }

  if (a.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    for (auto& [k, v] : out.items()) {
      if (v.is_object()) {
        for (auto& [k2, v2] : v.items()) std::cout << k << "." << k2 << ": " << v2.dump() << "\n";
      } else {
        std::cout << k << ": " << v.dump() << "\n";
      }
    }
  }
  return 0;
}

}  // namespace

static Command bench_command(
    "bench", "Measure load, preprocess, vision, prefill, decode and a whole caption against this machine's ceilings",
    [](CLI::App& sub) {
      auto a = std::make_shared<BenchArgs>();
      sub.add_option("--model", a->model, "Model folder or hub id (a `smolvlm synth` of the real config works)");
      sub.add_option("--image", a->image, "Image to caption (default: a synthetic 2048x1536 picture)");
      sub.add_flag("--split", a->split, "Force image splitting");
      sub.add_flag("--no-split", a->no_split, "Disable image splitting");
      sub.add_option("--threads", a->threads, "Worker threads")->check(CLI::Range(1, 256));
      sub.add_option("--decode-tokens", a->decode_tokens, "Tokens timed for decode")->check(CLI::Range(2, 100000));
      sub.add_option("--caption-tokens", a->caption_tokens, "New tokens of the timed caption")->check(CLI::Range(1, 100000));
      sub.add_flag("--no-ceilings", a->skip_ceilings, "Skip the FMA/triad/read/OpenBLAS measurements");
      sub.add_flag("--json", a->json, "Print the figures as JSON");
      return [a] {
        if (a->split && a->no_split) throw bad_input("--split and --no-split exclude each other");
        return run_bench(*a);
      };
    });

}  // namespace smolvlm::cli
