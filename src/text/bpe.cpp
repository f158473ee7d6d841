#include "text/bpe.h"

#include <queue>

#include "core/error.h"
#include "text/pipeline.h"
#include "text/unicode.h"

namespace smolvlm::text {

using nlohmann::json;

static constexpr size_t kCacheCapacity = 1 << 16;
static constexpr size_t kCacheMaxWordBytes = 256;

static std::string optional_string(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) throw bad_input(where + "." + key + ": expected a string or null, got " + std::string(it->type_name()));
  return it->get<std::string>();
}

namespace {

std::string vocab_entry_error(const std::string& where, const std::string& token) {
  return where + ".vocab[\"" + token + "\"]: expected an integer id";
}

std::string merge_error(const std::string& where, size_t rank, const json& m) {
  return where + ".merges[" + std::to_string(rank) + "]: expected \"a b\" or [\"a\", \"b\"], got " + m.dump();
}

// One merge spelled "a b".
std::pair<std::string, std::string> split_merge(const std::string& s, size_t rank, const std::string& where) {
  const size_t space = s.find(' ');
  if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
    throw bad_input(where + ".merges[" + std::to_string(rank) + "]: expected \"a b\", got \"" + s + "\"");
  return {s.substr(0, space), s.substr(space + 1)};
}

// One merge, "a b" or ["a", "b"].
std::pair<std::string, std::string> parse_merge(const json& m, size_t rank, const std::string& where) {
  if (m.is_string()) return split_merge(m.get_ref<const std::string&>(), rank, where);
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  throw bad_input(merge_error(where, rank, m));
}

// The tables from the model object itself (when the parse did not capture them).
void read_tables(const json& model, BpeTables& t, const std::string& where) {
  if (!t.has_vocab) {
    const json& vocab = require(model, "vocab", where);
    if (!vocab.is_object()) throw bad_input(where + ".vocab: expected an object {token: id}");
    t.vocab.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer()) throw bad_input(vocab_entry_error(where, it.key()));
      t.vocab.emplace_back(it.key(), it.value().get<int64_t>());
    }
  }
  if (!t.has_merges) {
    const json& merges = require(model, "merges", where);
    if (!merges.is_array()) throw bad_input(where + ".merges: expected an array");
    t.merges.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) t.merges.push_back(parse_merge(merges[rank], rank, where));
  }
}

}  // namespace

namespace {

// SAX events of tokenizer.json into a JSON tree, except root.model.vocab (an object) and
// root.model.merges (an array): their members go straight into BpeTables, and the tree keeps them
// empty. Repeated keys overwrite, as in nlohmann's own tree.
class TokenizerJsonSax : public json::json_sax_t {
 public:
  TokenizerJsonSax(json& root, BpeTables& tables, const std::string& where)
      : root_(root), tables_(tables), where_(where) {}

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::Vocab) return vocab_id(v);
    return value(json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::Vocab) return vocab_id(static_cast<int64_t>(v));  // as json::get<int64_t>()
    return value(json(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (mode_ == Mode::Vocab) throw bad_input(vocab_entry_error(where_, pending_token_));
    return value(json(v));
  }
  bool string(string_t& v) override {
    if (mode_ == Mode::MergeElement && element_plain_ && frames_.size() == element_depth_) {
      element_strings_.push_back(std::move(v));
      return true;
    }
    if (mode_ == Mode::Merges) {
      tables_.merges.push_back(split_merge(v, tables_.merges.size(), where_));
      return true;
    }
    if (mode_ == Mode::Vocab) throw bad_input(vocab_entry_error(where_, pending_token_));
    return value(json(std::move(v)));
  }
  bool binary(binary_t&) override { throw internal_error("tokenizer.json: binary value from a text parser"); }

  bool key(string_t& k) override {
    if (mode_ == Mode::Vocab) {
      pending_token_ = std::move(k);
      return true;
    }
    Frame& f = frames_.back();
    f.key = k;
    if (mode_ == Mode::Tree || mode_ == Mode::MergeElement) member_ = &(*f.node)[k];
    return true;
  }

  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    throw ex;  // rethrown as the parser's own exception type, as json::parse does
  }

 private:
  enum class Mode { Tree, Vocab, Merges, MergeElement };
  struct Frame {
    json* node;    // the container in the tree (the empty stand-in for vocab / merges)
    bool object;
    std::string key;  // the member being read, in an object
  };

  // root.model.<k>: a container opened directly inside root.model.
  bool at_model_member(const char* k) const {
    return frames_.size() == 2 && frames_[0].object && frames_[0].key == "model" && frames_[1].object &&
           frames_[1].key == k;
  }

  // Places a value in the tree: the root, the next array element or the pending object member.
  json* place(json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *frames_.back().node;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *member_ = std::move(v);
    return member_;
  }

  bool value(json&& v) {
    if (mode_ == Mode::Merges) {  // a merge that is neither a string nor an array
      tables_.merges.push_back(parse_merge(v, tables_.merges.size(), where_));
      return true;
    }
    if (mode_ == Mode::MergeElement) materialize_element();
    place(std::move(v));
    return true;
  }

  // An array merge holding something other than strings: from here on it is built as a tree, for
  // parse_merge to describe in its error.
  void materialize_element() {
    if (!element_plain_) return;
    for (std::string& str : element_strings_) element_.push_back(std::move(str));
    element_strings_.clear();
    element_plain_ = false;
  }

  bool vocab_id(int64_t id) {
    tables_.vocab.emplace_back(std::move(pending_token_), id);
    return true;
  }

  bool open(bool object) {
    if (mode_ == Mode::Vocab) throw bad_input(vocab_entry_error(where_, pending_token_));
    if (mode_ == Mode::Merges) {
      if (object)
        throw bad_input(where_ + ".merges[" + std::to_string(tables_.merges.size()) +
                        "]: expected \"a b\" or [\"a\", \"b\"], got an object");
      // A ["a", "b"] merge: its strings are collected and checked when it closes.
      element_ = json::array();
      element_strings_.clear();
      element_plain_ = true;
      frames_.push_back({&element_, false, {}});
      mode_ = Mode::MergeElement;
      element_depth_ = frames_.size();
      return true;
    }
    if (mode_ == Mode::MergeElement) materialize_element();
    if (mode_ == Mode::Tree && object && at_model_member("vocab")) return capture(Mode::Vocab);
    if (mode_ == Mode::Tree && !object && at_model_member("merges")) return capture(Mode::Merges);
    json* node = place(object ? json::object() : json::array());
    frames_.push_back({node, object, {}});
    return true;
  }

  // root.model.vocab or .merges opens: an empty stand-in in the tree, the members to the tables (a
  // repeated one replaces what an earlier one gave).
  bool capture(Mode m) {
    const bool vocab = m == Mode::Vocab;
    json* stand_in = place(vocab ? json::object() : json::array());
    if (vocab) {
      tables_.vocab.clear();
      tables_.has_vocab = true;
    } else {
      tables_.merges.clear();
      tables_.has_merges = true;
    }
    frames_.push_back({stand_in, vocab, {}});
    mode_ = m;
    return true;
  }

  bool close() {
    if (mode_ == Mode::MergeElement && frames_.size() == element_depth_) {
      frames_.pop_back();
      mode_ = Mode::Merges;
      if (element_plain_ && element_strings_.size() == 2) {
        tables_.merges.emplace_back(std::move(element_strings_[0]), std::move(element_strings_[1]));
        return true;
      }
      materialize_element();
      tables_.merges.push_back(parse_merge(element_, tables_.merges.size(), where_));
      return true;
    }
    if (mode_ == Mode::Vocab || mode_ == Mode::Merges) mode_ = Mode::Tree;
    frames_.pop_back();
    return true;
  }

  json& root_;
  BpeTables& tables_;
  const std::string& where_;
  std::vector<Frame> frames_;
  json* member_ = nullptr;
  Mode mode_ = Mode::Tree;
  std::string pending_token_;  // the vocab key whose id comes next
  json element_;               // the array merge being read, once it holds more than strings
  std::vector<std::string> element_strings_;  // its strings, while it holds only strings
  bool element_plain_ = true;
  size_t element_depth_ = 0;
};

}  // namespace

json parse_tokenizer_json(const std::string& text, BpeTables& tables, const std::string& where) {
  json root;
  TokenizerJsonSax sax(root, tables, where);
  json::sax_parse(text, &sax);
  return root;
}

BpeModel::BpeModel(const json& model, BpeTables tables, const std::string& where) {
  std::string type = model.is_object() && model.contains("type") ? get_string(model, "type", where) : "BPE";
  if (type != "BPE")
    throw unsupported(where + ": model type \"" + type + "\" is not supported (only BPE)");
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0))
    throw unsupported(where + ".dropout: BPE dropout (" + it->dump() + ") is not supported: encoding would be random");
  continuing_subword_prefix_ = optional_string(model, "continuing_subword_prefix", where);
  end_of_word_suffix_ = optional_string(model, "end_of_word_suffix", where);
  fuse_unk_ = get_bool(model, "fuse_unk", false, where);
  byte_fallback_ = get_bool(model, "byte_fallback", false, where);
  ignore_merges_ = get_bool(model, "ignore_merges", false, where);
  read_tables(model, tables, where);

  int64_t max_id = -1;
  vocab_.reserve(tables.vocab.size());
  // Real vocabularies are dense; a bound on the holes keeps a hostile file from allocating gigabytes.
  const int64_t limit = static_cast<int64_t>(tables.vocab.size()) + 65536;
  for (auto& [token, id] : tables.vocab) {
    if (id < 0 || id >= limit)
      throw bad_input(where + ".vocab[\"" + token + "\"]: id " + std::to_string(id) + " out of range [0, " + std::to_string(limit) + ")");
    // A repeated key: the last one wins, as in the JSON tree.
    vocab_.insert_or_assign(std::move(token), static_cast<int32_t>(id));
    max_id = std::max(max_id, id);
  }
  id_to_key_.assign(static_cast<size_t>(max_id + 1), -1);
  for (size_t i = 0; i < vocab_.size(); ++i) id_to_key_[static_cast<size_t>(vocab_.value(i))] = static_cast<int32_t>(i);

  std::string unk = optional_string(model, "unk_token", where);
  if (!unk.empty()) {
    const int32_t id = vocab_.find(unk);
    if (id < 0) throw bad_input(where + ".unk_token: \"" + unk + "\" is not in the vocabulary");
    unk_id_ = id;
  }
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.find(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");

  merges_.reserve(tables.merges.size());
  const size_t prefix_len = continuing_subword_prefix_.size();
  std::string merged;
  for (size_t rank = 0; rank < tables.merges.size(); ++rank) {
    const auto& [a, b] = tables.merges[rank];
    const int32_t ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia < 0 || ib < 0)
      throw bad_input(where + ".merges[" + std::to_string(rank) + "]: token \"" + (ia < 0 ? a : b) + "\" is not in the vocabulary");
    const bool prefixed = b.size() >= prefix_len && b.compare(0, prefix_len, continuing_subword_prefix_) == 0;
    merged.assign(a).append(b, prefixed ? prefix_len : 0);
    const int32_t im = vocab_.find(merged);
    if (im < 0)
      throw bad_input(where + ".merges[" + std::to_string(rank) + "]: merged token \"" + merged + "\" is not in the vocabulary");
    merges_.insert_or_assign(ia, ib, {static_cast<int32_t>(rank), im});  // a repeated pair: the last rank
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const int32_t id = vocab_.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_key_.size() || id_to_key_[id] < 0) return nullptr;
  return &vocab_.key(static_cast<size_t>(id_to_key_[id]));
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const int32_t id = vocab_.find(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t before = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<ptrdiff_t>(before), out.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  // Symbols as a doubly linked list over a vector; merges applied lowest rank first, then leftmost.
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id) {
    int32_t idx = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, idx - 1, idx + 1, true});
  };
  int32_t pending_unk = -1;  // an unknown-token id not yet emitted (kept back to fuse a run of them)
  std::string piece;
  for (size_t i = 0; i < word.size();) {
    size_t n = utf8_sequence_length(word, i);
    if (n == 0) throw internal_error("BPE: invalid UTF-8 in a pre-token");
    bool first = i == 0, last = i + n == word.size();
    piece.clear();
    if (!first) piece += continuing_subword_prefix_;
    piece.append(word.substr(i, n));
    if (last) piece += end_of_word_suffix_;
    i += n;
    if (const int32_t id = vocab_.find(piece); id >= 0) {
      if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
      add(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : piece) all = all && byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : piece) add(byte_ids_[b]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t pos) {
    int32_t next = symbols[pos].next;
    if (next < 0) return;
    if (const MergeTable::Merge* m = merges_.find(symbols[pos].id, symbols[next].id))
      queue.push({m->rank, pos, m->new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Symbol& s = symbols[c.pos];
    if (!s.alive || s.next < 0) continue;
    const MergeTable::Merge* m = merges_.find(s.id, symbols[s.next].id);
    if (!m || m->rank != c.rank || m->new_id != c.new_id) continue;  // stale
    Symbol& right = symbols[s.next];
    right.alive = false;
    s.id = c.new_id;
    s.next = right.next;
    if (s.next >= 0) symbols[s.next].prev = c.pos;
    if (s.prev >= 0) consider(s.prev);
    consider(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace smolvlm::text
