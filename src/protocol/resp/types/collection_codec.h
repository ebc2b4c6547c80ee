// The engine::HeapCodec of RESP collections, so large lists, hashes, sets and
// sorted sets survive a warm restart (-e). Called by the engine on the main
// thread while it saves or restores.
#pragma once

#include "engine/heap_codec.h"

namespace trove::resp {

// The codec for every CollectionBase (stateless, lives for the process).
const engine::HeapCodec* CollectionCodec();

}  // namespace trove::resp
