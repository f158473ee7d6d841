#include "core/error.h"

namespace smolvlm {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::BadInput: return "bad input";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Io: return "I/O error";
    case ErrorKind::State: return "state misuse";
    case ErrorKind::Internal: return "internal error";
  }
  return "error";
}

int error_exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::BadInput: return 3;
    case ErrorKind::Unsupported: return 4;
    case ErrorKind::Io: return 5;
    case ErrorKind::State: return 6;
    case ErrorKind::Internal: return 70;
  }
  return 1;
}

}  // namespace smolvlm
