// Limits and tunables shared by every layer, each with its reason.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trove::limits {

// memcached's key limit (protocol.txt: "the key must not exceed 250 characters").
inline constexpr size_t kMemcacheMaxKey = 250;
// Engine keys may be longer for RESP (Redis keys are binary-safe); an item stores
// the key length in 16 bits.
inline constexpr size_t kEngineMaxKey = 65535;
// memcached's 2048-byte limit on a text command line (KEY_MAX_LENGTH plus
// room for flags/exptime/cas and meta flags).
inline constexpr size_t kMemcacheMaxLine = 2048;
// Reads are done in 16 KiB pieces, as memcached's READ_BUFFER_SIZE; the buffer
// grows only to hold one large value.
inline constexpr size_t kReadChunk = 16 * 1024;
// A connection whose unsent output passes this stops being read until drained.
inline constexpr size_t kOutputSoftLimit = 4 * 1024 * 1024;
// Each worker's housekeeping tick: output limits checked without traffic
// (Redis's clientsCron runs at hz 10) and buffer peaks sampled.
inline constexpr int64_t kHousekeepingMs = 100;
// INFO client_recent_max_input/output_buffer: the peak over this many recent
// seconds, one slot per second (Redis's CLIENTS_PEAK_MEM_USAGE_SLOTS).
inline constexpr size_t kBufferPeakSlots = 8;
// Bounded channels (docs/resp_modes.md section 4): new-connection handoff and worker inbox.
inline constexpr size_t kAcceptChannelCapacity = 256;
inline constexpr size_t kWorkerInboxCapacity = 1024;
// The acceptor's inbox holds at most a stop and one re-arm wake-up at a time
// (Acceptor::Wake posts only when none is pending), so a small one never fills.
inline constexpr size_t kAcceptorInboxCapacity = 16;
// Out of file descriptors (EMFILE/ENFILE), the acceptor stops watching its
// listeners and retries after this long, as memcached does; a closing
// connection re-arms it sooner.
inline constexpr int64_t kAcceptRetryMs = 10;
// A keyspace walk (KEYS, DBSIZE) yields to its worker's other connections
// after this long: the extra latency a long command adds to its neighbours.
inline constexpr int64_t kWalkSliceNanos = 1000000;
// memcached: exptime values above 30 days are absolute unix times.
inline constexpr int64_t kRealtimeMaxDelta = 60 * 60 * 24 * 30;
// Redis: inline requests are capped at 64 KiB (PROTO_INLINE_MAX_SIZE).
inline constexpr size_t kRespInlineMax = 64 * 1024;
// Redis proto-max-bulk-len default.
inline constexpr size_t kRespMaxBulk = 512ull * 1024 * 1024;
// Redis multibulk length limit (1024*1024 arguments).
inline constexpr int64_t kRespMaxMultibulk = 1024 * 1024;

// Redis's SLOWLOG_ENTRY_MAX_ARGC / SLOWLOG_ENTRY_MAX_STRING: a slow log entry
// keeps at most 32 arguments and 128 bytes of each, so a huge MSET logged at
// slowlog-log-slower-than 0 costs a bounded amount of memory.
inline constexpr size_t kSlowLogMaxArgc = 32;
inline constexpr size_t kSlowLogMaxArgLen = 128;
// Redis's LATENCY_TS_LEN: an event keeps its worst sample of each of the last
// 160 seconds that had one.
inline constexpr size_t kLatencySamples = 160;

}  // namespace trove::limits
