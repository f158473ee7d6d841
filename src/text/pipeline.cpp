#include "text/pipeline.h"

#include <algorithm>
#include <array>
#include <memory>

#include "core/error.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace smolvlm::text {

using nlohmann::json;

const json& require(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw bad_input(where + ": expected an object, got " + std::string(j.type_name()));
  auto it = j.find(key);
  if (it == j.end()) throw bad_input(where + ": missing field \"" + key + "\"");
  return *it;
}

std::string get_string(const json& j, const char* key, const std::string& where) {
  const json& v = require(j, key, where);
  if (!v.is_string()) throw bad_input(where + "." + key + ": expected a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

bool get_bool(const json& j, const char* key, bool fallback, const std::string& where) {
  if (!j.is_object()) throw bad_input(where + ": expected an object, got " + std::string(j.type_name()));
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw bad_input(where + "." + key + ": expected a boolean, got " + std::string(it->type_name()));
  return it->get<bool>();
}

static int64_t get_int(const json& j, const char* key, int64_t fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) throw bad_input(where + "." + key + ": expected an integer, got " + std::string(it->type_name()));
  return it->get<int64_t>();
}

static std::string type_of(const json& j, const std::string& where) { return get_string(j, "type", where); }

static std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) throw internal_error("tokenizer: invalid UTF-8 inside the pipeline");
    out.push_back(utf8_decode_at(s, i, n));
    i += n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Patterns: what a Split / Replace matches, as HF's Pattern::find_matches sees it.

struct Span {
  size_t begin, end;
  bool is_match;
};

using MatchFinder = std::function<std::vector<std::pair<size_t, size_t>>(std::string_view)>;

static std::vector<std::pair<size_t, size_t>> find_literal(std::string_view s, const std::string& needle) {
  std::vector<std::pair<size_t, size_t>> out;
  if (needle.empty()) return out;
  for (size_t pos = s.find(needle); pos != std::string_view::npos; pos = s.find(needle, pos + needle.size()))
    out.emplace_back(pos, pos + needle.size());
  return out;
}

static MatchFinder make_pattern(const json& j, const std::string& where) {
  if (!j.is_object()) throw bad_input(where + ": expected {\"String\": ...} or {\"Regex\": ...}");
  if (auto it = j.find("String"); it != j.end() && it->is_string()) {
    std::string needle = it->get<std::string>();
    return [needle](std::string_view s) { return find_literal(s, needle); };
  }
  if (auto it = j.find("Regex"); it != j.end() && it->is_string()) {
    auto re = std::make_shared<Regex>(it->get<std::string>(), where);
    return [re](std::string_view s) { return re->find_all(s); };
  }
  throw bad_input(where + ": expected {\"String\": ...} or {\"Regex\": ...}, got " + j.dump());
}

static std::vector<Span> to_spans(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches) {
  std::vector<Span> spans;
  if (s.empty()) return {{0, 0, false}};
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b != prev) spans.push_back({prev, b, false});
    spans.push_back({b, e, true});
    prev = e;
  }
  if (prev != s.size()) spans.push_back({prev, s.size(), false});
  return spans;
}

// Each character satisfying `pred` is its own match.
template <typename Pred>
static std::vector<std::pair<size_t, size_t>> find_chars(std::string_view s, Pred pred) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) throw internal_error("tokenizer: invalid UTF-8 inside the pipeline");
    if (pred(utf8_decode_at(s, i, n))) out.emplace_back(i, i + n);
    i += n;
  }
  return out;
}

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

static Behavior parse_behavior(const json& j, const std::string& where) {
  std::string b = j.is_string() ? j.get<std::string>() : "";
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  throw bad_input(where + ".behavior: expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got " + j.dump());
}

// HF NormalizedString::split: which [begin, end) ranges survive for a behavior.
static std::vector<std::pair<size_t, size_t>> apply_behavior(const std::vector<Span>& spans, Behavior behavior) {
  std::vector<std::pair<size_t, size_t>> out;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::Removed:
      for (auto& s : spans)
        if (!s.is_match) out.emplace_back(s.begin, s.end);
      break;
    case Behavior::Isolated:
      for (auto& s : spans) out.emplace_back(s.begin, s.end);
      break;
    case Behavior::MergedWithPrevious:
      for (auto& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) out.back().second = s.end;
        else out.emplace_back(s.begin, s.end);
        previous_match = s.is_match;
      }
      break;
    case Behavior::MergedWithNext: {
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) out.back().first = it->begin;
        else out.emplace_back(it->begin, it->end);
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case Behavior::Contiguous:
      for (size_t i = 0; i < spans.size(); ++i) {
        auto& s = spans[i];
        if (i > 0 && s.is_match == previous_match) out.back().second = s.end;
        else out.emplace_back(s.begin, s.end);
        previous_match = s.is_match;
      }
      break;
  }
  return out;
}

static void split_pieces(std::vector<Piece>& pieces, const MatchFinder& find, Behavior behavior, bool invert) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (auto& piece : pieces) {
    std::vector<Span> spans = to_spans(piece.text, find(piece.text));
    if (invert)
      for (auto& s : spans) s.is_match = !s.is_match;
    for (auto [b, e] : apply_behavior(spans, behavior)) {
      if (b == e) continue;
      out.push_back({piece.text.substr(b, e - b), piece.at_origin && b == 0});
    }
  }
  pieces = std::move(out);
}

static std::string replace_all(std::string_view s, const MatchFinder& find, const std::string& content) {
  std::string out;
  size_t prev = 0;
  for (auto [b, e] : find(s)) {
    out.append(s.substr(prev, b - prev));
    out += content;
    prev = e;
  }
  out.append(s.substr(prev));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Normalizers

Normalizer make_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return {};
  std::string type = type_of(j, where);
  if (type == "Sequence") {
    const json& list = require(j, "normalizers", where);
    if (!list.is_array()) throw bad_input(where + ".normalizers: expected an array");
    std::vector<Normalizer> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto n = make_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]");
      if (n) parts.push_back(std::move(n));
    }
    return [parts](std::string s) {
      for (auto& p : parts) s = p(std::move(s));
      return s;
    };
  }
  if (type == "NFC") return [](std::string s) { return normalize_unicode(s, NormalForm::NFC); };
  if (type == "NFD") return [](std::string s) { return normalize_unicode(s, NormalForm::NFD); };
  if (type == "NFKC") return [](std::string s) { return normalize_unicode(s, NormalForm::NFKC); };
  if (type == "NFKD") return [](std::string s) { return normalize_unicode(s, NormalForm::NFKD); };
  if (type == "Lowercase") return [](std::string s) { return to_lowercase(s); };
  if (type == "Strip") {
    bool left = get_bool(j, "strip_left", true, where), right = get_bool(j, "strip_right", true, where);
    return [left, right](std::string s) {
      auto cps = code_points(s);
      size_t b = 0, e = cps.size();
      if (left)
        while (b < e && is_whitespace(cps[b])) ++b;
      if (right)
        while (e > b && is_whitespace(cps[e - 1])) --e;
      std::string out;
      for (size_t i = b; i < e; ++i) utf8_append(out, cps[i]);
      return out;
    };
  }
  if (type == "Replace") {
    MatchFinder find = make_pattern(require(j, "pattern", where), where + ".pattern");
    std::string content = get_string(j, "content", where);
    return [find, content](std::string s) { return replace_all(s, find, content); };
  }
  if (type == "Prepend") {
    std::string prefix = get_string(j, "prepend", where);
    return [prefix](std::string s) { return s.empty() ? s : prefix + s; };
  }
  throw unsupported(where + ": normalizer type \"" + type + "\" is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend)");
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizers

static const char* kByteLevelRegex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {
struct ByteTable {
  std::array<std::string, 256> to_unicode;
  std::array<int, 0x144> to_byte;
  ByteTable() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      utf8_append(to_unicode[b], c);
      to_byte[c] = b;
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable table;
  return table;
}
}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return byte_table().to_unicode[byte]; }
int unicode_to_byte(char32_t c) { return c < 0x144 ? byte_table().to_byte[c] : -1; }

static std::string metaspace_replacement(const json& j, const std::string& where) {
  std::string r = get_string(j, "replacement", where);
  if (code_points(r).size() != 1) throw bad_input(where + ".replacement: expected one character, got \"" + r + "\"");
  return r;
}

enum class PrependScheme { Always, First, Never };

static PrependScheme metaspace_scheme(const json& j, const std::string& where) {
  if (auto it = j.find("prepend_scheme"); it != j.end() && !it->is_null()) {
    std::string s = it->is_string() ? it->get<std::string>() : "";
    if (s == "always") return PrependScheme::Always;
    if (s == "first") return PrependScheme::First;
    if (s == "never") return PrependScheme::Never;
    throw bad_input(where + ".prepend_scheme: expected always, first or never, got " + it->dump());
  }
  return get_bool(j, "add_prefix_space", true, where) ? PrependScheme::Always : PrependScheme::Never;
}

PreTokenizer make_pre_tokenizer(const json& j, const std::string& where) {
  if (j.is_null()) return {};
  std::string type = type_of(j, where);
  if (type == "Sequence") {
    const json& list = require(j, "pretokenizers", where);
    if (!list.is_array()) throw bad_input(where + ".pretokenizers: expected an array");
    std::vector<PreTokenizer> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = make_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
      if (p) parts.push_back(std::move(p));
    }
    return [parts](std::vector<Piece>& pieces) {
      for (auto& p : parts) p(pieces);
    };
  }
  if (type == "ByteLevel") {
    bool add_prefix_space = get_bool(j, "add_prefix_space", true, where);
    bool use_regex = get_bool(j, "use_regex", true, where);
    std::shared_ptr<Regex> re = use_regex ? std::make_shared<Regex>(kByteLevelRegex, where) : nullptr;
    return [add_prefix_space, re](std::vector<Piece>& pieces) {
      if (add_prefix_space)
        for (auto& p : pieces)
          if (p.text.empty() || p.text[0] != ' ') p.text.insert(p.text.begin(), ' ');
      if (re) split_pieces(pieces, [&](std::string_view s) { return re->find_all(s); }, Behavior::Isolated, false);
      const auto& table = byte_table();
      for (auto& p : pieces) {
        std::string mapped;
        mapped.reserve(p.text.size() * 2);
        for (unsigned char b : p.text) mapped += table.to_unicode[b];
        p.text = std::move(mapped);
      }
    };
  }
  if (type == "Split") {
    MatchFinder find = make_pattern(require(j, "pattern", where), where + ".pattern");
    Behavior behavior = parse_behavior(require(j, "behavior", where), where);
    bool invert = get_bool(j, "invert", false, where);
    return [find, behavior, invert](std::vector<Piece>& pieces) { split_pieces(pieces, find, behavior, invert); };
  }
  if (type == "Digits") {
    bool individual = get_bool(j, "individual_digits", false, where);
    Behavior behavior = individual ? Behavior::Isolated : Behavior::Contiguous;
    return [behavior](std::vector<Piece>& pieces) {
      split_pieces(pieces, [](std::string_view s) { return find_chars(s, is_numeric); }, behavior, false);
    };
  }
  if (type == "Whitespace") {
    auto re = std::make_shared<Regex>(R"(\w+|[^\w\s]+)", where);
    return [re](std::vector<Piece>& pieces) {
      split_pieces(pieces, [&](std::string_view s) { return re->find_all(s); }, Behavior::Removed, true);
    };
  }
  if (type == "WhitespaceSplit") {
    return [](std::vector<Piece>& pieces) {
      split_pieces(pieces, [](std::string_view s) { return find_chars(s, is_whitespace); }, Behavior::Removed, false);
    };
  }
  if (type == "Punctuation") {
    Behavior behavior = j.contains("behavior") ? parse_behavior(j["behavior"], where) : Behavior::Isolated;
    return [behavior](std::vector<Piece>& pieces) {
      split_pieces(pieces, [](std::string_view s) { return find_chars(s, is_punctuation); }, behavior, false);
    };
  }
  if (type == "BertPreTokenizer") {
    return [](std::vector<Piece>& pieces) {
      split_pieces(pieces, [](std::string_view s) { return find_chars(s, is_whitespace); }, Behavior::Removed, false);
      split_pieces(pieces, [](std::string_view s) { return find_chars(s, is_punctuation); }, Behavior::Isolated, false);
    };
  }
  if (type == "Metaspace") {
    std::string replacement = metaspace_replacement(j, where);
    PrependScheme scheme = metaspace_scheme(j, where);
    bool split = get_bool(j, "split", true, where);
    return [replacement, scheme, split](std::vector<Piece>& pieces) {
      for (auto& p : pieces) {
        p.text = replace_all(p.text, [](std::string_view s) { return find_literal(s, " "); }, replacement);
        bool starts = p.text.compare(0, replacement.size(), replacement) == 0;
        if (!starts && (scheme == PrependScheme::Always || (scheme == PrependScheme::First && p.at_origin)))
          p.text = replacement + p.text;
      }
      if (split)
        split_pieces(pieces, [&](std::string_view s) { return find_literal(s, replacement); }, Behavior::MergedWithNext, false);
    };
  }
  throw unsupported(where + ": pre-tokenizer type \"" + type +
                    "\" is not supported (supported: Sequence, ByteLevel, Split, Digits, Whitespace, WhitespaceSplit, "
                    "Punctuation, BertPreTokenizer, Metaspace)");
}

// ---------------------------------------------------------------------------------------------
// Decoders

static std::string byte_level_to_text(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (auto& t : tokens) {
    for (size_t i = 0; i < t.size();) {
      size_t n = utf8_sequence_length(t, i);
      if (n == 0) {  // not a character: cannot come from a vocabulary string, keep the byte
        bytes += t[i++];
        continue;
      }
      int b = unicode_to_byte(utf8_decode_at(t, i, n));
      if (b >= 0) bytes += static_cast<char>(b);
      else bytes.append(t, i, n);
      i += n;
    }
  }
  return utf8_lossy(bytes);
}

// `<0xHH>` -> the byte, else -1.
static int byte_fallback_value(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Decoder make_decoder(const json& j, const std::string& where) {
  if (j.is_null()) return {};
  std::string type = type_of(j, where);
  if (type == "Sequence") {
    const json& list = require(j, "decoders", where);
    if (!list.is_array()) throw bad_input(where + ".decoders: expected an array");
    std::vector<Decoder> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto d = make_decoder(list[i], where + ".decoders[" + std::to_string(i) + "]");
      if (d) parts.push_back(std::move(d));
    }
    return [parts](std::vector<std::string> tokens) {
      for (auto& d : parts) tokens = d(std::move(tokens));
      return tokens;
    };
  }
  if (type == "ByteLevel")
    return [](std::vector<std::string> tokens) { return std::vector<std::string>{byte_level_to_text(tokens)}; };
  if (type == "ByteFallback") {
    return [](std::vector<std::string> tokens) {
      std::vector<std::string> out;
      std::string pending;
      auto flush = [&] {
        if (pending.empty()) return;
        if (utf8_is_valid(pending)) {
          out.push_back(pending);
        } else {
          std::string r;
          for (size_t i = 0; i < pending.size(); ++i) r += "\xEF\xBF\xBD";  // one U+FFFD per byte
          out.push_back(r);
        }
        pending.clear();
      };
      for (auto& t : tokens) {
        int b = byte_fallback_value(t);
        if (b >= 0) {
          pending += static_cast<char>(b);
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      return out;
    };
  }
  if (type == "Fuse") {
    return [](std::vector<std::string> tokens) {
      std::string all;
      for (auto& t : tokens) all += t;
      return std::vector<std::string>{all};
    };
  }
  if (type == "Strip") {
    std::string content = get_string(j, "content", where);
    auto cps = code_points(content);
    if (cps.size() != 1) throw bad_input(where + ".content: expected one character, got \"" + content + "\"");
    char32_t c = cps[0];
    int64_t start = get_int(j, "start", 0, where), stop = get_int(j, "stop", 0, where);
    return [c, start, stop](std::vector<std::string> tokens) {
      for (auto& t : tokens) {
        auto chars = code_points(t);
        size_t b = 0, e = chars.size();
        while (b < e && static_cast<int64_t>(b) < start && chars[b] == c) ++b;
        for (int64_t k = 0; k < stop && e > b && chars[e - 1] == c; ++k) --e;
        std::string out;
        for (size_t i = b; i < e; ++i) utf8_append(out, chars[i]);
        t = std::move(out);
      }
      return tokens;
    };
  }
  if (type == "Replace") {
    MatchFinder find = make_pattern(require(j, "pattern", where), where + ".pattern");
    std::string content = get_string(j, "content", where);
    return [find, content](std::vector<std::string> tokens) {
      for (auto& t : tokens) t = replace_all(t, find, content);
      return tokens;
    };
  }
  if (type == "Metaspace") {
    std::string replacement = metaspace_replacement(j, where);
    bool strip_first = metaspace_scheme(j, where) != PrependScheme::Never;
    return [replacement, strip_first](std::vector<std::string> tokens) {
      for (size_t i = 0; i < tokens.size(); ++i) {
        std::string t = replace_all(tokens[i], [&](std::string_view s) { return find_literal(s, replacement); }, " ");
        if (i == 0 && strip_first && !t.empty() && t[0] == ' ') t.erase(0, 1);
        tokens[i] = std::move(t);
      }
      return tokens;
    };
  }
  if (type == "BPEDecoder") {
    std::string suffix = j.contains("suffix") ? get_string(j, "suffix", where) : "</w>";
    return [suffix](std::vector<std::string> tokens) {
      for (size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = replace_all(tokens[i], [&](std::string_view s) { return find_literal(s, suffix); }, i + 1 == tokens.size() ? "" : " ");
      return tokens;
    };
  }
  throw unsupported(where + ": decoder type \"" + type +
                    "\" is not supported (supported: Sequence, ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, BPEDecoder)");
}

// ---------------------------------------------------------------------------------------------
// Post-processors

static std::pair<std::string, int32_t> token_and_id(const json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_string() || !j[1].is_number_integer())
    throw bad_input(where + ": expected [\"token\", id], got " + j.dump());
  return {j[0].get<std::string>(), j[1].get<int32_t>()};
}

PostProcessor make_post_processor(const json& j, const std::string& where) {
  if (j.is_null()) return {};
  std::string type = type_of(j, where);
  if (type == "Sequence") {
    const json& list = require(j, "processors", where);
    if (!list.is_array()) throw bad_input(where + ".processors: expected an array");
    std::vector<PostProcessor> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = make_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
      if (p) parts.push_back(std::move(p));
    }
    return [parts](std::vector<int32_t>& ids, std::vector<std::string>* tokens) {
      for (auto& p : parts) p(ids, tokens);
    };
  }
  if (type == "ByteLevel") return [](std::vector<int32_t>&, std::vector<std::string>*) {};  // offsets only
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto cls = token_and_id(require(j, "cls", where), where + ".cls");
    auto sep = token_and_id(require(j, "sep", where), where + ".sep");
    return [cls, sep](std::vector<int32_t>& ids, std::vector<std::string>* tokens) {
      ids.insert(ids.begin(), cls.second);
      ids.push_back(sep.second);
      if (tokens) {
        tokens->insert(tokens->begin(), cls.first);
        tokens->push_back(sep.first);
      }
    };
  }
  if (type == "TemplateProcessing") {
    const json& single = require(j, "single", where);
    const json& specials = require(j, "special_tokens", where);
    if (!single.is_array()) throw bad_input(where + ".single: expected an array");
    // The template as a list of insertions; an empty entry marks where the sequence goes.
    struct Item {
      std::vector<int32_t> ids;
      std::vector<std::string> tokens;
      bool is_sequence = false;
    };
    std::vector<Item> items;
    for (size_t i = 0; i < single.size(); ++i) {
      std::string w = where + ".single[" + std::to_string(i) + "]";
      const json& it = single[i];
      if (it.is_object() && it.contains("Sequence")) {
        items.push_back({{}, {}, true});
      } else if (it.is_object() && it.contains("SpecialToken")) {
        std::string id = get_string(it["SpecialToken"], "id", w + ".SpecialToken");
        auto sp = specials.find(id);
        if (sp == specials.end()) throw bad_input(w + ": special token \"" + id + "\" is not in special_tokens");
        Item item;
        const json& ids = require(*sp, "ids", where + ".special_tokens." + id);
        const json& toks = require(*sp, "tokens", where + ".special_tokens." + id);
        if (!ids.is_array() || !toks.is_array() || ids.size() != toks.size())
          throw bad_input(where + ".special_tokens." + id + ": ids and tokens must be arrays of equal length");
        for (size_t k = 0; k < ids.size(); ++k) {
          if (!ids[k].is_number_integer() || !toks[k].is_string())
            throw bad_input(where + ".special_tokens." + id + ": ids must be integers and tokens strings");
          item.ids.push_back(ids[k].get<int32_t>());
          item.tokens.push_back(toks[k].get<std::string>());
        }
        items.push_back(std::move(item));
      } else {
        throw bad_input(w + ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, got " + it.dump());
      }
    }
    return [items](std::vector<int32_t>& ids, std::vector<std::string>* tokens) {
      std::vector<int32_t> out_ids;
      std::vector<std::string> out_tokens;
      for (auto& item : items) {
        if (item.is_sequence) {
          out_ids.insert(out_ids.end(), ids.begin(), ids.end());
          if (tokens) out_tokens.insert(out_tokens.end(), tokens->begin(), tokens->end());
        } else {
          out_ids.insert(out_ids.end(), item.ids.begin(), item.ids.end());
          if (tokens) out_tokens.insert(out_tokens.end(), item.tokens.begin(), item.tokens.end());
        }
      }
      ids = std::move(out_ids);
      if (tokens) *tokens = std::move(out_tokens);
    };
  }
  throw unsupported(where + ": post-processor type \"" + type +
                    "\" is not supported (supported: Sequence, ByteLevel, TemplateProcessing, BertProcessing, RobertaProcessing)");
}

}  // namespace smolvlm::text
