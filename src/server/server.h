// Server: builds the engine, the protocol factories, the listeners and the
// worker threads from a Config, and implements net::ServerServices for the
// protocols (process stats, "stats conns", shutdown, verbosity, close by id).
// Created and driven by main(); ServerServices methods run on workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "engine/engine.h"
#include "net/log_hub.h"
#include "net/net_server.h"
#include "net/udp_port.h"
#include "net/protocol_handler.h"
#include "proxy/runtime.h"
#include "server/config.h"

namespace trove::server {

// The running server.
//
// Thread safety: Create/Start/WaitForShutdown/Shutdown on the main thread.
// The ServerServices methods are safe from any thread (workers call them).
//
// Invariants:
//  1. Shutdown order: listeners closed, workers stopped (every connection
//     closed, every handler destroyed), then the engine stopped; so no
//     handler outlives the engine it uses.
//  2. The config is const for the server's life.
class Server final : public net::ServerServices {
 public:
  // Creates the engine and binds every listening socket (no threads yet).
  // kFailedPrecondition: a TLS certificate or key could not be loaded (main
  // exits with kExitUsage, as memcached does); other errors are the OS's.
  static Result<std::unique_ptr<Server>> Create(const Config& cfg);
  ~Server() override;

  // Starts the engine's background threads, the workers and the acceptor,
  // then writes the port file.
  Status Start();
  // Blocks until SIGTERM/SIGINT/SIGUSR1 (which the caller must have blocked
  // in every thread; see BlockSignals) or RequestShutdown(). SIGHUP does not
  // return: with -o proxy_config it asks the proxy to reload its config
  // (ProxyRuntime::RequestReload), as memcached does; without the proxy it
  // is ignored.
  void WaitForShutdown();
  // True when WaitForShutdown returned for SIGUSR1 (memcached's graceful stop).
  bool graceful_stop() const { return graceful_; }
  // Stops everything (invariant 1). Idempotent.
  void Shutdown();
  // -e: Shutdown, then saves the item memory for the next start (no-op
  // without -e). Main thread, after WaitForShutdown.
  Status SaveForRestart();

  // Blocks SIGTERM, SIGINT, SIGHUP and SIGUSR1 in the calling thread (and the
  // threads it creates later), so WaitForShutdown can take them synchronously.
  static void BlockSignals();

  int memcache_port() const { return mc_port_; }
  int resp_port() const { return resp_port_; }
  int admin_port() const { return admin_port_; }
  net::NetServer* net() { return net_.get(); }

  // --- net::ServerServices ---
  std::vector<std::pair<std::string, std::string>> ServerStats() override;
  std::vector<std::pair<std::string, std::string>> SettingsStats() override;
  std::vector<ConnInfo> Connections() override;
  std::vector<ConnInfo> ListeningSockets() const override;
  bool ShutdownEnabled() const override { return cfg_.enable_shutdown; }
  void RequestShutdown() override;
  void SetVerbosity(int v) override;
  bool CloseConnection(uint64_t id) override;
  int64_t MaxConnections() const override;
  bool SetMaxConnections(int64_t n) override;
  bool SubStats(std::string_view sub, std::vector<std::pair<std::string, std::string>>* out) override;
  bool RefreshCerts(std::string* err) override;

  int verbosity() const { return verbosity_.load(std::memory_order_relaxed); }

 private:
  explicit Server(const Config& cfg);
  Status Bind();
  Status WritePortFile() const;

  const Config cfg_;
  const Clock* clock_;
  int64_t started_unix_ = 0;
  std::unique_ptr<engine::Engine> engine_;
  // The event log behind `watch` and MONITOR; started after the workers and
  // stopped before them (its collector posts to them).
  std::unique_ptr<net::LogHub> log_;
  std::unique_ptr<engine::ItemObserver> eviction_log_;
  std::unique_ptr<net::ProtocolFactory> mc_factory_;
  std::shared_ptr<memcache::ResponseBudget> responses_;  // null without read_buf_mem_limit
  std::unique_ptr<net::ProtocolFactory> resp_factory_;
  // -U: memcached's UDP sockets, one per worker per address (declared before
  // net_ so they outlive the worker loops that poll them).
  std::vector<std::unique_ptr<net::UdpPort>> udp_;
  std::unique_ptr<net::NetServer> net_;
  // -o proxy_config: the proxy and its factories (one per listener tag).
  // Declared after net_: destroyed first, while the loops still exist.
  std::unique_ptr<proxy::ProxyRuntime> proxy_;
  std::map<std::string, std::unique_ptr<net::ProtocolFactory>> proxy_factories_;
  net::ProtocolFactory* McFactoryFor(const std::string& tag);
  int mc_port_ = -1;     // -1 = no TCP memcache listener
  int resp_port_ = -1;   // -1 = RESP off
  // `stats settings` resp_status: "on", "off", or "off_default_port_in_use"
  // when the default RESP port was taken at start (Bind; const afterwards).
  std::string resp_status_ = "off";
  int admin_port_ = -1;  // -1 = no admin port
  int resp_tls_port_ = -1;  // -1 = no RESP TLS port (--tls-port)
  net::PortLimit admin_limit_;  // no limit: the admin port is never refused
  // -Z: the memcached port's TLS context, loaded in Create, swapped whole
  // by refresh_certs and SIGHUP (a failed reload keeps the old one).
  net::TlsContextHolder mc_tls_;
  int wake_fd_ = -1;     // eventfd: RequestShutdown -> WaitForShutdown
  std::atomic<bool> started_{false};  // read by `stats` on workers
  std::atomic<bool> stopped_{false};
  bool graceful_ = false;  // main thread: stopped by SIGUSR1
  std::atomic<int> verbosity_;  // relaxed: a setting read by logging
};

}  // namespace trove::server
