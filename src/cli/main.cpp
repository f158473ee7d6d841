// `smolvlm`: a thin shell over the library. Parses flags, runs one subcommand, maps errors to
// exit codes. All the work lives in the modules below.
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

}  // namespace smolvlm::cli

int main(int argc, char** argv) {
  using namespace smolvlm;
  CLI::App app{"smolvlm: SmolVLM and Llama-family models on the CPU, exactly as HF transformers computes them"};
  app.set_version_flag("--version", "smolvlm 0.1.0");
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
    try {
      return run();
    } catch (const Error& e) {
      std::fflush(stdout);
      std::cerr << "smolvlm " << sub->get_name() << ": " << error_kind_name(e.kind()) << ": " << e.what() << "\n";
      return error_exit_code(e.kind());
    } catch (const std::bad_alloc&) {
      std::fflush(stdout);
      std::cerr << "smolvlm " << sub->get_name() << ": out of memory\n";
      return error_exit_code(ErrorKind::Io);
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::cerr << "smolvlm " << sub->get_name() << ": internal error: " << e.what() << "\n";
      return error_exit_code(ErrorKind::Internal);
    }
  }
  return 2;
}
