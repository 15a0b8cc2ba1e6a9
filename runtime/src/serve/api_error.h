// Errors in the OpenAI API's shape: an HTTP status and
// {"error": {"message", "type", "param", "code"}}, so SDKs raise the right
// exception class (BadRequestError, AuthenticationError, RateLimitError, ...).
#pragma once

#include <string>

namespace kiln::serve {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;        // the request field at fault; "" when none
  std::string code;         // a machine-readable reason; "" when none
  double retry_after_s = 0; // > 0: sent as Retry-After (429, 503)
};

// 400 invalid_request_error naming `param`.
inline ApiError BadRequest(std::string message, std::string param = "") {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

// The JSON body of `e`.
std::string ErrorBody(const ApiError &e);

} // namespace kiln::serve
