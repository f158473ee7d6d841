// Tokenizer encode throughput on ~10 MB of real text (Debian's /usr/share/common-licenses and the
// Python standard library sources, the mix the reference measured), against HF tokenizers (Rust) run
// through node in the same process run (tests/tools/hf_reference.mjs; skipped when node or the npm
// package is missing). Both encode the same ~1 KB line-aligned chunks, one call per chunk,
// add_special_tokens=false. All three report wall-clock throughput (node times itself).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRepo = fs::path(__FILE__).parent_path().parent_path();
constexpr size_t kTargetBytes = size_t(10) << 20;
constexpr size_t kChunkBytes = 1024;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string& corpus() {
  static const std::string text = [] {
    std::string out;
    std::vector<fs::path> files;
    for (const char* dir : {"/usr/share/common-licenses", "/usr/lib/python3.11", "/usr/lib/python3"}) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const fs::path& p = it->path();
        if (it->is_regular_file(ec) && (p.extension() == ".py" || p.parent_path() == "/usr/share/common-licenses")) files.push_back(p);
      }
    }
    std::sort(files.begin(), files.end());
    for (auto& p : files) {
      if (out.size() >= kTargetBytes) break;
      out += read_all(p);
    }
    if (out.size() > kTargetBytes) out.resize(kTargetBytes);
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();  // whole characters
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    return out;
  }();
  return text;
}

// Line-aligned chunks of about kChunkBytes (the reference's split).
const std::vector<std::string>& chunks() {
  static const std::vector<std::string> out = [] {
    std::vector<std::string> v;
    const std::string& t = corpus();
    size_t start = 0;
    while (start < t.size()) {
      size_t end = std::min(t.size(), start + kChunkBytes);
      size_t nl = t.find('\n', end);
      end = nl == std::string::npos ? t.size() : nl + 1;
      v.push_back(t.substr(start, end - start));
      start = end;
    }
    return v;
  }();
  return out;
}

fs::path smolvlm_tokenizer() { return kRepo / "tests/data/models/smolvlm-256m-instruct/tokenizer.json"; }

void BM_Encode_SmolVLM_1KBChunks(benchmark::State& state) {
  auto tok = smolvlm::Tokenizer::from_file(smolvlm_tokenizer());
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    for (auto& c : chunks()) tokens += tok->encode(c, false).size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["chunks"] = static_cast<double>(chunks().size());
}
BENCHMARK(BM_Encode_SmolVLM_1KBChunks)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_Encode_SmolVLM_WholeText(benchmark::State& state) {
  auto tok = smolvlm::Tokenizer::from_file(smolvlm_tokenizer());
  size_t tokens = 0;
  for (auto _ : state) tokens = tok->encode(corpus(), false).size();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_Encode_SmolVLM_WholeText)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// HF tokenizers (Rust) through node, timed inside node (binding overhead per call included).
void BM_Encode_HF_Rust_1KBChunks(benchmark::State& state) {
  fs::path tools = kRepo / "tests/tools";
  if (!fs::exists(tools / "node_modules/@anush008/tokenizers") || std::system("node --version >/dev/null 2>&1") != 0) {
    state.SkipWithError("node or tests/tools/node_modules missing (npm ci --prefix tests/tools)");
    for (auto _ : state) {
    }
    return;
  }
  fs::path text_file = fs::temp_directory_path() / "smolvlm_tokenizer_bench.txt";
  std::ofstream(text_file, std::ios::binary) << corpus();
  std::string cmd = "node '" + (tools / "hf_reference.mjs").string() + "' bench '" + smolvlm_tokenizer().string() + "' '" +
                    text_file.string() + "' " + std::to_string(kChunkBytes);
  nlohmann::json result;
  for (auto _ : state) {
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (!p || pclose(p) != 0) {
      state.SkipWithError(("reference run failed: " + cmd).c_str());
      break;
    }
    result = nlohmann::json::parse(out);
    state.SetIterationTime(result["seconds"].get<double>());
  }
  fs::remove(text_file);
  if (result.is_null()) return;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * result["bytes"].get<double>()));
  state.counters["tokens"] = result["tokens"].get<double>();
  state.counters["chunks"] = result["chunks"].get<double>();
}
BENCHMARK(BM_Encode_HF_Rust_1KBChunks)->Unit(benchmark::kMillisecond)->Iterations(1)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
