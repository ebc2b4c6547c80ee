// Config: memcached-compatible command-line flags parsed into one const struct
// (no globals), and the options each subsystem is built from. Main thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "engine/engine.h"
#include "net/net_server.h"
#include "protocol/memcache/memcache_protocol.h"
#include "protocol/resp/connection/resp_protocol.h"

namespace trove::server {

// The one place Trove's version lives ("version", "stats", -V).
inline constexpr const char* kVersion = "1.6.45-trove";
// memcached's exit code for bad usage (sysexits.h EX_USAGE).
inline constexpr int kExitUsage = 64;

struct Config {
  enum class Action { kRun, kHelp, kVersion, kLicense };
  Action action = Action::kRun;

  // --- listening ---
  int port = 11211;                 // -p; 0 = ephemeral
  bool port_set = false;
  int udp_port = 0;                 // -U; 0 = off (memcached 1.6's default)
  std::vector<std::string> listen;  // -l entries (each may carry :port)
  std::string unix_socket;          // -s (turns TCP off, as memcached)
  int unix_mask = 0700;             // -a
  int resp_port = 6379;             // --resp-port; 0 = off (ephemeral with --port-file)
  bool resp_port_set = false;       // given explicitly (then a bind failure is fatal)
  std::string port_file;            // --port-file
  // --admin-port: a RESP port exempt from maxclients (and, later, rate
  // limits), so an operator can always get in. -1 = off; 0 = ephemeral.
  int admin_port = -1;
  std::string admin_bind = "127.0.0.1";  // --admin-bind
  std::string aclfile;                   // --aclfile: Redis's ACL file
  bool protected_mode = true;            // --protected-mode yes|no (RESP ports)
  // --tls-port, --tls-cert-file, ... (Redis's), as given: name, value.
  std::vector<std::pair<std::string, std::string>> resp_tls;
  int backlog = 1024;               // -b
  size_t max_connections = 1024;    // -c
  bool maxconns_fast = true;        // -o maxconns_fast (reject with an error line)

  // --- threads and connections ---
  int num_threads = 4;              // -t
  int reqs_per_event = 20;          // -R
  int64_t idle_timeout_s = 0;       // -o idle_timeout

  // --- memory and items ---
  size_t mem_limit = 64ull << 20;   // -m (given in MiB)
  bool evict_to_free = true;        // -M sets false
  bool use_cas = true;              // -C sets false
  size_t item_size_max = 1u << 20;  // -I
  double factor = 1.25;             // -f
  size_t chunk_size = 48;           // -n
  size_t slab_page_size = 1u << 20;
  size_t slab_chunk_max = 0;        // -o slab_chunk_max; resolved by validation
  bool slab_chunk_max_set = false;
  bool prealloc = false;            // -L
  bool lock_memory = false;         // -k: mlockall at start (main.cc)
  char prefix_delimiter = ':';      // -D
  bool detail_enabled = false;      // -D turns per-prefix stats on

  // --- -o extended options that reach the engine ---
  int hashpower = 0;                // 0 = engine default
  bool lru_maintainer = true;
  bool lru_segmented = true;        // no_modern turns it off (stats settings only)
  bool lru_crawler = true;
  uint32_t lru_crawler_sleep = 100;
  uint32_t lru_crawler_tocrawl = 0;
  int hot_lru_pct = 20;
  int warm_lru_pct = 40;
  double hot_max_factor = 0.2;
  double warm_max_factor = 2.0;
  bool temp_lru = false;
  uint32_t temp_ttl = 61;
  bool slab_reassign = true;
  int slab_automove = 1;
  double slab_automove_ratio = 0.8;
  uint32_t slab_automove_window = 10;
  size_t read_buf_mem_limit = 0;  // bytes (-o read_buf_mem_limit takes megabytes); 0 = none
  double slab_automove_freeratio = 0.01;
  std::string hash_algorithm = "xxh64";  // what Trove hashes with (stats settings)
  int tail_repair_time = 0;

  // --- process ---
  bool enable_shutdown = false;     // -A
  bool disable_flush_all = false;   // -F
  bool disable_watch = false;       // -W
  size_t watcher_logbuf_kb = 256;   // -o watcher_logbuf_size (memcached's default)
  size_t worker_logbuf_kb = 64;     // -o worker_logbuf_size
  bool disable_dumping = false;     // -X
  // -o proxy_config=FILE[:FILE...] turns on the proxy; proxy_arg is mcp.start_arg.
  std::string proxy_config;
  std::string proxy_arg;
  bool proxy_arg_set = false;
  std::string auth_file;            // -Y: memcached's ASCII authentication
  std::string memory_file;          // -e: restartable item memory (SIGUSR1 saves it)
  std::string pid_file;             // -P
  std::string user;                 // -u
  bool daemonize = false;           // -d
  bool coredumps = false;           // -r
  int verbose = 0;                  // -v, -vv, -vvv
  std::string protocol = "auto";    // -B: ascii or auto

  // --- TLS on the memcached port (-Z, -o ssl_*; docs/tls.md) ---
  bool ssl_enabled = false;         // -Z / --enable-ssl
  bool ssl_options_set = false;     // any -o ssl_* (refused without -Z)
  net::TlsSettings ssl;             // -o ssl_chain_cert, ssl_key, ...
  size_t ssl_wbuf_size = 16 * 1024; // -o ssl_wbuf_size (given in KiB)
  // -o ssl_handshake_timeout (Trove's, seconds): a client still
  // handshaking after this long is closed.
  int64_t ssl_handshake_timeout_s = 10;
  // -o ssl_auth_user_cn (Trove's): a verified client certificate's CN
  // names the ACL user of the connection (mtls: listeners, ssl_verify_mode).
  bool ssl_auth_user_cn = false;

  // Options that were accepted but do nothing in Trove (printed with -vv).
  std::vector<std::string> warnings;

  engine::EngineOptions ToEngineOptions() const;
  memcache::ProtocolOptions ToProtocolOptions() const;
  resp::RespOptions ToRespOptions() const;
  net::NetServerOptions ToNetOptions() const;
};

// Parses argv (argv[0] is the program name). A bad or unknown option gives a
// non-OK Status whose message is the one line to print before exiting with
// kExitUsage. Thread safety: uses getopt_long, so one caller at a time.
Result<Config> ParseArgs(const std::vector<std::string>& argv);

// The -h text.
std::string HelpText();

// One -l entry split into memcached's listener options and the address:
// `proto[ascii|proxy]:`, then `tag[name]:` or `tag_name_:` (1-8 bytes),
// then host[:port]. False (and *err) for a malformed one.
struct ListenSpec {
  // notls: / btls: / mtls: (first, as memcached): plain on a -Z server,
  // TLS that never verifies the client, TLS that requires a verified one.
  enum class Tls { kDefault, kNone, kBasic, kMutual };
  Tls tls = Tls::kDefault;
  std::string proto;  // "" = the default
  std::string tag;    // "" = untagged
  std::string addr;
};
bool ParseListenSpec(std::string_view s, ListenSpec* out, std::string* err);

}  // namespace trove::server
