// kiln serve: an OpenAI-compatible HTTP server over one plan
// (runtime/src/serve, docs/serve.md). This main only gathers settings, opens
// the plan and wires the pieces; SIGTERM and SIGINT drain it.
#include "cli.h"
#include "cli_args.h"
#include "embedder.h"
#include "kiln_schema/plan_generated.h"
#include "run_options.h"
#include "serve/auth.h"
#include "serve/engine_loop.h"
#include "serve/front_end.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/replica_balancer.h"
#include "serve/replica_supervisor.h"
#include "serve/settings.h"
#include "tp_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <cstdio>
#include <set>
#include <thread>

namespace kiln::cli {
namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const char c = sig == SIGTERM ? 'T' : sig == SIGHUP ? 'H' : 'I';
  (void)!write(g_signal_pipe[1], &c, 1); // async-signal-safe
}

// SIGTERM, SIGINT and SIGHUP write a byte to a pipe that a watcher thread
// reads: a handler works whichever thread the signal lands on (libraries
// such as OpenBLAS start threads before main, so a signal mask set here
// would not cover them). A client that hangs up must not kill the server
// with SIGPIPE.
Status InstallSignals() {
  if (pipe2(g_signal_pipe, O_CLOEXEC) != 0)
    return Status(StatusCode::kInternal, "cannot create the signal pipe");
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return Status::Ok();
}

// The next byte a signal wrote ('T', 'I', 'H'), or 'q' written by the
// server's own end.
char NextSignal() {
  char sig = 0;
  while (read(g_signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {
  }
  return sig;
}

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
Status GatherSettings(const ParsedArgs &a, serve::ServeSettings *s) {
  if (a.Has("--config")) {
    KILN_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonObject(a.Get("--config"), "--config"));
    Status st = serve::ApplySettingsJson(j, s);
    if (!st.ok())
      return InvalidArgument("--config " + a.Get("--config") + ": " + st.message());
  }
  for (const serve::SettingKey &k : serve::SettingKeys()) {
    std::string flag = std::string("--") + k.name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    if (a.Has(flag))
      KILN_RETURN_IF_ERROR(serve::ApplySettingText(k.name, a.Get(flag), s));
  }
  return serve::CheckSettings(*s);
}

std::string ModelName(const std::string &path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".plan") == 0)
    name.resize(name.size() - 5);
  return name;
}

bool IsEncoder(const Plan &plan) {
  const fb::Plan &f = plan.graph();
  return f.ragged() == nullptr && (f.decoder() == nullptr || f.decoder()->logits() < 0);
}

// What a served plan owns. The engine stops before the pipeline and the
// plan it steps go.
struct Loaded {
  std::unique_ptr<Plan> plan;
  std::unique_ptr<Pipeline> pipe;
  std::unique_ptr<serve::EngineLoop> engine;
  std::unique_ptr<PlanEmbedder> embedder;
  std::unique_ptr<Tokenizer> tokenizer; // an encoder's, for /tokenize
  ~Loaded() {
    if (engine)
      engine->Stop();
  }
};

// What every plan this server loads shares.
struct LoadContext {
  const ParsedArgs *args = nullptr;
  serve::ServeSettings settings;
  PipelineOptions options;
  serve::Metrics *metrics = nullptr;
};

// Opens `plan` to serve: a decoder's pipeline and engine loop, started and
// past a real engine step; or an encoder's embedder, past one embedding.
StatusOr<std::shared_ptr<serve::ServedModel>>
OpenModel(const LoadContext &c, const std::string &path, std::unique_ptr<Plan> plan) {
  auto owner = std::make_shared<Loaded>();
  owner->plan = std::move(plan);
  const Plan &p = *owner->plan;
  PipelineOptions options = c.options;
  DenseDefaultsToCpu(*c.args, p, &options);
  auto m = std::make_shared<serve::ServedModel>();
  m->name = c.settings.model_name.empty() ? ModelName(path) : c.settings.model_name;
  m->plan_path = path;
  if (IsEncoder(p)) {
    KILN_ASSIGN_OR_RETURN(owner->embedder, PlanEmbedder::Create(p, *c.args));
    PlanEmbedder *e = owner->embedder.get();
    serve::EmbeddingJob probe;
    probe.ids = {{1}};
    if (auto out = e->Embed(probe); !out.ok())
      return Status(StatusCode::kInternal, "the encoder failed its readiness embedding: " +
                                               out.status().message());
    m->embed = [e](const serve::EmbeddingJob &job) { return e->Embed(job); };
    // /tokenize and /detokenize serve encoders too (the embedder keeps its
    // tokenizer to itself; Create refused a plan without one).
    const auto *tj = p.fb().tokenizer_json();
    KILN_ASSIGN_OR_RETURN(owner->tokenizer,
                          Tokenizer::FromJson(std::string_view(tj->c_str(), tj->size())));
    m->tokenizer = owner->tokenizer.get();
    if (const fb::ModelMetadata *md = p.fb().metadata())
      m->context_length = std::max<int64_t>(0, md->context_length());
  } else {
    KILN_ASSIGN_OR_RETURN(owner->pipe, Pipeline::Create(p, options));
    m->tokenizer = owner->pipe->tokenizer();
    m->defaults = owner->pipe->DefaultParams();
    m->context_length = owner->pipe->context_length();
    serve::EngineLoop::Options eo;
    eo.max_queue = c.settings.max_queue;
    eo.ready_interval_s = c.settings.ready_interval_s;
    if (const fb::ModelMetadata *md = p.fb().metadata())
      eo.probe_token = static_cast<int32_t>(std::max<int64_t>(0, md->bos_token_id()));
    owner->engine = std::make_unique<serve::EngineLoop>(owner->pipe.get(), eo, c.metrics);
    m->engine = owner->engine.get();
    KILN_ASSIGN_OR_RETURN(m->chat, ChatRendererFor(p, owner->pipe->tokenizer()));
    owner->engine->Start();
    // Refuse a backend that cannot run a step.
    if (!owner->engine->Ready(std::chrono::milliseconds(120000)))
      return Status(StatusCode::kInternal, "the engine failed its first step (readiness probe)");
  }
  m->owner = owner;
  return m;
}

// SIGHUP: the settings file again, and a switch to its plan (or to the
// served plan's file, read again, when it names none).
void OnHangup(const ParsedArgs &a, serve::HttpServer &server) {
  std::string plan;
  if (a.Has("--config")) {
    serve::ServeSettings fresh;
    auto j = ReadJsonObject(a.Get("--config"), "--config");
    Status st = j.ok() ? serve::ApplySettingsJson(*j, &fresh) : j.status();
    if (!st.ok()) {
      std::fprintf(stderr, "kiln serve: SIGHUP: --config %s: %s; nothing changed\n",
                   a.Get("--config").c_str(), st.message().c_str());
      return;
    }
    plan = fresh.plan;
  }
  std::fprintf(stderr, "kiln serve: SIGHUP: switching to %s\n",
               plan.empty() ? "the served plan's file, read again" : ("'" + plan + "'").c_str());
  (void)server.Reload(plan); // it logs the outcome
}

Status Serve(const ParsedArgs &a) {
  serve::ServeSettings settings;
  KILN_RETURN_IF_ERROR(GatherSettings(a, &settings));
  const std::string path = a.positional.empty() ? settings.plan : a.positional[0];
  if (path.empty())
    return InvalidArgument("give the plan: kiln serve PLAN, or \"plan\" in --config");
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  LoadContext load;
  load.args = &a;
  PipelineOptions &options = load.options;
  KILN_RETURN_IF_ERROR(ApplyEngineFlags(a, &options));
  // The engine takes at least as many requests as the server admits.
  options.max_tracked = std::max(options.max_tracked, settings.max_queue * 64);
  // With --tp, rank 0 serves and the other ranks follow its steps.
  KILN_ASSIGN_OR_RETURN(TpRank tp, JoinRanks(a, options.backend));
  if (!tp.backend.empty())
    options.backend = tp.backend;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(path, tp.load));
  KILN_RETURN_IF_ERROR(ConnectRank(tp));
  KILN_RETURN_IF_ERROR(CheckSameBuild(tp, *plan));
  options.comm = tp.comm.get();
  if (tp.comm && IsEncoder(*plan))
    return InvalidArgument("--tp serves decoder plans; an encoder plan runs on one rank");
  if (tp.follower()) {
    DenseDefaultsToCpu(a, *plan, &options);
    return RunFollower(*plan, options);
  }
  std::unique_ptr<serve::KeyStore> keys;
  if (!settings.api_keys.empty()) {
    KILN_ASSIGN_OR_RETURN(keys, serve::KeyStore::Load(settings.api_keys));
  }
  KILN_RETURN_IF_ERROR(InstallSignals());

  serve::Metrics metrics;
  load.settings = settings;
  load.metrics = &metrics;
  serve::ServerDeps deps;
  deps.keys = keys.get();
  deps.quotas = keys.get();
  deps.metrics = &metrics;
  KILN_ASSIGN_OR_RETURN(deps.model, OpenModel(load, path, std::move(plan)));
  if (tp.comm) {
    deps.no_reload_reason = "under --tp every rank would need the new plan; restart the ranks";
  } else {
    deps.loader = [&load](const std::string &next) -> StatusOr<std::shared_ptr<serve::ServedModel>> {
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> p, LoadPlan(next));
      return OpenModel(load, next, std::move(p));
    };
  }
  metrics.Set("kiln_ready", 1);
  const std::string name = deps.model->name;
  auto server = std::make_unique<serve::HttpServer>(settings, std::move(deps));
  KILN_ASSIGN_OR_RETURN(int port, server->Bind());
  std::printf("kiln serve: %s on http://%s:%d (%s)\n", name.c_str(), settings.host.c_str(), port,
              keys ? "API keys required" : "no auth");
  std::fflush(stdout);

  std::thread signals([&] {
    for (;;) {
      const char sig = NextSignal();
      if (sig == 'H') {
        OnHangup(a, *server);
        continue;
      }
      if (sig == 'q' || sig == 0)
        return; // the listener ended without a signal
      std::fprintf(stderr, "kiln serve: %s received\n", sig == 'T' ? "SIGTERM" : "SIGINT");
      server->Drain();
      return;
    }
  });
  server->Listen();
  // Listen returns after Drain stopped it; wake the watcher if no signal
  // came (the listener failed).
  const char quit = 'q';
  (void)!write(g_signal_pipe[1], &quit, 1);
  signals.join();
  // The served plan stops with the server (Listen returned after the last
  // connection, so no request holds a plan switched away from); its last
  // steps end before the other ranks are let go.
  server.reset();
  KILN_RETURN_IF_ERROR(EndFollowers(tp.comm.get()));
  std::fprintf(stderr, "kiln serve: stopped\n");
  return Status::Ok();
}

// --replicas N: this process is the front end and the replicas' supervisor;
// each replica is this same command with loopback, a free port, the
// internal key and one replica (docs/serve.md#replicas).
Status ServeReplicas(const std::vector<std::string> &args, const ParsedArgs &a,
                     const serve::ServeSettings &settings) {
  if (a.Has("--tp") || a.Has("--rank") || a.Has("--comm") || std::getenv("KILN_RANK"))
    return InvalidArgument("--replicas " + std::to_string(settings.replicas) +
                           " cannot be combined with --tp, --rank or --comm: replicas of a "
                           "tensor-parallel server are not supported; run --tp servers "
                           "behind a balancer of your own");
  std::unique_ptr<serve::KeyStore> keys;
  if (!settings.api_keys.empty()) {
    KILN_ASSIGN_OR_RETURN(keys, serve::KeyStore::Load(settings.api_keys));
  }
  KILN_RETURN_IF_ERROR(InstallSignals());
  serve::Metrics metrics;
  serve::FrontEnd::DeclareMetrics(&metrics);
  serve::LeastLoaded balancer(settings.replicas);
  serve::ReplicaOptions ro;
  ro.count = settings.replicas;
  ro.start_timeout_s = settings.replica_start_timeout_s;
  ro.argv = {"kiln", "serve"};
  ro.argv.insert(ro.argv.end(), args.begin(), args.end());
  // Later flags win: these override the command line and --config. The
  // supervisor adds --api-keys with the internal key's file.
  for (const char *flag : {"--replicas", "1", "--host", "127.0.0.1", "--port", "0",
                           "--allow-no-auth", "false", "--access-log", "false"})
    ro.argv.push_back(flag);
  serve::ReplicaSupervisor supervisor(ro, &balancer, &metrics);
  std::fprintf(stderr, "kiln serve: starting %d replicas\n", settings.replicas);
  KILN_RETURN_IF_ERROR(supervisor.Start());

  serve::FrontEndDeps deps;
  deps.keys = keys.get();
  deps.quotas = keys.get();
  deps.metrics = &metrics;
  deps.balancer = &balancer;
  deps.supervisor = &supervisor;
  metrics.Set("kiln_ready", 1);
  auto front = std::make_unique<serve::FrontEnd>(settings, deps);
  KILN_ASSIGN_OR_RETURN(int port, front->Bind());
  const std::string name =
      settings.model_name.empty() ? ModelName(a.positional[0]) : settings.model_name;
  std::printf("kiln serve: %s on http://%s:%d (%s; %d replicas)\n", name.c_str(),
              settings.host.c_str(), port, keys ? "API keys required" : "no auth",
              settings.replicas);
  std::fflush(stdout);
  std::thread signals([&] {
    for (;;) {
      const char sig = NextSignal();
      if (sig == 'H') {
        std::fprintf(stderr, "kiln serve: SIGHUP: under --replicas the plan cannot be switched; "
                             "restart kiln serve with the new plan\n");
        continue;
      }
      if (sig == 'q' || sig == 0)
        return;
      std::fprintf(stderr, "kiln serve: %s received\n", sig == 'T' ? "SIGTERM" : "SIGINT");
      front->Drain();
      return;
    }
  });
  front->Listen();
  const char quit = 'q';
  (void)!write(g_signal_pipe[1], &quit, 1);
  signals.join();
  front.reset();
  // Nothing is in flight now: the replicas drain at once and exit.
  supervisor.Stop(settings.drain_timeout_s + 10);
  std::fprintf(stderr, "kiln serve: stopped\n");
  return Status::Ok();
}

} // namespace

int ServeMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::set<std::string> values = {"--config"};
  for (const serve::SettingKey &k : serve::SettingKeys()) {
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
      std::string(kUsage) + serve::SettingsUsage() + "\n" + kEngineUsage + "\n" + kTpUsage;
  if (a.help) {
    std::printf("%s", usage.c_str());
    return kExitOk;
  }
  if (!err.empty())
    return Usage("serve", err, usage.c_str());
  if (a.positional.size() != 1)
    return Usage("serve", "expected one plan file", usage.c_str());
  serve::ServeSettings settings;
  if (Status st = GatherSettings(a, &settings); !st.ok())
    return Fail("serve", st);
  if (settings.replicas > 1) {
    Status st = ServeReplicas(args, a, settings);
    return st.ok() ? kExitOk : Fail("serve", st);
  }
  int launched = kExitOk;
  if (LaunchRanks(a, "serve", &launched))
    return launched;
  Status st = Serve(a);
  return st.ok() ? kExitOk : Fail("serve", RankContext(st));
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
  auto key = serve::NewApiKey();
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
  std::printf("%s\n%s\n", key->c_str(), serve::KeyFileLine(args[1], *key).c_str());
  return kExitOk;
}

} // namespace kiln::cli
