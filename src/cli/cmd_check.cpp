// `smolvlm check`: re-proves exactness on this machine (see src/check/check.h).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "check/check.h"
#include "cli/command.h"
#include "hub/model_ref.h"

namespace smolvlm::cli {

namespace {

struct CheckArgs {
  std::string model;
  std::string assets;
  bool json = false;
  bool verbose = false;
  int threads = 2;
};

std::string result_text(const CheckRow& r) {
  char buf[64];
  if (r.hashed) {
    std::snprintf(buf, sizeof buf, "%d/%d identical", r.cases - r.failed, r.cases);
  } else {
    std::snprintf(buf, sizeof buf, "max err %.2e (bound %.0e)", r.max_error, r.bound);
  }
  return buf;
}

void print_table(const CheckReport& rep, bool verbose) {
  std::printf("%-16s %-7s %5s  %-30s %s\n", "stage", "path", "cases", "result", "");
  for (const CheckRow& r : rep.rows) {
    std::printf("%-16s %-7s %5d  %-30s %s\n", r.stage.c_str(), r.path.empty() ? "-" : r.path.c_str(), r.cases,
                result_text(r).c_str(), r.pass() ? "PASS" : "FAIL");
    if ((!r.pass() || verbose) && !r.detail.empty()) std::printf("    %s\n", r.detail.c_str());
  }
  std::printf("kernel paths run: ");
  for (size_t i = 0; i < rep.paths_run.size(); ++i) std::printf("%s%s", i ? ", " : "", rep.paths_run[i].c_str());
  std::printf("; caption uses: %s\n", rep.caption_path.c_str());
  std::printf("libraries: %s\n", rep.libraries.c_str());
  std::printf("%s in %.2f s\n", rep.passed() ? "PASS" : "FAIL", rep.seconds);
}

nlohmann::json to_json(const CheckReport& rep) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CheckRow& r : rep.rows) {
    nlohmann::json j = {{"stage", r.stage}, {"path", r.path},    {"cases", r.cases},
                        {"failed", r.failed}, {"pass", r.pass()}, {"detail", r.detail}};
    if (!r.hashed) {
      j["max_error"] = r.max_error;
      j["bound"] = r.bound;
    }
    rows.push_back(j);
  }
  return {{"pass", rep.passed()},           {"seconds", rep.seconds},   {"caption_path", rep.caption_path},
          {"paths_run", rep.paths_run},     {"libraries", rep.libraries}, {"rows", rows}};
}

}  // namespace

int run_check_command(const CheckArgs& a) {
  CheckOptions opt;
  if (!a.model.empty()) opt.model_dir = resolve_model_dir(a.model);
  if (!a.assets.empty()) opt.assets_dir = a.assets;
  opt.threads = a.threads;
  CheckReport rep = run_check(opt);
  if (a.json)
    std::cout << to_json(rep).dump(2) << "\n";
  else
    print_table(rep, a.verbose);
  return rep.passed() ? 0 : 1;
}

static Command check_command("check", "Re-prove exactness on this machine: decoders, resampling, tiling, tokenizer and the model on every kernel path",
    [](CLI::App& sub) {
      auto a = std::make_shared<CheckArgs>();
      sub.add_option("--model", a->model, "Also check this model's tokenizer.json (folder or hub id)");
      sub.add_flag("--json", a->json, "Print the report as JSON");
      sub.add_flag("--verbose", a->verbose, "Print details for passing rows too");
      sub.add_option("--threads", a->threads, "Threads for the model stages")->check(CLI::Range(1, 256));
      sub.add_option("--assets", a->assets, "Read the check data from this folder instead of the binary (for testing)")
          ->group("");
      return [a] { return run_check_command(*a); };
    });

}  // namespace smolvlm::cli
