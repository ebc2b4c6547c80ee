// Command numbers and backend identity (proxy_types.h).
#include "proxy/proxy_types.h"

#include <cstdio>

namespace trove::proxy {

std::string BackendSpec::Key() const {
  const BackendOptions& o = opts;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "|%g|%g|%g|%g|%g|%u|%d|%d|%d|%d|%d|%d|%d|%d|%lld|%d|", o.connect_timeout,
                o.retry_waittime, o.read_timeout, o.flap_time, o.flap_backoff_ramp,
                o.flap_backoff_max, o.failure_limit, o.depth_limit, o.connections, o.down ? 1 : 0,
                o.tcp_keepalive ? 1 : 0, o.log ? 1 : 0, o.log_rate,
                o.log_errors ? 1 : 0, static_cast<long long>(o.log_deadline_ms), o.tls ? 1 : 0);
  return key_prefix + "\n" + label + "\n" + host + "\n" + port + buf + o.log_tag;
}

CopiedValue::CopiedValue() = default;
CopiedValue::CopiedValue(const CopiedValue&) = default;
CopiedValue::CopiedValue(CopiedValue&&) noexcept = default;
CopiedValue& CopiedValue::operator=(const CopiedValue&) = default;
CopiedValue& CopiedValue::operator=(CopiedValue&&) noexcept = default;
CopiedValue::~CopiedValue() = default;

}  // namespace trove::proxy
