// `smolvlm`: a thin shell over the engine API (include/smolvlm.h). Parses flags, runs one
// subcommand, maps errors to exit codes and adds the flag that fixes a library error when there is one.
#include <smolvlm.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/error.h"

namespace smolvlm::cli {

std::vector<RegisteredCommand>& registered_commands() {
  static std::vector<RegisteredCommand> commands;
  return commands;
}

Command::Command(const char* name, const char* help, CommandSetup setup) {
  registered_commands().push_back({name, help, std::move(setup)});
}

// The library names the field or limit at fault; the command line names the flag that sets it.
std::string flag_hint(const std::string& message) {
  static const std::pair<const char*, const char*> kHints[] = {
      {"do not fit the context", "raise --ctx"},        {"but the context holds", "raise --ctx"},
      {"sampling temperature", "--temperature"},        {"top_k must", "--top-k"},
      {"top_p must", "--top-p"},                        {"min_p must", "--min-p"},
      {"repetition_penalty must", "--repetition-penalty"}, {"max_new_tokens must", "--max-new-tokens"},
      {"context must be", "--ctx"},                     {"kernel path", "--kernels"},
      {"threads must be", "--threads"},                 {"stop string", "--stop"},
      {"is a text-only model", "use `generate`"},        {"no access token was given", "or pass --token"},
      {"check the access token", "or --token"},  {"needs an access token", "or --token"},
      {"the file patterns", "--include"},                {"name the files to fetch", "--include"},
      {"revision must be a branch", "--revision"},       {"folder exists and is not empty", "use --force to replace it"},
      {"no weights: neither model.safetensors", "`smolvlm info --config-only` reads the configs alone"},
      {"already holds results", "--resume"},
  };
  for (const auto& [needle, hint] : kHints)
    if (message.find(needle) != std::string::npos) return std::string(" (") + hint + ")";
  return "";
}

namespace {

int report(const std::string& command, const char* kind, const std::string& message, int code) {
  std::fflush(stdout);
  std::cerr << "smolvlm " << command << ": " << kind << ": " << message << flag_hint(message) << "\n";
  return code;
}

}  // namespace
}  // namespace smolvlm::cli

int main(int argc, char** argv) {
  using namespace smolvlm;
  CLI::App app{"smolvlm: SmolVLM and Llama-family models on the CPU, exactly as HF transformers computes them"};
  app.set_version_flag("--version", std::string("smolvlm ") + smolvlm_version());
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success; 1 failed check or generation refused; 2 bad command line; 3 bad input\n"
      "(file, config, image, prompt); 4 unsupported input; 5 I/O error; 6 state misuse; 70 internal error.");

  auto& commands = cli::registered_commands();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runs;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runs.emplace_back(sub, c.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0; every command-line mistake exits 2 (CLI11's own codes vary).
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (auto& [sub, run] : runs) {
    if (!sub->parsed()) continue;
    const std::string name = sub->get_name();
    try {
      return run();
    } catch (const cli::UsageError& e) {
      std::cerr << "smolvlm " << name << ": " << e.what() << "\nRun with --help for more information.\n";
      return 2;
    } catch (const api::Error& e) {
      return cli::report(name, smolvlm_status_name(e.status()), e.what(), static_cast<int>(e.status()));
    } catch (const Error& e) {  // from the hub and check modules
      return cli::report(name, error_kind_name(e.kind()), e.what(), error_exit_code(e.kind()));
    } catch (const std::bad_alloc&) {
      return cli::report(name, "I/O error", "out of memory", error_exit_code(ErrorKind::Io));
    } catch (const std::exception& e) {
      return cli::report(name, "internal error", e.what(), error_exit_code(ErrorKind::Internal));
    }
  }
  return 2;
}
