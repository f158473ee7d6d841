// An error a request gets back in OpenAI's shape: {"error": {"message", "type", "param", "code"}}
// with an HTTP status.
#pragma once

#include <stdexcept>
#include <string>

namespace smolvlm::server {

struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string param;  // the request field at fault ("" when none)
  std::string code;   // OpenAI's machine-readable code ("" when none)

  // "invalid_request_error", "authentication_error", ... as OpenAI names them for the status.
  const char* type() const;
};

// The JSON body of an error answer.
std::string error_body(int status, const std::string& message, const std::string& param = {},
                       const std::string& code = {});

}  // namespace smolvlm::server
