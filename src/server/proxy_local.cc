// ProxyLocal (proxy_local.h): the proxy's handlers over Trove's own cache.
#include "server/proxy_local.h"

#include "common/check.h"

namespace trove::server {

ProxyLocal::ProxyLocal(engine::Engine* engine, net::ServerServices* services, net::LogHub* log,
                       protocol::CommandLog* cmd_log, protocol::KeyEventSink* key_events,
                       const memcache::ProtocolOptions& opts, int num_workers) {
  ctx_.engine = engine;
  ctx_.services = services;
  ctx_.log = log;
  ctx_.cmd_log = cmd_log;
  ctx_.key_events = key_events;
  ctx_.opts = opts;
  // The proxy's own requests: the client connection was the one to
  // authenticate, and no client waits on a reply budget here.
  ctx_.opts.auth = nullptr;
  ctx_.opts.access = nullptr;
  ctx_.opts.responses = nullptr;
  stats_ctx_ = ctx_;
  stats_ctx_.cmd_log = nullptr;
  stats_ctx_.key_events = nullptr;
  for (int i = 0; i < num_workers; ++i) worker_stats_.push_back(engine->NewThreadStats());
  stats_ts_ = engine->NewThreadStats();
}

ProxyLocal::~ProxyLocal() = default;

std::unique_ptr<net::ProtocolHandler> ProxyLocal::NewHandler(int worker_id) {
  const size_t w = worker_id < 0 ? 0 : static_cast<size_t>(worker_id);
  CHECK(w < worker_stats_.size());
  protocol::CommandLog::Sink* sink = ctx_.cmd_log != nullptr ? ctx_.cmd_log->SinkFor(worker_id) : nullptr;
  auto h = std::make_unique<memcache::MemcacheHandler>(&ctx_, worker_stats_[w], nullptr, -1, sink);
  h->set_worker(worker_id);
  return h;
}

bool ProxyLocal::Stats(std::string_view sub,
                       std::vector<std::pair<std::string, std::string>>* out) {
  if (stats_handler_ == nullptr) {
    stats_handler_ = std::make_unique<memcache::MemcacheHandler>(&stats_ctx_, stats_ts_);
  }
  std::string req = "stats";
  if (!sub.empty()) req.append(" ").append(sub);
  req.append("\r\n");
  (void)stats_handler_->OnData(req.data(), req.size(), stats_out_);
  const std::string text = stats_out_.ToString();
  stats_out_.Clear();
  // STAT <name> <value> lines, then END; anything else is an error reply.
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find("\r\n", pos);
    if (eol == std::string::npos) return false;
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 2;
    if (line == "END") return true;
    if (line.substr(0, 5) != "STAT ") return false;
    const std::string_view rest = line.substr(5);
    const size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) {
      out->emplace_back(std::string(rest), std::string());
    } else {
      out->emplace_back(std::string(rest.substr(0, sp)), std::string(rest.substr(sp + 1)));
    }
  }
  return false;
}

}  // namespace trove::server
