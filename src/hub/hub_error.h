// Download failures, each with its own exit code so scripts can tell "log in" from "check the name"
// from "no network" from "disk full" from "corrupt download".
#pragma once

#include <string>

#include "core/error.h"

namespace smolvlm::hub {

enum class PullFailure {
  Auth,      // 401/403: a token is needed, or the token has no access
  NotFound,  // 404: no such repository, revision or file
  Network,   // no connection: refused, DNS, TLS, timeout, connection lost for good
  Disk,      // the cache could not be written: disk full, quota, permissions
  Checksum,  // the downloaded bytes are not the advertised ones (sha256 or size)
  Offline,   // HF_HUB_OFFLINE is set and the cache does not have what is needed
  Server,    // the server answered something the hub protocol does not allow
};

class PullError : public Error {
 public:
  PullError(PullFailure failure, ErrorKind kind, const std::string& message)
      : Error(kind, message), failure_(failure) {}
  PullFailure failure() const { return failure_; }

 private:
  PullFailure failure_;
};

// Builds the error with the Error kind that fits the failure (bad input for names, I/O otherwise).
PullError pull_error(PullFailure failure, const std::string& message);

// Exit code of `smolvlm pull` for a failure: Auth 10, NotFound 11, Network 12, Disk 13, Checksum 14,
// Offline 15, Server 16.
int pull_exit_code(PullFailure failure);
const char* pull_failure_name(PullFailure failure);

}  // namespace smolvlm::hub
