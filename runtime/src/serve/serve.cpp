// kiln serve's assembly (kiln/serve.h): the plan opened as a served model
// (a decoder's pipeline and engine loop, or an encoder's embedder), the HTTP
// server over it, signals, plan switching, tensor-parallel ranks, and the
// front end over replica processes.
#include "kiln/serve.h"

#include "kiln/chat_template.h"
#include "kiln/embedder.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "kiln/tokenizer.h"
#include "serve/auth.h"
#include "serve/engine_loop.h"
#include "serve/front_end.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/replica_balancer.h"
#include "serve/replica_supervisor.h"
#include "serve/settings.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace kiln {
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

// Without a device chosen, a plan without the ragged interface runs on the
// cpu: the engine drives dense plans only there.
void DenseDefaultsToCpu(bool device_given, const Plan &plan, PipelineOptions *o) {
  if (!device_given && o->gpu_memory_utilization == 0 &&
      GraphInterface(plan) != PlanInterface::kRagged)
    o->backend = "cpu";
}

std::string ModelName(const std::string &path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".plan") == 0)
    name.resize(name.size() - 5);
  return name;
}

bool IsEncoder(const Plan &plan) { return GraphInterface(plan) == PlanInterface::kEncoder; }

// What a served plan owns. The engine stops before the pipeline and the
// plan it steps go.
struct Loaded {
  std::unique_ptr<Plan> plan;
  std::unique_ptr<Pipeline> pipe;
  std::unique_ptr<serve::EngineLoop> engine;
  std::unique_ptr<Embedder> embedder;
  ~Loaded() {
    if (engine)
      engine->Stop();
  }
};

// What every plan this server loads shares.
struct LoadContext {
  bool device_given = false;
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
  DenseDefaultsToCpu(c.device_given, p, &options);
  auto m = std::make_shared<serve::ServedModel>();
  m->name = c.settings.model_name.empty() ? ModelName(path) : c.settings.model_name;
  m->plan_path = path;
  if (IsEncoder(p)) {
    EmbedderOptions eo;
    eo.device = c.options.backend;
    KILN_ASSIGN_OR_RETURN(owner->embedder, Embedder::Create(p, eo));
    Embedder *e = owner->embedder.get();
    if (auto out = e->Embed({}, {{1}}); !out.ok())
      return Status(StatusCode::kInternal, "the encoder failed its readiness embedding: " +
                                               out.status().message());
    m->embed = [e](const serve::EmbeddingJob &job) -> StatusOr<serve::Embeddings> {
      KILN_ASSIGN_OR_RETURN(Embeddings out, e->Embed(job.texts, job.ids));
      return serve::Embeddings{std::move(out.vectors), out.tokens};
    };
    // /tokenize and /detokenize serve encoders too.
    m->tokenizer = &e->tokenizer();
    m->context_length = e->context_length();
  } else {
    KILN_ASSIGN_OR_RETURN(owner->pipe, Pipeline::Create(p, options));
    m->tokenizer = owner->pipe->tokenizer();
    m->defaults = owner->pipe->DefaultParams();
    m->context_length = owner->pipe->context_length();
    serve::EngineLoop::Options eo;
    eo.max_queue = c.settings.max_queue;
    eo.ready_interval_s = c.settings.ready_interval_s;
    eo.probe_token = static_cast<int32_t>(std::max<int64_t>(0, DescribePlan(p).model.bos_token_id));
    owner->engine = std::make_unique<serve::EngineLoop>(owner->pipe.get(), eo, c.metrics);
    m->engine = owner->engine.get();
    KILN_ASSIGN_OR_RETURN(PlanChatTemplate chat,
                          PlanChatTemplate::ForPlan(p, owner->pipe->tokenizer()));
    if (!chat.empty())
      m->chat = [chat](const nlohmann::json &messages, bool add_generation_prompt) {
        return chat.Render(messages, add_generation_prompt);
      };
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
void OnHangup(const std::string &config_path, serve::HttpServer &server) {
  std::string plan;
  if (!config_path.empty()) {
    serve::ServeSettings fresh;
    Status st = ApplyServeSettingsFile(config_path, &fresh);
    if (!st.ok()) {
      std::fprintf(stderr, "kiln serve: SIGHUP: %s; nothing changed\n", st.message().c_str());
      return;
    }
    plan = fresh.plan;
  }
  std::fprintf(stderr, "kiln serve: SIGHUP: switching to %s\n",
               plan.empty() ? "the served plan's file, read again" : ("'" + plan + "'").c_str());
  (void)server.Reload(plan); // it logs the outcome
}

Status ServeOne(const serve::ServeSettings &settings, const ServeOptions &so) {
  const std::string &path = so.plan_path;
  LoadContext load;
  load.device_given = so.device_given;
  PipelineOptions &options = load.options;
  options = so.engine;
  // The engine takes at least as many requests as the server admits.
  options.max_tracked = std::max(options.max_tracked, settings.max_queue * 64);
  // With --tp, rank 0 serves and the other ranks follow its steps.
  RankOptions rank_options = so.ranks;
  rank_options.device = options.backend;
  KILN_ASSIGN_OR_RETURN(OpenedRank rank, OpenRank(path, rank_options));
  options.backend = rank.device();
  options.comm = rank.comm();
  if (rank.comm() && IsEncoder(rank.plan()))
    return InvalidArgument("--tp serves decoder plans; an encoder plan runs on one rank");
  if (rank.follower()) {
    DenseDefaultsToCpu(so.device_given, rank.plan(), &options);
    return RunFollower(rank.plan(), options);
  }
  std::unique_ptr<Plan> plan = rank.TakePlan();
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
  if (rank.comm()) {
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
        OnHangup(so.config_path, *server);
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
  KILN_RETURN_IF_ERROR(EndFollowers(rank.comm()));
  std::fprintf(stderr, "kiln serve: stopped\n");
  return Status::Ok();
}

// --replicas N: this process is the front end and the replicas' supervisor;
// each replica is this same command with loopback, a free port, the
// internal key and one replica (docs/serve.md#replicas).
Status ServeReplicas(const serve::ServeSettings &settings, const ServeOptions &so) {
  if (so.ranks.tp_size != 0 || so.ranks.rank >= 0 || !so.ranks.comm.empty() ||
      std::getenv("KILN_RANK"))
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
  ro.argv.insert(ro.argv.end(), so.replica_args.begin(), so.replica_args.end());
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
      settings.model_name.empty() ? ModelName(so.plan_path) : settings.model_name;
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

Status Serve(const ServeSettings &settings, const ServeOptions &options) {
  if (options.plan_path.empty())
    return InvalidArgument("give the plan: kiln serve PLAN, or \"plan\" in --config");
  return settings.replicas > 1 ? ServeReplicas(settings, options) : ServeOne(settings, options);
}

StatusOr<std::string> NewApiKey() { return serve::NewApiKey(); }

std::string ApiKeyFileLine(const std::string &name, const std::string &key) {
  return serve::KeyFileLine(name, key);
}

} // namespace kiln
