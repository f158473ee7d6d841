// The HuggingFace hub cache, laid out exactly as the Python `huggingface_hub` library lays it out, so
// that Python tools and smolvlm share downloads:
//
//   <cache>/models--{org}--{name}/blobs/<etag>                     file contents, named by ETag
//   <cache>/models--{org}--{name}/snapshots/<commit>/<file>        -> ../../blobs/<etag> (relative)
//   <cache>/models--{org}--{name}/refs/<revision>                  the commit a branch/tag points to
//   <cache>/.locks/models--{org}--{name}/<etag>.lock               download locks
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace smolvlm::hub {

// A model on the hub: `org/name` and the revision (branch, tag or 40-hex commit) to use.
struct HubId {
  std::string repo;                // "org/name"
  std::string revision = "main";  // "main" unless `@revision` was given
  std::string display() const;    // "org/name" or "org/name@revision"
};

// Parses `org/name[@revision]`; nullopt when `ref` does not have that shape (then it can only be a
// local folder). Names follow the hub's rules: letters, digits, '-', '_', '.', no "--" or "..", no
// leading/trailing '-' or '.', at most 96 characters per part.
std::optional<HubId> parse_hub_id(std::string_view ref);

// True for a full 40-hex lower-case commit hash (used directly, never looked up in refs/).
bool is_commit_hash(std::string_view revision);

// The cache root: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (as huggingface_hub resolves it).
std::filesystem::path cache_dir();

// HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set to 1/ON/YES/TRUE: never touch the network.
bool offline_mode();

// The hub endpoint: $HF_ENDPOINT without trailing '/', else https://huggingface.co.
std::string default_endpoint();

// The access token: $HF_TOKEN, else the file $HF_TOKEN_PATH, else $HF_HOME/token; empty if none.
std::string default_token();

// Paths of one repository inside a cache.
class RepoCache {
 public:
  RepoCache(std::filesystem::path cache_root, std::string repo);

  const std::string& repo() const { return repo_; }
  // <cache>/models--org--name
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path blob(const std::string& etag) const;
  std::filesystem::path incomplete_blob(const std::string& etag) const;  // blob + ".incomplete"
  std::filesystem::path snapshot_dir(const std::string& commit) const;
  std::filesystem::path snapshot_file(const std::string& commit, const std::string& file) const;
  std::filesystem::path ref_file(const std::string& revision) const;
  std::filesystem::path lock_file(const std::string& etag) const;

  // The commit `revision` stands for in this cache: itself when it is a commit hash, else the
  // content of refs/<revision>; nullopt when unknown. Throws Error(BadInput) for a corrupt ref.
  std::optional<std::string> commit_for(const std::string& revision) const;

  // Records `revision` -> `commit` in refs/ (nothing to record when revision is the commit).
  void write_ref(const std::string& revision, const std::string& commit) const;

  // Points snapshots/<commit>/<file> at blobs/<etag> with a relative symlink, replacing any
  // previous link atomically.
  void link_snapshot_file(const std::string& commit, const std::string& file, const std::string& etag) const;

 private:
  std::filesystem::path root_;
  std::string repo_;
  std::filesystem::path dir_;
};

// The snapshot folder of `id` when the cache holds a usable model for it (config.json plus
// model.safetensors or model.safetensors.index.json, links not dangling); nullopt otherwise.
std::optional<std::filesystem::path> find_cached_model(const std::filesystem::path& cache_root, const HubId& id);

// Why `id` could not be used from the cache, with the exact command that fixes it.
std::string not_in_cache_message(const std::filesystem::path& cache_root, const HubId& id);

}  // namespace smolvlm::hub
