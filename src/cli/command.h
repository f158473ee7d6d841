// Subcommand registry: each src/cli/cmd_<name>.cpp registers itself with a static Command object,
// so main.cpp never changes when a command is added.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace smolvlm::cli {

// `setup` adds options to `sub` and returns the function that runs the command (it captures the
// option storage); the function returns the process exit code.
using CommandSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct Command {
  Command(const char* name, const char* help, CommandSetup setup);
};

struct RegisteredCommand {
  std::string name;
  std::string help;
  CommandSetup setup;
};
std::vector<RegisteredCommand>& registered_commands();

// " (the flag that fixes it)" for a library error message that has one, else "".
std::string flag_hint(const std::string& message);

// A command line that parses but makes no sense (exit code 2, like a parse error).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace smolvlm::cli
