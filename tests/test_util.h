// Helpers shared by the tests: where the test data lives, writing files, running the CLI.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

namespace smolvlm::test {

inline std::filesystem::path data_dir() { return SMOLVLM_TEST_DATA; }
inline std::filesystem::path cli_binary() { return SMOLVLM_BINARY; }
// tests/data/models/<name>
inline std::filesystem::path model_dir(const char* name) { return data_dir() / "models" / name; }

// The greedy choice over logits: the first of the largest.
inline int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Writes `text` to `p`, creating the parent folders.
inline void write_text_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout (stderr is merged when `merge_stderr`)
};

// Runs `smolvlm <args>` through the shell; args are passed verbatim (quote them yourself).
// `shell_prefix` goes before the command (variable assignments, ulimit).
inline CommandResult run_cli(const std::string& args, bool merge_stderr = true, const std::string& shell_prefix = "") {
  std::string cmd = shell_prefix + "'" + cli_binary().string() + "' " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace smolvlm::test
