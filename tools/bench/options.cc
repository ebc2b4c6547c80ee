// trove-bench option parsing (main thread only; see options.h).
#include "options.h"

#include <getopt.h>

#include <cstdlib>
#include <string_view>

#include "common/str_append.h"

namespace trove::bench {

namespace {

bool ParseDouble(const char* s, double* out) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= 0)) return false;
  *out = v;
  return true;
}

bool ParseInt(const char* s, int lo, int hi, int* out) {
  uint64_t v;
  if (!ParseU64(s, &v) || v < static_cast<uint64_t>(lo) || v > static_cast<uint64_t>(hi)) {
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

Status Bad(std::string_view opt, const char* value) {
  std::string m = "bad value for --";
  m += opt;
  m += ": '";
  m += value;
  m += "'";
  return Status::Invalid(m);
}

enum LongOnly {
  kZipfExp = 1000,
  kPrefix,
  kMultiget,
  kWarmup,
  kRate,
  kPrefill,
  kJson,
  kProgress,
  kNoProgress,
  kSeed,
  kRespTracking,
  kTls,
  kTlsCert,
  kTlsKey,
  kRespAuth,
  kPattern,
  kRatio,
  kRequests,
  kDrain,
};

}  // namespace

const char* UsageText() {
  return R"(usage: trove-bench [options]
Load generator for memcached-text, memcached-meta and RESP servers. Every
reply is parsed and every value read back is checked against what the
generator writes for that key.

connection:
  -s, --host HOST          server address (127.0.0.1)
  -p, --port PORT          server port (11211, or 6379 for resp)
  -P, --protocol P         text | meta | resp (text)
  -t, --threads N          load threads, one epoll loop each (1)
  -c, --conns N            connections per thread (10)
  -d, --pipeline N         requests in flight per connection (1)
workload:
      --ratio S:G          sets to gets (1:10); 1:0 is sets only
  -n, --keys N             key space size (100000)
      --pattern P          sequential | uniform | zipf (uniform)
      --zipf-exponent S    Zipf exponent, any S > 0 (0.99)
      --key-prefix STR     key prefix (key:)
  -v, --value-size N|A-B   value bytes, fixed or a range (32)
      --multiget W         keys per get request (1)
      --prefill            set every key once (sequential) before the run
      --resp-auth=U:P      RESP: every connection sends AUTH U P first
      --resp-tracking      RESP: every connection sends CLIENT TRACKING on
      --tls                TLS on every connection (the server is not verified)
      --tls-cert=F --tls-key=F  a client certificate, for servers that ask for one
                           first (client-side caching's cost on the server)
duration and rate:
  -D, --duration S         measured seconds (10)
      --requests N         stop after N requests instead (no warm-up)
  -w, --warmup S           unmeasured seconds before the run (1)
      --rate R             open loop at R ops/s in total; latency counts
                           from each request's intended send time (0: closed
                           loop)
      --drain S            seconds to wait for replies after the end (2)
output:
      --json               print the result as JSON on stdout (the table
                           goes to stderr)
      --progress / --no-progress   per-second lines on stderr (default: when
                           stderr is a terminal)
      --seed N             random seed (1)
exit status: 0 ok, 1 bad usage, 2 could not connect, 3 the run saw errors.
)";
}

const char* ProtocolName(Protocol p) {
  switch (p) {
    case Protocol::kText:
      return "memcache-text";
    case Protocol::kMeta:
      return "memcache-meta";
    case Protocol::kResp:
      return "resp";
  }
  return "?";
}

const char* PatternName(KeyPattern p) {
  switch (p) {
    case KeyPattern::kSequential:
      return "sequential";
    case KeyPattern::kUniform:
      return "uniform";
    case KeyPattern::kZipf:
      return "zipf";
  }
  return "?";
}

Status ParseOptions(int argc, char** argv, Options* o, bool* help) {
  static const option kLong[] = {
      {"host", required_argument, nullptr, 's'},
      {"port", required_argument, nullptr, 'p'},
      {"protocol", required_argument, nullptr, 'P'},
      {"threads", required_argument, nullptr, 't'},
      {"conns", required_argument, nullptr, 'c'},
      {"pipeline", required_argument, nullptr, 'd'},
      {"keys", required_argument, nullptr, 'n'},
      {"value-size", required_argument, nullptr, 'v'},
      {"duration", required_argument, nullptr, 'D'},
      {"warmup", required_argument, nullptr, 'w'},
      {"help", no_argument, nullptr, 'h'},
      {"ratio", required_argument, nullptr, kRatio},
      {"pattern", required_argument, nullptr, kPattern},
      {"zipf-exponent", required_argument, nullptr, kZipfExp},
      {"key-prefix", required_argument, nullptr, kPrefix},
      {"multiget", required_argument, nullptr, kMultiget},
      {"requests", required_argument, nullptr, kRequests},
      {"rate", required_argument, nullptr, kRate},
      {"drain", required_argument, nullptr, kDrain},
      {"prefill", no_argument, nullptr, kPrefill},
      {"json", no_argument, nullptr, kJson},
      {"progress", no_argument, nullptr, kProgress},
      {"no-progress", no_argument, nullptr, kNoProgress},
      {"seed", required_argument, nullptr, kSeed},
      {"resp-tracking", no_argument, nullptr, kRespTracking},
      {"resp-auth", required_argument, nullptr, kRespAuth},
      {"tls", no_argument, nullptr, kTls},
      {"tls-cert", required_argument, nullptr, kTlsCert},
      {"tls-key", required_argument, nullptr, kTlsKey},
      {nullptr, 0, nullptr, 0},
  };
  *help = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":s:p:P:t:c:d:n:v:D:w:h", kLong, nullptr)) != -1) {
    const char* a = optarg;
    switch (c) {
      case 's':
        o->host = a;
        break;
      case 'p':
        if (!ParseInt(a, 1, 65535, &o->port)) return Bad("port", a);
        break;
      case 'P': {
        std::string_view v(a);
        if (v == "text")
          o->protocol = Protocol::kText;
        else if (v == "meta")
          o->protocol = Protocol::kMeta;
        else if (v == "resp")
          o->protocol = Protocol::kResp;
        else
          return Bad("protocol", a);
        break;
      }
      case 't':
        if (!ParseInt(a, 1, 1024, &o->threads)) return Bad("threads", a);
        break;
      case 'c':
        if (!ParseInt(a, 1, 100000, &o->conns_per_thread)) return Bad("conns", a);
        break;
      case 'd':
        if (!ParseInt(a, 1, 100000, &o->pipeline)) return Bad("pipeline", a);
        break;
      case 'n':
        if (!ParseU64(a, &o->key_count) || o->key_count == 0) return Bad("keys", a);
        break;
      case 'v': {
        std::string_view v(a);
        size_t dash = v.find('-');
        uint64_t lo, hi;
        if (dash == std::string_view::npos) {
          if (!ParseU64(v, &lo)) return Bad("value-size", a);
          hi = lo;
        } else if (!ParseU64(v.substr(0, dash), &lo) || !ParseU64(v.substr(dash + 1), &hi)) {
          return Bad("value-size", a);
        }
        if (lo == 0 || lo > hi || hi > kMaxReplyValue) return Bad("value-size", a);
        o->value_min = lo;
        o->value_max = hi;
        break;
      }
      case 'D':
        if (!ParseDouble(a, &o->duration_s) || o->duration_s <= 0) return Bad("duration", a);
        break;
      case 'w':
        if (!ParseDouble(a, &o->warmup_s)) return Bad("warmup", a);
        break;
      case 'h':
        *help = true;
        return Status::Ok();
      case kRatio: {
        std::string_view v(a);
        size_t colon = v.find(':');
        uint32_t s, g;
        if (colon == std::string_view::npos || !ParseU32(v.substr(0, colon), &s) ||
            !ParseU32(v.substr(colon + 1), &g) || s + g == 0 || s > 1000000 || g > 1000000) {
          return Bad("ratio", a);
        }
        o->set_weight = s;
        o->get_weight = g;
        break;
      }
      case kPattern: {
        std::string_view v(a);
        if (v == "sequential")
          o->pattern = KeyPattern::kSequential;
        else if (v == "uniform")
          o->pattern = KeyPattern::kUniform;
        else if (v == "zipf")
          o->pattern = KeyPattern::kZipf;
        else
          return Bad("pattern", a);
        break;
      }
      case kZipfExp:
        if (!ParseDouble(a, &o->zipf_exponent) || o->zipf_exponent <= 0) {
          return Bad("zipf-exponent", a);
        }
        break;
      case kPrefix:
        o->key_prefix = a;
        if (o->key_prefix.size() > 200 ||
            o->key_prefix.find_first_of(" \r\n") != std::string::npos) {
          return Bad("key-prefix", a);
        }
        break;
      case kRespAuth:
        o->resp_auth = optarg;
        break;
      case kRespTracking:
        o->resp_tracking = true;
        break;
      case kTls:
        o->tls = true;
        break;
      case kTlsCert:
        o->tls_cert = optarg;
        break;
      case kTlsKey:
        o->tls_key = optarg;
        break;
      case kMultiget:
        if (!ParseInt(a, 1, 1000, &o->multiget)) return Bad("multiget", a);
        break;
      case kRequests:
        if (!ParseU64(a, &o->requests) || o->requests == 0) return Bad("requests", a);
        break;
      case kRate:
        if (!ParseDouble(a, &o->rate)) return Bad("rate", a);
        break;
      case kDrain:
        if (!ParseDouble(a, &o->drain_s)) return Bad("drain", a);
        break;
      case kPrefill:
        o->prefill = true;
        break;
      case kJson:
        o->json = true;
        break;
      case kProgress:
        o->progress = 1;
        break;
      case kNoProgress:
        o->progress = 0;
        break;
      case kSeed:
        if (!ParseU64(a, &o->seed)) return Bad("seed", a);
        break;
      case ':': {
        std::string m = "option needs a value: ";
        m += argv[optind - 1];
        return Status::Invalid(m);
      }
      default: {
        std::string m = "unknown option: ";
        m += argv[optind - 1];
        return Status::Invalid(m);
      }
    }
  }
  if (optind < argc) {
    std::string m = "unexpected argument: ";
    m += argv[optind];
    return Status::Invalid(m);
  }
  if (o->port == 0) o->port = o->protocol == Protocol::kResp ? 6379 : 11211;
  if (o->multiget > 1 && o->get_weight == 0) return Status::Invalid("--multiget needs gets");
  if (!o->resp_auth.empty() && o->protocol != Protocol::kResp) {
    return Status::Invalid("--resp-auth needs -P resp");
  }
  if ((!o->tls_cert.empty() || !o->tls_key.empty()) && !o->tls) {
    return Status::Invalid("--tls-cert/--tls-key need --tls");
  }
  if (o->resp_tracking && o->protocol != Protocol::kResp) {
    return Status::Invalid("--resp-tracking needs -P resp");
  }
  return Status::Ok();
}

}  // namespace trove::bench
