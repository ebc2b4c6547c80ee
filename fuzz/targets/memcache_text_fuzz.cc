// libFuzzer target: arbitrary bytes through the memcache protocol handler on
// a real engine, delivered in pieces the way TCP may split them. Checks that
// the handler never consumes more than it was given, never asks for fewer
// bytes than it already has, and survives any input (ASan/UBSan do the rest).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/clock.h"
#include "engine/engine.h"
#include "net/io_buffer.h"
#include "protocol/memcache/memcache_protocol.h"

namespace {

struct World {
  trove::ManualClock clock;
  std::unique_ptr<trove::engine::Engine> engine;
  std::unique_ptr<trove::net::ProtocolFactory> factory;
  World() {
    trove::engine::EngineOptions eo;
    eo.mem_limit = 8u << 20;
    eo.item_size_max = 64u << 10;
    eo.lru_maintainer = false;
    eo.lru_crawler = false;
    eo.clock = &clock;
    engine = std::move(trove::engine::Engine::Create(eo)).value();
    trove::memcache::ProtocolOptions po;
    po.item_size_max = eo.item_size_max;
    po.reqs_per_event = 7;
    factory = trove::memcache::NewMemcacheFactory(engine.get(), nullptr, po);
  }
};

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();
  if (size == 0) return 0;
  // First byte: piece size (1..256) for splitting the rest.
  const size_t step = static_cast<size_t>(data[0]) + 1;
  const char* in = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;
  trove::net::ConnInfoView ci;
  auto handler = world->factory->Create(0, ci);
  trove::net::OutputBuffer out;
  std::string pending;
  size_t pos = 0;
  while (pos < n && !handler->WantsClose()) {
    size_t take = step < n - pos ? step : n - pos;
    pending.append(in + pos, take);
    pos += take;
    for (int rounds = 0; rounds < 64 && !pending.empty() && !handler->WantsClose(); ++rounds) {
      size_t used = handler->OnData(pending.data(), pending.size(), out);
      Check(used <= pending.size());
      if (used == 0) {
        size_t want = handler->BytesWanted();
        Check(want == 0 || want > pending.size());
        break;
      }
      pending.erase(0, used);
    }
    out.Clear();  // runs every item releaser, as a closed connection would
  }
  world->clock.AdvanceSeconds(1);
  return 0;
}
