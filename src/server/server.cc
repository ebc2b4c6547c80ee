// Server wiring and ServerServices. Main thread, except the ServerServices
// methods, which workers call.
#include "server/server.h"

#include "proxy/proxy_handler.h"
#include "server/proxy_local.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/str_append.h"
#include "net/socket.h"
#include "protocol/memcache/memcache_protocol.h"
#include "protocol/memcache/watch_log.h"
#include "protocol/resp/types/collection_codec.h"
#include "protocol/resp/services/keyspace_events.h"
#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/services/tls_settings.h"
#include "protocol/resp/connection/resp_protocol.h"

namespace trove::server {
namespace {

// The signals the server takes through WaitForShutdown's signalfd: blocked
// in every thread (BlockSignals) so none reaches a default handler.
sigset_t ServerSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

Server::Server(const Config& cfg)
    : cfg_(cfg), clock_(SystemClock::Default()), verbosity_(cfg.verbose) {}

Server::~Server() {
  Shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Server::BlockSignals() {
  const sigset_t set = ServerSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Result<std::unique_ptr<Server>> Server::Create(const Config& cfg) {
  std::unique_ptr<Server> s(new Server(cfg));
  s->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->wake_fd_ < 0) return Status::FromErrno("eventfd");
  engine::EngineOptions eo = cfg.ToEngineOptions();
  // RESP collections past their compact size live on the heap; with -e they
  // go through this codec to survive the restart.
  eo.heap_codec = resp::CollectionCodec();
  auto eng = engine::Engine::Create(eo);
  if (!eng.ok()) return eng.status();
  s->engine_ = std::move(eng.value());
  s->net_ = std::make_unique<net::NetServer>(cfg.ToNetOptions());
  net::LogHubOptions lo;
  lo.worker_buf = cfg.worker_logbuf_kb * 1024;
  lo.watcher_buf = cfg.watcher_logbuf_kb * 1024;
  s->log_ = std::make_unique<net::LogHub>(&s->net_->group(), s->clock_, lo);
  s->net_->SetLog(s->log_.get());
  s->eviction_log_ = std::make_unique<memcache::EvictionLog>(s->log_.get());
  s->engine_->AddObserver(s->eviction_log_.get());
  if (cfg.ssl_enabled) {
    // memcached loads its certificates before it opens a socket.
    if (!cfg.unix_socket.empty()) {
      return Status(StatusCode::kFailedPrecondition,
                    "ERROR: You cannot enable SSL without a TCP port.");
    }
    std::string err;
    if (!s->mc_tls_.Reload(cfg.ssl, &err)) return Status(StatusCode::kFailedPrecondition, err);
  }
  resp::RespOptions ro = cfg.ToRespOptions();
  for (const auto& [name, value] : cfg.resp_tls) {
    std::string err;
    if (!resp::RespTls::ParseOption(&ro.tls, name, value, &err))
      return Status(StatusCode::kFailedPrecondition, "--" + name + ": " + err);
  }
  s->resp_factory_ = resp::NewRespFactory(s->engine_.get(), s.get(), ro, s->log_.get());
  if (!cfg.aclfile.empty()) {  // --aclfile: a broken file stops the start
    std::string err = resp::AclStoreOf(s->resp_factory_.get())->LoadFile();
    if (!err.empty()) return Status::Invalid(err);
  }
  // Keyspace notifications: expiry and eviction from the engine, and a
  // crawl each second for expired keys while `x` is configured.
  resp::KeyEvents* key_events = resp::KeyEventsOf(s->resp_factory_.get());
  s->engine_->AddObserver(key_events);
  engine::Engine* eng_ptr = s->engine_.get();
  resp::SetExpiryScan(s->resp_factory_.get(), [eng_ptr] { (void)eng_ptr->CrawlerCrawl("all"); });
  // memcached's commands show in the RESP front's SLOWLOG and LATENCY, and
  // its writes in the RESP front's keyspace notifications.
  memcache::ProtocolOptions mc_opts = cfg.ToProtocolOptions();
  mc_opts.pause = resp::ClientPauseOf(s->resp_factory_.get());
  if (!cfg.auth_file.empty()) {  // -Y
    auto auth = memcache::AuthTable::Load(cfg.auth_file);
    if (!auth.ok()) return auth.status();
    mc_opts.auth = std::move(auth.value());
    // Each authfile user is also an ACL user (after --aclfile, whose rules
    // for the same name win), so ACL rules apply on the memcached port.
    resp::acl::AclStore* store = resp::AclStoreOf(s->resp_factory_.get());
    for (const auto& [user, pass] : mc_opts.auth->entries()) store->AddMemcacheUser(user, pass);
    mc_opts.access = store;
  }
  if (cfg.ssl_auth_user_cn) {  // -o ssl_auth_user_cn: certificates name ACL users
    mc_opts.access = resp::AclStoreOf(s->resp_factory_.get());
    mc_opts.tls_user_cn = true;
  }
  if (cfg.read_buf_mem_limit > 0) {  // -o read_buf_mem_limit
    s->responses_ = std::make_shared<memcache::ResponseBudget>(cfg.read_buf_mem_limit,
                                                               cfg.num_threads);
    mc_opts.responses = s->responses_;
  }
  s->mc_factory_ = memcache::NewMemcacheFactory(s->engine_.get(), s.get(), mc_opts,
                                                s->log_.get(), resp::CommandLogOf(s->resp_factory_.get()),
                                                key_events);
  if (!cfg.proxy_config.empty()) {
    // The first load happens before any listener opens: a broken config is
    // a start-up error.
    proxy::RuntimeOptions po;
    size_t start = 0;
    while (start <= cfg.proxy_config.size()) {
      const size_t colon = cfg.proxy_config.find(':', start);
      std::string f = cfg.proxy_config.substr(start, colon == std::string::npos ? std::string::npos
                                                                                 : colon - start);
      if (!f.empty()) po.files.push_back(std::move(f));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    po.arg = cfg.proxy_arg;
    po.has_arg = cfg.proxy_arg_set;
    po.num_workers = cfg.num_threads;
    // mcp.internal and mcp.server_stats reach the cache and the stats
    // through it, never the engine directly (docs/STYLE.md, layering).
    po.local = std::make_shared<ProxyLocal>(s->engine_.get(), s.get(), s->log_.get(),
                                            resp::CommandLogOf(s->resp_factory_.get()), key_events,
                                            mc_opts, cfg.num_threads);
    s->proxy_ = std::make_unique<proxy::ProxyRuntime>(po, s->log_.get());
    Status ps = s->proxy_->LoadInitial();
    if (!ps.ok()) return ps;
  }
  Status st = s->Bind();
  if (!st.ok()) return st;
  return s;
}

Status Server::Bind() {
  // Hosts to bind TCP on: the -l list (each entry may carry its own port) or
  // every interface.
  std::vector<net::ListenAddr> hosts;
  std::vector<std::string> tags;  // per host: its listener tag
  std::vector<ListenSpec::Tls> tls_modes;  // per host: its notls:/btls:/mtls: prefix
  for (const std::string& l : cfg_.listen) {
    net::ListenAddr a;
    ListenSpec spec;
    std::string err;
    if (!ParseListenSpec(l, &spec, &err)) return Status::Invalid(err);
    if (!net::ParseListenAddr(spec.addr, &a)) return Status::Invalid("invalid listen address: " + l);
    if (spec.proto == "proxy" && proxy_ == nullptr) {
      return Status::Invalid("Proxy must be enabled to use: \"" + l + "\"");
    }
    hosts.push_back(a);
    tags.push_back(spec.tag);
    tls_modes.push_back(spec.tls);
  }
  if (hosts.empty()) {
    hosts.push_back(net::ListenAddr{});
    tags.emplace_back();
    tls_modes.push_back(ListenSpec::Tls::kDefault);
  }

  if (!cfg_.unix_socket.empty()) {
    // memcached: a unix socket turns the TCP memcache listener off.
    auto l = net::ListenUnix(cfg_.unix_socket, cfg_.unix_mask, cfg_.backlog);
    if (!l.ok()) return l.status();
    std::vector<net::Listener> ls;
    ls.push_back(std::move(l.value()));
    net_->AddListeners(std::move(ls), McFactoryFor(""), "ERROR Too many open connections\r\n");
  } else {
    for (size_t hi = 0; hi < hosts.size(); ++hi) {
      const net::ListenAddr& h = hosts[hi];
      int port = h.port >= 0 ? h.port : cfg_.port;
      // -p 0 with several -l hosts: one ephemeral port for all of them, so
      // the port file's one number reaches every address.
      if (h.port < 0 && port == 0 && mc_port_ > 0) port = mc_port_;
      auto ls = net::ListenTcp(h.host, port, cfg_.backlog);
      if (!ls.ok()) {
        return Status::Invalid("failed to listen on TCP port " + std::to_string(port) + ": " +
                               std::string(ls.status().message()));
      }
      if (mc_port_ < 0) mc_port_ = ls.value()[0].port;
      // -Z: every TCP listener speaks TLS but a notls: one; btls: never
      // asks for a client certificate, mtls: requires a verified one.
      net::ListenerTls tls;
      if (cfg_.ssl_enabled && tls_modes[hi] != ListenSpec::Tls::kNone) {
        tls.holder = &mc_tls_;
        if (tls_modes[hi] == ListenSpec::Tls::kBasic) tls.verify = net::kTlsVerifyNone;
        if (tls_modes[hi] == ListenSpec::Tls::kMutual) tls.verify = net::kTlsVerifyRequire;
      }
      // The refusal over -c is plaintext written before any handshake: a
      // TLS client could not read it, so TLS listeners just close.
      net_->AddListeners(std::move(ls.value()), McFactoryFor(tags[hi]),
                         tls.holder != nullptr ? "" : "ERROR Too many open connections\r\n",
                         nullptr, nullptr, tls);
    }
  }

  // -U: memcached's UDP protocol on the same addresses, one socket per worker
  // and address (SO_REUSEPORT), each served by its worker.
  if (cfg_.udp_port > 0 && cfg_.unix_socket.empty()) {
    uint64_t next_id = uint64_t{1} << 62;  // never a TCP connection's id
    for (const net::ListenAddr& h : hosts) {
      int bound = 0;
      auto fds = net::BindUdp(h.host, cfg_.udp_port, cfg_.num_threads, &bound);
      if (!fds.ok()) {
        return Status::Invalid("failed to listen on UDP port " + std::to_string(cfg_.udp_port) +
                               ": " + std::string(fds.status().message()));
      }
      for (size_t i = 0; i < fds.value().size(); ++i) {
        const int worker = static_cast<int>(i % static_cast<size_t>(cfg_.num_threads));
        udp_.push_back(std::make_unique<net::UdpPort>(fds.value()[i], worker, next_id++,
                                                      mc_factory_.get()));
      }
    }
  }

  // RESP: --resp-port 0 means off, except with --port-file, where it asks
  // for an ephemeral port (how the test harness runs us).
  bool resp_on = cfg_.resp_port > 0 || (cfg_.resp_port == 0 && !cfg_.port_file.empty());
  if (resp_on) {
    std::vector<net::Listener> all;
    std::vector<std::string> resp_hosts;  // one RESP listener per address, however many -l name it
    for (const net::ListenAddr& h : hosts) {
      if (std::find(resp_hosts.begin(), resp_hosts.end(), h.host) != resp_hosts.end()) continue;
      resp_hosts.push_back(h.host);
      int port = cfg_.resp_port == 0 && resp_port_ > 0 ? resp_port_ : cfg_.resp_port;
      auto ls = net::ListenTcp(h.host, port, cfg_.backlog);
      // As Redis's default `bind * -::*`: on the wildcard address IPv4 is
      // required and IPv6 optional. ListenTcp, like memcached, keeps going
      // when one family's port is taken; for RESP that would leave IPv4
      // clients talking to whoever holds the port.
      if (ls.ok() && h.host.empty()) {
        bool v4 = false;
        for (const net::Listener& l : ls.value()) v4 = v4 || l.name.rfind("tcp:", 0) == 0;
        if (!v4) {
          for (net::Listener& l : ls.value()) ::close(l.fd);
          ls = Status::Invalid("bind 0.0.0.0:" + std::to_string(port) + ": Address already in use");
        }
      }
      if (!ls.ok()) {
        for (net::Listener& l : all) ::close(l.fd);
        all.clear();
        if (cfg_.resp_port_set) {
          // A port the user asked for (--resp-port, TROVE_RESP_PORT) is
          // fatal: they expect RESP there.
          return Status::Invalid("failed to listen on RESP port " +
                                 std::to_string(cfg_.resp_port) + ": " +
                                 std::string(ls.status().message()));
        }
        // The default port taken (a redis-server, another Trove): serve
        // memcached alone, as a second memcached on another -p would, and
        // say so once on stderr and in `stats settings` (resp_status).
        std::fprintf(stderr,
                     "trove: RESP is off: the default RESP port %d is not available (%s); "
                     "serving memcached only. Pass --resp-port <port> to serve RESP on "
                     "another port, or --resp-port 0 to turn RESP off without this message.\n",
                     cfg_.resp_port, std::string(ls.status().message()).c_str());
        resp_status_ = "off_default_port_in_use";
        resp_port_ = -1;
        break;
      }
      if (resp_port_ < 0) {
        resp_port_ = ls.value()[0].port;
        resp::SetBoundPort(resp_factory_.get(), resp_port_);
      }
      for (net::Listener& l : ls.value()) all.push_back(std::move(l));
    }
    if (!all.empty()) {
      // Its own count and limit (maxclients, starting at -c), apart from
      // the memcached port's.
      net::PortLimit* limit = resp::PortLimitOf(resp_factory_.get());
      limit->max.store(cfg_.max_connections, std::memory_order_relaxed);
      net_->AddListeners(std::move(all), resp_factory_.get(),
                         "-ERR max number of clients reached\r\n", limit,
                         resp::AcceptGateOf(resp_factory_.get()));
      resp_status_ = "on";
    }
  }
  resp::RespTls* rtls = resp::TlsOf(resp_factory_.get());
  if (const int tls_port = rtls->port(); tls_port > 0) {
    // Redis's tls-port: RESP over TLS beside the plain port, on the same
    // addresses and workers, sharing maxclients and protected mode.
    std::string err;
    if (!rtls->Start(&err)) {
      return Status(StatusCode::kFailedPrecondition, "Failed to configure TLS: " + err);
    }
    std::vector<net::Listener> all;
    std::vector<std::string> seen;
    for (const net::ListenAddr& h : hosts) {
      if (std::find(seen.begin(), seen.end(), h.host) != seen.end()) continue;
      seen.push_back(h.host);
      auto ls = net::ListenTcp(h.host, tls_port, cfg_.backlog);
      if (!ls.ok()) {
        for (net::Listener& l : all) ::close(l.fd);
        return Status::Invalid("failed to listen on TLS port " + std::to_string(tls_port) +
                               ": " + std::string(ls.status().message()));
      }
      for (net::Listener& l : ls.value()) all.push_back(std::move(l));
    }
    resp_tls_port_ = tls_port;
    net::ListenerTls tls;
    tls.holder = rtls->holder();
    tls.verify_live = rtls->verify_mode();
    net_->AddListeners(std::move(all), resp_factory_.get(), "", resp::PortLimitOf(resp_factory_.get()),
                       resp::AcceptGateOf(resp_factory_.get()), tls);
  }
  if (cfg_.admin_port >= 0) {
    if (!resp_on) return Status::Invalid("--admin-port needs the RESP port (--resp-port)");
    auto ls = net::ListenTcp(cfg_.admin_bind, cfg_.admin_port, cfg_.backlog);
    if (!ls.ok() || ls.value().empty()) {
      return Status::Invalid("failed to listen on admin port " + std::to_string(cfg_.admin_port) +
                             (ls.ok() ? std::string() : ": " + std::string(ls.status().message())));
    }
    admin_port_ = ls.value()[0].port;
    admin_limit_.privileged = true;  // exempt from rate limits too
    net_->AddListeners(std::move(ls.value()), resp_factory_.get(), "", &admin_limit_,
                       resp::AcceptGateOf(resp_factory_.get()));
  }
  return Status::Ok();
}

net::ProtocolFactory* Server::McFactoryFor(const std::string& tag) {
  if (proxy_ == nullptr) return mc_factory_.get();
  auto& f = proxy_factories_[tag];
  if (f == nullptr) f = proxy::NewProxyFactory(proxy_.get(), mc_factory_.get(), tag);
  return f.get();
}

bool Server::RefreshCerts(std::string* err) {
  if (!cfg_.ssl_enabled) {
    *err = "Error TLS not enabled";
    return false;
  }
  // The same files again (memcached re-reads its paths); a file that does
  // not load leaves the running context as it was.
  return mc_tls_.Reload(cfg_.ssl, err);
}

bool Server::SubStats(std::string_view sub, std::vector<std::pair<std::string, std::string>>* out) {
  return proxy_ != nullptr && proxy_->SubStats(sub, out);
}

Status Server::WritePortFile() const {
  if (cfg_.port_file.empty()) return Status::Ok();
  std::string text;
  if (mc_port_ >= 0) text += "memcache " + std::to_string(mc_port_) + "\n";
  if (resp_port_ >= 0) text += "resp " + std::to_string(resp_port_) + "\n";
  if (admin_port_ >= 0) text += "admin " + std::to_string(admin_port_) + "\n";
  if (resp_tls_port_ >= 0) text += "resp-tls " + std::to_string(resp_tls_port_) + "\n";
  // Written whole and renamed into place, so a reader never sees half a file.
  std::string tmp = cfg_.port_file + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return Status::FromErrno("open " + tmp);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return Status::FromErrno("write " + tmp);
  if (std::rename(tmp.c_str(), cfg_.port_file.c_str()) != 0) {
    return Status::FromErrno("rename " + cfg_.port_file);
  }
  return Status::Ok();
}

Status Server::Start() {
  started_unix_ = clock_->UnixSeconds();
  engine_->Start();
  if (cfg_.detail_enabled) engine_->SetDetailEnabled(true);
  if (cfg_.lru_crawler_sleep != 100) engine_->CrawlerSetSleep(cfg_.lru_crawler_sleep);
  if (cfg_.lru_crawler_tocrawl != 0) engine_->CrawlerSetToCrawl(cfg_.lru_crawler_tocrawl);
  if (proxy_ != nullptr) {
    Status ps = proxy_->Start();
    if (!ps.ok()) return ps;
  }
  Status s = net_->Start();
  if (!s.ok()) return s;
  // Each UDP socket joins its worker's loop on that worker's thread.
  for (const std::unique_ptr<net::UdpPort>& u : udp_) {
    net::UdpPort* port = u.get();
    const size_t w = static_cast<size_t>(port->worker_id());
    net::EventLoop* loop = &net_->group().loop(w);
    loop->Post([port, loop] {
      Status a = port->Attach(loop);
      if (!a.ok()) std::fprintf(stderr, "UDP: %s\n", std::string(a.message()).c_str());
    });
  }
  log_->Start();
  started_ = true;
  return WritePortFile();
}

void Server::WaitForShutdown() {
  const sigset_t set = ServerSignals();
  int sfd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  for (;;) {
    pollfd p[2] = {{wake_fd_, POLLIN, 0}, {sfd, POLLIN, 0}};
    int n = ::poll(p, sfd >= 0 ? 2 : 1, -1);
    if (n < 0) continue;  // EINTR
    if (p[0].revents & POLLIN) break;
    if (sfd >= 0 && (p[1].revents & POLLIN)) {
      signalfd_siginfo si;
      if (::read(sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {  // memcached: reload the proxy config and certificates
          if (proxy_ != nullptr) proxy_->RequestReload();
          std::string err;
          if (cfg_.ssl_enabled && !RefreshCerts(&err)) {
            std::fprintf(stderr, "Could not reload TLS certificates on SIGHUP: %s\n", err.c_str());
          }
          continue;
        }
        if (si.ssi_signo == SIGUSR1) {
          // memcached's graceful stop; with -e the memory is saved for reuse.
          graceful_ = true;
          std::fprintf(stderr, "Gracefully stopping\n");
          break;
        }
        if (verbosity() > 0) std::fprintf(stderr, "Signal handled: %s.\n", strsignal(si.ssi_signo));
        break;
      }
    }
  }
  if (sfd >= 0) ::close(sfd);
}

void Server::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  if (proxy_) proxy_->Stop();  // its config thread waits on the workers
  if (log_) log_->Stop();  // its collector posts to the workers
  if (resp_factory_) resp::StopScripts(resp_factory_.get());  // a looping script ends
  if (resp_factory_) resp::StopHashFieldExpiry(resp_factory_.get());  // it publishes via workers
  if (net_) net_->Stop();
  proxy_.reset();
  if (engine_ && started_) engine_->Stop();
  if (!cfg_.port_file.empty() && started_) ::unlink(cfg_.port_file.c_str());
}

Status Server::SaveForRestart() {
  if (cfg_.memory_file.empty()) return Status::Ok();
  Shutdown();
  return engine_->SaveForRestart();
}

void Server::RequestShutdown() {
  uint64_t one = 1;
  ssize_t r = ::write(wake_fd_, &one, sizeof(one));
  (void)r;
}

std::vector<net::ServerServices::ConnInfo> Server::Connections() {
  return net_->Connections();
}

std::vector<net::ServerServices::ConnInfo> Server::ListeningSockets() const {
  std::vector<ConnInfo> out = net_->listening();
  for (const std::unique_ptr<net::UdpPort>& u : udp_) {
    ConnInfo ci;
    ci.id = 0;
    ci.fd = u->fd();
    ci.addr = u->Name();
    ci.state = "conn_read";
    ci.secs_since_last_cmd = 0;
    out.push_back(std::move(ci));
  }
  return out;
}

bool Server::CloseConnection(uint64_t id) { return net_->CloseConnection(id); }

int64_t Server::MaxConnections() const { return static_cast<int64_t>(net_->MaxConnections()); }

bool Server::SetMaxConnections(int64_t n) {
  if (n < 1) return false;
  net_->SetMaxConnections(static_cast<size_t>(n));
  return true;
}

void Server::SetVerbosity(int v) {
  verbosity_.store(v, std::memory_order_relaxed);
  net_->SetVerbosity(v);
}

}  // namespace trove::server
