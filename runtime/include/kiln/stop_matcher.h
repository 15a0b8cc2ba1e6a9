// Stop strings over streamed text. Text arrives piece by piece, as an
// IncrementalDecoder releases it (whole UTF-8 characters), and a stop string
// may span any number of pieces. The matcher holds back the tail that could
// still begin a stop string, so a streaming client never sees part of one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class StopMatcher {
public:
  // Empty strings are ignored (requests refuse them; see ValidateRequestParams).
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `piece` and returns the text now safe to show. Once a stop string
  // is complete, returns the text before the earliest-starting one, sets
  // stopped(), and drops everything after it, including later pieces.
  std::string Feed(std::string_view piece);
  // The text ended: returns what was held back ("" after a stop).
  std::string Flush();

  bool stopped() const { return matched_ >= 0; }
  int matched() const { return matched_; } // index into the stop strings, or -1
  size_t held() const { return held_.size(); }

private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop string.
  size_t PossibleStart() const;

  std::vector<std::string> stops_;
  std::string held_;
  int matched_ = -1;
};

} // namespace kiln
