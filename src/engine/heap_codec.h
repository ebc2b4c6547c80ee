// HeapCodec: how the protocol that owns HeapValues turns them into bytes and
// back, so a warm restart (-e) can carry them across processes. Called by the
// engine on the main thread while it saves or restores (no worker running).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "engine/engine.h"

namespace trove::engine {

// The engine knows nothing of what a HeapValue holds: the layer that creates
// them (RESP collections) registers one codec in EngineOptions::heap_codec.
// Without a codec, heap-valued items are dropped at a warm restart.
//
// Thread safety: stateless; the engine calls it from one thread at a time.
class HeapCodec {
 public:
  virtual ~HeapCodec() = default;
  // Appends the bytes of `v`, an item value of `type`, to *out.
  virtual void Encode(ValueType type, const HeapValue& v, std::string* out) const = 0;
  // The value Encode wrote, or nullptr when `bytes` are not a valid encoding.
  virtual std::unique_ptr<HeapValue> Decode(ValueType type, std::string_view bytes) const = 0;
};

}  // namespace trove::engine
