#include "text/regex.h"

#include <oniguruma.h>

#include <memory>
#include <mutex>

#include "core/error.h"
#include "text/unicode.h"

namespace smolvlm::text {

static void init_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

static std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return std::string(reinterpret_cast<const char*>(buf), n > 0 ? static_cast<size_t>(n) : 0);
}

Regex::Regex(const std::string& pattern, const std::string& what) {
  init_oniguruma();
  OnigErrorInfo info{};
  auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  int r = onig_new(&regex_, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &info);
  if (r != ONIG_NORMAL) {
    regex_ = nullptr;
    throw bad_input(what + ": invalid regular expression /" + pattern + "/: " + onig_message(r, &info));
  }
}

Regex::~Regex() {
  if (regex_) onig_free(regex_);
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view s) const {
  std::vector<std::pair<size_t, size_t>> out;
  std::unique_ptr<OnigRegion, void (*)(OnigRegion*)> region(onig_region_new(), [](OnigRegion* r) { onig_region_free(r, 1); });
  auto* begin = reinterpret_cast<const OnigUChar*>(s.data());
  auto* end = begin + s.size();
  size_t start = 0;
  while (start <= s.size()) {
    int r = onig_search(regex_, begin, end, begin + start, end, region.get(), ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) break;
    if (r < 0) throw bad_input("regular expression search failed: " + onig_message(r, nullptr));
    size_t mb = static_cast<size_t>(region->beg[0]), me = static_cast<size_t>(region->end[0]);
    if (me == mb) {  // empty match: record it once and step over one character
      if (out.empty() || out.back().second != mb) out.emplace_back(mb, me);
      if (mb >= s.size()) break;
      size_t n = utf8_sequence_length(s, mb);
      start = mb + (n ? n : 1);
    } else {
      out.emplace_back(mb, me);
      start = me;
    }
  }
  return out;
}

}  // namespace smolvlm::text
