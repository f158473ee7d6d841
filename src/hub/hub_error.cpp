#include "hub/hub_error.h"

namespace smolvlm::hub {

PullError pull_error(PullFailure failure, const std::string& message) {
  ErrorKind kind = ErrorKind::Io;
  if (failure == PullFailure::Auth || failure == PullFailure::NotFound) kind = ErrorKind::BadInput;
  return PullError(failure, kind, message);
}

int pull_exit_code(PullFailure failure) {
  switch (failure) {
    case PullFailure::Auth: return 10;
    case PullFailure::NotFound: return 11;
    case PullFailure::Network: return 12;
    case PullFailure::Disk: return 13;
    case PullFailure::Checksum: return 14;
    case PullFailure::Offline: return 15;
    case PullFailure::Server: return 16;
  }
  return 1;
}

const char* pull_failure_name(PullFailure failure) {
  switch (failure) {
    case PullFailure::Auth: return "auth";
    case PullFailure::NotFound: return "not_found";
    case PullFailure::Network: return "network";
    case PullFailure::Disk: return "disk";
    case PullFailure::Checksum: return "checksum";
    case PullFailure::Offline: return "offline";
    case PullFailure::Server: return "server";
  }
  return "error";
}

}  // namespace smolvlm::hub
