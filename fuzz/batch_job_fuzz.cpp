// Fuzzes the batch job parser: any bytes as one input line are either a job whose request is well
// formed or a clean api::Error(BAD_INPUT); the shard of any id is in range.
#include <smolvlm.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto line = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (!line.is_object() || !line.contains("id")) return 0;
  const auto key = smolvlm::cli::job_key(line["id"]);
  if (!key) return 0;
  for (int64_t n : {1, 3, 1000})
    if (const int64_t s = smolvlm::cli::job_shard(*key, n); s < 0 || s >= n) std::abort();
  smolvlm::cli::Job job;
  try {
    smolvlm::cli::parse_job(line, "fuzz.jsonl:1", smolvlm::cli::JobDefaults{}, job);
  } catch (const smolvlm::api::Error& e) {
    if (e.status() != SMOLVLM_ERR_BAD_INPUT) std::abort();
    return 0;
  }
  const smolvlm_request& r = job.request;
  if (r.n_messages == 0 || r.messages == nullptr || r.prompt != nullptr) std::abort();
  if (r.n_stop != job.stops.size() || r.n_stop_ids != job.stop_ids.size()) std::abort();
  for (size_t i = 0; i < r.n_stop; ++i)
    if (r.stop[i] == nullptr) std::abort();
  for (size_t i = 0; i < r.n_messages; ++i)
    for (size_t j = 0; j < r.messages[i].n_parts; ++j) {
      const smolvlm_part& p = r.messages[i].parts[j];
      if (p.kind == SMOLVLM_PART_TEXT ? p.text == nullptr : p.image.path == nullptr) std::abort();
    }
  return 0;
}
