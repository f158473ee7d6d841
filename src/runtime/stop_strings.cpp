#include "runtime/stop_strings.h"

#include <algorithm>

#include "core/error.h"

namespace smolvlm {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); ++i)
    if (stops_[i].empty()) throw bad_input("stop string " + std::to_string(i) + " is empty");
}

std::string StopStringFilter::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold the longest tail that is a proper prefix of some stop: it may complete with later text.
  // Everything before it can never be part of a stop. (A stop begins with a UTF-8 lead byte, so the
  // split never cuts a character.)
  size_t hold = 0;
  for (const auto& s : stops_)
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k)
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopStringFilter::finish() {
  std::string out;
  out.swap(held_);
  return stopped_ ? std::string() : out;
}

}  // namespace smolvlm
