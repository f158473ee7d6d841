#include "hub/pull.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "core/sha256.h"
#include "hub/http.h"
#include "hub/model_ref.h"
#include "io/file.h"

namespace smolvlm::hub {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr size_t kMaxApiAnswer = size_t(64) << 20;
constexpr size_t kMaxIndexFile = size_t(64) << 20;

bool is_disk_errno(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG; }

PullError disk_error(const fs::path& path, const std::string& what, int err) {
  std::string advice = is_disk_errno(err) ? "; free some space (or point HF_HUB_CACHE at a larger disk) and pull again: "
                                            "the partial download is kept and resumed"
                                          : "; check the permissions of the cache folder (or set HF_HUB_CACHE)";
  return pull_error(PullFailure::Disk, path.string() + ": " + what + ": " + std::strerror(err) + advice);
}

void create_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw disk_error(dir, "cannot create folder", ec.value());
}

// What one HEAD of a resolve URL tells (huggingface_hub's get_hf_file_metadata).
struct FileMetadata {
  std::string etag;
  uint64_t size = 0;
  bool lfs = false;           // X-Linked-Etag present: the ETag is the content's sha256
  std::string download_url;   // the redirect target for LFS files, else the resolve URL
};

// ETags come as `"abc"` or `W/"abc"`; the cache names blobs by the bare value.
std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

bool safe_blob_name(const std::string& etag) {
  if (etag.empty() || etag.size() > 200 || etag == "." || etag == "..") return false;
  for (char c : etag)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

bool safe_repo_file(const std::string& name) {
  if (name.empty() || name.size() > 1024 || name.front() == '/') return false;
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\\') return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string seg = name.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return true;
}

uint64_t parse_size(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    throw pull_error(PullFailure::Server, what + ": expected a byte count, got \"" + text.substr(0, 40) + "\"");
  return std::stoull(text);
}

// An open file descriptor that closes itself.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Appends to a file in 4 MiB writes. Network reads arrive in pieces of a few KiB, and the page cache
// keeps a file in folios no larger than the writes that filled it: every later run that maps the
// weights then pays one fault per 64 KiB and a slow unmap (about 50 ms for 500 MB, against 5 ms for a
// file written in large pieces).
class BufferedAppend {
 public:
  BufferedAppend(int fd, const fs::path& path) : fd_(fd), path_(path) { buffer_.reserve(kBytes); }
  void append(const char* data, size_t size) {
    while (size > 0) {
      const size_t take = std::min(size, kBytes - buffer_.size());
      buffer_.insert(buffer_.end(), data, data + take);
      data += take;
      size -= take;
      if (buffer_.size() == kBytes) flush();
    }
  }
  // Writes what is buffered: the file then holds every byte appended so far.
  void flush() {
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(done));
        throw disk_error(path_, "write failed", err);
      }
      done += static_cast<size_t>(w);
    }
    buffer_.clear();
  }

 private:
  static constexpr size_t kBytes = size_t(4) << 20;
  int fd_;
  fs::path path_;
  std::vector<char> buffer_;
};

// huggingface_hub serializes downloads of one blob with .locks/<repo folder>/<etag>.lock; we take the
// same lock so a Python download and ours never write the same .incomplete file at once.
class BlobLock {
 public:
  explicit BlobLock(const fs::path& path) : fd_(-1) {
    create_dirs(path.parent_path());
    fd_.fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_.fd < 0) throw disk_error(path, "cannot create lock file", errno);
    while (::flock(fd_.fd, LOCK_EX) != 0) {
      if (errno != EINTR) throw disk_error(path, "cannot lock", errno);
    }
  }

 private:
  Fd fd_;
};

class Puller {
 public:
  Puller(HubId id, const PullOptions& options)
      : id_(std::move(id)),
        options_(options),
        endpoint_(options.endpoint.empty() ? default_endpoint() : options.endpoint),
        token_(options.token ? *options.token : default_token()),
        cache_root_(options.cache_root.empty() ? cache_dir() : options.cache_root),
        repo_(cache_root_, id_.repo),
        http_(token_) {
    while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  }

  PullResult run() {
    PullResult result;
    result.repo = id_.repo;
    result.revision = id_.revision;
    auto [commit, siblings] = resolve_revision();
    result.commit = commit;
    result.snapshot_dir = repo_.snapshot_dir(commit);
    std::vector<std::string> files = select_files(commit, siblings);

    // First what is missing and how large it is (HEAD), so progress can show totals.
    struct Pending {
      size_t index;
      FileMetadata meta;
    };
    std::vector<Pending> pending;
    std::vector<size_t> cached;
    uint64_t total = 0;
    for (const std::string& file : files) {
      if (fetched_index_ && fetched_index_->name == file) {  // downloaded while choosing the shards
        result.bytes_downloaded += fetched_index_->bytes_downloaded;
        result.files.push_back(*fetched_index_);
        continue;
      }
      PulledFile pf;
      pf.name = file;
      std::error_code ec;
      fs::path link = repo_.snapshot_file(commit, file);
      if (fs::exists(link, ec)) {
        pf.size = fs::file_size(link, ec);
        pf.etag = fs::read_symlink(link, ec).filename().string();
        cached.push_back(result.files.size());
        result.files.push_back(pf);
        continue;
      }
      FileMetadata meta = head_file(commit, file);
      pf.etag = meta.etag;
      pf.size = meta.size;
      pending.push_back({result.files.size(), meta});
      result.files.push_back(pf);
      total += meta.size - std::min(meta.size, present_bytes(meta.etag));
    }
    total_bytes_ = total;
    emit(PullEvent::Kind::Resolved, commit, "", 0, 0, pending.size());
    for (size_t i : cached) {
      const PulledFile& pf = result.files[i];
      emit(PullEvent::Kind::FileSkipped, commit, pf.name, pf.size, pf.size, pending.size());
    }

    for (const Pending& p : pending) {
      PulledFile& pf = result.files[p.index];
      fetch_blob(commit, pf, p.meta);
      repo_.link_snapshot_file(commit, pf.name, p.meta.etag);
      result.bytes_downloaded += pf.bytes_downloaded;
      emit(PullEvent::Kind::FileDone, commit, pf.name, pf.size, pf.size, pending.size());
    }
    try {
      repo_.write_ref(id_.revision, commit);
    } catch (const Error& e) {
      throw pull_error(PullFailure::Disk, e.what());
    }
    return result;
  }

 private:
  std::string resolve_url(const std::string& commit, const std::string& file) const {
    return endpoint_ + "/" + id_.repo + "/resolve/" + url_escape(commit, false) + "/" + url_escape(file, true);
  }

  void emit(PullEvent::Kind kind, const std::string& commit, const std::string& file, uint64_t done, uint64_t size,
            size_t files_to_download, const std::string& message = {}) {
    if (!options_.on_event) return;
    PullEvent e;
    e.kind = kind;
    e.repo = id_.repo;
    e.commit = commit;
    e.file = file;
    e.file_done = done;
    e.file_total = size;
    e.total_done = total_done_;
    e.total_bytes = total_bytes_;
    e.files_to_download = files_to_download;
    e.message = message;
    options_.on_event(e);
  }

  // Turns an HTTP error status into the failure a user can act on.
  [[noreturn]] void throw_http_error(const HttpResponse& r, const std::string& what, const std::string& file) const {
    std::string code = r.header("x-error-code");
    std::string server_message = r.header("x-error-message");
    std::string detail = " (HTTP " + std::to_string(r.status) + (server_message.empty() ? "" : ": " + server_message) + ")";
    std::string tokens = "create one at https://huggingface.co/settings/tokens";
    if (code == "RepoNotFound" || (r.status == 404 && file.empty() && code != "RevisionNotFound"))
      throw pull_error(PullFailure::NotFound,
                       "no repository " + id_.repo + " on " + endpoint_ + detail +
                           ": check the name (org/name); a private or gated repository also needs an access token (HF_TOKEN)");
    if (code == "RevisionNotFound")
      throw pull_error(PullFailure::NotFound, id_.repo + " has no revision \"" + id_.revision + "\"" + detail +
                                                  ": the revision must be a branch, tag or commit hash of it");
    if (code == "EntryNotFound" || r.status == 404)
      throw pull_error(PullFailure::NotFound, id_.repo + " has no file " + file + detail);
    if (r.status == 401) {
      if (token_.empty())
        throw pull_error(PullFailure::Auth, id_.repo + " needs a token" + detail +
                                                ": the repository is gated or private and no access token was given (HF_TOKEN; " +
                                                tokens + ")");
      throw pull_error(PullFailure::Auth, "the token was refused for " + id_.repo + detail +
                                              ": check the access token (HF_TOKEN; " + tokens + ")");
    }
    if (r.status == 403)
      throw pull_error(PullFailure::Auth, "no access to " + id_.repo + detail +
                                              ": request access on the model's page, or use a token that has it");
    throw pull_error(PullFailure::Server, what + ": unexpected answer" + detail + " from " + r.url +
                                              "; try again later");
  }

  [[noreturn]] void throw_transport(const TransportError& e, const std::string& context) const {
    throw pull_error(PullFailure::Network,
                     "cannot reach " + endpoint_ + " (" + e.what() + ")" + context +
                         ": check the network connection, or set HF_ENDPOINT to a reachable mirror; models "
                         "already in the cache work with HF_HUB_OFFLINE=1");
  }

  std::pair<std::string, std::vector<std::string>> resolve_revision() {
    std::string url = endpoint_ + "/api/models/" + id_.repo + "/revision/" + url_escape(id_.revision, false);
    HttpResponse r;
    try {
      r = http_.get(url, kMaxApiAnswer);
    } catch (const TransportError& e) {
      throw_transport(e, "");
    }
    if (r.status != 200) throw_http_error(r, "revision " + id_.revision, "");
    json info = json::parse(r.body, nullptr, false);
    if (info.is_discarded() || !info.is_object())
      throw pull_error(PullFailure::Server, url + ": the answer is not a JSON object");
    std::string commit = info.contains("sha") && info["sha"].is_string() ? info["sha"].get<std::string>() : "";
    if (!is_commit_hash(commit))
      throw pull_error(PullFailure::Server, url + ": \"sha\" is not a 40-hex commit hash");
    if (is_commit_hash(id_.revision) && commit != id_.revision)
      throw pull_error(PullFailure::Server, url + ": asked for commit " + id_.revision + ", the hub answered " + commit);
    std::vector<std::string> siblings;
    if (info.contains("siblings") && info["siblings"].is_array()) {
      for (const json& s : info["siblings"]) {
        if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) continue;
        std::string name = s["rfilename"].get<std::string>();
        if (safe_repo_file(name)) siblings.push_back(name);
      }
    }
    return {commit, siblings};
  }

  std::vector<std::string> select_files(const std::string& commit, const std::vector<std::string>& siblings) {
    std::set<std::string> listed(siblings.begin(), siblings.end());
    std::vector<std::string> files;
    if (!options_.include.empty()) {
      for (const std::string& name : siblings)
        for (const std::string& glob : options_.include)
          if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) {
            files.push_back(name);
            break;
          }
      if (files.empty())
        throw pull_error(PullFailure::NotFound, id_.repo + "@" + commit.substr(0, 12) + ": no file matches the file patterns (" +
                                                    std::to_string(siblings.size()) + " files in the repository)");
      return files;
    }
    for (const std::string& name : engine_files())
      if (listed.count(name)) files.push_back(name);
    if (listed.count("model.safetensors")) {
      files.push_back("model.safetensors");
    } else if (listed.count("model.safetensors.index.json")) {
      files.push_back("model.safetensors.index.json");
      for (const std::string& shard : shards_of_index(commit))
        if (std::find(files.begin(), files.end(), shard) == files.end()) files.push_back(shard);
    } else {
      throw pull_error(PullFailure::NotFound, id_.repo + "@" + commit.substr(0, 12) +
                                                  " has no model.safetensors or model.safetensors.index.json; "
                                                  "name the files to fetch");
    }
    return files;
  }

  // The index is small: fetch it (through the cache like any file) and read the shard names.
  std::vector<std::string> shards_of_index(const std::string& commit) {
    const std::string index = "model.safetensors.index.json";
    std::error_code ec;
    if (!fs::exists(repo_.snapshot_file(commit, index), ec)) {
      FileMetadata meta = head_file(commit, index);
      PulledFile pf;
      pf.name = index;
      pf.etag = meta.etag;
      pf.size = meta.size;
      fetch_blob(commit, pf, meta);
      repo_.link_snapshot_file(commit, index, meta.etag);
      fetched_index_ = pf;
    }
    fs::path path = repo_.snapshot_file(commit, index);
    json j = json::parse(read_file(path, kMaxIndexFile), nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw pull_error(PullFailure::Server, path.string() + ": no \"weight_map\" object");
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : j["weight_map"].items()) {
      if (!shard.is_string() || !safe_repo_file(shard.get<std::string>()))
        throw pull_error(PullFailure::Server, path.string() + ": weight_map[\"" + tensor + "\"] is not a file name");
      shards.insert(shard.get<std::string>());
    }
    return {shards.begin(), shards.end()};
  }

  FileMetadata head_file(const std::string& commit, const std::string& file) {
    std::string url = resolve_url(commit, file);
    HttpResponse r;
    // Like huggingface_hub: follow redirects within the hub (relative Location, e.g. a renamed
    // repository) but stop at one to another host (the CDN) to read the hub's own headers.
    for (int hops = 0;; ++hops) {
      try {
        r = http_.head(url);
      } catch (const TransportError& e) {
        throw_transport(e, "");
      }
      std::string location = r.header("location");
      bool relative = !location.empty() && location.find("://") == std::string::npos;
      if (r.status >= 300 && r.status < 400 && relative && hops < 5) {
        url = resolve_location(url, location);
        continue;
      }
      break;
    }
    if (r.status >= 400 || r.status < 200) throw_http_error(r, file, file);
    FileMetadata meta;
    std::string linked = r.header("x-linked-etag");
    meta.lfs = !linked.empty();
    meta.etag = normalize_etag(meta.lfs ? linked : r.header("etag"));
    if (!safe_blob_name(meta.etag))
      throw pull_error(PullFailure::Server, url + ": missing or malformed ETag \"" + meta.etag.substr(0, 80) +
                                                "\" (is HF_ENDPOINT a HuggingFace hub?)");
    if (meta.lfs && meta.etag.size() != 64)
      throw pull_error(PullFailure::Server, url + ": X-Linked-Etag is not a sha256: " + meta.etag);
    std::string size = r.header("x-linked-size");
    if (size.empty()) size = r.header("content-length");
    meta.size = parse_size(size, url + " size");
    std::string repo_commit = r.header("x-repo-commit");
    if (!repo_commit.empty() && repo_commit != commit)
      throw pull_error(PullFailure::Server, url + ": X-Repo-Commit " + repo_commit + " differs from commit " + commit);
    std::string location = r.header("location");
    meta.download_url = (r.status >= 300 && r.status < 400 && !location.empty()) ? resolve_location(url, location) : url;
    return meta;
  }

  uint64_t present_bytes(const std::string& etag) const {
    std::error_code ec;
    if (fs::exists(repo_.blob(etag), ec)) return fs::file_size(repo_.blob(etag), ec);
    uint64_t n = fs::file_size(repo_.incomplete_blob(etag), ec);
    return ec ? 0 : n;
  }

  // Brings blobs/<etag> into the cache: kept if already there, else downloaded (resuming a partial
  // .incomplete file), verified, and renamed into place.
  void fetch_blob(const std::string& commit, PulledFile& pf, const FileMetadata& meta) {
    create_dirs(repo_.blob(meta.etag).parent_path());
    BlobLock lock(repo_.lock_file(meta.etag));
    fs::path blob = repo_.blob(meta.etag);
    std::error_code ec;
    if (fs::is_regular_file(blob, ec)) {
      if (fs::file_size(blob, ec) == meta.size) return;  // another revision or process brought it
      fs::remove(blob, ec);
    }
    fs::path partial = repo_.incomplete_blob(meta.etag);
    Fd fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (fd.fd < 0) throw disk_error(partial, "cannot create", errno);
    struct stat st{};
    if (::fstat(fd.fd, &st) != 0) throw disk_error(partial, "cannot stat", errno);
    uint64_t have = static_cast<uint64_t>(st.st_size);
    if (have > meta.size) {
      if (::ftruncate(fd.fd, 0) != 0) throw disk_error(partial, "cannot truncate", errno);
      have = 0;
    }
    std::optional<Sha256> hasher;
    hasher.emplace();
    if (meta.lfs && have > 0) hash_prefix(partial, have, *hasher);
    pf.resumed_from = have;
    pf.downloaded = true;
    emit(PullEvent::Kind::FileStart, commit, pf.name, have, meta.size, 0);

    for (int attempt = 0; have < meta.size; ++attempt) {
      try {
        download_range(commit, pf, meta, fd.fd, partial, have, hasher);
      } catch (const TransportError& e) {
        if (attempt >= options_.max_retries)
          throw_transport(e, "; " + pf.name + " stopped at " + std::to_string(have) + " of " +
                                 std::to_string(meta.size) + " bytes, kept in " + partial.string() +
                                 ": run the same pull again to resume");
        emit(PullEvent::Kind::Retry, commit, pf.name, have, meta.size, 0, e.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(200 * (attempt + 1)));
      }
    }
    if (::fsync(fd.fd) != 0) throw disk_error(partial, "cannot flush", errno);
    verify(pf, meta, partial, have, hasher);
    if (::rename(partial.c_str(), blob.c_str()) != 0) throw disk_error(blob, "cannot move into place", errno);
  }

  void hash_prefix(const fs::path& path, uint64_t bytes, Sha256& hasher) {
    Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.fd < 0) throw disk_error(path, "cannot read", errno);
    std::vector<char> buf(size_t(1) << 20);
    uint64_t left = bytes;
    while (left > 0) {
      ssize_t n = ::read(in.fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(left, buf.size())));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw disk_error(path, "cannot read", n < 0 ? errno : EIO);
      hasher.update(buf.data(), static_cast<size_t>(n));
      left -= static_cast<uint64_t>(n);
    }
  }

  // One GET from byte `have`; appends to `fd` and advances `have` (the file holds `have` bytes on
  // return and on a throw). Throws TransportError when the connection breaks (the caller resumes),
  // PullError for answers that resuming cannot fix.
  void download_range(const std::string& commit, PulledFile& pf, const FileMetadata& meta, int fd,
                      const fs::path& partial, uint64_t& have, std::optional<Sha256>& hasher) {
    BufferedAppend out(fd, partial);
    bool first = true;
    auto last_emit = std::chrono::steady_clock::now();
    HttpClient::Sink sink = [&](const HttpResponse& answer, const char* data, size_t size) {
      if (first) {
        first = false;
        if (have > 0 && answer.status == 200) {
          // The server ignored Range and sends the whole file again: start over.
          if (::ftruncate(fd, 0) != 0) throw disk_error(partial, "cannot truncate", errno);
          hasher.emplace();
          have = 0;
          pf.resumed_from = 0;
        } else if (have > 0) {
          std::string range = answer.header("content-range");
          if (range.rfind("bytes " + std::to_string(have) + "-", 0) != 0)
            throw pull_error(PullFailure::Server, meta.download_url + ": asked for bytes from " + std::to_string(have) +
                                                      ", got Content-Range \"" + range.substr(0, 60) + "\"");
        }
      }
      if (have + size > meta.size)
        throw pull_error(PullFailure::Checksum, id_.repo + ": " + pf.name + ": the server sent more than the advertised " +
                                                    std::to_string(meta.size) + " bytes");
      out.append(data, size);
      if (meta.lfs) hasher->update(data, size);
      have += size;
      pf.bytes_downloaded += size;
      total_done_ += size;
      auto now = std::chrono::steady_clock::now();
      if (now - last_emit > std::chrono::milliseconds(50) || have == meta.size) {
        last_emit = now;
        emit(PullEvent::Kind::FileProgress, commit, pf.name, have, meta.size, 0);
      }
    };
    HttpResponse r;
    try {
      r = http_.get_stream(meta.download_url, have, sink);
    } catch (...) {
      out.flush();  // what arrived before the cut is good: the resume starts after it
      throw;
    }
    out.flush();
    if (r.status != 200 && r.status != 206) throw_http_error(r, pf.name, pf.name);
    if (have < meta.size)
      throw TransportError(TransportFailure::Cut, meta.download_url + ": the answer ended after " +
                                                      std::to_string(have) + " of " + std::to_string(meta.size) + " bytes");
  }

  void verify(const PulledFile& pf, const FileMetadata& meta, const fs::path& partial, uint64_t have,
              std::optional<Sha256>& hasher) {
    auto reject = [&](const std::string& why) {
      std::error_code ec;
      fs::remove(partial, ec);
      throw pull_error(PullFailure::Checksum, id_.repo + ": " + pf.name + ": " + why +
                                                  "; the download was discarded and nothing was added to the cache: "
                                                  "pull again (if it repeats, the server or a proxy is corrupting data)");
    };
    if (have != meta.size)
      reject("got " + std::to_string(have) + " bytes, expected " + std::to_string(meta.size));
    if (meta.lfs) {
      std::string digest = hasher->final_hex();
      if (digest != meta.etag) reject("sha256 " + digest + " does not match the hub's " + meta.etag);
    }
  }

  HubId id_;
  const PullOptions& options_;
  std::string endpoint_;
  std::string token_;
  fs::path cache_root_;
  RepoCache repo_;
  HttpClient http_;
  uint64_t total_done_ = 0;
  uint64_t total_bytes_ = 0;
  std::optional<PulledFile> fetched_index_;  // the shard index, when this pull downloaded it
};

HubId parse_pull_ref(const std::string& ref_in, const PullOptions& options) {
  std::string ref = ref_in.empty() ? kDefaultModelId : ref_in;
  std::optional<HubId> id = parse_hub_id(ref);
  if (!id)
    throw bad_input("\"" + ref + "\" is not a hub model id: expected org/name or org/name@revision");
  if (!options.revision.empty()) {
    if (ref.find('@') != std::string::npos && id->revision != options.revision)
      throw bad_input(ref + ": revision " + options.revision + " contradicts the @revision of the id");
    std::optional<HubId> with_rev = parse_hub_id(id->repo + "@" + options.revision);
    if (!with_rev) throw bad_input("revision \"" + options.revision + "\" is not a valid revision name");
    id = with_rev;
  }
  return *id;
}

}  // namespace

const std::vector<std::string>& engine_files() {
  static const std::vector<std::string> files = {
      "config.json",          "generation_config.json", "preprocessor_config.json", "processor_config.json",
      "tokenizer.json",       "tokenizer_config.json",  "special_tokens_map.json",  "added_tokens.json",
      "chat_template.json",   "chat_template.jinja",
  };
  return files;
}

PullResult pull(const std::string& ref, const PullOptions& options) {
  HubId id = parse_pull_ref(ref, options);
  if (offline_mode()) {
    fs::path root = options.cache_root.empty() ? cache_dir() : options.cache_root;
    std::optional<fs::path> snapshot = find_cached_model(root, id);
    if (!snapshot)
      throw pull_error(PullFailure::Offline, "HF_HUB_OFFLINE is set, so nothing is downloaded, and " +
                                                 not_in_cache_message(root, id) + " (after unsetting HF_HUB_OFFLINE)");
    PullResult result;
    result.repo = id.repo;
    result.revision = id.revision;
    result.commit = snapshot->filename().string();
    result.snapshot_dir = *snapshot;
    result.offline = true;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(*snapshot, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      PulledFile pf;
      pf.name = entry.path().lexically_relative(*snapshot).string();
      pf.size = entry.file_size(ec);
      result.files.push_back(pf);
    }
    std::sort(result.files.begin(), result.files.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return result;
  }
  return Puller(id, options).run();
}

fs::path ensure_model(const std::string& ref, const PullOptions& options) {
  std::error_code ec;
  if (!ref.empty() && fs::is_directory(ref, ec)) return ref;
  HubId id = parse_pull_ref(ref, options);
  fs::path root = options.cache_root.empty() ? cache_dir() : options.cache_root;
  if (std::optional<fs::path> snapshot = find_cached_model(root, id)) return *snapshot;
  return pull(ref, options).snapshot_dir;
}

}  // namespace smolvlm::hub
