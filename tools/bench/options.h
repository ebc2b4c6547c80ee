// trove-bench command-line options: parsing and validation. Main thread only;
// the load threads read the parsed struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "key_chooser.h"
#include "session.h"

namespace trove::bench {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: the protocol's default (11211 or 6379)
  Protocol protocol = Protocol::kText;
  int threads = 1;
  int conns_per_thread = 10;
  int pipeline = 1;
  uint32_t set_weight = 1;  // --ratio SET:GET
  uint32_t get_weight = 10;
  uint64_t key_count = 100000;
  KeyPattern pattern = KeyPattern::kUniform;
  double zipf_exponent = 0.99;
  std::string key_prefix = "key:";
  size_t value_min = 32;
  size_t value_max = 32;
  int multiget = 1;
  double duration_s = 10;
  uint64_t requests = 0;  // > 0: stop after this many instead of a duration
  double warmup_s = 1;
  double rate = 0;  // ops/s over all connections; 0: closed loop
  bool prefill = false;
  bool json = false;
  int progress = -1;  // -1: only when stderr is a terminal
  uint64_t seed = 1;
  double drain_s = 2;  // after the end, wait this long for outstanding replies
  bool resp_tracking = false;  // CLIENT TRACKING on for every connection
  std::string resp_auth;       // "user:pass": every connection sends AUTH first
  bool tls = false;            // --tls: every connection speaks TLS
  std::string tls_cert, tls_key;  // --tls-cert / --tls-key: a client certificate

  int total_conns() const { return threads * conns_per_thread; }
};

// Parses argv into *out. Returns InvalidArgument with a message for bad
// input; sets *help when --help was given.
Status ParseOptions(int argc, char** argv, Options* out, bool* help);
const char* UsageText();
const char* ProtocolName(Protocol p);
const char* PatternName(KeyPattern p);

}  // namespace trove::bench
