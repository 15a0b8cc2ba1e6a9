// The names of finish reasons, detailed and coarse.
#include "kiln/response.h"

namespace kiln {

const char *FinishReasonName(FinishReason r) {
  switch (r) {
  case FinishReason::kNone:
    return "none";
  case FinishReason::kEos:
    return "eos";
  case FinishReason::kStopToken:
    return "stop_token";
  case FinishReason::kStopString:
    return "stop_string";
  case FinishReason::kLength:
    return "length";
  case FinishReason::kContext:
    return "context";
  case FinishReason::kCancelled:
    return "cancelled";
  }
  return "?";
}

const char *ApiFinishReason(FinishReason r) {
  switch (r) {
  case FinishReason::kNone:
    return "none";
  case FinishReason::kEos:
  case FinishReason::kStopToken:
  case FinishReason::kStopString:
    return "stop";
  case FinishReason::kLength:
  case FinishReason::kContext:
    return "length";
  case FinishReason::kCancelled:
    return "cancelled";
  }
  return "?";
}

} // namespace kiln
