#include "cli/batch.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/messages.h"

namespace smolvlm::cli {

namespace {

using ojson = nlohmann::ordered_json;

api::Error bad_job(const std::string& where, const std::string& what) {
  return api::Error(SMOLVLM_ERR_BAD_INPUT, where + ": " + what);
}

std::string dump_line(const ojson& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ojson error_object(smolvlm_status status, const std::string& message) {
  return ojson{{"code", error_code_name(status)}, {"message", message}};
}

// The output file, locked for this run; appends whole lines.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw api::Error(SMOLVLM_ERR_IO, path + ": cannot open for writing: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw api::Error(SMOLVLM_ERR_IO, path + ": another process is writing this output");
    }
  }
  ~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // The complete lines already there; a partial last line (a crash mid-write) is cut off.
  std::string complete_lines() {
    std::string text;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
      if (n < 0) throw api::Error(SMOLVLM_ERR_IO, path_ + ": cannot read: " + std::strerror(errno));
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      at += n;
    }
    const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (keep != text.size()) {
      if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0)
        throw api::Error(SMOLVLM_ERR_IO, path_ + ": cannot cut off a partial last line: " + std::strerror(errno));
      text.resize(keep);
    }
    return text;
  }

  void append(const std::string& line) {
    for (size_t at = 0; at < line.size();) {
      const ssize_t n = ::write(fd_, line.data() + at, line.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw api::Error(SMOLVLM_ERR_IO, path_ + ": cannot write: " + std::strerror(errno));
      at += static_cast<size_t>(n);
    }
  }

  void sync() {
    if (::fsync(fd_) != 0) throw api::Error(SMOLVLM_ERR_IO, path_ + ": cannot sync: " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// The key of an output line: its id's, or "line:N" for a line error; nullopt for a line not ours.
std::optional<std::string> record_key(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  if (j.contains("id")) return job_key(j["id"]);
  if (j.contains("line") && j["line"].is_number_integer()) return "line:" + std::to_string(j["line"].get<int64_t>());
  return std::nullopt;
}

// Calls fn(line) for each complete line of text (without its newline).
template <typename Fn>
void for_each_line(const std::string& text, Fn&& fn) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // a partial last line counts for nothing
    fn(text.substr(at, end - at));
    at = end + 1;
  }
}

// The keys of the lines an earlier run wrote (a line that is not ours is redone).
std::unordered_set<std::string> finished_keys(const std::string& text) {
  std::unordered_set<std::string> keys;
  for_each_line(text, [&](const std::string& line) {
    if (auto k = record_key(line)) keys.insert(*k);
  });
  return keys;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw api::Error(SMOLVLM_ERR_IO, path + ": cannot open");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw api::Error(SMOLVLM_ERR_IO, path + ": cannot read");
  return text;
}

struct InputLine {
  int64_t line_no;
  std::string key;
  std::string text;     // the job's line (parsed again when it runs: the input is held as text only)
  bool is_job = false;  // false: a line that cannot be a job
  ojson error_record;   // set for a line that cannot be a job
};

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

std::vector<InputLine> read_input(const std::string& path, BatchSummary& summary) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw api::Error(SMOLVLM_ERR_IO, path + ": cannot open");
  std::vector<InputLine> lines;
  std::unordered_map<std::string, int64_t> first_line;
  std::string text;
  for (int64_t line_no = 1; std::getline(in, text); ++line_no) {
    if (is_blank(text)) continue;
    ++summary.lines;
    InputLine l{line_no, "line:" + std::to_string(line_no), {}, false, nullptr};
    auto line_error = [&](const std::string& what) {
      l.error_record = ojson{{"line", line_no},
                             {"error", error_object(SMOLVLM_ERR_BAD_INPUT, path + ":" + std::to_string(line_no) + ": " + what)}};
    };
    auto j = nlohmann::json::parse(text, nullptr, false);
    std::optional<std::string> key;
    if (j.is_discarded()) line_error("not valid JSON");
    else if (!j.is_object()) line_error("expected a JSON object {\"id\": ..., ...}");
    else if (!j.contains("id")) line_error("no \"id\"");
    else if (!(key = job_key(j["id"]))) line_error("\"id\" must be a string or an integer");
    else if (auto seen = first_line.find(*key); seen != first_line.end())
      line_error("id " + j["id"].dump() + " repeats the id of line " + std::to_string(seen->second));
    else {
      first_line.emplace(*key, line_no);
      l.key = *key;
      l.text = std::move(text);
      l.is_job = true;
    }
    lines.push_back(std::move(l));
  }
  if (in.bad()) throw api::Error(SMOLVLM_ERR_IO, path + ": cannot read");
  return lines;
}

template <typename T>
T number(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = j[key];
  if constexpr (std::is_integral_v<T>) {
    const bool fits = v.is_number_unsigned()  ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                      : v.is_number_integer() ? v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                                    (std::is_unsigned_v<T> || v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()))
                                              : false;
    if (!fits) throw bad_job(where, std::string("\"") + key + "\" must be an integer in range, not " + v.dump());
    return v.get<T>();
  } else {
    if (!v.is_number()) throw bad_job(where, std::string("\"") + key + "\" must be a number");
    return v.get<T>();
  }
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = j[key];
  if (!v.is_array()) throw bad_job(where, std::string("\"") + key + "\" must be an array of strings");
  std::vector<std::string> out;
  for (const auto& s : v) {
    if (!s.is_string()) throw bad_job(where, std::string("\"") + key + "\" must be an array of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

ojson result_record(const nlohmann::json& id, const api::Result& r) {
  ojson j{{"id", id}};
  const ojson fields = result_json(r.raw(), r.raw().timings.load_s);
  for (auto it = fields.begin(); it != fields.end(); ++it) j[it.key()] = *it;
  return j;
}

}  // namespace

std::function<void(int64_t, int64_t, int64_t)> progress_bar(std::FILE* out) {
  struct State {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last{};
  };
  auto st = std::make_shared<State>();
  return [out, st](int64_t done, int64_t total, int64_t errors) {
    const auto now = std::chrono::steady_clock::now();
    if (done != total && done != 0 && now - st->last < std::chrono::milliseconds(100)) return;
    st->last = now;
    const double secs = std::chrono::duration<double>(now - st->start).count();
    const double rate = secs > 0 ? done / secs : 0;
    const int width = 30;
    const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    char eta[32] = "--:--";
    if (rate > 0) {
      const auto left = static_cast<long long>((total - done) / rate + 0.5);
      std::snprintf(eta, sizeof eta, "%lld:%02lld", left / 60, left % 60);
    }
    std::fprintf(out, "\r[%s] %lld/%lld, %lld errors, %.2f items/s, ETA %s ", bar.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), static_cast<long long>(errors), rate, eta);
    if (done == total) std::fputc('\n', out);
    std::fflush(out);
  };
}

const char* error_code_name(smolvlm_status status) {
  switch (status) {
    case SMOLVLM_OK: return "ok";
    case SMOLVLM_ERR_BAD_INPUT: return "bad_input";
    case SMOLVLM_ERR_UNSUPPORTED: return "unsupported";
    case SMOLVLM_ERR_IO: return "io";
    case SMOLVLM_ERR_STATE: return "state";
    case SMOLVLM_ERR_INTERNAL: return "internal";
  }
  return "internal";
}

nlohmann::ordered_json result_json(const smolvlm_result& r, double load_s) {
  nlohmann::ordered_json j;
  j["text"] = std::string(r.text ? r.text : "", r.text_size);
  j["token_ids"] = std::vector<int32_t>(r.token_ids, r.token_ids + r.n_tokens);
  j["prompt_tokens"] = r.prompt_tokens;
  j["stopped_on_eos"] = r.finish_reason == SMOLVLM_FINISH_EOS;
  j["finish_reason"] = smolvlm_finish_reason_name(r.finish_reason);
  const smolvlm_timings& t = r.timings;
  j["timings"] = {{"load_s", load_s},         {"preprocess_s", t.preprocess_s}, {"vision_s", t.vision_s},
                  {"prefill_s", t.prefill_s}, {"decode_s", t.decode_s},         {"kernel_path", r.kernel_path}};
  return j;
}

std::optional<std::string> job_key(const nlohmann::json& id) {
  if (id.is_string()) return "s:" + id.get<std::string>();
  if (id.is_number_integer()) return "n:" + id.dump();
  return std::nullopt;
}

int64_t job_shard(const std::string& key, int64_t count) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h % static_cast<uint64_t>(count));
}

void parse_job(const nlohmann::json& j, const std::string& where, const JobDefaults& d, Job& job) {
  static const std::set<std::string> kKeys = {"id",    "images", "prompt", "messages", "max_new_tokens",
                                              "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                                              "seed",  "split",  "stop",   "stop_ids"};
  for (const auto& [k, v] : j.items())
    if (!kKeys.count(k)) throw bad_job(where, "unknown key \"" + k + "\"");
  job.id = j["id"];
  smolvlm_request& r = job.request;
  smolvlm_request_init(&r);
  r.max_new_tokens = j.contains("max_new_tokens") ? number<int64_t>(j, "max_new_tokens", where) : d.max_new_tokens;
  r.split = d.split;
  if (j.contains("split")) {
    if (!j["split"].is_boolean()) throw bad_job(where, "\"split\" must be true or false");
    r.split = j["split"].get<bool>() ? 1 : 0;
  }
  r.sampling = d.sampling;
  if (j.contains("temperature")) r.sampling.temperature = number<float>(j, "temperature", where);
  if (j.contains("top_k")) r.sampling.top_k = number<int32_t>(j, "top_k", where);
  if (j.contains("top_p")) r.sampling.top_p = number<float>(j, "top_p", where);
  if (j.contains("min_p")) r.sampling.min_p = number<float>(j, "min_p", where);
  if (j.contains("repetition_penalty")) r.sampling.repetition_penalty = number<float>(j, "repetition_penalty", where);
  if (j.contains("seed")) r.sampling.seed = number<uint64_t>(j, "seed", where);
  if (j.contains("stop")) job.stops = string_list(j, "stop", where);
  for (const auto& s : job.stops) job.stop_ptrs.push_back(s.c_str());
  r.stop = job.stop_ptrs.data();
  r.n_stop = job.stop_ptrs.size();
  if (j.contains("stop_ids")) {
    if (!j["stop_ids"].is_array()) throw bad_job(where, "\"stop_ids\" must be an array of integers");
    for (const auto& v : j["stop_ids"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
        throw bad_job(where, "\"stop_ids\" must be an array of token ids");
      job.stop_ids.push_back(v.get<int32_t>());
    }
  }
  r.stop_ids = job.stop_ids.data();
  r.n_stop_ids = job.stop_ids.size();

  const std::vector<std::string> images = j.contains("images") ? string_list(j, "images", where) : std::vector<std::string>{};
  if (j.contains("messages")) {
    if (j.contains("prompt")) throw bad_job(where, "give \"prompt\" or \"messages\", not both");
    if (!images.empty()) throw bad_job(where, "with \"messages\", give images as image_url parts of the messages");
    if (j["messages"].is_array() && j["messages"].empty()) throw bad_job(where, "\"messages\" is empty");
    add_messages_json(j["messages"].dump(), where + ": \"messages\"", job.chat);
  } else {
    if (j.contains("prompt") && !j["prompt"].is_string()) throw bad_job(where, "\"prompt\" must be a string");
    if (images.empty() && !j.contains("prompt")) throw bad_job(where, "a job needs \"images\", a \"prompt\" or \"messages\"");
    job.chat.add(SMOLVLM_ROLE_USER);
    for (const auto& path : images) job.chat.image_file(path);
    job.chat.text(j.contains("prompt") ? j["prompt"].get<std::string>() : d.prompt);
  }
  job.chat.fill(r);
}

BatchSummary run_batch(const api::Model& model, const BatchOptions& o) {
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count)
    throw api::Error(SMOLVLM_ERR_BAD_INPUT, "shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) +
                                               ": expected I/N with 0 <= I < N");
  const auto t0 = std::chrono::steady_clock::now();
  BatchSummary s;
  std::vector<InputLine> lines = read_input(o.input, s);
  OutputFile out(o.output);
  const std::string existing = out.complete_lines();
  if (!o.resume && !existing.empty())
    throw api::Error(SMOLVLM_ERR_BAD_INPUT, o.output + ": already holds results (resume to continue it, or remove it)");
  const auto finished = finished_keys(existing);

  std::vector<const InputLine*> todo;
  for (const auto& l : lines) {
    if (job_shard(l.key, o.shard_count) != o.shard_index) continue;
    ++s.in_shard;
    if (finished.count(l.key)) ++s.skipped;
    else todo.push_back(&l);
  }
  if (o.on_progress) o.on_progress(0, static_cast<int64_t>(todo.size()), 0);
  for (const InputLine* l : todo) {
    ojson record;
    if (!l->is_job) {
      record = l->error_record;
    } else {
      const auto line = nlohmann::json::parse(l->text);  // parsed once already: valid
      Job job;
      try {
        parse_job(line, o.input + ":" + std::to_string(l->line_no), o.defaults, job);
        record = result_record(job.id, model.generate(job.request));
      } catch (const api::Error& e) {
        record = ojson{{"id", line["id"]}, {"error", error_object(e.status(), e.what())}};
      } catch (const std::bad_alloc&) {
        record = ojson{{"id", line["id"]}, {"error", error_object(SMOLVLM_ERR_IO, "out of memory")}};
      } catch (const std::exception& e) {
        record = ojson{{"id", line["id"]}, {"error", error_object(SMOLVLM_ERR_INTERNAL, e.what())}};
      }
    }
    if (record.contains("error")) ++s.errors;
    out.append(dump_line(record));
    ++s.done;
    if (o.on_progress) o.on_progress(s.done, static_cast<int64_t>(todo.size()), s.errors);
  }
  out.sync();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

MergeSummary merge_outputs(const std::string& input, const std::vector<std::string>& parts, const std::string& output) {
  BatchSummary unused;
  const std::vector<InputLine> lines = read_input(input, unused);
  std::unordered_map<std::string, std::string> by_key;
  MergeSummary m;
  for (const auto& part : parts)
    for_each_line(read_file(part), [&](const std::string& line) {
      if (auto k = record_key(line); k && !by_key.emplace(*k, line).second) ++m.duplicates;
    });
  const std::string tmp = output + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw api::Error(SMOLVLM_ERR_IO, tmp + ": cannot open for writing");
    for (const auto& l : lines) {
      auto it = by_key.find(l.key);
      if (it == by_key.end()) {
        ++m.missing;
        continue;
      }
      out << it->second << '\n';
      ++m.written;
    }
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw api::Error(SMOLVLM_ERR_IO, tmp + ": cannot write");
    }
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw api::Error(SMOLVLM_ERR_IO, output + ": cannot rename the merged file into place: " + std::strerror(errno));
  }
  return m;
}

}  // namespace smolvlm::cli
