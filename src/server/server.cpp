#include "server/server.h"

#include <httplib.h>
#include <signal.h>
#include <smolvlm.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "server/http_error.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/responses.h"
#include "server/scheduler.h"

namespace smolvlm::server {

extern const char* const kIndexHtml;  // ui.cpp

namespace {

using ojson = nlohmann::ordered_json;

enum class State { Loading, Ready, Failed, Draining };

struct Server {
  const ServerOptions& opt;
  httplib::Server http;
  std::atomic<State> state{State::Loading};
  std::string load_error;
  int load_exit = 0;
  std::optional<api::Model> model;
  std::unique_ptr<Scheduler> scheduler;
  std::atomic<const Scheduler*> published{nullptr};  // the scheduler, once made (read by any handler)
  Metrics metrics;
  std::string model_id;
  std::string kernel_path, precision, decode_products, weight_memory;
  std::atomic<uint64_t> next_id{0};
  uint64_t id_salt = std::random_device{}();
  // Streamed answers still being written: a job is done before its last events go out, and the
  // listener's stop cuts every stream it finds open, so the drain waits for these too.
  std::atomic<int> open_streams{0};

  explicit Server(const ServerOptions& o) : opt(o) {}
};

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(e.status, e.what(), e.param, e.code), "application/json");
}

// An engine failure as the client should see it: its input was at fault (400) or the server (500).
HttpError engine_error(smolvlm_status status, const std::string& message) {
  const bool context = message.find("context") != std::string::npos || message.find("capacity") != std::string::npos;
  if (status == SMOLVLM_ERR_BAD_INPUT || status == SMOLVLM_ERR_UNSUPPORTED || (status == SMOLVLM_ERR_STATE && context))
    return HttpError(400, message, context ? "messages" : "", context ? "context_length_exceeded" : "");
  return HttpError(500, std::string(smolvlm_status_name(status)) + ": " + message);
}

// Constant-time comparison: the key's bytes do not leak through the answer's timing.
bool same_key(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string new_id(Server& s, const char* prefix) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%08llx%08llx", prefix, static_cast<unsigned long long>(s.id_salt & 0xffffffffu),
                static_cast<unsigned long long>(++s.next_id));
  return buf;
}

void require_ready(const Server& s) {
  switch (s.state.load()) {
    case State::Ready: return;
    case State::Loading: throw HttpError(503, "the model is still loading", "", "model_loading");
    case State::Draining: throw HttpError(503, "the server is shutting down", "", "shutting_down");
    case State::Failed: throw HttpError(503, "the model failed to load: " + s.load_error, "", "model_failed");
  }
}

void finish_metrics(Server& s, const Job& job) {
  const smolvlm_result& r = job.result.raw();
  s.metrics.count_generation(r.prompt_tokens, r.reused_tokens, static_cast<int64_t>(r.n_tokens), job.ttft_s,
                             r.timings.decode_s);
}

// Waits until the job has streamed text or is done (or the time limit passed, which cancels it).
void wait_for_start(Job& job) {
  std::unique_lock lock(job.mutex);
  while (!job.done && job.pending.empty()) {
    job.changed.wait_for(lock, std::chrono::milliseconds(100));
    if (Clock::now() >= job.deadline) job.cancel = true;
  }
}

void stream_answer(Server& s, const std::shared_ptr<Job>& job, const ResponseHeader& h, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  auto first = std::make_shared<bool>(true);
  ++s.open_streams;
  const auto written = [&s](bool) { --s.open_streams; };  // run when the response is released
  res.set_chunked_content_provider("text/event-stream", [&s, job, h, first](size_t, httplib::DataSink& sink) {
    std::string text;
    const bool done = job->take(text, std::chrono::milliseconds(100));
    if (!text.empty() || (*first && !done)) {
      const std::string event = sse(chunk_json(h, text, *first, nullptr, false, job->request.include_usage));
      *first = false;
      if (!sink.write(event.data(), event.size())) {
        job->cancel = true;  // the client is gone: the slot stops at its next token
        return false;
      }
    }
    if (Clock::now() >= job->deadline) job->cancel = true;
    if (!done) return true;
    std::string tail;
    if (job->status == SMOLVLM_OK) {
      finish_metrics(s, *job);
      tail = sse(chunk_json(h, "", *first, &job->result.raw(), job->timed_out, job->request.include_usage));
      if (job->request.include_usage) tail += sse(usage_chunk_json(h, job->result.raw()));
    } else {  // failed after the stream began: OpenAI's error object as an event
      const HttpError e = engine_error(job->status, job->error);
      tail = "data: " + error_body(e.status, e.what(), e.param, e.code) + "\n\n";
    }
    tail += "data: [DONE]\n\n";
    if (!sink.write(tail.data(), tail.size())) return false;
    sink.done();
    return true;
  }, written);
}

void handle_generation(Server& s, const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  require_ready(s);
  auto job = std::make_shared<Job>();
  job->request = parse_request(req.body, endpoint, s.opt.media);
  if (!job->request.model.empty() && job->request.model != s.model_id)
    throw HttpError(404, "model \"" + job->request.model.substr(0, 64) + "\" is not served here (this server serves \"" +
                             s.model_id + "\")", "model", "model_not_found");
  smolvlm_request_init(&job->engine_request);
  job->engine_request.max_new_tokens = s.opt.default_max_tokens;
  job->request.fill(job->engine_request);
  job->engine_request.reuse_prefix = s.opt.reuse ? 1 : 0;
  job->engine_request.prefill_chunk = s.opt.prefill_chunk;
  job->deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.opt.request_timeout_s));
  if (!s.scheduler->submit(job))
    throw HttpError(503, "every slot is busy and the queue is full; retry later", "", "queue_full");
  const ResponseHeader h{new_id(s, endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-"), s.model_id,
                         static_cast<int64_t>(std::time(nullptr)), endpoint};
  wait_for_start(*job);
  {
    std::lock_guard lock(job->mutex);
    if (job->done && !job->ran) throw HttpError(503, "the server is shutting down", "", "shutting_down");
    if (job->done && job->status != SMOLVLM_OK) throw engine_error(job->status, job->error);
  }
  if (job->request.stream) return stream_answer(s, job, h, res);
  std::string ignored;
  while (!job->take(ignored, std::chrono::milliseconds(100)))
    if (Clock::now() >= job->deadline) job->cancel = true;
  if (job->status != SMOLVLM_OK) throw engine_error(job->status, job->error);
  finish_metrics(s, *job);
  res.set_content(completion_json(h, job->result.raw(), job->timed_out).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

// Every handler's errors become OpenAI error objects; nothing escapes to httplib.
template <class F>
httplib::Server::Handler guarded(F f) {
  return [f](const httplib::Request& req, httplib::Response& res) {
    try {
      f(req, res);
    } catch (const HttpError& e) {
      send_error(res, e);
    } catch (const api::Error& e) {
      send_error(res, engine_error(e.status(), e.what()));
    } catch (const std::bad_alloc&) {
      send_error(res, HttpError(500, "out of memory"));
    } catch (const std::exception& e) {
      send_error(res, HttpError(500, std::string("internal error: ") + e.what()));
    }
  };
}

void add_routes(Server& s) {
  auto& h = s.http;
  h.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    const State st = s.state.load();
    const char* names[] = {"loading", "ok", "error", "shutting down"};
    ojson j = {{"status", names[static_cast<int>(st)]}};
    if (st == State::Ready) {
      const SchedulerStats ss = s.scheduler->stats();
      j["slots"] = ss.slots;
      j["slots_busy"] = ss.busy;
      j["queued"] = ss.queued;
    }
    res.status = st == State::Ready ? 200 : 503;
    res.set_content(j.dump(), "application/json");
  });
  h.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    const Scheduler* sched = s.published.load();
    res.set_content(s.metrics.render(sched ? sched->stats() : SchedulerStats{}), "text/plain; version=0.0.4");
  });
  h.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kIndexHtml, "text/html; charset=utf-8"); });
  h.Get("/v1/models", guarded([&s](const httplib::Request&, httplib::Response& res) {
    ojson m = {{"id", s.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "smolvlm"}};
    if (s.state == State::Ready)
      m["smolvlm"] = {{"kernel_path", s.kernel_path},
                      {"precision", s.precision},
                      {"decode_products", s.decode_products},
                      {"weight_memory", s.weight_memory},
                      {"slots", s.opt.parallel}};
    res.set_content(ojson{{"object", "list"}, {"data", ojson::array({m})}}.dump(), "application/json");
  }));
  h.Post("/v1/chat/completions", guarded([&s](const httplib::Request& req, httplib::Response& res) {
    handle_generation(s, req, res, Endpoint::Chat);
  }));
  h.Post("/v1/completions", guarded([&s](const httplib::Request& req, httplib::Response& res) {
    handle_generation(s, req, res, Endpoint::Completion);
  }));
  // Every /v1 route needs the key when one is set; / and /health stay public.
  h.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (s.opt.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string bearer = "Bearer ";
    if (auth.rfind(bearer, 0) == 0 && same_key(auth.substr(bearer.size()), s.opt.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, HttpError(401, auth.empty() ? "missing API key (send Authorization: Bearer KEY)" : "invalid API key",
                              "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own refusals (no route, body over the cap, unreadable request) get OpenAI's shape too.
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = "HTTP " + std::to_string(res.status);
    if (res.status == 404) message = "no route " + req.method + " " + req.path.substr(0, 100);
    if (res.status == 413) message = "the request body exceeds the server's limit (--max-body)";
    if (res.status == 405) message = "method not allowed";
    res.set_content(error_body(res.status, message), "application/json");
  });
  h.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    const bool known = req.path == "/" || req.path == "/health" || req.path == "/metrics" || req.path == "/v1/models" ||
                       req.path == "/v1/chat/completions" || req.path == "/v1/completions";
    s.metrics.count_response(known ? req.path : "other", res.status);
  });
}

// The id clients name the model by: --model-id, else a hub id as given, else the folder's name.
std::string served_model_id(const ServerOptions& o) {
  if (!o.model_id.empty()) return o.model_id;
  if (o.model.empty()) return smolvlm_default_model();
  if (!std::filesystem::is_directory(o.model)) return o.model;
  std::filesystem::path p = std::filesystem::absolute(o.model).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// stop() before listen_after_bind() has started would be lost: wait for the listener first.
void stop_listening(httplib::Server& http) {
  for (int i = 0; i < 500 && !http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  http.stop();
}

void load_model(Server& s) {
  try {
    smolvlm_model_options mo;
    smolvlm_model_options_init(&mo);
    mo.threads = s.opt.threads;
    if (!s.opt.kernels.empty()) mo.kernel_path = s.opt.kernels.c_str();
    if (!s.opt.precision.empty()) mo.precision = s.opt.precision.c_str();
    if (!s.opt.weight_memory.empty()) mo.weight_memory = s.opt.weight_memory.c_str();
    if (s.opt.context > 0) mo.max_context = s.opt.context;
    s.model.emplace(api::Model::load(s.opt.model, &mo));
    s.model->tokenizer();  // a broken tokenizer fails here, not in the first request
    const smolvlm_model_info info = s.model->info();
    s.kernel_path = info.kernel_path;
    s.precision = info.precision;
    s.decode_products = info.decode_products;
    s.weight_memory = info.weight_memory;
    s.scheduler = std::make_unique<Scheduler>(*s.model, s.opt.parallel, s.opt.context, s.opt.queue, s.opt.batch);
    s.published = s.scheduler.get();
    std::fprintf(stderr, "smolvlm serve: %s ready (%s kernels, precision %s: decode %s; weights %s; %d slot%s%s, context %lld)\n",
                 s.model_id.c_str(), s.kernel_path.c_str(), s.precision.c_str(), s.decode_products.c_str(),
                 s.weight_memory.c_str(), s.opt.parallel, s.opt.parallel == 1 ? "" : "s",
                 s.opt.parallel > 1 ? (s.opt.batch ? ", batched decoding" : ", unbatched") : "",
                 static_cast<long long>(s.model->info().max_context));
    State expected = State::Loading;
    s.state.compare_exchange_strong(expected, State::Ready);
  } catch (const api::Error& e) {
    s.load_error = e.what();
    s.load_exit = static_cast<int>(e.status());
    std::fprintf(stderr, "smolvlm serve: %s: %s\n", smolvlm_status_name(e.status()), e.what());
    s.state = State::Failed;
    stop_listening(s.http);
  }
}

// SIGTERM/SIGINT: refuse new work, let running requests finish within the grace period, cancel the
// rest, stop the listener. Blocked in every thread and taken here with sigtimedwait.
void watch_signals(Server& s, const sigset_t& signals, const std::atomic<bool>& finished) {
  const timespec tick{0, 200 * 1000 * 1000};
  while (!finished) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig <= 0) continue;
    std::fprintf(stderr, "smolvlm serve: %s: finishing in-flight requests (grace %.0f s)\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", s.opt.grace_s);
    const bool was_ready = s.state.exchange(State::Draining) == State::Ready;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.opt.grace_s));
    if (was_ready) {
      const auto idle = [&s] {
        const SchedulerStats st = s.scheduler->stats();
        return st.busy == 0 && st.queued == 0 && s.open_streams == 0;
      };
      while (Clock::now() < until && !idle()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      s.scheduler->cancel_all();
      // Cancelled streams end at their next token and still send their last event and [DONE].
      const auto written = Clock::now() + std::chrono::seconds(2);
      while (Clock::now() < written && !idle()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop_listening(s.http);
    return;
  }
}

}  // namespace

int run_server(const ServerOptions& opt) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts, so all inherit it

  Server s(opt);
  s.model_id = served_model_id(opt);
  s.http.set_read_timeout(opt.read_timeout_s, 0);
  s.http.set_write_timeout(opt.write_timeout_s, 0);
  s.http.set_payload_max_length(opt.max_body);
  s.http.set_keep_alive_max_count(100);
  s.http.set_tcp_nodelay(true);  // stream chunks and small answers go out at once, not after a delayed ACK
  // Handlers wait for their slot: enough threads for every slot and queued request, plus a few for
  // /health and /metrics while all are taken.
  const size_t workers = static_cast<size_t>(opt.parallel) + opt.queue + 4;
  s.http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  add_routes(s);

  int port = opt.port;
  if (port == 0) port = s.http.bind_to_any_port(opt.host);
  else if (!s.http.bind_to_port(opt.host, port)) port = -1;
  if (port <= 0) {
    std::fprintf(stderr, "smolvlm serve: I/O error: cannot listen on %s:%d\n", opt.host.c_str(), opt.port);
    return SMOLVLM_ERR_IO;
  }
  std::fprintf(stderr, "smolvlm serve: listening on http://%s:%d\n", opt.host.c_str(), port);

  std::atomic<bool> finished{false};
  std::thread watcher([&] { watch_signals(s, signals, finished); });
  std::thread loader([&] { load_model(s); });
  s.http.listen_after_bind();
  finished = true;
  loader.join();
  watcher.join();
  if (s.scheduler) {
    s.scheduler->cancel_all();
    s.scheduler->stop();
  }
  if (s.state == State::Failed) return s.load_exit;
  std::fprintf(stderr, "smolvlm serve: stopped\n");
  return 0;
}

}  // namespace smolvlm::server
