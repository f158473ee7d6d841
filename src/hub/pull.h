// Downloads a model from the HuggingFace hub (or a mirror) into the HuggingFace cache, the way
// huggingface_hub's snapshot_download does: resolve the revision to a commit, list the files, and
// for each file HEAD (ETag, size, commit) then GET into blobs/<etag>.incomplete (resumed with Range),
// verify (sha256 for LFS files, size for the others), rename to blobs/<etag>, link
// snapshots/<commit>/<file>; refs/<revision> is written last.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/cache.h"
#include "hub/hub_error.h"

namespace smolvlm::hub {

struct PullEvent {
  enum class Kind {
    Resolved,      // commit known, files selected: `total_bytes` is what remains to download
    FileStart,     // a download starts (`file_done` > 0 when resuming)
    FileProgress,  // bytes arrived
    FileDone,      // verified and linked
    FileSkipped,   // already in the cache
    Retry,         // the connection broke; resuming from `file_done` (`message` says why)
  };
  Kind kind = Kind::Resolved;
  std::string repo;
  std::string commit;
  std::string file;
  uint64_t file_done = 0;   // bytes of `file` present so far (including resumed bytes)
  uint64_t file_total = 0;  // size of `file`
  uint64_t total_done = 0;  // bytes downloaded so far in this pull, all files
  uint64_t total_bytes = 0; // bytes this pull has to download, all files
  size_t files_to_download = 0;
  std::string message;
};

struct PullOptions {
  std::string revision;               // empty: the `@revision` of the id, else "main"
  std::vector<std::string> include;   // fnmatch globs over repo file names; empty: what the engine needs
  std::string endpoint;               // empty: default_endpoint() ($HF_ENDPOINT or https://huggingface.co)
  std::optional<std::string> token;   // nullopt: default_token() ($HF_TOKEN or the token file)
  std::filesystem::path cache_root;   // empty: cache_dir()
  int max_retries = 5;                // resumes after a broken connection, per file
  std::function<void(const PullEvent&)> on_event;  // progress; may be empty
};

struct PulledFile {
  std::string name;
  std::string etag;
  uint64_t size = 0;
  uint64_t bytes_downloaded = 0;  // 0 when it was already in the cache
  uint64_t resumed_from = 0;      // bytes of a previous partial download that were kept
  bool downloaded = false;
};

struct PullResult {
  std::string repo;
  std::string revision;
  std::string commit;
  std::filesystem::path snapshot_dir;
  std::vector<PulledFile> files;
  uint64_t bytes_downloaded = 0;
  bool offline = false;  // HF_HUB_OFFLINE: answered from the cache without any request
};

// The files the engine reads, when no include patterns are given (weights are added from the listing:
// model.safetensors, or model.safetensors.index.json and the shards it names).
const std::vector<std::string>& engine_files();

// Pulls `ref` (`org/name[@revision]`; empty = kDefaultModelId). Throws PullError (see hub_error.h)
// or Error(BadInput) for a malformed reference.
PullResult pull(const std::string& ref, const PullOptions& options);

// The model folder for `ref`: a local folder as is, a hub id from the cache, pulled first when the
// cache does not have it (unless HF_HUB_OFFLINE is set: then the not-in-cache error).
std::filesystem::path ensure_model(const std::string& ref, const PullOptions& options);

// Reports PullEvents on `out`: a redrawn progress bar (bytes, rate, ETA, per file and total) when
// `tty`, else plain lines (one per file, and every few seconds for long downloads).
std::function<void(const PullEvent&)> progress_printer(std::FILE* out, bool tty);

}  // namespace smolvlm::hub
