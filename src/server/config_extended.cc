// memcached 1.6's -o suboptions: names, values, limits and their errors.
// Main thread, at startup.
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/config_internal.h"

namespace trove::server::detail {
namespace {

Status ApplySsl(const std::string& n, std::string_view value, bool has_value, Config* c) {
  // memcached's -o ssl_* options and its words for bad values; they take
  // effect with -Z (Validate refuses them without it).
  c->ssl_options_set = true;
  net::TlsSettings& t = c->ssl;
  const std::string v(value);
  int64_t num = 0;
  auto need_value = [&]() -> Status {
    if (!has_value || value.empty()) return Bad("Missing " + n + " argument");
    return Status::Ok();
  };
  auto int_arg = [&](int64_t lo, int64_t hi) -> Status {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseInt(value, INT32_MIN, INT32_MAX, &num)) return Bad("could not parse argument to " + n);
    if (num < lo || num > hi) return Bad("Invalid " + n + ". Use help to see valid options.");
    return Status::Ok();
  };
  Status s;
  if (n == "ssl_chain_cert" || n == "ssl_key" || n == "ssl_ciphers" || n == "ssl_ca_cert") {
    s = need_value();
    if (!s.ok()) return s;
    (n == "ssl_chain_cert" ? t.chain_cert
     : n == "ssl_key"      ? t.key
     : n == "ssl_ciphers"  ? t.ciphers
                           : t.ca_cert) = v;
  } else if (n == "ssl_verify_mode") {
    if (!(s = int_arg(0, 3)).ok()) return s;
    t.verify_mode = static_cast<int>(num);
  } else if (n == "ssl_keyformat") {
    // OpenSSL's SSL_FILETYPE_PEM (1) and _ASN1 (2); memcached passes any
    // number on, OpenSSL then refuses the key at start.
    if (!(s = int_arg(INT32_MIN, INT32_MAX)).ok()) return s;
    t.keyformat = static_cast<int>(num);
  } else if (n == "ssl_min_version") {
    if (!(s = int_arg(0, 3)).ok()) return s;
    t.min_version = static_cast<int>(num);
  } else if (n == "ssl_wbuf_size") {
    // KiB; the per-worker buffer small replies are gathered in before one
    // TLS write.
    if (!(s = int_arg(1, 1 << 20)).ok()) return Bad("could not parse argument to " + n);
    c->ssl_wbuf_size = static_cast<size_t>(num) * 1024;
  } else if (n == "ssl_session_cache") {
    t.session_cache = true;
  } else if (n == "ssl_kernel_tls") {
    t.kernel_tls = true;
  } else if (n == "ssl_auth_user_cn") {
    c->ssl_auth_user_cn = true;
  } else if (n == "ssl_handshake_timeout") {
    if (!(s = int_arg(1, 86400)).ok()) return s;
    c->ssl_handshake_timeout_s = num;
  } else {
    return Bad("Illegal suboption \"" + n + "\"");
  }
  return Status::Ok();
}

// One -o name=value. Names are memcached 1.6's; the ones naming a feature
// Trove lacks (extstore, the proxy's io_uring and memory profiler, ...)
// are refused with a message.
Status ApplyExtended(std::string_view name, std::string_view value, bool has_value,
                     Config* c) {
  std::string n(name);
  auto need_value = [&]() -> Status {
    if (!has_value || value.empty()) return Bad("Missing " + n + " argument");
    return Status::Ok();
  };
  auto number = [&](int64_t lo, int64_t hi, int64_t* out, const char* range_msg) -> Status {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseInt(value, INT64_MIN, INT64_MAX, out)) {
      return Bad("could not parse argument to " + n + ": " + std::string(value));
    }
    if (*out < lo || *out > hi) return Bad(range_msg);
    return Status::Ok();
  };
  int64_t v = 0;
  double d = 0;
  if (n == "maxconns_fast") {
    c->maxconns_fast = true;
  } else if (n == "no_maxconns_fast") {
    c->maxconns_fast = false;
  } else if (n == "hashpower") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseInt(value, INT64_MIN, INT64_MAX, &v)) return Bad("could not parse hashpower");
    if (v < 12) {
      return Bad("Initial hashtable multiplier of " + std::string(value) + " is too low");
    }
    if (v > 32) {
      return Bad("Initial hashtable multiplier of " + std::string(value) + " is too high");
    }
    c->hashpower = static_cast<int>(v);
  } else if (n == "slab_reassign") {
    c->slab_reassign = true;
  } else if (n == "no_slab_reassign") {
    c->slab_reassign = false;
  } else if (n == "slab_automove") {
    if (!has_value) {
      c->slab_automove = 1;
    } else {
      Status s = number(0, 2, &v, "slab_automove must be between 0 and 2");
      if (!s.ok()) return s;
      c->slab_automove = static_cast<int>(v);
    }
  } else if (n == "no_slab_automove") {
    c->slab_automove = 0;
  } else if (n == "slab_automove_ratio") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseDouble(value, &d)) return Bad("could not parse argument to slab_automove_ratio");
    if (d <= 0 || d >= 1) return Bad("slab_automove_ratio must be > 0 and < 1");
    c->slab_automove_ratio = d;
  } else if (n == "slab_automove_window") {
    Status s = need_value();
    if (!s.ok()) return s;
    // memcached: atoi, then the range check.
    v = std::atoi(std::string(value).c_str());
    if (v < 3 || v > 1800) return Bad("slab_automove_window must be > 2 and < 1800");
    c->slab_automove_window = static_cast<uint32_t>(v);
  } else if (n == "slab_automove_freeratio") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseDouble(value, &d)) return Bad("could not parse argument to slab_automove_freeratio");
    c->slab_automove_freeratio = d;
  } else if (n == "tail_repair_time") {
    Status s = number(0, INT32_MAX, &v, "tail_repair_time must be >= 0");
    if (!s.ok()) return s;
    if (v != 0 && v < 10) return Bad("Cannot set tail_repair_time to less than 10 seconds");
    // memcached repairs items whose reference was leaked for this long;
    // Trove's references are scoped and cannot leak, so only 0 (off, the
    // default) is accepted.
    if (v != 0) return Bad("-o tail_repair_time is not supported by Trove (references cannot leak)");
    c->tail_repair_time = 0;
  } else if (n == "hash_algorithm") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (value != "jenkins" && value != "murmur3" && value != "xxh3") {
      return Bad("Unknown hash_algorithm option (jenkins, murmur3, xxh3)");
    }
    // The choice is internal to the hash table (no client can observe it);
    // Trove has one hash, XXH64, and says so rather than pretend.
    return Bad("-o hash_algorithm=" + std::string(value) +
               " is not supported by Trove: keys are always hashed with xxh64");
  } else if (n == "lru_crawler") {
    c->lru_crawler = true;
  } else if (n == "no_lru_crawler") {
    c->lru_crawler = false;
  } else if (n == "lru_crawler_sleep") {
    Status s = number(0, 1000000, &v, "LRU crawler sleep must be between 0 and 1 second");
    if (!s.ok()) return s;
    c->lru_crawler_sleep = static_cast<uint32_t>(v);
  } else if (n == "lru_crawler_tocrawl") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseInt(value, 0, UINT32_MAX, &v)) {
      return Bad("lru_crawler_tocrawl takes a numeric 32bit value");
    }
    c->lru_crawler_tocrawl = static_cast<uint32_t>(v);
  } else if (n == "lru_maintainer") {
    c->lru_maintainer = true;
  } else if (n == "no_lru_maintainer") {
    c->lru_maintainer = false;
    c->lru_segmented = false;  // memcached: segments need the maintainer
  } else if (n == "hot_lru_pct") {
    Status s = number(2, 79, &v, "hot_lru_pct must be > 1 and < 80");
    if (!s.ok()) return s;
    c->hot_lru_pct = static_cast<int>(v);
  } else if (n == "warm_lru_pct") {
    Status s = number(2, 79, &v, "warm_lru_pct must be > 1 and < 80");
    if (!s.ok()) return s;
    c->warm_lru_pct = static_cast<int>(v);
  } else if (n == "hot_max_factor" || n == "warm_max_factor") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseDouble(value, &d)) return Bad("could not parse argument to " + n);
    if (d <= 0) return Bad(n + " must be > 0");
    (n == "hot_max_factor" ? c->hot_max_factor : c->warm_max_factor) = d;
  } else if (n == "temp_lru") {
    c->temp_lru = true;
  } else if (n == "no_temp_lru") {
    c->temp_lru = false;
  } else if (n == "temporary_ttl" || n == "temp_ttl") {
    Status s = number(0, UINT32_MAX, &v, "temporary_ttl must be >= 0");
    if (!s.ok()) return s;
    c->temp_lru = true;  // memcached: setting the TTL turns the TEMP LRU on
    c->temp_ttl = static_cast<uint32_t>(v);
  } else if (n == "idle_timeout") {
    Status s = number(0, INT32_MAX, &v, "idle_timeout must be >= 0");
    if (!s.ok()) return s;
    c->idle_timeout_s = v;
  } else if (n == "slab_chunk_max") {
    // Kilobytes, as memcached 1.6 takes it (1..1024).
    Status s = number(INT32_MIN, INT32_MAX, &v, "could not parse argument to slab_chunk_max");
    if (!s.ok()) return s;
    if (v <= 0) return Bad("slab_chunk_max must be >= 0");
    if (v > 1024) return Bad("slab_chunk_max must be specified in kilobytes.");
    c->slab_chunk_max = static_cast<size_t>(v) * 1024;
    c->slab_chunk_max_set = true;
  } else if (n == "no_chunked_items") {
    c->slab_chunk_max = c->slab_page_size;
    c->slab_chunk_max_set = true;
  } else if (n == "modern") {
    // memcached 1.6: "currently: nothing".
  } else if (n == "no_modern") {
    // memcached's 1.4-era defaults.
    if (!c->slab_chunk_max_set) c->slab_chunk_max = c->slab_page_size;
    c->slab_reassign = false;
    c->slab_automove = 0;
    c->lru_maintainer = false;
    c->lru_segmented = false;
    c->lru_crawler = false;
    c->maxconns_fast = false;
    c->temp_lru = false;
  } else if (n == "watcher_logbuf_size" || n == "worker_logbuf_size") {
    // memcached: kilobytes.
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseInt(value, 1, 1 << 20, &v)) {
      return Bad("could not parse argument to " + n + ": " + std::string(value));
    }
    (n == "watcher_logbuf_size" ? c->watcher_logbuf_kb : c->worker_logbuf_kb) = static_cast<size_t>(v);
  } else if (n == "read_buf_mem_limit") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (!ParseInt(value, 0, UINT32_MAX, &v)) return Bad("could not parse argument to read_buf_mem_limit");
    c->read_buf_mem_limit = static_cast<size_t>(v) * 1024 * 1024;  // megabytes
  } else if (n.rfind("ext_", 0) == 0 || n == "no_ext_drop_unread") {
    return Bad("-o " + n + ": extstore is not supported by Trove (items live in memory only)");
  } else if (n.rfind("ssl_", 0) == 0) {
    return ApplySsl(n, value, has_value, c);
  } else if (n == "proxy_config" || n == "proxy_arg") {
    Status s = need_value();
    if (!s.ok()) return s;
    if (n == "proxy_config") {
      c->proxy_config = std::string(value);
    } else {
      c->proxy_arg = std::string(value);
      c->proxy_arg_set = true;
    }
  } else if (n == "proxy_uring" || n == "proxy_memprofile") {
    return Bad("-o " + n + " is not supported by Trove's proxy");
  } else if (n == "num_napi_ids" || n == "sock_cookie_id" || n == "slab_sizes" ||
             n == "track_sizes" || n == "no_hashexpand" || n == "drop_privileges" ||
             n == "meta_response_old") {
    return Bad("-o " + n + " is not supported by Trove");
  } else if (n == "lru_segmented") {
    c->lru_segmented = true;
  } else if (n == "no_lru_segmented") {
    c->lru_segmented = false;
  } else if (n == "inline_ascii_resp" || n == "no_inline_ascii_resp" ||
             n == "no_drop_privileges") {
    // No-ops in memcached 1.6 too (inline_ascii_response is a dead setting;
    // Trove never drops privileges with seccomp): same behaviour, accepted.
  } else {
    return Bad("Illegal suboption \"" + n + "\"");
  }
  return Status::Ok();
}

}  // namespace

Status ApplyExtendedList(std::string_view list, Config* c) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    Status s = eq == std::string_view::npos
                   ? ApplyExtended(item, {}, false, c)
                   : ApplyExtended(item.substr(0, eq), item.substr(eq + 1), true, c);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace trove::server::detail
