// Batch jobs: a JSONL file of requests in, a JSONL file of results out, resumable and shardable.
// `smolvlm batch` and the Python module's smolvlm.batch() both run this code over a loaded model.
//
// Input line: {"id": string|integer, "images": [paths], "prompt": "..." | "messages": [OpenAI turns],
//              options named as in the API: max_new_tokens, temperature, top_k, top_p, min_p,
//              repetition_penalty, seed, split, stop, stop_ids}
// Output line: {"id", "text", "token_ids", "prompt_tokens", "finish_reason", "timings"}, or
//              {"id", "error": {"code", "message"}} for a job that failed, or
//              {"line": N, "error": {...}} for a line without a readable id (or whose id repeats).
#pragma once

#include <smolvlm.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smolvlm::cli {

// Defaults for every job; a job's own keys override them.
struct JobDefaults {
  int64_t max_new_tokens = 256;
  int32_t split = -1;
  smolvlm_sampling sampling{0.f, 0, 1.f, 0.f, 1.f, 0};
  std::string prompt = "Describe this image.";
};

struct BatchOptions {
  std::string input, output;
  int64_t shard_index = 0, shard_count = 1;
  bool resume = false;
  JobDefaults defaults;
  // Called after each finished line (done so far, total to do in this run, errors so far).
  std::function<void(int64_t, int64_t, int64_t)> on_progress;
};

struct BatchSummary {
  int64_t lines = 0;     // job lines in the input (blank lines not counted)
  int64_t in_shard = 0;  // of them, in this shard
  int64_t skipped = 0;   // already in the output (--resume)
  int64_t done = 0;      // written by this run
  int64_t errors = 0;    // of them, error lines
  double seconds = 0;
};

// The shard (0..count-1) a job belongs to: FNV-1a of its id's text (a string as is, a number in
// decimal), the same on every machine and run. Lines without a readable id go by "line:N".
int64_t job_shard(const std::string& key, int64_t count);
// The key resume and sharding use for an id: "s:<text>" for a string id, "n:<digits>" for an integer.
std::optional<std::string> job_key(const nlohmann::json& id);

// A parsed job: the request (pointing into `chat` and the owned strings) ready to run.
struct Job {
  nlohmann::json id;
  api::Chat chat;
  std::vector<std::string> stops;
  std::vector<const char*> stop_ptrs;
  std::vector<int32_t> stop_ids;
  smolvlm_request request{};
};
// Fills `job` from one input line; api::Error(BAD_INPUT) starting with `where` ("jobs.jsonl:7") and
// naming the key at fault.
void parse_job(const nlohmann::json& line, const std::string& where, const JobDefaults& defaults, Job& job);

// Runs every job of the shard not yet in the output, appending one line each (a single write per
// line, so a crash never leaves half a line; a partial last line from an earlier crash is cut off
// before a resumed run appends). Holds an exclusive lock on the output while it runs. Errors of a
// job become its error line; a failure to read the input or write the output throws api::Error.
BatchSummary run_batch(const api::Model& model, const BatchOptions& options);

struct MergeSummary {
  int64_t written = 0;     // lines in the merged output
  int64_t missing = 0;     // input lines no part has a line for
  int64_t duplicates = 0;  // lines a part holds for a key an earlier part (or line) already gave
};
// Merges the outputs of the shards of one input (`parts`, any order) into `output`, in the input's
// line order, exactly as one unsharded run writes it: the first line of each key wins. The output is
// written to a temporary file and renamed over `output`, so it appears whole or not at all.
MergeSummary merge_outputs(const std::string& input, const std::vector<std::string>& parts, const std::string& output);

// A progress bar on `out` for BatchOptions::on_progress: done/total, errors, items/s, ETA; redrawn in
// place at most 10 times a second, finished with a newline.
std::function<void(int64_t, int64_t, int64_t)> progress_bar(std::FILE* out);

// "bad_input", "unsupported", "io", "state", "internal": the code of an error line.
const char* error_code_name(smolvlm_status status);

// {"text", "token_ids", "prompt_tokens", "stopped_on_eos", "finish_reason", "timings"}: a result as
// `--json` prints it and a batch output line holds it.
nlohmann::ordered_json result_json(const smolvlm_result& r, double load_s);

}  // namespace smolvlm::cli
