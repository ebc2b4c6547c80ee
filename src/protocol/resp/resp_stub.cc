// Placeholder handler until the RESP front lands: answers an error per line.
#include "protocol/resp/resp_protocol.h"

#include <cstring>

namespace trove::resp {
namespace {
class StubHandler final : public net::ProtocolHandler {
 public:
  size_t OnData(const char* data, size_t len, net::OutputBuffer& out) override {
    size_t used = 0;
    while (const void* nl = std::memchr(data + used, '\n', len - used)) {
      used = static_cast<size_t>(static_cast<const char*>(nl) - data) + 1;
      out.Append("-ERR not implemented\r\n");
    }
    return used;
  }
  bool WantsClose() const override { return false; }
};
class StubFactory final : public net::ProtocolFactory {
 public:
  std::unique_ptr<net::ProtocolHandler> Create(int, const net::ConnInfoView&) override {
    return std::make_unique<StubHandler>();
  }
};
}  // namespace

std::unique_ptr<net::ProtocolFactory> NewRespFactory(engine::Engine*, net::ServerServices*,
                                                         const RespOptions&) {
  return std::make_unique<StubFactory>();
}
}  // namespace trove::resp
