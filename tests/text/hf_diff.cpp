// Differential test against HF tokenizers (Rust, via node and tests/tools/hf_reference.mjs): thousands of
// random strings built from tricky pieces (whitespace runs, mixed scripts, digits, emoji sequences,
// special tokens and near misses, control characters, invalid UTF-8) must give the same ids and the
// same decodes. Invalid UTF-8 is sent to HF repaired as a JS string holds it (U+FFFD per maximal
// invalid subpart), which is what our encode does with it.
//
// usage: text_hf_diff [strings_per_tokenizer [seed]]; exit 77 (skipped) when node or the npm package
// is missing.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> kPieces = {
    // whitespace
    " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n\n", "\r", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x89", "\v", "\f", " \n ",
    // words, contractions
    "hello", "The", "world", "IT'S", "don't", "we'll", "'S", "'re", "I'M", "they\xE2\x80\x99ve", "a", "Zebra", "x_y",
    // numbers
    "1", "12345", "3.14", "1,000", "\xC2\xBD", "\xC2\xB2", "\xE2\x91\xA0", "\xE2\x85\xAB", "\xD9\xA3", "\xE0\xA5\xAA", "\xEF\xBC\x91\xEF\xBC\x92", "007",
    // scripts
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4", "\xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9",
    "\xD7\xA2\xD7\x91\xD7\xA8\xD7\x99\xD7\xAA", "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", "\xE0\xB9\x84\xE0\xB8\x97\xE0\xB8\xA2",
    "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80", "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xAC\xCE\xB4\xCE\xB1",
    // emoji: ZWJ family, flag, skin tone, keycap, VS16
    "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB", "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "1\xEF\xB8\x8F\xE2\x83\xA3",
    "\xE2\x9D\xA4\xEF\xB8\x8F", "\xF0\x9F\x99\x82",
    // combining marks, NFC/NFD
    "e\xCC\x81", "caf\xC3\xA9", "Z\xCC\xA4\xCC\x88" "a\xCC\x96", "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",
    // punctuation, code
    "<", ">", "{", "}", "()", "==", "!==", "->", "::", "#", "//", "\"", "'", "`", "\\", "...", "def f(x):", "<div>", "$ ls -la",
    // control and invisible characters
    std::string(1, '\0'), "\x01", "\x7F", "\xE2\x80\x8B", "\xEF\xBB\xBF", "\xC2\xAD", "\xE2\x80\xAE", "\xEF\xBF\xBD", "\xE2\x96\x81",
    // special tokens of the reference tokenizers, and near misses
    "<|im_start|>", "<|im_end|>", "<image>", "<end_of_utterance>", "<fake_token_around_image>", "<global-img>", "<row_1_col_1>",
    "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<s>", "</s>", "<unk>", "<bos>", "<eos>", "<pad>", "<start_of_turn>",
    "<end_of_turn>", "<think>", "</think>", "<tool_call>", "<|endoftext|>", "<image", "<imag>", "< image>", "<IMAGE>", "<|im_start|",
    "<row_1_col_7>", "<|reserved_special_token_88|>", "<0x41>", "<b>",
    // invalid UTF-8
    "\xE4\xB8", "\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "\xF0\x9F\x98",
};

std::string random_code_point(std::mt19937& rng) {
  static const std::pair<char32_t, char32_t> ranges[] = {{0x20, 0x7E},     {0xA0, 0x24F},    {0x370, 0x3FF},
                                                        {0x400, 0x4FF},   {0x590, 0x6FF},   {0x900, 0x97F},
                                                        {0x2000, 0x206F}, {0x3000, 0x30FF}, {0x4E00, 0x9FFF},
                                                        {0xAC00, 0xD7A3}, {0x1F300, 0x1FAFF}, {0x10000, 0x10FFF}};
  auto& r = ranges[rng() % std::size(ranges)];
  std::string out;
  smolvlm::text::utf8_append(out, r.first + static_cast<char32_t>(rng() % (r.second - r.first + 1)));
  return out;
}

std::string random_text(std::mt19937& rng) {
  std::string s;
  int n = 1 + static_cast<int>(rng() % 12);
  for (int k = 0; k < n; ++k) {
    if (rng() % 5 == 0) s += random_code_point(rng);
    else s += kPieces[rng() % kPieces.size()];
  }
  return s;
}

bool have_reference(const fs::path& tools) {
  return fs::exists(tools / "node_modules" / "@anush008" / "tokenizers") && std::system("node --version >/dev/null 2>&1") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int per_tokenizer = argc > 1 ? std::atoi(argv[1]) : 1000;
  unsigned seed = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 20261130u;
  fs::path tools = SMOLVLM_TEST_TOOLS;
  if (!have_reference(tools)) {
    std::cout << "skipped: node or " << (tools / "node_modules/@anush008/tokenizers") << " missing (run npm ci --prefix tests/tools)\n";
    return 77;
  }
  fs::path work = fs::temp_directory_path() / ("smolvlm_hf_diff_" + std::to_string(getpid()));
  fs::create_directories(work);
  size_t total = 0, failures = 0;
  for (const char* name : {"smolvlm", "llama3_1", "qwen3", "gemma3", "mistral", "gpt2"}) {
    std::mt19937 rng(seed + static_cast<unsigned>(std::hash<std::string>{}(name) & 0xffff));
    std::vector<std::pair<std::string, bool>> inputs;
    std::ofstream in(work / "in.jsonl", std::ios::binary);
    for (int k = 0; k < per_tokenizer; ++k) {
      std::string text = random_text(rng);
      bool special = rng() % 2;
      inputs.emplace_back(text, special);
      in << json{{"text", smolvlm::text::utf8_lossy(text)}, {"add_special_tokens", special}}.dump() << "\n";
    }
    in.close();
    fs::path tok_path = smolvlm::test::reference_tokenizer_path(name);
    std::string cmd = "node '" + (tools / "hf_reference.mjs").string() + "' encode '" + tok_path.string() + "' < '" +
                      (work / "in.jsonl").string() + "' > '" + (work / "out.jsonl").string() + "'";
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << name << ": the reference tool failed: " << cmd << "\n";
      return 1;
    }
    auto outputs = smolvlm::test::read_jsonl(work / "out.jsonl");
    if (outputs.size() != inputs.size()) {
      std::cerr << name << ": the reference gave " << outputs.size() << " lines for " << inputs.size() << " inputs\n";
      return 1;
    }
    const smolvlm::Tokenizer& tok = smolvlm::test::reference_tokenizer(name);
    size_t bad = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const json& ref = outputs[k];
      if (ref.contains("error")) {
        std::cerr << name << ": reference error " << ref["error"] << " for " << json(smolvlm::text::utf8_lossy(inputs[k].first)) << "\n";
        ++bad;
        continue;
      }
      auto ids = tok.encode(inputs[k].first, inputs[k].second);
      auto want = ref["ids"].get<std::vector<int32_t>>();
      bool ok = ids == want && tok.decode(want, false) == ref["decoded"].get<std::string>() &&
                tok.decode(want, true) == ref["decoded_skip"].get<std::string>();
      if (!ok && ++bad <= 5) {
        std::cerr << name << " mismatch (add_special_tokens=" << inputs[k].second << ") for "
                  << json(smolvlm::text::utf8_lossy(inputs[k].first)).dump() << "\n  ours " << json(ids).dump() << "\n  hf   "
                  << json(want).dump() << "\n  our decode " << json(tok.decode(want, false)).dump() << "\n  hf decode  "
                  << ref["decoded"].dump() << "\n";
      }
    }
    std::cout << name << ": " << inputs.size() - bad << "/" << inputs.size() << " identical (ids, decode, decode skip_special)\n";
    total += inputs.size();
    failures += bad;
  }
  fs::remove_all(work);
  std::cout << "total: " << total - failures << "/" << total << " identical\n";
  return failures == 0 ? 0 : 1;
}
