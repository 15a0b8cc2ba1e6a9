// kiln serve: an OpenAI-compatible HTTP server over one plan (kiln/serve.h,
// docs/serve.md). This main only gathers the settings and options from the
// settings file and flags; the runtime's Serve does the rest.
#include "cli.h"
#include "cli_args.h"
#include "kiln/serve.h"
#include "run_options.h"
#include "tp_launch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <set>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln serve PLAN [--host H] [--port P] [--config serve.json] [options]\n"
    "\n"
    "Serves the plan over HTTP with the OpenAI API: /v1/completions, /v1/chat/completions\n"
    "(plans with a chat template), /v1/embeddings (encoder plans), /v1/models,\n"
    "/tokenize and /detokenize (vLLM's: the plan's tokenizer), and /health, /ready,\n"
    "/metrics. Every route but /health needs an API key\n"
    "(Authorization: Bearer KEY; `kiln keys new NAME` makes one). SIGTERM drains: no new\n"
    "requests, accepted ones finish (up to drain_timeout_s), exit 0. With --tp N, a plan\n"
    "built for N ranks is served by N processes (rank 0 serves HTTP and schedules; SIGTERM\n"
    "to the launcher drains rank 0, then every rank exits). With --replicas N, this\n"
    "process is a front end over N replica processes (least-loaded balancing; a replica\n"
    "that crashes is restarted). docs/serve.md.\n"
    "\n"
    "  --config FILE               JSON object with any of the settings below (keys as\n"
    "                              written, e.g. \"max_queue\": 64); flags override it;\n"
    "                              an unknown key is an error\n"
    "\n"
    "settings (flag --name-with-dashes, or key name_with_underscores in --config):\n";

// The settings file, then the flags given, over the defaults.
Status GatherSettings(const ParsedArgs &a, ServeSettings *s) {
  if (a.Has("--config"))
    KILN_RETURN_IF_ERROR(ApplyServeSettingsFile(a.Get("--config"), s));
  for (const ServeSettingKey &k : ServeSettingKeys()) {
    std::string flag = std::string("--") + k.name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    if (a.Has(flag))
      KILN_RETURN_IF_ERROR(ApplyServeSetting(k.name, a.Get(flag), s));
  }
  return CheckServeSettings(*s);
}

Status ServeFromFlags(const std::vector<std::string> &args, const ParsedArgs &a,
                      const ServeSettings &settings) {
  ServeOptions o;
  o.plan_path = a.positional.empty() ? settings.plan : a.positional[0];
  o.config_path = a.Get("--config");
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  KILN_RETURN_IF_ERROR(ApplyEngineFlags(a, &o.engine));
  o.device_given = a.Has("--device") || a.Has("--backend");
  KILN_ASSIGN_OR_RETURN(o.ranks, RankFlags(a, o.engine.backend));
  o.replica_args = args;
  return Serve(settings, o);
}

} // namespace

int ServeMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::set<std::string> values = {"--config"};
  for (const ServeSettingKey &k : ServeSettingKeys()) {
    std::string flag = std::string("--") + k.name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    values.insert(flag);
  }
  values.insert(kEngineOptions.begin(), kEngineOptions.end());
  values.insert(kTpOptions.begin(), kTpOptions.end());
  std::set<std::string> flags(kEngineFlags.begin(), kEngineFlags.end());
  std::string err = ParseArgs(args, values, flags, {}, &a);
  const std::string usage =
      std::string(kUsage) + ServeSettingsUsage() + "\n" + kEngineUsage + "\n" + kTpUsage;
  if (a.help) {
    std::printf("%s", usage.c_str());
    return kExitOk;
  }
  if (!err.empty())
    return Usage("serve", err, usage.c_str());
  if (a.positional.size() != 1)
    return Usage("serve", "expected one plan file", usage.c_str());
  ServeSettings settings;
  if (Status st = GatherSettings(a, &settings); !st.ok())
    return Fail("serve", st);
  if (settings.replicas <= 1) {
    int launched = kExitOk;
    if (LaunchRanks(a, "serve", &launched))
      return launched;
  }
  Status st = ServeFromFlags(args, a, settings);
  return st.ok() ? kExitOk : Fail("serve", InRankContext(st));
}

int KeysMain(const std::vector<std::string> &args) {
  const char *kKeysUsage =
      "usage: kiln keys new NAME\n"
      "\n"
      "Prints a fresh API key on the first line and, on the second, the line to add to the\n"
      "keys file of `kiln serve --api-keys FILE` (the key's SHA-256, never the key; set its\n"
      "rpm, tpm and max_concurrent quotas there, 0 = no limit). Keep the key secret: the\n"
      "server cannot show it again. Printed to a file (`kiln keys new NAME > NAME.key`), the\n"
      "file is made readable by its owner only (mode 600).\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("%s", kKeysUsage);
    return kExitOk;
  }
  if (args.size() != 2 || args[0] != "new" || args[1].empty() || args[1][0] == '-')
    return Usage("keys", "expected: new NAME", kKeysUsage);
  auto key = NewApiKey();
  if (!key.ok())
    return Fail("keys", key.status());
  // `kiln keys new a > a.key`: the shell made the file with its umask
  // (often world-readable); a key file is the owner's alone.
  struct stat st {};
  if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) != 0 &&
      fchmod(STDOUT_FILENO, S_IRUSR | S_IWUSR) != 0)
    return Fail("keys", Status(StatusCode::kInternal,
                               "cannot make the output file readable by its owner only (chmod "
                               "600): the key was not written"));
  std::printf("%s\n%s\n", key->c_str(), ApiKeyFileLine(args[1], *key).c_str());
  return kExitOk;
}

} // namespace kiln::cli
