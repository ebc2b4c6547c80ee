// Command-line parsing with memcached's option names, values and limits.
// Main thread, at startup.
#include "server/config.h"

#include <getopt.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/str_append.h"
#include "server/config_internal.h"

namespace trove::server {
namespace {

using detail::ApplyExtendedList;
using detail::Bad;
using detail::ParseInt;
using detail::ParseSize;
using detail::kItemSizeMaxLower;
using detail::kItemSizeMaxUpper;

// Cross-option checks, after every flag is known (memcached's order).
Status Validate(Config* c) {
  if (c->ssl_options_set && !c->ssl_enabled) {
    return Bad("-o ssl_* options need -Z (--enable-ssl) to take effect");
  }
  if (!c->ssl_enabled) {
    for (const std::string& l : c->listen) {
      ListenSpec spec;
      std::string err;
      if (ParseListenSpec(l, &spec, &err) && spec.tls != ListenSpec::Tls::kDefault) {
        static constexpr const char* kNames[] = {"", "notls", "btls", "mtls"};
        return Bad(std::string("'") + kNames[static_cast<int>(spec.tls)] +
                   "' option is valid only when SSL is enabled");
      }
    }
  }
  if (c->item_size_max < kItemSizeMaxLower) {
    return Bad("Item max size cannot be less than 1024 bytes.");
  }
  if (c->item_size_max > kItemSizeMaxUpper) {
    return Bad("Cannot set item size limit higher than a gigabyte.");
  }
  if (c->item_size_max > c->mem_limit / 2) {
    return Bad("Cannot set item size limit higher than 1/2 of memory max.");
  }
  if (!c->slab_chunk_max_set || c->slab_chunk_max == 0) {
    // memcached: half a page, unless no_modern asked for a whole page.
    if (c->slab_chunk_max == 0) c->slab_chunk_max = c->slab_page_size / 2;
  }
  if (c->slab_chunk_max > c->item_size_max) {
    return Bad("slab_chunk_max (bytes: " + std::to_string(c->slab_chunk_max) +
               ") cannot be larger than -I (item_size_max " +
               std::to_string(c->item_size_max) + ")");
  }
  if (c->item_size_max % c->slab_chunk_max != 0) {
    return Bad("-I (item_size_max: " + std::to_string(c->item_size_max) +
               ") must be evenly divisible by slab_chunk_max (bytes: " +
               std::to_string(c->slab_chunk_max) + ")");
  }
  if (c->slab_page_size % c->slab_chunk_max != 0) {
    return Bad("slab_chunk_max (bytes: " + std::to_string(c->slab_chunk_max) +
               ") must divide evenly into the slab page size (" +
               std::to_string(c->slab_page_size) + ")");
  }
  if (c->hot_lru_pct + c->warm_lru_pct > 80) {
    return Bad("hot_lru_pct + warm_lru_pct cannot be more than 80% combined");
  }
  if (c->temp_lru && !c->lru_maintainer) {
    return Bad("temporary_ttl requires lru_maintainer to be enabled");
  }
  if (c->protocol == "binary") {
    return Bad("the binary protocol is not supported; use -B ascii or -B auto");
  }
  return Status::Ok();
}

enum LongOnly : int {
  kOptRespPort = 1000,
  kOptPortFile,
  kOptAdminPort,
  kOptAdminBind,
  kOptAclFile,
  kOptProtectedMode,
  kOptMaxConnections,
  kOptTls,  // every --tls-*: the name is the option's (long_index)
};

const option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},
    {"udp-port", required_argument, nullptr, 'U'},
    {"unix-socket", required_argument, nullptr, 's'},
    {"unix-mask", required_argument, nullptr, 'a'},
    {"enable-shutdown", no_argument, nullptr, 'A'},
    {"listen", required_argument, nullptr, 'l'},
    {"daemon", no_argument, nullptr, 'd'},
    {"enable-coredumps", no_argument, nullptr, 'r'},
    {"user", required_argument, nullptr, 'u'},
    {"memory-limit", required_argument, nullptr, 'm'},
    {"disable-evictions", no_argument, nullptr, 'M'},
    {"conn-limit", required_argument, nullptr, 'c'},
    {"max-connections", required_argument, nullptr, kOptMaxConnections},
    {"lock-memory", no_argument, nullptr, 'k'},
    {"verbose", optional_argument, nullptr, 'v'},
    {"help", no_argument, nullptr, 'h'},
    {"license", no_argument, nullptr, 'i'},
    {"version", no_argument, nullptr, 'V'},
    {"pidfile", required_argument, nullptr, 'P'},
    {"slab-growth-factor", required_argument, nullptr, 'f'},
    {"slab-min-size", required_argument, nullptr, 'n'},
    {"enable-largepages", no_argument, nullptr, 'L'},
    {"threads", required_argument, nullptr, 't'},
    {"max-reqs-per-event", required_argument, nullptr, 'R'},
    {"disable-cas", no_argument, nullptr, 'C'},
    {"listen-backlog", required_argument, nullptr, 'b'},
    {"protocol", required_argument, nullptr, 'B'},
    {"max-item-size", required_argument, nullptr, 'I'},
    {"enable-sasl", no_argument, nullptr, 'S'},
    {"disable-flush-all", no_argument, nullptr, 'F'},
    {"disable-dumping", no_argument, nullptr, 'X'},
    {"disable-watch", no_argument, nullptr, 'W'},
    {"auth-file", required_argument, nullptr, 'Y'},
    {"memory-file", required_argument, nullptr, 'e'},
    {"enable-ssl", no_argument, nullptr, 'Z'},
    {"extended", required_argument, nullptr, 'o'},
    {"napi-ids", required_argument, nullptr, 'N'},
    {"resp-port", required_argument, nullptr, kOptRespPort},
    {"port-file", required_argument, nullptr, kOptPortFile},
    {"admin-port", required_argument, nullptr, kOptAdminPort},
    {"admin-bind", required_argument, nullptr, kOptAdminBind},
    // Redis's TLS settings of the RESP TLS port (RespTls names them).
    {"tls-port", required_argument, nullptr, kOptTls},
    {"tls-cert-file", required_argument, nullptr, kOptTls},
    {"tls-key-file", required_argument, nullptr, kOptTls},
    {"tls-key-file-pass", required_argument, nullptr, kOptTls},
    {"tls-client-cert-file", required_argument, nullptr, kOptTls},
    {"tls-client-key-file", required_argument, nullptr, kOptTls},
    {"tls-client-key-file-pass", required_argument, nullptr, kOptTls},
    {"tls-dh-params-file", required_argument, nullptr, kOptTls},
    {"tls-ca-cert-file", required_argument, nullptr, kOptTls},
    {"tls-ca-cert-dir", required_argument, nullptr, kOptTls},
    {"tls-protocols", required_argument, nullptr, kOptTls},
    {"tls-ciphers", required_argument, nullptr, kOptTls},
    {"tls-ciphersuites", required_argument, nullptr, kOptTls},
    {"tls-prefer-server-ciphers", required_argument, nullptr, kOptTls},
    {"tls-session-caching", required_argument, nullptr, kOptTls},
    {"tls-session-cache-size", required_argument, nullptr, kOptTls},
    {"tls-session-cache-timeout", required_argument, nullptr, kOptTls},
    {"tls-auth-clients", required_argument, nullptr, kOptTls},
    {"tls-auth-clients-user", required_argument, nullptr, kOptTls},
    {"tls-replication", required_argument, nullptr, kOptTls},
    {"tls-cluster", required_argument, nullptr, kOptTls},
    {"aclfile", required_argument, nullptr, kOptAclFile},
    {"protected-mode", required_argument, nullptr, kOptProtectedMode},
    {nullptr, 0, nullptr, 0},
};
constexpr const char* kShortOptions = ":p:U:s:a:Al:dru:m:Mc:kvhiVP:f:n:LD:t:R:Cb:B:I:SFXWY:e:Zo:N:";

// Applies one option. `opt` is getopt's return value, `arg` its argument.
Status ApplyOption(int opt, const char* arg_c, Config* c) {
  std::string_view arg = arg_c ? std::string_view(arg_c) : std::string_view();
  std::string a(arg);
  int64_t v = 0;
  uint64_t u = 0;
  double d = 0;
  switch (opt) {
    case 'p':
      if (!ParseInt(arg, 0, 65535, &v)) return Bad("invalid TCP port for -p: " + a);
      c->port = static_cast<int>(v);
      c->port_set = true;
      break;
    case 'U':
      if (!ParseInt(arg, 0, 65535, &v)) return Bad("invalid UDP port for -U: " + a);
      c->udp_port = static_cast<int>(v);
      break;
    case 's':
      if (arg.empty()) return Bad("-s needs a socket path");
      c->unix_socket = a;
      break;
    case 'a': {
      int mask = 0;
      auto r = std::from_chars(arg.data(), arg.data() + arg.size(), mask, 8);
      if (arg.empty() || r.ec != std::errc() || r.ptr != arg.data() + arg.size() || mask > 0777) {
        return Bad("invalid octal access mask for -a: " + a);
      }
      c->unix_mask = mask;
      break;
    }
    case 'A': c->enable_shutdown = true; break;
    case 'l': {
      size_t start = 0;
      while (start <= a.size()) {
        size_t comma = a.find(',', start);
        std::string one = a.substr(start, comma == std::string::npos ? std::string::npos
                                                                     : comma - start);
        if (!one.empty()) {
          net::ListenAddr la;
          ListenSpec spec;
          std::string err;
          if (!ParseListenSpec(one, &spec, &err)) return Bad(err);
          if (!net::ParseListenAddr(spec.addr, &la)) return Bad("invalid listen address: " + one);
          c->listen.push_back(one);
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (c->listen.empty()) return Bad("-l needs an address");
      break;
    }
    case 'd': c->daemonize = true; break;
    case 'r': c->coredumps = true; break;
    case 'u':
      if (arg.empty()) return Bad("-u needs a user name");
      c->user = a;
      break;
    case 'm': {
      // MiB by default; a k/m/g suffix gives the unit explicitly.
      uint64_t bytes;
      bool suffixed = !arg.empty() && !(arg.back() >= '0' && arg.back() <= '9');
      if (suffixed ? !ParseSize(arg, &bytes) : !ParseU64(arg, &u)) {
        return Bad("invalid memory limit for -m: " + a);
      }
      if (!suffixed) {
        if (u > (UINT64_MAX >> 20)) return Bad("invalid memory limit for -m: " + a);
        bytes = u << 20;
      }
      if (bytes == 0) return Bad("memory limit (-m) must be greater than 0");
      c->mem_limit = bytes;
      break;
    }
    case 'M': c->evict_to_free = false; break;
    case 'c':
    case kOptMaxConnections:
      if (!ParseInt(arg, INT64_MIN, INT64_MAX, &v)) {
        return Bad("invalid connection limit for -c: " + a);
      }
      if (v <= 0) return Bad("Maximum connections must be greater than 0");
      c->max_connections = static_cast<size_t>(v);
      break;
    case 'k': c->lock_memory = true; break;
    case 'v':
      if (arg.empty()) {
        c->verbose++;
      } else {
        if (!ParseInt(arg, 0, 3, &v)) return Bad("invalid verbosity: " + a);
        c->verbose = static_cast<int>(v);
      }
      break;
    case 'h': c->action = Config::Action::kHelp; break;
    case 'i': c->action = Config::Action::kLicense; break;
    case 'V': c->action = Config::Action::kVersion; break;
    case 'P':
      if (arg.empty()) return Bad("-P needs a file name");
      c->pid_file = a;
      break;
    case 'f':
      if (!ParseDouble(arg, &d)) return Bad("invalid growth factor for -f: " + a);
      if (d <= 1.0) return Bad("Factor must be greater than 1");
      c->factor = d;
      break;
    case 'n':
      if (!ParseInt(arg, INT64_MIN, INT64_MAX, &v)) return Bad("invalid chunk size for -n: " + a);
      if (v <= 0) return Bad("Chunk size must be greater than 0");
      c->chunk_size = static_cast<size_t>(v);
      break;
    case 'L': c->prealloc = true; break;
    case 'D':
      if (arg.size() != 1) return Bad("No delimiter specified");
      c->prefix_delimiter = arg[0];
      c->detail_enabled = true;
      break;
    case 't':
      if (!ParseInt(arg, INT64_MIN, INT64_MAX, &v)) {
        return Bad("invalid number of threads for -t: " + a);
      }
      if (v <= 0) return Bad("Number of threads must be greater than 0");
      if (v > 256) return Bad("Number of threads cannot be more than 256");
      c->num_threads = static_cast<int>(v);
      if (v > 64) c->warnings.push_back("a high number of worker threads is not recommended");
      break;
    case 'R':
      if (!ParseInt(arg, INT64_MIN, INT64_MAX, &v)) {
        return Bad("invalid requests per event for -R: " + a);
      }
      if (v <= 0) return Bad("Number of requests per event must be greater than 0");
      if (v > INT32_MAX) return Bad("Number of requests per event is too large");
      c->reqs_per_event = static_cast<int>(v);
      break;
    case 'C': c->use_cas = false; break;
    case 'b':
      if (!ParseInt(arg, INT64_MIN, INT64_MAX, &v)) return Bad("invalid backlog for -b: " + a);
      if (v <= 0) return Bad("Listen backlog must be greater than 0");
      if (v > INT32_MAX) return Bad("Listen backlog is too large");
      c->backlog = static_cast<int>(v);
      break;
    case 'B':
      if (arg != "ascii" && arg != "auto" && arg != "binary") {
        return Bad("Invalid value for binding protocol: " + a +
                   " -- should be one of auto, binary, or ascii");
      }
      c->protocol = a;
      break;
    case 'I':
      if (!ParseSize(arg, &u)) return Bad("invalid max item size for -I: " + a);
      c->item_size_max = u;
      break;
    case 'S': return Bad("SASL is not supported by Trove (-S)");
    case 'F': c->disable_flush_all = true; break;
    case 'X': c->disable_dumping = true; break;
    case 'W': c->disable_watch = true; break;
    case 'Y': c->auth_file = a; break;
    case 'e':
      if (arg.empty()) return Bad("-e needs a file name");
      c->memory_file = a;
      break;
    case 'Z': c->ssl_enabled = true; break;
    case 'N': return Bad("napi ids (-N) are not supported by Trove");
    case 'o': return ApplyExtendedList(arg, c);
    case kOptRespPort:
      if (!ParseInt(arg, 0, 65535, &v)) return Bad("invalid RESP port for --resp-port: " + a);
      // --resp-port 0 with --port-file means "ephemeral"; without it, "off".
      c->resp_port = static_cast<int>(v);
      c->resp_port_set = true;
      break;
    case kOptPortFile:
      if (arg.empty()) return Bad("--port-file needs a file name");
      c->port_file = a;
      break;
    case kOptAdminPort:
      if (!ParseInt(arg, 0, 65535, &v)) return Bad("invalid port for --admin-port: " + a);
      c->admin_port = static_cast<int>(v);
      break;
    case kOptAclFile:
      c->aclfile = a;
      break;
    case kOptProtectedMode: {
      // Redis reads yes/no in any case.
      std::string v = a;
      for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (v != "yes" && v != "no") return Bad("--protected-mode takes yes or no, not '" + a + "'");
      c->protected_mode = v == "yes";
      break;
    }
    case kOptAdminBind:
      if (arg.empty()) return Bad("--admin-bind needs an address");
      c->admin_bind = a;
      break;
    default:
      return Bad("unhandled option");
  }
  return Status::Ok();
}

}  // namespace

Result<Config> ParseArgs(const std::vector<std::string>& argv) {
  Config c;
  // TROVE_RESP_PORT sets --resp-port's default (0: a pure memcached server),
  // for running unchanged memcached command lines next to a redis-server.
  if (const char* env = std::getenv("TROVE_RESP_PORT"); env != nullptr && *env != '\0') {
    int64_t v = 0;
    if (!ParseInt(env, 0, 65535, &v)) return Bad(std::string("invalid TROVE_RESP_PORT: ") + env);
    c.resp_port = static_cast<int>(v);
    c.resp_port_set = true;  // asked for: a port that cannot be bound is fatal
  }
  std::vector<std::string> copy = argv;
  if (copy.empty()) copy.push_back("trove");
  std::vector<char*> ptrs;
  for (std::string& s : copy) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  int argc = static_cast<int>(copy.size());
  optind = 0;  // glibc: full re-initialisation, so ParseArgs can run again
  opterr = 0;
  int opt;
  int long_index = -1;
  while ((opt = getopt_long(argc, ptrs.data(), kShortOptions, kLongOptions, &long_index)) != -1) {
    const char* prev = optind > 0 && optind <= argc ? ptrs[optind - 1] : "";
    if (opt == '?') {
      if (optopt != 0 && optopt < 256) {
        return Bad(std::string("invalid option -- '") + static_cast<char>(optopt) + "'");
      }
      return Bad(std::string("unrecognized option '") + prev + "'");
    }
    if (opt == ':') {
      if (optopt != 0 && optopt < 256) {
        return Bad(std::string("option requires an argument -- '") +
                   static_cast<char>(optopt) + "'");
      }
      return Bad(std::string("option '") + prev + "' requires an argument");
    }
    if (opt == kOptTls) {  // checked by Server::Create (resp::RespTls::ParseOption)
      c.resp_tls.emplace_back(kLongOptions[long_index].name, optarg != nullptr ? optarg : "");
      long_index = -1;
      continue;
    }
    Status s = ApplyOption(opt, optarg, &c);
    if (!s.ok()) return s;
    long_index = -1;
  }
  if (optind < argc) {
    return Bad(std::string("unexpected argument '") + ptrs[optind] + "'");
  }
  if (c.action != Config::Action::kRun) return c;
  Status s = Validate(&c);
  if (!s.ok()) return s;
  return c;
}

engine::EngineOptions Config::ToEngineOptions() const {
  engine::EngineOptions o;
  o.mem_limit = mem_limit;
  o.item_size_max = item_size_max;
  o.factor = factor;
  o.chunk_size_min = chunk_size;
  o.slab_chunk_max = slab_chunk_max;
  o.use_cas = use_cas;
  o.evict_to_free = evict_to_free;
  if (hashpower > 0) o.hashpower_init = hashpower;
  o.lru_maintainer = lru_maintainer;
  o.lru_segmented = lru_segmented;
  o.lru_crawler = lru_crawler;
  o.hot_lru_pct = hot_lru_pct;
  o.warm_lru_pct = warm_lru_pct;
  o.hot_max_factor = hot_max_factor;
  o.warm_max_factor = warm_max_factor;
  o.temp_lru = temp_lru;
  o.temp_ttl = temp_ttl;
  o.slab_reassign = slab_reassign;
  o.slab_automove = slab_automove;
  o.slab_automove_ratio = slab_automove_ratio;
  o.slab_automove_window = slab_automove_window;
  o.slab_automove_freeratio = slab_automove_freeratio;
  o.prealloc = prealloc;
  o.memory_file = memory_file;
  // memcached's test hook (its t/64bit.t): start total_malloced here.
  if (const char* v = std::getenv("T_MEMD_INITIAL_MALLOC")) {
    uint64_t n = 0;
    if (ParseU64(v, &n)) o.initial_malloced = static_cast<size_t>(n);
  }
  return o;
}

memcache::ProtocolOptions Config::ToProtocolOptions() const {
  memcache::ProtocolOptions o;
  o.version = kVersion;
  o.reqs_per_event = reqs_per_event;
  o.cas_enabled = use_cas;
  o.item_size_max = item_size_max;
  o.binary_refused = true;
  o.flush_enabled = !disable_flush_all;
  o.watch_enabled = !disable_watch;
  o.dump_enabled = !disable_dumping;
  return o;
}

resp::RespOptions Config::ToRespOptions() const {
  resp::RespOptions o;
  o.port = resp_port;
  o.idle_timeout_s = idle_timeout_s;
  o.aclfile = aclfile;
  o.protected_mode = protected_mode;
  return o;
}

net::NetServerOptions Config::ToNetOptions() const {
  net::NetServerOptions o;
  o.num_workers = num_threads;
  o.max_connections = max_connections;
  o.maxconns_fast = maxconns_fast;
  o.idle_timeout_s = idle_timeout_s;
  o.verbosity = verbose;
  o.tls_handshake_timeout_ms = ssl_handshake_timeout_s * 1000;
  o.tls_wbuf_size = ssl_wbuf_size;
  return o;
}

bool ParseListenSpec(std::string_view s, ListenSpec* out, std::string* err) {
  *out = ListenSpec{};
  // memcached matches the prefix's letters and skips one more byte (the ':').
  static constexpr std::pair<std::string_view, ListenSpec::Tls> kTlsPrefixes[] = {
      {"notls", ListenSpec::Tls::kNone}, {"btls", ListenSpec::Tls::kBasic},
      {"mtls", ListenSpec::Tls::kMutual}};
  for (const auto& [name, mode] : kTlsPrefixes) {
    if (s.rfind(name, 0) == 0 && s.size() > name.size()) {
      out->tls = mode;
      s = s.substr(name.size() + 1);
      break;
    }
  }
  if (s.rfind("proto[", 0) == 0) {
    const size_t e = s.find(']');
    if (e == std::string_view::npos) {
      *err = "Invalid protocol in socket config: \"" + std::string(s) + "\"";
      return false;
    }
    out->proto = std::string(s.substr(6, e - 6));
    if (out->proto != "ascii" && out->proto != "proxy") {
      *err = "-l proto[" + out->proto + "]: only ascii and proxy listeners are supported by Trove";
      return false;
    }
    s = s.substr(e + 1);
    if (!s.empty() && s.front() == ':') s = s.substr(1);
  }
  if (s.rfind("tag[", 0) == 0 || s.rfind("tag_", 0) == 0) {
    const size_t e = s.find(s[3] == '[' ? ']' : '_', 4);
    if (e == std::string_view::npos) {
      *err = "Invalid tag in socket config: \"" + std::string(s) + "\"";
      return false;
    }
    out->tag = std::string(s.substr(4, e - 4));
    if (out->tag.empty() || out->tag.size() > 8) {
      *err = "Listener tags must be between 1 and 8 characters: \"" + std::string(s) + "\"";
      return false;
    }
    s = s.substr(e + 1);
    if (!s.empty() && s.front() == ':') s = s.substr(1);
  }
  out->addr = std::string(s);
  return true;
}

std::string HelpText() {
  std::string h = "trove ";
  h += kVersion;
  h += R"( (memcached-compatible)
-p, --port=<num>          TCP port to listen on (default: 11211; 0 = ephemeral)
-U, --udp-port=<num>      UDP port to listen on (default: 0, off)
-s, --unix-socket=<file>  UNIX socket to listen on (turns TCP off)
-a, --unix-mask=<mask>    access mask for the UNIX socket, in octal (default: 700)
-A, --enable-shutdown     enable the ascii "shutdown" command
-l, --listen=<addr>       interfaces to listen on, comma separated (default: all);
                          IPv6 as [::1] or [::1]:port; with the proxy,
                          tag[<name>]:<addr> or tag_<name>_:<addr> tags a listener;
                          with -Z, a notls:, btls: or mtls: prefix (first) makes a
                          listener plain, TLS without or with a verified client
                          certificate (e.g. mtls:proto[ascii]:tag_tools_:127.0.0.1:11212)
-d, --daemon              run as a daemon
-r, --enable-coredumps    maximize core file limit
-u, --user=<user>         assume the identity of <user> (only when run as root)
-m, --memory-limit=<num>  item memory in megabytes (default: 64)
-M, --disable-evictions   return an error on memory exhausted instead of evicting
-c, --conn-limit=<num>    max simultaneous connections (default: 1024)
                          (also --max-connections=<num>)
-k, --lock-memory         lock down all paged memory (mlockall)
-v, --verbose             verbose (-vv very verbose, -vvv extremely verbose)
-h, --help                print this help and exit
-i, --license             print the license and exit
-V, --version             print version and exit
-P, --pidfile=<file>      save the PID in <file>
-f, --slab-growth-factor=<num> chunk size growth factor (default: 1.25)
-n, --slab-min-size=<bytes> min space used for key+value+flags (default: 48)
-L, --enable-largepages   preallocate item memory
-D <char>                 delimiter between key prefixes and IDs for per-prefix
                          stats (turns them on)
-t, --threads=<num>       number of worker threads (default: 4)
-R, --max-reqs-per-event  requests handled per connection per event (default: 20)
-C, --disable-cas         disable use of CAS
-b, --listen-backlog=<num> backlog queue limit (default: 1024)
-B, --protocol=<name>     ascii or auto (binary is not supported)
-I, --max-item-size=<num> max item size (default: 1m, min: 1k, max: 1024m)
-F, --disable-flush-all   disable the flush_all command
-X, --disable-dumping     disable stats cachedump and lru_crawler metadump
-W, --disable-watch       disable the watch command (log streams)
-Y, --auth-file=<file>    enable ASCII protocol authentication; format: user:pass
                          lines (a connection's first `set` carries "user pass")
-Z, --enable-ssl          enable TLS/SSL on the memcached port (-o ssl_* below)
-e, --memory-file=<file>  mmap a file for item memory (use a ram disk);
                          enables restartable cache (stop with SIGUSR1)
    --resp-port=<num>     Redis-protocol (RESP) port (default: 6379; 0 = off)
    --port-file=<file>    after binding, write "memcache <port>", "resp <port>"
                          and "admin <port>" lines to <file> (with -p 0 /
                          --resp-port 0 / --admin-port 0 the ports are ephemeral)
    --admin-port=<num>    an operator's RESP port, exempt from maxclients
                          (default: off)
    --aclfile=<file>      Redis ACL users ("user <name> <rules>" lines), loaded
                          at start-up; ACL LOAD / ACL SAVE read and write it
    --admin-bind=<addr>   the admin port's address (default: 127.0.0.1)
    --protected-mode=yes|no  Redis's protected mode on the RESP ports
                          (default: yes): while the default user has no
                          password, only loopback clients are served
-o, --extended            comma separated list of extended options:
   maxconns_fast, no_maxconns_fast, hashpower=N, tail_repair_time=0,
   lru_crawler, no_lru_crawler, lru_crawler_sleep=N, lru_crawler_tocrawl=N,
   lru_maintainer, no_lru_maintainer, lru_segmented, no_lru_segmented,
   hot_lru_pct=N, warm_lru_pct=N, hot_max_factor=F, warm_max_factor=F,
   temp_lru, no_temp_lru, temporary_ttl=N, idle_timeout=N, slab_reassign,
   no_slab_reassign, slab_automove=0|1|2, no_slab_automove,
   slab_automove_ratio=F, slab_automove_window=N, slab_automove_freeratio=F,
   slab_chunk_max=KB, no_chunked_items, read_buf_mem_limit=MB,
   watcher_logbuf_size=KB, worker_logbuf_size=KB, modern, no_modern,
   proxy_config=FILE[:FILE...] (memcached's Lua proxy), proxy_arg=STR
   ssl_chain_cert=FILE (PEM certificate chain), ssl_key=FILE (private key),
   ssl_keyformat=1|2 (PEM, DER; default: 1), ssl_verify_mode=0-3 (none,
   request, require, once; default: 0), ssl_ca_cert=FILE (CAs for client
   certificates), ssl_ciphers=LIST (TLS 1.2 and older), ssl_wbuf_size=KB
   (default: 16), ssl_session_cache, ssl_kernel_tls, ssl_min_version=0-3
   (tlsv1.0-tlsv1.3; default: 2), ssl_handshake_timeout=S (Trove's;
   default: 10), ssl_auth_user_cn (Trove's: a verified client
   certificate's CN names the connection's ACL user)
   (memcached's other -o names are refused, naming what Trove lacks)
)";
  return h;
}

}  // namespace trove::server
