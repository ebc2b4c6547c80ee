// The memcached listener in proxy mode: requests whose command has a hook
// run as routes (ProxyWorker); every other request (and version, stats,
// watch, mn) is served by the local cache through the ordinary memcache
// handler. Replies go out in request order whatever finishes first.
#pragma once

#include <memory>
#include <string>

#include "net/protocol_handler.h"
#include "proxy/runtime.h"

namespace trove::proxy {

// Wraps `inner` (the memcache factory): one proxy factory per listener tag
// ("" for untagged listeners). `rt` and `inner` outlive it.
std::unique_ptr<net::ProtocolFactory> NewProxyFactory(ProxyRuntime* rt, net::ProtocolFactory* inner,
                                                      std::string tag);

}  // namespace trove::proxy
