// `smolvlm perplexity`: teacher-forced perplexity as HF computes it (exp of the mean negative
// log-likelihood of every token after the first of each window, given the ones before), over a
// text file tokenized as the model's tokenizer does (windows of --ctx tokens) or pre-tokenized ids;
// with --base, also the mean KL divergence from a base model's next-token distributions and the
// top-1 agreement on the same positions (quantized against unquantized).
#include <nlohmann/json.hpp>
#include <smolvlm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/messages.h"

namespace smolvlm::cli {
namespace {

// --ids: a JSON list of id lists, or an object whose "sequences" is one.
std::vector<std::vector<int32_t>> read_ids(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": not JSON: " + e.what());
  }
  const nlohmann::json& seqs = j.is_object() && j.contains("sequences") ? j["sequences"] : j;
  if (!seqs.is_array()) throw api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": expected a list of id lists or {\"sequences\": [...]}");
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!seqs[i].is_array()) throw api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": sequence " + std::to_string(i) + " is not a list");
    std::vector<int32_t> ids;
    for (const auto& v : seqs[i]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
        throw api::Error(SMOLVLM_ERR_BAD_INPUT, path + ": sequence " + std::to_string(i) + " holds a value that is not a token id");
      ids.push_back(int32_t(v.get<int64_t>()));
    }
    out.push_back(std::move(ids));
  }
  return out;
}

// log-softmax of one logits row, in double.
std::vector<double> log_probs(std::span<const float> logits) {
  const double m = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (float v : logits) z += std::exp(double(v) - m);
  const double lz = m + std::log(z);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - lz;
  return out;
}

struct Totals {
  double nll = 0, kl = 0;
  int64_t tokens = 0, top1_same = 0;
};

// Teacher-forces one window through the model (and the base): one position at a time, so each
// position's logits are the decode path's.
void score_window(const std::vector<int32_t>& ids, api::Session& s, api::Session* base, Totals& t) {
  s.reset();
  if (base) base->reset();
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const int32_t one[1] = {ids[i]};
    if (i == 0) {
      s.prefill(one);
      if (base) base->prefill(one);
    } else {
      s.decode(ids[i]);
      if (base) base->decode(ids[i]);
    }
    const std::span<const float> logits = s.logits();
    if (ids[i + 1] < 0 || size_t(ids[i + 1]) >= logits.size())
      throw api::Error(SMOLVLM_ERR_BAD_INPUT, "token id " + std::to_string(ids[i + 1]) + " is outside the vocabulary");
    const std::vector<double> lp = log_probs(logits);
    t.nll -= lp[size_t(ids[i + 1])];
    ++t.tokens;
    if (base) {
      const std::span<const float> bl = base->logits();
      const std::vector<double> lb = log_probs(bl);
      double kl = 0;
      for (size_t v = 0; v < lb.size(); ++v) kl += std::exp(lb[v]) * (lb[v] - lp[v]);
      t.kl += kl;
      t.top1_same += std::max_element(bl.begin(), bl.end()) - bl.begin() ==
                     std::max_element(logits.begin(), logits.end()) - logits.begin();
    }
  }
}

const Command kPerplexity{"perplexity", "Teacher-forced perplexity of a text or id file (and KL / top-1 agreement against a base model)",
                          [](CLI::App& sub) {
  auto model = std::make_shared<std::string>();
  auto text = std::make_shared<std::string>();
  auto ids_file = std::make_shared<std::string>();
  auto base_dir = std::make_shared<std::string>();
  auto ctx = std::make_shared<int64_t>(512);
  auto threads = std::make_shared<int>(0);
  auto as_json = std::make_shared<bool>(false);
  auto precision = std::make_shared<std::string>();
  auto weight_memory = std::make_shared<std::string>();
  sub.add_option("--model", *model, std::string("model folder or hub id (default ") + smolvlm_default_model() + ")");
  auto* text_opt = sub.add_option("--text", *text, "text file, tokenized as the model's tokenizer does (no special tokens added)");
  sub.add_option("--ids", *ids_file, "JSON file of pre-tokenized ids: a list of id lists, or {\"sequences\": [...]}")
      ->excludes(text_opt);
  sub.add_option("--ctx", *ctx, "tokens per window of --text (default 512; each window is scored on its own)")
      ->check(CLI::Range(int64_t(2), int64_t(1) << 20));
  sub.add_option("--base", *base_dir, "base model: also report mean KL(base || model) and top-1 agreement");
  sub.add_option("--threads", *threads, "worker threads (default: all)")->check(CLI::NonNegativeNumber);
  sub.add_flag("--json", *as_json, "print one JSON object");
  add_precision_flag(sub, *precision);  // the model's; the base always runs exact
  add_weight_memory_flag(sub, *weight_memory);  // both models'
  return [=]() {
    if (text->empty() == ids_file->empty()) throw UsageError("perplexity: give exactly one of --text FILE and --ids FILE");
    smolvlm_model_options o;
    smolvlm_model_options_init(&o);
    o.threads = *threads;
    if (!weight_memory->empty()) o.weight_memory = weight_memory->c_str();
    smolvlm_model_options mo = o;
    if (!precision->empty()) mo.precision = precision->c_str();
    const api::Model m = api::Model::load(model->empty() ? smolvlm_default_model() : *model, &mo);
    std::optional<api::Model> b;
    if (!base_dir->empty()) b.emplace(api::Model::load(*base_dir, &o));
    std::vector<std::vector<int32_t>> windows;
    if (!ids_file->empty()) {
      windows = read_ids(*ids_file);
    } else {
      const std::vector<int32_t> all = m.tokenizer().tokenize(read_text_file(*text), false);
      for (size_t i = 0; i < all.size(); i += size_t(*ctx))
        windows.emplace_back(all.begin() + i, all.begin() + std::min(all.size(), i + size_t(*ctx)));
    }
    int64_t longest = 0;
    for (const auto& w : windows) longest = std::max<int64_t>(longest, int64_t(w.size()));
    if (longest < 2) throw api::Error(SMOLVLM_ERR_BAD_INPUT, "perplexity: no window has two tokens to score");
    api::Session s(m, longest);
    std::optional<api::Session> bs;
    if (b) bs.emplace(*b, longest);
    Totals t;
    size_t done = 0;
    for (const auto& w : windows) {
      if (w.size() >= 2) score_window(w, s, bs ? &*bs : nullptr, t);
      if (!*as_json) std::fprintf(stderr, "\r[%zu/%zu] windows, ppl so far %.4f", ++done, windows.size(), std::exp(t.nll / double(std::max<int64_t>(1, t.tokens))));
    }
    if (!*as_json) std::fputc('\n', stderr);
    const double ppl = std::exp(t.nll / double(t.tokens));
    nlohmann::ordered_json j = {{"model", model->empty() ? smolvlm_default_model() : *model},
                                {"windows", windows.size()},
                                {"scored_tokens", t.tokens},
                                {"mean_nll", t.nll / double(t.tokens)},
                                {"perplexity", ppl},
                                {"precision", m.info().precision}};
    if (b) {
      j["base"] = *base_dir;
      j["mean_kl"] = t.kl / double(t.tokens);
      j["top1_agreement"] = double(t.top1_same) / double(t.tokens);
    }
    if (*as_json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("perplexity %.6f over %lld tokens (%zu windows), mean NLL %.6f\n", ppl, (long long)t.tokens,
                  windows.size(), t.nll / double(t.tokens));
      if (b)
        std::printf("vs base: mean KL %.6f, top-1 agreement %.4f\n", j["mean_kl"].get<double>(),
                    j["top1_agreement"].get<double>());
    }
    return 0;
  };
}};

}  // namespace
}  // namespace smolvlm::cli
