// CONFIG's parameters: the table, each one's value as CONFIG GET shows it,
// and checking and applying a new value (CONFIG SET). Runs on the
// connection's worker.
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/str_append.h"
#include "protocol/resp/commands/config_internal.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {
namespace {

const ConfigParam kParamTable[] = {
    {"list-max-listpack-size", &RespServer::list_max_listpack_size, true},
    {"hash-max-listpack-entries", &RespServer::hash_max_listpack_entries, true},
    {"hash-max-listpack-value", &RespServer::hash_max_listpack_value, true},
    {"set-max-intset-entries", &RespServer::set_max_intset_entries, true},
    {"set-max-listpack-entries", &RespServer::set_max_listpack_entries, true, 0},
    {"set-max-listpack-value", &RespServer::set_max_listpack_value, true, 0},
    {"list-compress-depth", &RespServer::list_compress_depth, true, 0, INT32_MAX},
    {"client-query-buffer-limit", nullptr, true},
    {"zset-max-listpack-entries", &RespServer::zset_max_listpack_entries, true},
    {"zset-max-listpack-value", &RespServer::zset_max_listpack_value, true},
    {"proto-max-bulk-len", &RespServer::proto_max_bulk_len, true},
    {"hll-sparse-max-bytes", nullptr, true},
    {"maxclients", nullptr, true},
    {"client-output-buffer-limit", nullptr, true},
    {"slowlog-log-slower-than", &RespServer::slowlog_log_slower_than, true, -1},
    {"slowlog-max-len", &RespServer::slowlog_max_len, true, 0},
    {"latency-monitor-threshold", &RespServer::latency_monitor_threshold, true, 0},
    {"busy-reply-threshold", &RespServer::busy_reply_threshold, true, 0},
    {"lua-time-limit", &RespServer::busy_reply_threshold, true, 0},
    {"busy-reply-scope", nullptr, true},
    {"sanitize-dump-payload", nullptr, true},
    {"latency-tracking", nullptr, true},
    {"hash-max-ziplist-entries", &RespServer::hash_max_listpack_entries, true},
    {"hash-max-ziplist-value", &RespServer::hash_max_listpack_value, true},
    {"zset-max-ziplist-entries", &RespServer::zset_max_listpack_entries, true},
    {"zset-max-ziplist-value", &RespServer::zset_max_listpack_value, true},
    {"list-max-ziplist-size", &RespServer::list_max_listpack_size, true},
    {"databases", nullptr, false},
    {"maxmemory", nullptr, true},
    {"maxmemory-policy", nullptr, true},
    {"requirepass", nullptr, true},
    {"port", nullptr, false},
    {"daemonize", nullptr, false},
    {"save", nullptr, true},
    {"appendonly", nullptr, true},
    {"timeout", nullptr, true},
    {"notify-keyspace-events", nullptr, true},
    {"tracking-table-max-keys", nullptr, true},
    {"aclfile", nullptr, false},
    {"acllog-max-len", nullptr, true},
    {"acl-pubsub-default", nullptr, true},
    {"protected-mode", nullptr, true},
    // Redis's TLS settings (services/tls_settings.h); CONFIG SET applies
    // the ones given together in one step (CmdConfig).
    {"tls-port", nullptr, false},
    {"tls-cert-file", nullptr, true},
    {"tls-key-file", nullptr, true},
    {"tls-key-file-pass", nullptr, true},
    {"tls-client-cert-file", nullptr, true},
    {"tls-client-key-file", nullptr, true},
    {"tls-client-key-file-pass", nullptr, true},
    {"tls-dh-params-file", nullptr, true},
    {"tls-ca-cert-file", nullptr, true},
    {"tls-ca-cert-dir", nullptr, true},
    {"tls-protocols", nullptr, true},
    {"tls-ciphers", nullptr, true},
    {"tls-ciphersuites", nullptr, true},
    {"tls-prefer-server-ciphers", nullptr, true},
    {"tls-session-caching", nullptr, true},
    {"tls-session-cache-size", nullptr, true},
    {"tls-session-cache-timeout", nullptr, true},
    {"tls-auth-clients", nullptr, true},
    {"tls-auth-clients-user", nullptr, true},
    {"tls-replication", nullptr, true},
    {"tls-cluster", nullptr, true},
};

int64_t MaxClients(CommandContext& ctx) {
  return static_cast<int64_t>(ctx.server->port_limit().max.load(std::memory_order_relaxed));
}

}  // namespace

const std::span<const ConfigParam> kParams = kParamTable;

std::string ConfigValue(CommandContext& ctx, const ConfigParam& p) {
  std::string v;
  if (p.field != nullptr) {
    AppendI64(v, (ctx.server->*p.field).load(std::memory_order_relaxed));
    return v;
  }
  std::string_view n = p.name;
  if (RespTls::IsName(n)) return ctx.server->tls().Get(n);
  if (n == "databases")
    AppendI64(v, ctx.server->databases());
  else if (n == "maxmemory")
    AppendU64(v, ctx.engine->mem_limit());
  else if (n == "maxmemory-policy")
    v = ctx.engine->evict_to_free() ? "allkeys-lru" : "noeviction";
  else if (n == "requirepass")
    v = "";  // only the password's SHA-256 is kept (docs/resp.md)
  else if (n == "port")
    AppendI64(v, ctx.server->bound_port());
  else if (n == "appendonly" || n == "daemonize")
    v = "no";
  else if (n == "save")
    v = "";
  else if (n == "timeout")
    AppendI64(v, ctx.server->timeout_s.load(std::memory_order_relaxed));
  else if (n == "maxclients")
    AppendI64(v, MaxClients(ctx));
  else if (n == "client-output-buffer-limit")
    v = ctx.server->obuf_limits().ToString();
  else if (n == "latency-tracking")
    v = ctx.server->latency_tracking.load(std::memory_order_relaxed) ? "yes" : "no";
  else if (n == "notify-keyspace-events")
    v = protocol::FormatKeyEventClasses(ctx.server->key_events().flags());
  else if (n == "tracking-table-max-keys")
    AppendU64(v, ctx.server->tracking().max_keys());
  else if (n == "aclfile")
    v = ctx.server->acl().aclfile();
  else if (n == "acllog-max-len")
    AppendI64(v, ctx.server->acl().log_max_len());
  else if (n == "acl-pubsub-default")
    v = ctx.server->acl().pubsub_default_all() ? "allchannels" : "resetchannels";
  else if (n == "protected-mode")
    v = ctx.server->protected_mode().enabled() ? "yes" : "no";
  else if (n == "sanitize-dump-payload")
    v = "yes";  // RESTORE always checks a payload whole (commands/dump.cc)
  else if (n == "busy-reply-scope")
    v = ctx.server->busy_reply_all.load(std::memory_order_relaxed) ? "all" : "worker";
  else if (n == "client-query-buffer-limit")
    AppendI64(v, ctx.server->client_query_buffer_limit.load(std::memory_order_relaxed));
  else if (n == "hll-sparse-max-bytes")
    AppendI64(v, ctx.server->hll_sparse_max_bytes.load(std::memory_order_relaxed));
  return v;
}

void SetFailed(CommandContext& ctx, std::string_view name, std::string_view why) {
  std::string m = "ERR CONFIG SET failed (possibly related to argument '";
  m.append(name);
  m += "') - ";
  m.append(why);
  ctx.Error(m);
}

namespace {

// Redis's boolean parameters: yes or no, in any case.
bool ParseYesNo(CommandContext& ctx, std::string_view name, std::string_view value, bool* on) {
  const std::string v = ToLower(value);
  if (v != "yes" && v != "no") {
    SetFailed(ctx, name, "argument must be 'yes' or 'no'");
    return false;
  }
  *on = v == "yes";
  return true;
}

// Parameters without a plain integer field. Each does what it says or is
// refused with a reason; none is accepted and ignored.
bool SetSpecial(CommandContext& ctx, const std::string& name, std::string_view value) {
  if (name == "maxclients") {
    // The RESP port's own limit: memcached's -c is not touched.
    int64_t n;
    if (!ParseStrictInt64(value, &n) || n < 1 || n > UINT32_MAX) {
      SetFailed(ctx, name, "argument must be between 1 and 4294967295 inclusive");
      return false;
    }
    ctx.server->port_limit().max.store(static_cast<size_t>(n), std::memory_order_relaxed);
    return true;
  }
  if (name == "maxmemory" || name == "client-query-buffer-limit" ||
      name == "hll-sparse-max-bytes") {
    // Redis's memory values: bytes, or with k/kb/m/mb/g/gb.
    int64_t n;
    if (!ParseMemoryUnits(value, &n) || n < 0) {
      SetFailed(ctx, name, "argument must be a memory value");
      return false;
    }
    if (name == "client-query-buffer-limit") {
      // Redis's range: 1mb up to LONG_MAX. The largest query a client may
      // have buffered (a command's arguments together) before it is closed.
      if (n < (1 << 20)) {
        SetFailed(ctx, name, "argument must be between 1048576 and 9223372036854775807 inclusive");
        return false;
      }
      ctx.server->client_query_buffer_limit.store(n, std::memory_order_relaxed);
      return true;
    }
    if (name == "hll-sparse-max-bytes") {
      // Redis's range is 0..LONG_MAX, which every memory value here is in.
      // Values already sparse past a lowered limit turn dense at their
      // next growth.
      ctx.server->hll_sparse_max_bytes.store(n, std::memory_order_relaxed);
      return true;
    }
    // The same limit as memcached's cache_memlimit (0: none, as Redis's 0
    // and memcached's -m 0). Lowered below the pages in use, write
    // commands answer -OOM until pages are given back (docs/resp.md).
    if (!ctx.engine->SetMemLimit(static_cast<size_t>(n))) {
      SetFailed(ctx, name, "the memory is preallocated (-L) and cannot shrink");
      return false;
    }
    // As Redis: keys are evicted (with `evicted` events) until the data
    // fits, or none is left.
    (void)ctx.engine->EvictToLimit();
    return true;
  }
  if (name == "maxmemory-policy") {
    // Trove's two: evict the coldest keys (memcached's segmented LRU, which
    // is what allkeys-lru names) or refuse the write (noeviction, -M). The
    // volatile-*, *-lfu and *-random policies are refused, not approximated.
    const std::string v = ToLower(value);
    if (v != "allkeys-lru" && v != "noeviction") {
      const bool known = v == "volatile-lru" || v == "volatile-lfu" || v == "volatile-random" ||
                         v == "volatile-ttl" || v == "allkeys-lfu" || v == "allkeys-random";
      SetFailed(ctx, name,
                known ? "Trove evicts by LRU over all keys: only allkeys-lru and noeviction"
                      : "argument(s) must be one of the following: volatile-lru, volatile-lfu, "
                        "volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, "
                        "allkeys-random, noeviction");
      return false;
    }
    ctx.engine->SetEvictToFree(v == "allkeys-lru");
    return true;
  }
  if (name == "save") {
    if (!value.empty()) {
      SetFailed(ctx, name, "Trove keeps no snapshots; only \"\" is accepted");
      return false;
    }
    return true;
  }
  if (name == "appendonly") {
    if (ToLower(value) != "no") {
      SetFailed(ctx, name, "Trove has no append-only file; only 'no' is accepted");
      return false;
    }
    return true;
  }
  if (name == "timeout" || name == "acllog-max-len") {
    // Redis's ranges. `timeout` is the RESP port's own; memcached's
    // -o idle_timeout stays.
    int64_t n;
    if (!ParseStrictInt64(value, &n)) {
      SetFailed(ctx, name, "argument couldn't be parsed into an integer");
      return false;
    }
    if (n < 0 || n > INT32_MAX) {
      SetFailed(ctx, name, "argument must be between 0 and 2147483647 inclusive");
      return false;
    }
    if (name == "timeout") {
      ctx.server->timeout_s.store(n, std::memory_order_relaxed);
    } else {
      ctx.server->acl().set_log_max_len(n);
    }
    return true;
  }
  if (name == "protected-mode" || name == "latency-tracking") {
    bool on;
    if (!ParseYesNo(ctx, name, value, &on)) return false;
    if (name == "protected-mode") {
      // For connections accepted afterwards; open ones stay, as in Redis.
      ctx.server->protected_mode().set_enabled(on);
    } else {
      ctx.server->latency_tracking.store(on, std::memory_order_relaxed);
    }
    return true;
  }
  if (name == "busy-reply-scope") {
    // Trove's own: who gets BUSY while a script is busy (busy_scripts.h).
    const std::string v = ToLower(value);
    if (v != "worker" && v != "all") {
      SetFailed(ctx, name, "argument(s) must be one of the following: worker, all");
      return false;
    }
    ctx.server->busy_reply_all.store(v == "all", std::memory_order_relaxed);
    return true;
  }
  if (name == "sanitize-dump-payload") {
    // RESTORE checks every payload whole, whoever sends it (there is no
    // replication stream): `yes` and `clients` say what it does; `no`
    // would promise a skipped check, so it is refused.
    const std::string v = ToLower(value);
    if (v != "no" && v != "yes" && v != "clients") {
      SetFailed(ctx, name, "argument(s) must be one of the following: no, yes, clients");
      return false;
    }
    if (v == "no") {
      SetFailed(ctx, name, "Trove always checks DUMP payloads in full");
      return false;
    }
    return true;
  }
  if (name == "acl-pubsub-default") {
    // Applies to users created (or `reset`) afterwards, as in Redis.
    const std::string v = ToLower(value);
    if (v != "allchannels" && v != "resetchannels") {
      SetFailed(ctx, name, "argument(s) must be one of the following: allchannels, resetchannels");
      return false;
    }
    ctx.server->acl().set_pubsub_default_all(v == "allchannels");
    return true;
  }
  if (name == "tracking-table-max-keys") {
    int64_t n;
    if (!ParseStrictInt64(value, &n)) {
      SetFailed(ctx, name, "argument couldn't be parsed into an integer");
      return false;
    }
    if (n < 0) {
      SetFailed(ctx, name, "argument must be between 0 and 9223372036854775807 inclusive");
      return false;
    }
    // Lowering it evicts (and invalidates) the keys over the limit at once.
    ctx.server->tracking().SetMaxKeys(static_cast<size_t>(n));
    return true;
  }
  if (name == "notify-keyspace-events") {
    uint32_t flags = 0;
    if (!protocol::ParseKeyEventClasses(value, &flags)) {
      SetFailed(ctx, name, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.");
      return false;
    }
    ctx.server->key_events().Configure(flags);
    return true;
  }
  if (name == "client-output-buffer-limit") {
    // Enforced for the normal and pubsub classes (output_limits.h); the
    // replica class is kept for CONFIG GET, with no replicas to apply it to.
    std::string err;
    if (!ctx.server->obuf_limits().Apply(value, &err)) {
      SetFailed(ctx, name, err);
      return false;
    }
    return true;
  }
  return true;
}

}  // namespace

// One parameter's new value, checked and applied; false after the error
// reply.
bool ApplyParam(CommandContext& ctx, const ConfigParam& p, const std::string& name,
                std::string_view value) {
  if (p.field != nullptr) {
    int64_t v;
    if (!ParseStrictInt64(value, &v)) {
      SetFailed(ctx, name, "argument couldn't be parsed into an integer");
      return false;
    }
    if (v < p.min || v > p.max) {
      std::string m = "argument must be between ";
      AppendI64(m, p.min);
      m += " and ";
      AppendI64(m, p.max);
      m += " inclusive";
      SetFailed(ctx, name, m);
      return false;
    }
    (ctx.server->*p.field).store(v, std::memory_order_relaxed);
    ctx.server->ConfigChanged();
    return true;
  }
  if (name == "requirepass") {
    ctx.server->set_requirepass(value);
    return true;
  }
  return SetSpecial(ctx, name, value);
}

}  // namespace trove::resp
