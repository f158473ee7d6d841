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

// One merge, "a b" or ["a", "b"].
std::pair<std::string, std::string> parse_merge(const json& m, size_t rank, const std::string& where) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
      throw bad_input(where + ".merges[" + std::to_string(rank) + "]: expected \"a b\", got \"" + s + "\"");
    return {s.substr(0, space), s.substr(space + 1)};
  }
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

json::parser_callback_t bpe_tables_capture(BpeTables& tables, const std::string& where) {
  // Depth d holds the members of the container opened at depth d - 1 (the root is depth 0).
  struct State {
    std::vector<bool> in_object{false};  // per depth: members belong to an object (else an array)
    std::vector<std::string> key{""};    // per depth: the current member's key
    std::string pending_token;           // the vocab key whose id comes next
  };
  auto st = std::make_shared<State>();
  return [st, &tables, where](int depth, json::parse_event_t event, json& parsed) -> bool {
    using E = json::parse_event_t;
    State& s = *st;
    const size_t d = static_cast<size_t>(depth);
    auto member_of = [&](size_t depth_of_member, const char* k) {
      return s.in_object.size() > depth_of_member && s.in_object[depth_of_member] && s.key[depth_of_member] == k;
    };
    // root.model.<k> is the container whose members sit at depth 3.
    auto inside = [&](const char* k) { return d == 3 && member_of(1, "model") && member_of(2, k); };
    if (event == E::object_start || event == E::array_start) {
      const bool object = event == E::object_start;
      if (inside("vocab") && s.in_object[3]) throw bad_input(vocab_entry_error(where, s.pending_token));
      if (inside("merges") && !s.in_object[3] && object)
        throw bad_input(where + ".merges[" + std::to_string(tables.merges.size()) + "]: expected \"a b\" or [\"a\", \"b\"], got an object");
      if (d == 2 && member_of(1, "model") && s.in_object[2]) {  // root.model.vocab / .merges themselves
        if (s.key[2] == "vocab" && object) {
          tables.vocab.clear();
          tables.has_vocab = true;
        } else if (s.key[2] == "merges" && !object) {
          tables.merges.clear();
          tables.has_merges = true;
        }
      }
      s.in_object.resize(d + 2);
      s.key.resize(d + 2);
      s.in_object[d + 1] = object;
      s.key[d + 1].clear();
      return true;
    }
    if (event == E::object_end || event == E::array_end) {
      s.in_object.resize(d + 1);
      s.key.resize(d + 1);
      // A ["a", "b"] merge: taken out of the tree once complete.
      if (event == E::array_end && inside("merges") && !s.in_object[3]) {
        tables.merges.push_back(parse_merge(parsed, tables.merges.size(), where));
        return false;
      }
      return true;
    }
    if (event == E::key) {
      if (d < s.key.size()) s.key[d] = parsed.get<std::string>();
      if (inside("vocab") && s.in_object[3] && tables.has_vocab) {
        s.pending_token = s.key[3];
        return false;  // no tree node for the entry
      }
      return true;
    }
    // E::value
    if (inside("vocab") && s.in_object[3] && tables.has_vocab) {
      if (!parsed.is_number_integer()) throw bad_input(vocab_entry_error(where, s.pending_token));
      tables.vocab.emplace_back(std::move(s.pending_token), parsed.get<int64_t>());
      return false;
    }
    if (inside("merges") && !s.in_object[3] && tables.has_merges) {
      tables.merges.push_back(parse_merge(parsed, tables.merges.size(), where));
      return false;
    }
    return true;
  };
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
    merges_.insert(ia, ib, {static_cast<int32_t>(rank), im});
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
