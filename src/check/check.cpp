#include "check/check.h"

#include <chrono>

#include "check/assets.h"
#include "check/stages.h"
#include "kernels/cpu.h"

namespace smolvlm {

bool CheckReport::passed() const {
  for (const CheckRow& r : rows)
    if (!r.pass()) return false;
  return !rows.empty();
}

CheckReport run_check(const CheckOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  CheckAssets assets(options.assets_dir);
  CheckReport report;
  report.caption_path = kernel_path_name(active_kernel_path());
  report.libraries = decoder_library_versions();
  check_decoding(assets, report);
  check_resampling(assets, report);
  check_tiling(assets, report);
  check_tokenizer(assets, options.model_dir, report);
  check_model(assets, options.threads, report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace smolvlm
