// Image pipeline timings on the 12-megapixel JPEG of the test data (4000x3000, SmolVLM settings:
// longest edge 2048, 512 tiles, LANCZOS, splitting on). Compare with Pillow doing the same steps in
// the same sitting: bench/preprocess_pillow.py (Pillow is single-threaded: its wall time is its CPU
// time). Every benchmark reports wall time ("Time") and the CPU time of the whole process, all threads
// ("CPU"); the argument is the number of resize threads (set_resize_threads), 1 = single-threaded.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "image/idefics3.h"
#include "image/image.h"
#include "image/resample.h"

namespace {

std::filesystem::path bench_image() {
  if (const char* p = std::getenv("SMOLVLM_BENCH_IMAGE")) return p;
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "tests/data/image/odd/gen_4000x3000_bench.jpg";
}

smolvlm::ImageProcessorConfig smolvlm_config() {
  smolvlm::ImageProcessorConfig c;
  c.longest_edge = 2048;
  c.max_image_size = 512;
  c.resample = 1;
  return c;
}

void BM_Decode(benchmark::State& state) {
  std::ifstream f(bench_image(), std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (auto _ : state) benchmark::DoNotOptimize(smolvlm::load_image_from_memory(bytes.data(), bytes.size(), "bench"));
}

void BM_ResizeLanczos4000To2048(benchmark::State& state) {
  smolvlm::set_resize_threads(static_cast<int>(state.range(0)));
  const smolvlm::RgbImage img = smolvlm::load_image(bench_image());
  for (auto _ : state)
    benchmark::DoNotOptimize(smolvlm::resize_u8(img.pixels.data(), img.width, img.height, 3, 2048, 1536,
                                                smolvlm::ResampleFilter::Lanczos));
  smolvlm::set_resize_threads(0);
}

// Everything after decoding: both resizes, the 12 crops, the global image, rescale + normalize.
void BM_PreprocessSplit(benchmark::State& state) {
  smolvlm::set_resize_threads(static_cast<int>(state.range(0)));
  const smolvlm::RgbImage img = smolvlm::load_image(bench_image());
  for (auto _ : state) benchmark::DoNotOptimize(smolvlm::preprocess_idefics3(img, smolvlm_config(), true));
  smolvlm::set_resize_threads(0);
}

// The whole job, file to pixel_values: compare with Pillow's total.
void BM_DecodeAndPreprocessSplit(benchmark::State& state) {
  smolvlm::set_resize_threads(static_cast<int>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(smolvlm::preprocess_idefics3(smolvlm::load_image(bench_image()), smolvlm_config(), true));
  smolvlm::set_resize_threads(0);
}

// The same job through load_and_preprocess_idefics3: with 2 threads the longest-edge resize follows the
// JPEG decoder down the image on the second thread (with 1 it is BM_DecodeAndPreprocessSplit/1).
void BM_LoadAndPreprocessSplit(benchmark::State& state) {
  smolvlm::set_resize_threads(static_cast<int>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(smolvlm::load_and_preprocess_idefics3(bench_image(), smolvlm_config(), true));
  smolvlm::set_resize_threads(0);
}

BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_ResizeLanczos4000To2048)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_PreprocessSplit)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_DecodeAndPreprocessSplit)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_LoadAndPreprocessSplit)->Arg(2)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
