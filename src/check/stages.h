// The stages of `smolvlm check`; each appends its rows to the report. A stage never throws for a
// mismatch: an exception inside a case is recorded as a failed case with its message.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "check/assets.h"
#include "check/check.h"

namespace smolvlm {

std::string decoder_library_versions();
void check_decoding(const CheckAssets& assets, CheckReport& report);
void check_resampling(const CheckAssets& assets, CheckReport& report);
void check_tiling(const CheckAssets& assets, CheckReport& report);
void check_tokenizer(const CheckAssets& assets, const std::optional<std::filesystem::path>& model_dir,
                     CheckReport& report);
void check_model(const CheckAssets& assets, int threads, CheckReport& report);

// A row of `stage`: exact comparison (hashed) or max abs error against `bound`.
CheckRow make_row(const std::string& stage, bool hashed, const std::string& path = "", double bound = 0.0);
// Appends "what" to a row's detail (semicolon separated) and counts a failure.
void record_failure(CheckRow& row, const std::string& what);

}  // namespace smolvlm
