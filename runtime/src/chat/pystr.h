// Python's str methods on UTF-8 text, as templates use them. Case mapping
// covers ASCII only (docs/chat-templates.md says so).
#pragma once

#include <string>
#include <vector>

namespace kiln::chat {

// str.strip/lstrip/rstrip: chars empty means Python's whitespace.
std::string PyStrip(const std::string &s, const std::string *chars, bool left, bool right);
std::string PyUpper(std::string s);
std::string PyLower(std::string s);
std::string PyCapitalize(const std::string &s);
// str.title(): a letter after a non-letter starts a word.
std::string PyTitle(const std::string &s);
// jinja2's title filter: words start after spaces, '-', '(', '{', '[', '<'.
std::string JinjaTitle(const std::string &s);
// str.split(sep, maxsplit); sep null splits on whitespace runs.
std::vector<std::string> PySplit(const std::string &s, const std::string *sep, long maxsplit);
// str.replace(old, new, count); count < 0 replaces all.
std::string PyReplace(const std::string &s, const std::string &from, const std::string &to, long count);

}  // namespace kiln::chat
