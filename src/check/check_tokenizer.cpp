// Tokenizer ids and decodes for tricky strings, against HF tokenizers' output.
#include <exception>

#include "check/stages.h"
#include "core/sha256.h"
#include "io/file.h"
#include "text/tokenizer.h"

namespace smolvlm {

namespace {

void run_cases(const Tokenizer& tok, const nlohmann::json& cases, CheckRow& row) {
  for (const auto& c : cases) {
    std::string text = c.at("text");
    ++row.cases;
    try {
      std::vector<int32_t> ids = tok.encode(text);
      std::vector<int32_t> want = c.at("ids").get<std::vector<int32_t>>();
      if (ids != want)
        record_failure(row, "ids differ for " + nlohmann::json(text).dump());
      else if (tok.decode(ids) != c.at("decode").get<std::string>())
        record_failure(row, "decode differs for " + nlohmann::json(text).dump());
    } catch (const std::exception& e) {
      record_failure(row, nlohmann::json(text).dump() + ": " + e.what());
    }
  }
}

nlohmann::json load_cases(const CheckAssets& assets) {
  nlohmann::json cases = nlohmann::json::array();
  std::string lines = assets.bytes("tokenizer_cases.jsonl");
  size_t pos = 0;
  while (pos < lines.size()) {
    size_t end = lines.find('\n', pos);
    if (end == std::string::npos) end = lines.size();
    if (end > pos) cases.push_back(nlohmann::json::parse(lines.substr(pos, end - pos)));
    pos = end + 1;
  }
  return cases;
}

}  // namespace

void check_tokenizer(const CheckAssets& assets, const std::optional<std::filesystem::path>& model_dir,
                     CheckReport& report) {
  nlohmann::json cases = load_cases(assets);
  std::string json = assets.gunzip("model/tokenizer.json.gz");
  std::string known_sha = sha256_hex(json.data(), json.size());
  CheckRow row = make_row("tokenizer", true);
  row.detail = "SmolVLM tokenizer (built in)";
  try {
    run_cases(*Tokenizer::from_json(json, "built-in SmolVLM tokenizer.json"), cases, row);
  } catch (const std::exception& e) {
    record_failure(row, e.what());
  }
  report.rows.push_back(row);
  if (!model_dir) return;

  std::filesystem::path file = *model_dir / "tokenizer.json";
  CheckRow mrow = make_row("tokenizer", true);
  mrow.detail = file.string();
  try {
    std::string text = read_file(file);
    auto tok = Tokenizer::from_json(text, file.string());
    if (sha256_hex(text.data(), text.size()) == known_sha) {
      run_cases(*tok, cases, mrow);
    } else {
      // Unknown tokenizer: no reference ids, so only check that encode/decode are consistent.
      mrow.detail += ": unknown tokenizer (no reference ids): internal consistency only";
      for (const auto& c : cases) {
        std::string s = c.at("text");
        ++mrow.cases;
        std::vector<int32_t> ids = tok->encode(s);
        std::string back = tok->decode(ids);
        if (back != s && tok->encode(back) != ids)
          record_failure(mrow, "encode/decode inconsistent for " + nlohmann::json(s).dump());
      }
    }
  } catch (const std::exception& e) {
    record_failure(mrow, e.what());
  }
  report.rows.push_back(mrow);
}

}  // namespace smolvlm
