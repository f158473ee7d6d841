#include "text/tokenizer.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/file.h"
#include "text/bpe.h"
#include "text/pipeline.h"
#include "text/unicode.h"

namespace smolvlm {
namespace text {

using nlohmann::json;

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Finds added tokens in text: leftmost match first, longest at that position (HF's Aho-Corasick
// LeftmostLongest), with the lstrip / rstrip / single_word rules.
class AddedTokenMatcher {
 public:
  void add(const AddedToken* token) {
    int32_t node = 0;
    for (unsigned char c : token->content) {
      auto& kids = nodes_[node].children;
      auto it = kids.find(c);
      if (it == kids.end()) {
        nodes_.push_back({});
        it = nodes_[node].children.emplace(c, static_cast<int32_t>(nodes_.size() - 1)).first;
      }
      node = it->second;
    }
    if (!token->content.empty()) nodes_[node].token = token;
  }
  bool empty() const { return nodes_.size() == 1; }

  struct Match {
    size_t begin, end;
    const AddedToken* token;
  };
  std::vector<Match> find(std::string_view s) const {
    std::vector<Match> out;
    size_t prev_end = 0;
    for (size_t i = 0; i < s.size();) {
      const AddedToken* best = nullptr;
      size_t best_end = 0;
      int32_t node = 0;
      for (size_t k = i; k < s.size(); ++k) {
        auto it = nodes_[node].children.find(static_cast<unsigned char>(s[k]));
        if (it == nodes_[node].children.end()) break;
        node = it->second;
        if (nodes_[node].token) best = nodes_[node].token, best_end = k + 1;
      }
      if (!best || (best->single_word && !at_word_boundaries(s, i, best_end))) {
        ++i;
        continue;
      }
      size_t begin = i, end = best_end;
      if (best->lstrip)
        while (begin > prev_end && ends_with_whitespace(s.substr(prev_end, begin - prev_end))) begin = last_char_start(s, begin);
      if (best->rstrip)
        while (end < s.size() && starts_with_whitespace(s.substr(end))) end += utf8_sequence_length(s, end);
      out.push_back({begin, end, best});
      prev_end = i = end;
    }
    return out;
  }

 private:
  struct Node {
    std::map<unsigned char, int32_t> children;
    const AddedToken* token = nullptr;
  };
  std::vector<Node> nodes_{Node{}};

  static size_t last_char_start(std::string_view s, size_t end) {
    size_t i = end - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    return i;
  }
  static bool starts_with_whitespace(std::string_view s) {
    size_t n = utf8_sequence_length(s, 0);
    return n > 0 && is_whitespace(utf8_decode_at(s, 0, n));
  }
  static bool ends_with_whitespace(std::string_view s) {
    size_t i = last_char_start(s, s.size());
    size_t n = utf8_sequence_length(s, i);
    return n > 0 && is_whitespace(utf8_decode_at(s, i, n));
  }
  static bool is_word_char_at(std::string_view s, size_t i) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    char32_t c = utf8_decode_at(s, i, n);
    return is_alphabetic(c) || is_numeric(c) || c == '_';
  }
  static bool at_word_boundaries(std::string_view s, size_t begin, size_t end) {
    bool left = begin == 0 || !is_word_char_at(s, last_char_start(s, begin));
    bool right = end == s.size() || !is_word_char_at(s, end);
    return left && right;
  }
};

struct TokenizerImpl {
  std::string name;
  std::unique_ptr<BpeModel> model;
  std::vector<AddedToken> added;
  std::unordered_map<int32_t, const AddedToken*> added_by_id;
  TokenIdMap added_by_content;
  AddedTokenMatcher raw_matcher, normalized_matcher;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Decoder decoder;
  PostProcessor post_processor;
  int64_t vocab_size = 0;

  void encode_segment(std::string_view segment, bool at_origin, std::vector<int32_t>& ids) const;
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens, std::vector<std::string>* tokens) const;
  const std::string& token_of(int32_t id) const;
};

const std::string& TokenizerImpl::token_of(int32_t id) const {
  if (auto it = added_by_id.find(id); it != added_by_id.end()) return it->second->content;
  if (const std::string* t = model->id_to_token(id)) return *t;
  throw bad_input(name + ": token id " + std::to_string(id) + " is not in the vocabulary (size " + std::to_string(vocab_size) + ")");
}

void TokenizerImpl::encode_segment(std::string_view segment, bool at_origin, std::vector<int32_t>& ids) const {
  std::string normalized = normalizer ? normalizer(std::string(segment)) : std::string(segment);
  auto encode_piece = [&](std::string_view text, bool origin) {
    std::vector<Piece> pieces{{std::string(text), origin}};
    if (pre_tokenizer) pre_tokenizer(pieces);
    for (auto& p : pieces) model->tokenize(p.text, ids);
  };
  if (normalized_matcher.empty()) {
    if (!normalized.empty()) encode_piece(normalized, at_origin);
    return;
  }
  size_t prev = 0;
  for (auto& m : normalized_matcher.find(normalized)) {
    if (m.begin > prev) encode_piece(std::string_view(normalized).substr(prev, m.begin - prev), at_origin && prev == 0);
    ids.push_back(m.token->id);
    prev = m.end;
  }
  if (prev < normalized.size()) encode_piece(std::string_view(normalized).substr(prev), at_origin && prev == 0);
}

std::vector<int32_t> TokenizerImpl::encode(std::string_view input, bool add_special_tokens, std::vector<std::string>* tokens) const {
  std::string repaired;
  if (!utf8_is_valid(input)) {
    repaired = utf8_lossy(input);
    input = repaired;
  }
  std::vector<int32_t> ids;
  size_t prev = 0;
  for (auto& m : raw_matcher.find(input)) {
    if (m.begin > prev) encode_segment(input.substr(prev, m.begin - prev), prev == 0, ids);
    ids.push_back(m.token->id);
    prev = m.end;
  }
  if (prev < input.size()) encode_segment(input.substr(prev), prev == 0, ids);
  if (tokens) {
    tokens->clear();
    for (int32_t id : ids) tokens->push_back(token_of(id));
  }
  if (add_special_tokens && post_processor) post_processor(ids, tokens);
  return ids;
}

static std::unique_ptr<TokenizerImpl> build(const json& root, BpeTables tables, const std::string& name) {
  if (!root.is_object()) throw bad_input(name + ": expected a JSON object at the top level");
  auto impl = std::make_unique<TokenizerImpl>();
  impl->name = name;
  if (auto it = root.find("truncation"); it != root.end() && !it->is_null())
    throw unsupported(name + ": \"truncation\" is set; truncation is not supported (expected null)");
  if (auto it = root.find("padding"); it != root.end() && !it->is_null())
    throw unsupported(name + ": \"padding\" is set; padding is not supported (expected null)");
  impl->model = std::make_unique<BpeModel>(require(root, "model", name), std::move(tables), name + ": model");
  impl->normalizer = make_normalizer(root.value("normalizer", json()), name + ": normalizer");
  impl->pre_tokenizer = make_pre_tokenizer(root.value("pre_tokenizer", json()), name + ": pre_tokenizer");
  impl->decoder = make_decoder(root.value("decoder", json()), name + ": decoder");
  impl->post_processor = make_post_processor(root.value("post_processor", json()), name + ": post_processor");

  int64_t max_id = impl->model->id_limit() - 1;
  if (auto it = root.find("added_tokens"); it != root.end() && !it->is_null()) {
    if (!it->is_array()) throw bad_input(name + ": added_tokens: expected an array");
    impl->added.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
      std::string where = name + ": added_tokens[" + std::to_string(i) + "]";
      const json& a = (*it)[i];
      AddedToken t;
      const json& id = require(a, "id", where);
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t(1) << 24))
        throw bad_input(where + ".id: expected an integer in [0, 16777216), got " + id.dump());
      t.id = id.get<int32_t>();
      t.content = get_string(a, "content", where);
      if (t.content.empty()) throw bad_input(where + ".content: empty");
      if (!utf8_is_valid(t.content)) throw bad_input(where + ".content: not valid UTF-8");
      t.special = get_bool(a, "special", false, where);
      t.lstrip = get_bool(a, "lstrip", false, where);
      t.rstrip = get_bool(a, "rstrip", false, where);
      t.single_word = get_bool(a, "single_word", false, where);
      t.normalized = get_bool(a, "normalized", !t.special, where);
      max_id = std::max<int64_t>(max_id, t.id);
      impl->added.push_back(std::move(t));
    }
  }
  for (auto& t : impl->added) {
    impl->added_by_id[t.id] = &t;
    impl->added_by_content[t.content] = t.id;
    (t.normalized && impl->normalizer ? impl->normalized_matcher : impl->raw_matcher).add(&t);
  }
  impl->vocab_size = max_id + 1;
  return impl;
}

}  // namespace text

using text::TokenizerImpl;

Tokenizer::Tokenizer(std::unique_ptr<TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  return from_json(read_file(tokenizer_json, size_t(1) << 30), tokenizer_json.string());
}

std::unique_ptr<Tokenizer> Tokenizer::from_json(const std::string& json_text, const std::string& name) {
  nlohmann::json root;
  text::BpeTables tables;  // the vocabulary and merges, read while parsing (most of the file)
  try {
    root = text::parse_tokenizer_json(json_text, tables, name + ": model");
  } catch (const nlohmann::json::exception& e) {
    throw bad_input(name + ": not valid JSON: " + e.what());
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(text::build(root, std::move(tables), name)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens, nullptr);
}

std::vector<int32_t> Tokenizer::encode_with_tokens(std::string_view text, bool add_special_tokens,
                                                   std::vector<std::string>* tokens) const {
  return impl_->encode(text, add_special_tokens, tokens);
}

// As HF tokenizers: an id the tokenizer lacks decodes to nothing (a model's embedding is often padded
// past its tokenizer, and such ids can be generated); a negative id is no id at all.
std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0) throw bad_input(impl_->name + ": token id " + std::to_string(id) + " is negative");
    if (!has_id(id) || (skip_special_tokens && is_special(id))) continue;
    tokens.push_back(impl_->token_of(id));
  }
  if (!impl_->decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  std::string out;
  for (auto& piece : impl_->decoder(std::move(tokens))) out += piece;
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end()) return it->second;
  return impl_->model->token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const { return impl_->token_of(id); }
bool Tokenizer::has_id(int32_t id) const {
  return impl_->added_by_id.count(id) != 0 || impl_->model->id_to_token(id) != nullptr;
}
int64_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
const std::string& Tokenizer::name() const { return impl_->name; }

bool Tokenizer::is_special(int32_t id) const {
  auto it = impl_->added_by_id.find(id);
  return it != impl_->added_by_id.end() && it->second->special;
}

// ---------------------------------------------------------------------------------------------

std::string clean_up_tokenization(std::string text) {
  static const std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},  {" ?", "?"},    {" !", "!"},    {" ,", ","},    {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) {
    std::string out;
    size_t start = 0;
    for (size_t at; (at = text.find(from, start)) != std::string::npos; start = at + from.size()) {
      out.append(text, start, at - start);
      out.append(to);
    }
    if (start == 0) continue;  // no match: text unchanged
    out.append(text, start, std::string::npos);
    text = std::move(out);
  }
  return text;
}

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok, bool skip_special_tokens, bool clean_up_spaces)
    : tok_(tok), skip_special_(skip_special_tokens), clean_up_(clean_up_spaces) {}

std::string StreamingDetokenizer::decode_range(size_t begin, size_t end) const {
  return tok_.decode(std::vector<int32_t>(ids_.begin() + static_cast<ptrdiff_t>(begin), ids_.begin() + static_cast<ptrdiff_t>(end)),
                     skip_special_);
}

// Every clean-up pattern starts with a space and is at most 5 bytes long, and clean-up only ever
// deletes spaces. So when the last 4 bytes of a prefix hold no space, no pattern can match across
// the cut at any step, and cleaning the prefix and the rest separately equals cleaning the whole:
// the held text is emitted up to the last such cut.
std::string StreamingDetokenizer::release(std::string raw, bool final) {
  if (!clean_up_) return raw;
  held_ += raw;
  size_t cut = held_.size();
  if (!final)
    while (cut > 0) {
      const size_t space = held_.rfind(' ', cut - 1);
      if (space == std::string::npos || space + 4 < cut) break;
      cut = space;
    }
  std::string out = clean_up_tokenization(held_.substr(0, cut));
  held_.erase(0, cut);
  return out;
}

// Decoding a window that starts a few ids back and subtracting the window's already emitted text
// keeps context-dependent decoders (leading-space strip, byte fallback runs) right at O(window) cost.
std::string StreamingDetokenizer::push(int32_t id) {
  if (id < 0) throw bad_input(tok_.name() + ": token id " + std::to_string(id) + " is negative");
  if (!tok_.has_id(id)) {  // decodes to nothing (Tokenizer::decode): nothing to emit, nothing to hold
    ++unprintable_;
    return {};
  }
  ids_.push_back(id);
  std::string emitted = decode_range(prefix_offset_, read_offset_);
  std::string now = decode_range(prefix_offset_, ids_.size());
  static const std::string kReplacement = "\xEF\xBF\xBD";
  bool pending = now.size() >= 3 && now.compare(now.size() - 3, 3, kReplacement) == 0;
  if (pending || now.size() <= emitted.size() || now.compare(0, emitted.size(), emitted) != 0) return {};
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return release(now.substr(emitted.size()), false);
}

std::string StreamingDetokenizer::finish() {
  std::string emitted = decode_range(prefix_offset_, read_offset_);
  std::string now = decode_range(prefix_offset_, ids_.size());
  prefix_offset_ = read_offset_ = ids_.size();
  if (now.size() < emitted.size() || now.compare(0, emitted.size(), emitted) != 0) return release(now, true);
  return release(now.substr(emitted.size()), true);
}

}  // namespace smolvlm
