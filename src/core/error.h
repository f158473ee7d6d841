// The one exception type of the project. Every failure a user can cause (bad file, bad flag, misuse
// of a session) is an Error with a category; the CLI maps categories to exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace smolvlm {

enum class ErrorKind {
  BadInput,     // malformed or inconsistent input: files, configs, images, prompts, flags
  Unsupported,  // valid input we do not handle (a dtype, a format, a rope type)
  Io,           // the operating system refused (open, read, write, mmap, network)
  State,        // API misuse: decode before prefill, KV cache from another model, past capacity
  Internal,     // a bug of ours
};

const char* error_kind_name(ErrorKind kind);
// Exit code of the CLI for an error of this kind (documented in the CLI's help text).
int error_exit_code(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Builders that read well at the throw site: `throw bad_input(path.string() + ": ...")`.
inline Error bad_input(const std::string& m) { return Error(ErrorKind::BadInput, m); }
inline Error unsupported(const std::string& m) { return Error(ErrorKind::Unsupported, m); }
inline Error io_error(const std::string& m) { return Error(ErrorKind::Io, m); }
inline Error state_error(const std::string& m) { return Error(ErrorKind::State, m); }
inline Error internal_error(const std::string& m) { return Error(ErrorKind::Internal, m); }

}  // namespace smolvlm
