// Progress output of pulls: a redrawn bar on a terminal, plain lines in logs.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "hub/pull.h"

namespace smolvlm::hub {

namespace {

using Clock = std::chrono::steady_clock;

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 4) {
    bytes /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string human_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 99 * 3600) return "--:--";
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

class Printer {
 public:
  Printer(std::FILE* out, bool tty) : out_(out), tty_(tty) {}

  void on_event(const PullEvent& e) {
    auto now = Clock::now();
    switch (e.kind) {
      case PullEvent::Kind::Resolved:
        start_ = now;
        std::fprintf(out_, "%s: commit %s, %zu file(s) to download (%s)\n", e.repo.c_str(), e.commit.c_str(),
                     e.files_to_download, human_bytes(static_cast<double>(e.total_bytes)).c_str());
        break;
      case PullEvent::Kind::FileSkipped:
        std::fprintf(out_, "  %s: already in the cache\n", e.file.c_str());
        break;
      case PullEvent::Kind::FileStart:
        file_start_ = now;
        file_start_bytes_ = e.file_done;
        // A bar is drawn at once; plain lines only for downloads that take a while.
        last_draw_ = tty_ ? Clock::time_point{} : now;
        if (!tty_)
          std::fprintf(out_, "  %s: downloading %s%s\n", e.file.c_str(), human_bytes(static_cast<double>(e.file_total)).c_str(),
                       e.file_done ? (", resuming at " + human_bytes(static_cast<double>(e.file_done))).c_str() : "");
        break;
      case PullEvent::Kind::FileProgress:
        if (now - last_draw_ < (tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000))) break;
        last_draw_ = now;
        if (tty_) draw_bar(e, now);
        else std::fprintf(out_, "  %s\n", status_text(e, now).c_str());
        break;
      case PullEvent::Kind::Retry:
        if (tty_) std::fprintf(out_, "\r\033[K");
        std::fprintf(out_, "  %s: connection lost at %s (%s); resuming\n", e.file.c_str(),
                     human_bytes(static_cast<double>(e.file_done)).c_str(), e.message.c_str());
        break;
      case PullEvent::Kind::FileDone: {
        double secs = std::chrono::duration<double>(now - file_start_).count();
        double got = static_cast<double>(e.file_total - file_start_bytes_);
        if (tty_) std::fprintf(out_, "\r\033[K");
        std::fprintf(out_, "  %s: done, %s in %.1f s (%s/s)\n", e.file.c_str(), human_bytes(got).c_str(), secs,
                     human_bytes(secs > 0 ? got / secs : 0).c_str());
        break;
      }
    }
    std::fflush(out_);
  }

 private:
  std::string status_text(const PullEvent& e, Clock::time_point now) const {
    double secs = std::chrono::duration<double>(now - file_start_).count();
    double rate = secs > 0 ? static_cast<double>(e.file_done - file_start_bytes_) / secs : 0;
    double eta = rate > 0 ? static_cast<double>(e.total_bytes - e.total_done) / rate : -1;
    int pct = e.file_total ? static_cast<int>(100.0 * static_cast<double>(e.file_done) / static_cast<double>(e.file_total)) : 100;
    int total_pct =
        e.total_bytes ? static_cast<int>(100.0 * static_cast<double>(e.total_done) / static_cast<double>(e.total_bytes)) : 100;
    return e.file + " " + std::to_string(pct) + "% " + human_bytes(static_cast<double>(e.file_done)) + "/" +
           human_bytes(static_cast<double>(e.file_total)) + " " + human_bytes(rate) + "/s ETA " + human_duration(eta) +
           " | total " + std::to_string(total_pct) + "% " + human_bytes(static_cast<double>(e.total_done)) + "/" +
           human_bytes(static_cast<double>(e.total_bytes));
  }

  void draw_bar(const PullEvent& e, Clock::time_point now) const {
    constexpr int kWidth = 24;
    int filled = e.file_total ? static_cast<int>(kWidth * static_cast<double>(e.file_done) / static_cast<double>(e.file_total)) : kWidth;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r\033[K  [%s] %s", bar.c_str(), status_text(e, now).c_str());
  }

  std::FILE* out_;
  bool tty_;
  Clock::time_point start_{}, file_start_{}, last_draw_{};
  uint64_t file_start_bytes_ = 0;
};

}  // namespace

std::function<void(const PullEvent&)> progress_printer(std::FILE* out, bool tty) {
  auto printer = std::make_shared<Printer>(out, tty);
  return [printer](const PullEvent& e) { printer->on_event(e); };
}

}  // namespace smolvlm::hub
