// Text stops for streamed output: generation ends where the text first contains one of the stop
// strings, and neither the stop nor anything after it is ever shown. Text that may still turn out to
// be the start of a stop is held back until it is known not to be.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace smolvlm {

class StopStringFilter {
 public:
  // Error(BadInput) for an empty stop string (it would match before any text).
  explicit StopStringFilter(std::vector<std::string> stops);

  // Appends generated text; returns what can be shown now. Once a stop has appeared, stopped() is
  // true, the text before the stop has been returned and everything later is dropped.
  std::string push(std::string_view text);
  // The text still held back when generation ends for another reason.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace smolvlm
