// StopMatcher. Invariant between calls: held_ contains no complete stop
// string, and it is exactly the longest suffix of the text so far that is a
// proper prefix of some stop string. So any stop string that completes later
// starts inside held_ or after it, and everything released is final. For
// valid UTF-8 stop strings and text the cuts fall between characters, since
// a match and a prefix both start at a lead byte.
#include "kiln/stop_matcher.h"

#include <algorithm>

namespace kiln {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string &s : stops)
    if (!s.empty())
      stops_.push_back(std::move(s));
}

std::string StopMatcher::Feed(std::string_view piece) {
  if (stopped())
    return "";
  held_.append(piece);
  // The earliest start wins: the text before it is all that was ever meant
  // to be shown. Ties go to the first stop string listed.
  size_t first = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    size_t at = held_.find(stops_[i]);
    if (at < first) {
      first = at;
      matched_ = static_cast<int>(i);
    }
  }
  if (stopped()) {
    std::string before = held_.substr(0, first);
    held_.clear();
    return before;
  }
  size_t release = held_.size() - PossibleStart();
  std::string out = held_.substr(0, release);
  held_.erase(0, release);
  return out;
}

std::string StopMatcher::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

size_t StopMatcher::PossibleStart() const {
  size_t longest = 0;
  for (const std::string &s : stops_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > longest; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        longest = k;
        break;
      }
    }
  }
  return longest;
}

} // namespace kiln
