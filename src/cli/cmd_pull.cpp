// `smolvlm pull MODEL`: downloads a model from the HuggingFace hub into the HuggingFace cache, where
// `--model org/name` finds it (and so do Python tools).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "hub/model_ref.h"
#include "hub/pull.h"

namespace smolvlm::cli {

namespace {

struct PullArgs {
  std::string model;
  hub::PullOptions options;
  bool json = false;
};

nlohmann::json pull_json(const hub::PullResult& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const hub::PulledFile& f : r.files)
    files.push_back({{"name", f.name}, {"size", f.size}, {"etag", f.etag}, {"downloaded", f.downloaded},
                     {"bytes_downloaded", f.bytes_downloaded}, {"resumed_from", f.resumed_from}});
  return {{"ok", true},         {"repo", r.repo},
          {"revision", r.revision}, {"commit", r.commit},
          {"snapshot", r.snapshot_dir.string()}, {"offline", r.offline},
          {"bytes_downloaded", r.bytes_downloaded}, {"files", files}};
}

int run_pull(PullArgs& args) {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (!args.json) args.options.on_event = hub::progress_printer(stderr, tty);
  try {
    hub::PullResult r = hub::pull(args.model, args.options);
    if (args.json) {
      std::cout << pull_json(r).dump() << "\n";
    } else {
      std::cout << (r.offline ? "in the cache (offline): " : "ready: ") << r.snapshot_dir.string() << "\n"
                << "use it with: --model " << (args.model.empty() ? kDefaultModelId : args.model) << "\n";
    }
    return 0;
  } catch (const hub::PullError& e) {
    std::fflush(stdout);
    if (tty && !args.json) std::cerr << "\r\033[K";  // clear a half-drawn progress bar
    std::cerr << "smolvlm pull: " << hub::pull_failure_name(e.failure()) << " error: " << e.what() << flag_hint(e.what()) << "\n";
    int code = hub::pull_exit_code(e.failure());
    if (args.json)
      std::cout << nlohmann::json{{"ok", false}, {"failure", hub::pull_failure_name(e.failure())},
                                  {"error", e.what()}, {"exit_code", code}}.dump()
                << "\n";
    return code;
  }
}

const Command kPull(
    "pull", "Download a model from the HuggingFace hub into the HuggingFace cache", [](CLI::App& sub) {
      auto args = std::make_shared<PullArgs>();
      sub.add_option("MODEL", args->model,
                     std::string("hub id org/name[@revision] (default: ") + kDefaultModelId + ")");
      sub.add_option("--revision", args->options.revision, "branch, tag or commit hash (default: main)");
      sub.add_option("--include", args->options.include,
                     "only the repository files matching these globs (default: the files the engine needs; give MODEL before)")
          ->expected(1, -1);
      sub.add_option("--endpoint", args->options.endpoint, "hub URL (default: $HF_ENDPOINT or https://huggingface.co)");
      sub.add_option("--token", args->options.token,
                     "access token for gated/private models (default: $HF_TOKEN, else the token file in $HF_HOME)");
      sub.add_flag("--json", args->json, "print one JSON summary on stdout instead of progress");
      sub.footer(
          "Files go to the HuggingFace cache: $HF_HUB_CACHE, else $HF_HOME/hub, else\n"
          "~/.cache/huggingface/hub ($XDG_CACHE_HOME/huggingface/hub when set). Interrupted downloads resume;\n"
          "a second pull downloads nothing. HF_HUB_OFFLINE=1 never uses the network.\n"
          "Exit codes: 0 ready; 2 bad command line; 3 malformed id; 10 token needed or no access (401/403);\n"
          "11 repository, revision or file not found (404); 12 network unreachable; 13 cache not writable\n"
          "(disk full); 14 checksum or size mismatch; 15 offline and not in the cache; 16 unexpected server answer.");
      return [args] { return run_pull(*args); };
    });

}  // namespace

}  // namespace smolvlm::cli
