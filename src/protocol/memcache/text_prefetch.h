// The memcached-protocol scanner for protocol::PrefetchWindow: finds the key
// of a pipelined text or meta request without parsing it fully. Any thread
// (pure function).
#pragma once

#include <cstddef>
#include <cstdint>

namespace trove::memcache {

// The request at data[start, len): where it ends (after its data block, for
// set/add/replace/append/prepend/cas and ms) and the engine hash of its key
// (the first key of a multiget). Understands get gets delete incr decr touch,
// the storage commands, mg ms md ma; false for anything else, for base64
// keys (meta b) and for a request not complete in the buffer.
bool ScanTextRequest(const char* data, size_t len, size_t start, size_t* end, uint64_t* hv);

}  // namespace trove::memcache
