#include "hub/cache.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "core/error.h"
#include "io/file.h"

namespace smolvlm::hub {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// huggingface_hub applies os.path.expanduser to these variables; "~" alone or "~/..." is what matters.
fs::path expand_user(const std::string& p) {
  if (p == "~" || p.rfind("~/", 0) == 0) {
    std::string home = env("HOME");
    if (!home.empty()) return fs::path(home) / p.substr(p.size() > 1 ? 2 : 1);
  }
  return fs::path(p);
}

bool env_is_true(const std::string& value) {
  std::string upper;
  for (char c : value) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper == "1" || upper == "ON" || upper == "YES" || upper == "TRUE";
}

fs::path hf_home() {
  std::string home = env("HF_HOME");
  if (!home.empty()) return expand_user(home);
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty()) return expand_user(xdg) / "huggingface";
  return expand_user("~/.cache") / "huggingface";
}

bool valid_name_part(std::string_view s) {
  if (s.empty() || s.size() > 96) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  if (s.find("--") != std::string_view::npos || s.find("..") != std::string_view::npos) return false;
  return true;
}

// Revisions become a path under refs/ and a URL segment: allow what branch/tag names use, and no
// segment that could leave the folder.
bool valid_revision(std::string_view r) {
  if (r.empty() || r.size() > 255 || r.front() == '/' || r.back() == '/') return false;
  for (char c : r)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
  size_t start = 0;
  while (start <= r.size()) {
    size_t end = r.find('/', start);
    if (end == std::string_view::npos) end = r.size();
    std::string_view seg = r.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return true;
}

bool has_usable_weights(const fs::path& snapshot) {
  std::error_code ec;
  return fs::is_regular_file(snapshot / "model.safetensors", ec) ||
         fs::is_regular_file(snapshot / "model.safetensors.index.json", ec);
}

}  // namespace

std::string HubId::display() const { return revision == "main" ? repo : repo + "@" + revision; }

std::optional<HubId> parse_hub_id(std::string_view ref) {
  HubId id;
  size_t at = ref.find('@');
  std::string_view repo = ref.substr(0, at);
  if (at != std::string_view::npos) {
    std::string_view rev = ref.substr(at + 1);
    if (!valid_revision(rev)) return std::nullopt;
    id.revision = std::string(rev);
  }
  size_t slash = repo.find('/');
  if (slash == std::string_view::npos || repo.find('/', slash + 1) != std::string_view::npos) return std::nullopt;
  if (!valid_name_part(repo.substr(0, slash)) || !valid_name_part(repo.substr(slash + 1))) return std::nullopt;
  id.repo = std::string(repo);
  return id;
}

bool is_commit_hash(std::string_view revision) {
  if (revision.size() != 40) return false;
  for (char c : revision)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

fs::path cache_dir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    std::string v = env(name);
    if (!v.empty()) return expand_user(v);
  }
  return hf_home() / "hub";
}

bool offline_mode() {
  std::string v = env("HF_HUB_OFFLINE");
  if (v.empty()) v = env("TRANSFORMERS_OFFLINE");
  return env_is_true(v);
}

std::string default_endpoint() {
  std::string e = env("HF_ENDPOINT");
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string default_token() {
  std::string token = env("HF_TOKEN");
  if (token.empty()) {
    std::string path_env = env("HF_TOKEN_PATH");
    fs::path path = path_env.empty() ? hf_home() / "token" : expand_user(path_env);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      try {
        token = read_file(path, 64 << 10);
      } catch (const Error&) {
        token.clear();  // an unreadable token file is the same as none; the hub answers 401 if one is needed
      }
    }
  }
  auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!token.empty() && is_space(token.back())) token.pop_back();
  while (!token.empty() && is_space(token.front())) token.erase(token.begin());
  return token;
}

RepoCache::RepoCache(fs::path cache_root, std::string repo) : root_(std::move(cache_root)), repo_(std::move(repo)) {
  std::string folder = "models--";
  for (char c : repo_) {
    if (c == '/') folder += "--";
    else folder += c;
  }
  dir_ = root_ / folder;
}

fs::path RepoCache::blob(const std::string& etag) const { return dir_ / "blobs" / etag; }

fs::path RepoCache::incomplete_blob(const std::string& etag) const {
  return dir_ / "blobs" / (etag + ".incomplete");
}

fs::path RepoCache::snapshot_dir(const std::string& commit) const { return dir_ / "snapshots" / commit; }

fs::path RepoCache::snapshot_file(const std::string& commit, const std::string& file) const {
  return snapshot_dir(commit) / file;
}

fs::path RepoCache::ref_file(const std::string& revision) const { return dir_ / "refs" / revision; }

fs::path RepoCache::lock_file(const std::string& etag) const {
  return root_ / ".locks" / dir_.filename() / (etag + ".lock");
}

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  fs::path ref = ref_file(revision);
  std::error_code ec;
  if (!fs::is_regular_file(ref, ec)) return std::nullopt;
  std::string commit = read_file(ref, 4096);
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  if (!is_commit_hash(commit))
    throw bad_input(ref.string() + ": expected a 40-hex commit hash, found \"" + commit.substr(0, 80) +
                    "\" (delete the file and pull again)");
  return commit;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  fs::path ref = ref_file(revision);
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  if (ec) throw io_error(ref.parent_path().string() + ": cannot create folder: " + ec.message());
  write_file_atomic(ref, commit);
}

void RepoCache::link_snapshot_file(const std::string& commit, const std::string& file, const std::string& etag) const {
  fs::path link = snapshot_file(commit, file);
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) throw io_error(link.parent_path().string() + ": cannot create folder: " + ec.message());
  // huggingface_hub links with os.path.relpath(blob, dirname(link)): "../../blobs/<etag>" for a file
  // at the top of the snapshot, one more "../" per sub-folder.
  fs::path target = blob(etag).lexically_relative(link.parent_path());
  std::random_device rd;
  fs::path tmp = link;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  if (::symlink(target.c_str(), tmp.c_str()) != 0)
    throw io_error(tmp.string() + ": cannot create symlink: " + std::strerror(errno));
  if (::rename(tmp.c_str(), link.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw io_error(link.string() + ": cannot move symlink into place: " + why);
  }
}

std::optional<fs::path> find_cached_model(const fs::path& cache_root, const HubId& id) {
  RepoCache repo(cache_root, id.repo);
  std::optional<std::string> commit = repo.commit_for(id.revision);
  if (!commit) return std::nullopt;
  fs::path snapshot = repo.snapshot_dir(*commit);
  std::error_code ec;
  if (!fs::is_regular_file(snapshot / "config.json", ec) || !has_usable_weights(snapshot)) return std::nullopt;
  return snapshot;
}

std::string not_in_cache_message(const fs::path& cache_root, const HubId& id) {
  std::string pull = "smolvlm pull " + id.repo;
  if (id.revision != "main") pull += "@" + id.revision;
  return id.display() + " is not in the HuggingFace cache (" + cache_root.string() +
         "; set HF_HUB_CACHE or HF_HOME to use another); download it with: " + pull;
}

}  // namespace smolvlm::hub
