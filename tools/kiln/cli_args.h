// Option parsing and error reporting shared by the runtime subcommands
// (run, exec, inspect). Options are `--name value` or `--name=value`;
// `flags` take no value; anything not starting with '-' is positional.
#pragma once

#include "cli.h"
#include "kiln/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::cli {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values; // every occurrence, in order
  std::set<std::string> flags;
  bool help = false;

  bool Has(const std::string &name) const { return values.count(name) || flags.count(name); }
  // The last occurrence, or `fallback`.
  std::string Get(const std::string &name, const std::string &fallback = "") const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second.back();
  }
  const std::vector<std::string> &All(const std::string &name) const {
    static const std::vector<std::string> kNone;
    auto it = values.find(name);
    return it == values.end() ? kNone : it->second;
  }
};

// `aliases` maps short spellings (e.g. "-p") to long ones ("--prompt").
// Returns "" or a message for the user.
inline std::string ParseArgs(const std::vector<std::string> &args,
                             const std::set<std::string> &value_options,
                             const std::set<std::string> &flag_options,
                             const std::map<std::string, std::string> &aliases, ParsedArgs *out) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") {
      out->help = true;
      continue;
    }
    if (a.size() < 2 || a[0] != '-') {
      out->positional.push_back(a);
      continue;
    }
    std::string value;
    bool inline_value = false;
    size_t eq = a.find('=');
    if (a.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    auto alias = aliases.find(a);
    if (alias != aliases.end())
      a = alias->second;
    if (flag_options.count(a)) {
      if (inline_value)
        return "option " + a + " takes no value";
      out->flags.insert(a);
    } else if (value_options.count(a)) {
      if (!inline_value) {
        if (i + 1 >= args.size())
          return "option " + a + " needs a value";
        value = args[++i];
      }
      out->values[a].push_back(value);
    } else {
      return "unknown option " + a;
    }
  }
  return "";
}

// Bad input (arguments, plan, tensors) exits 2; failures inside kiln exit 1.
inline int ExitCodeFor(const Status &s) {
  switch (s.code()) {
  case StatusCode::kOk:
    return kExitOk;
  case StatusCode::kInternal:
  case StatusCode::kResourceExhausted:
    return kExitFailure;
  default:
    return kExitBadInput;
  }
}

inline int Fail(const char *command, const Status &s) {
  std::fprintf(stderr, "kiln %s: %s\n", command, s.message().c_str());
  return ExitCodeFor(s);
}

inline int Usage(const char *command, const std::string &message, const char *usage) {
  std::fprintf(stderr, "kiln %s: %s\n\n%s", command, message.c_str(), usage);
  return kExitBadInput;
}

// Strict integer and float parsing: the whole string must be a number.
inline bool ParseInt(const std::string &s, long long *out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

inline bool ParseFloat(const std::string &s, double *out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

// The bytes of file `path` ('-': stdin), named by `flag` in errors. With
// stdio, not streams: libstdc++'s stream iterators throw on a read error
// (a directory), and the message must say what failed instead.
inline StatusOr<std::string> ReadInputFile(const std::string &path, const std::string &flag) {
  FILE *f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return InvalidArgument("cannot open " + flag + " '" + path + "': " + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    data.append(buf, n);
  const int err = std::ferror(f) ? errno : 0;
  if (f != stdin)
    std::fclose(f);
  if (err != 0)
    return InvalidArgument("cannot read " + flag + " '" + path + "': " + std::strerror(err));
  return data;
}

} // namespace kiln::cli
