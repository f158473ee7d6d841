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

#include "cli/batch.h"
#include "cli/command.h"
#include "cli/generation_flags.h"

namespace smolvlm::cli {
namespace {

// Checks a language name through the library (which knows the model card's table), as a usage
// error naming the flag.
void check_language(const std::string& name, const char* flag) {
  char* prompt = nullptr;
  if (smolvlm_translation_prompt("", name.c_str(), nullptr, nullptr, 0, &prompt) != SMOLVLM_OK)
    throw UsageError(std::string(flag) + ": " + smolvlm_last_error());
  smolvlm_free(prompt);
}

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

struct TranslateFlags : GenerationFlags {
  std::string to, from, terms, system, text;
  bool sample = false;
};

class Translator {
 public:
  explicit Translator(const TranslateFlags& f) : f_(f) {
    check_language(f.to, "--to");
    if (!f.from.empty()) check_language(f.from, "--from");
    if (!f.terms.empty()) terms_ = read_terms(f.terms);
    for (const Term& t : terms_) term_refs_.push_back({t.source.c_str(), t.target.c_str()});
    model_ = std::make_unique<api::Model>(load_model(f));
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
    char* prompt = nullptr;
    api::check(smolvlm_translation_prompt(text.c_str(), f_.to.c_str(), f_.from.empty() ? nullptr : f_.from.c_str(),
                                          term_refs_.data(), term_refs_.size(), &prompt));
    chat.add(SMOLVLM_ROLE_USER).text(api::take_string(prompt));
    smolvlm_request req;
    smolvlm_request_init(&req);
    chat.fill(req);
    std::vector<const char*> stops;
    apply_generation_flags(f_, req, stops);
    req.sampling = sampling_;  // the flags', or generation_config.json's with --sample
    const api::Result r = session_->run(req);  // the session is reset and its cache reused
    const smolvlm_result& raw = r.raw();
    if (f_.json) {
      nlohmann::ordered_json j;
      j["paragraph"] = index;
      j["source"] = text;
      const nlohmann::ordered_json fields = result_json(raw, raw.timings.load_s);
      for (const auto& [key, value] : fields.items()) j[key] = value;
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
    } else {
      std::cout << "\n" << std::flush;
    }
    if (f_.verbose) {
      std::cerr << "paragraph " << index << ": " << raw.prompt_tokens << " prompt tokens, " << raw.n_tokens
                << " new, prefill " << raw.timings.prefill_s << " s, decode " << raw.timings.decode_s
                << " s, finish: " << smolvlm_finish_reason_name(raw.finish_reason) << "\n";
      if (!noted_unprintable_ && raw.unprintable_tokens > 0) std::cerr << unprintable_note(raw);
      noted_unprintable_ = noted_unprintable_ || raw.unprintable_tokens > 0;
    }
  }

 private:
  const TranslateFlags& f_;
  bool noted_unprintable_ = false;  // --verbose says it once
  std::vector<Term> terms_;
  std::vector<smolvlm_term> term_refs_;  // views of terms_
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

// The translation model of the model card the prompts come from.
constexpr const char* kTranslationModelId = "tencent/HY-MT1.5-1.8B";

const Command kTranslate{
    "translate", "Translate text with a translation model (HY-MT) using the model card's prompts", [](CLI::App& sub) {
      auto f = std::make_shared<TranslateFlags>();
      f->max_new_tokens = 512;
      f->model = kTranslationModelId;
      sub.add_option("text", f->text, "the text to translate; - reads stdin and translates it paragraph by paragraph");
      sub.add_option("--to", f->to, "target language: a model card code (" + std::string(smolvlm_translation_languages()) +
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
      sub.get_option("--model")->description(std::string("model folder or hub id (default ") + kTranslationModelId +
                                             ", after smolvlm pull " + kTranslationModelId + ")");
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
