// `smolvlm translate`: the translation prompts of the HY-MT model card around a text (or around each
// blank-line separated paragraph of stdin), run as chat requests in one reused session, the
// translation streamed to stdout (or one JSON object per paragraph).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/generation_flags.h"

namespace smolvlm::cli {
namespace {

// The languages of the HY-MT1.5 model card: its code, the English name the XX template writes and
// the Chinese name the Chinese templates write.
struct Language {
  const char* code;
  const char* english;
  const char* chinese;
};

constexpr Language kLanguages[] = {
    {"zh", "Chinese", "中文"},          {"en", "English", "英语"},          {"fr", "French", "法语"},
    {"pt", "Portuguese", "葡萄牙语"},   {"es", "Spanish", "西班牙语"},      {"ja", "Japanese", "日语"},
    {"tr", "Turkish", "土耳其语"},      {"ru", "Russian", "俄语"},          {"ar", "Arabic", "阿拉伯语"},
    {"ko", "Korean", "韩语"},           {"th", "Thai", "泰语"},             {"it", "Italian", "意大利语"},
    {"de", "German", "德语"},           {"vi", "Vietnamese", "越南语"},     {"ms", "Malay", "马来语"},
    {"id", "Indonesian", "印尼语"},     {"tl", "Filipino", "菲律宾语"},     {"hi", "Hindi", "印地语"},
    {"zh-Hant", "Traditional Chinese", "繁体中文"}, {"pl", "Polish", "波兰语"}, {"cs", "Czech", "捷克语"},
    {"nl", "Dutch", "荷兰语"},          {"km", "Khmer", "高棉语"},          {"my", "Burmese", "缅甸语"},
    {"fa", "Persian", "波斯语"},        {"gu", "Gujarati", "古吉拉特语"},   {"ur", "Urdu", "乌尔都语"},
    {"te", "Telugu", "泰卢固语"},       {"mr", "Marathi", "马拉地语"},      {"he", "Hebrew", "希伯来语"},
    {"bn", "Bengali", "孟加拉语"},      {"ta", "Tamil", "泰米尔语"},        {"uk", "Ukrainian", "乌克兰语"},
    {"bo", "Tibetan", "藏语"},          {"kk", "Kazakh", "哈萨克语"},       {"mn", "Mongolian", "蒙古语"},
    {"ug", "Uyghur", "维吾尔语"},       {"yue", "Cantonese", "粤语"},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string language_list() {
  std::string s;
  for (const Language& l : kLanguages) s += (s.empty() ? "" : ", ") + std::string(l.code);
  return s;
}

// A code, an English name (any case) or a Chinese name of the table.
const Language& find_language(const std::string& name, const char* flag) {
  const std::string key = lower(name);
  for (const Language& l : kLanguages)
    if (key == lower(l.code) || key == lower(l.english) || name == l.chinese) return l;
  throw UsageError(std::string(flag) + " \"" + name + "\" is not a language of the model card (codes: " +
                   language_list() + "; English or Chinese names work too)");
}

bool is_chinese(const Language* l) { return l && (std::string(l->code) == "zh" || std::string(l->code) == "zh-Hant"); }

struct Term {
  std::string source, target;
};

// --terms FILE: one "source<TAB>target" pair per line; blank lines and lines starting with # skipped.
std::vector<Term> read_terms(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("--terms: cannot open " + path);
  std::vector<Term> terms;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size())
      throw UsageError("--terms " + path + " line " + std::to_string(n) + ": expected \"source<TAB>target\"");
    terms.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  if (terms.empty()) throw UsageError("--terms " + path + ": no term pairs");
  return terms;
}

// The model card's prompts: the terminology one with --terms, the Chinese one when either side is
// Chinese, the English one otherwise.
std::string translation_prompt(const std::string& text, const Language& to, const Language* from,
                               const std::vector<Term>& terms) {
  if (!terms.empty()) {
    std::string p = "参考下面的翻译：\n";
    for (const Term& t : terms) p += t.source + " 翻译成 " + t.target + "\n";
    return p + "\n将以下文本翻译为" + to.chinese + "，注意只需要输出翻译后的结果，不要额外解释：\n" + text;
  }
  if (is_chinese(&to) || is_chinese(from))
    return std::string("将以下文本翻译为") + to.chinese + "，注意只需要输出翻译后的结果，不要额外解释：\n\n" + text;
  return std::string("Translate the following segment into ") + to.english + ", without additional explanation.\n\n" +
         text;
}

struct TranslateFlags : GenerationFlags {
  std::string to, from, terms, system, text;
  bool sample = false;
};

int stream_piece(const char* piece, size_t size, void*) {
  std::fwrite(piece, 1, size, stdout);
  std::fflush(stdout);
  return 1;
}

class Translator {
 public:
  explicit Translator(const TranslateFlags& f) : f_(f) {
    to_ = &find_language(f.to, "--to");
    if (!f.from.empty()) from_ = &find_language(f.from, "--from");
    if (!f.terms.empty()) terms_ = read_terms(f.terms);
    smolvlm_model_options mo;
    smolvlm_model_options_init(&mo);
    mo.threads = f.threads;
    if (!f.kernels.empty()) mo.kernel_path = f.kernels.c_str();
    model_ = std::make_unique<api::Model>(api::Model::load(f.model, &mo));
    const smolvlm_model_info info = model_->info();
    // The field report's on-device context unless --ctx says otherwise.
    session_ = std::make_unique<api::Session>(*model_, f.ctx > 0 ? f.ctx : std::min<int64_t>(1024, info.max_context));
    sampling_ = {f.temperature, f.top_k, f.top_p, f.min_p, f.repetition_penalty, f.seed};
    if (f.sample)
      sampling_ = {info.recommended_temperature, info.recommended_top_k, info.recommended_top_p, 0.f,
                   info.recommended_repetition_penalty, f.seed};
  }

  // Translates one paragraph; streams it (or prints its JSON object).
  void translate(const std::string& text, int64_t index) {
    api::Chat chat;
    if (!f_.system.empty()) chat.add(SMOLVLM_ROLE_SYSTEM).text(f_.system);
    chat.add(SMOLVLM_ROLE_USER).text(translation_prompt(text, *to_, from_, terms_));
    smolvlm_request req;
    smolvlm_request_init(&req);
    chat.fill(req);
    req.max_new_tokens = f_.max_new_tokens;
    req.sampling = sampling_;
    std::vector<const char*> stops;
    for (const auto& s : f_.stop) stops.push_back(s.c_str());
    req.stop = stops.data();
    req.n_stop = stops.size();
    req.stop_ids = f_.stop_ids.data();
    req.n_stop_ids = f_.stop_ids.size();
    if (!f_.dump.empty()) req.dump_dir = f_.dump.c_str();
    if (!f_.json) req.on_piece = stream_piece;
    const api::Result r = session_->run(req);  // the session is reset and its cache reused
    const smolvlm_result& raw = r.raw();
    if (f_.json) {
      nlohmann::ordered_json j;
      j["paragraph"] = index;
      j["source"] = text;
      j["text"] = std::string(raw.text, raw.text_size);
      j["token_ids"] = std::vector<int32_t>(raw.token_ids, raw.token_ids + raw.n_tokens);
      j["prompt_tokens"] = raw.prompt_tokens;
      j["finish_reason"] = smolvlm_finish_reason_name(raw.finish_reason);
      j["timings"] = {{"prefill_s", raw.timings.prefill_s}, {"decode_s", raw.timings.decode_s}};
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
    } else {
      std::cout << "\n" << std::flush;
    }
    if (f_.verbose)
      std::cerr << "paragraph " << index << ": " << raw.prompt_tokens << " prompt tokens, " << raw.n_tokens
                << " new, prefill " << raw.timings.prefill_s << " s, decode " << raw.timings.decode_s
                << " s, finish: " << smolvlm_finish_reason_name(raw.finish_reason) << "\n";
  }

 private:
  const TranslateFlags& f_;
  const Language* to_ = nullptr;
  const Language* from_ = nullptr;
  std::vector<Term> terms_;
  std::unique_ptr<api::Model> model_;
  std::unique_ptr<api::Session> session_;
  smolvlm_sampling sampling_{};
};

bool blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
}

// stdin paragraph by paragraph (blank-line separated), each translated as soon as it is complete;
// the output keeps their order, a blank line between two (text mode).
void translate_stdin(Translator& t, bool json) {
  std::string paragraph, line;
  int64_t index = 0;
  auto flush = [&] {
    if (paragraph.empty()) return;
    if (index > 0 && !json) std::cout << "\n";
    t.translate(paragraph, index++);
    paragraph.clear();
  };
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (blank(line)) {
      flush();
    } else {
      if (!paragraph.empty()) paragraph += "\n";
      paragraph += line;
    }
  }
  flush();
  if (index == 0) throw UsageError("stdin holds no text to translate");
}

const Command kTranslate{
    "translate", "Translate text with a translation model (HY-MT) using the model card's prompts", [](CLI::App& sub) {
      auto f = std::make_shared<TranslateFlags>();
      f->max_new_tokens = 512;
      sub.add_option("text", f->text, "the text to translate; - reads stdin and translates it paragraph by paragraph");
      sub.add_option("--to", f->to, "target language: a model card code (" + language_list() +
                                        "), or its English or Chinese name")
          ->required();
      sub.add_option("--from", f->from, "source language (only picks the prompt: Chinese on either side uses the "
                                        "Chinese template)");
      sub.add_option("--terms", f->terms,
                     "terminology file: one \"source<TAB>target\" pair per line (the model card's terminology prompt)");
      sub.add_option("--system", f->system, "a system message before the prompt");
      sub.add_flag("--sample", f->sample,
                   "sample with generation_config.json's values (the model card's top_k 20, top_p 0.6, repetition "
                   "penalty 1.05, temperature 0.7) instead of greedy decoding");
      add_generation_flags(sub, *f, "write prefill_logits_last, step_logits, generated_ids as .npy into this folder "
                                    "(the last paragraph's)");
      // The shared flags whose meaning differs here.
      sub.get_option("--ctx")->description("KV cache capacity in tokens, one session for every paragraph (default: "
                                           "1024, at most the model's limit)");
      sub.get_option("--json")->description(
          "print one {\"paragraph\",\"source\",\"text\",\"token_ids\",\"prompt_tokens\",\"finish_reason\",\"timings\"} "
          "line per paragraph instead of streaming");
      sub.footer("A paragraph whose prompt does not fit the context is refused; a translation that reaches its end "
                 "stops there (finish reason context_full).");
      return [f, &sub]() {
        if (f->text.empty()) throw UsageError("give the text to translate, or - to read stdin");
        if (f->sample && (sub.count("--temperature") || sub.count("--top-k") || sub.count("--top-p") ||
                          sub.count("--repetition-penalty")))
          throw UsageError("--sample takes the sampling values from generation_config.json; drop --temperature, "
                           "--top-k, --top-p and --repetition-penalty, or --sample");
        Translator t(*f);
        if (f->text == "-")
          translate_stdin(t, f->json);
        else
          t.translate(f->text, 0);
        return 0;
      };
    }};

}  // namespace
}  // namespace smolvlm::cli
