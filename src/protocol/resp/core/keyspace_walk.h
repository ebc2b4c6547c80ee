// SlicedWalk: a keyspace walk (KEYS, DBSIZE) that runs in slices of about a
// millisecond and yields to its worker's other connections between them.
// Runs on the connection's worker.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/engine.h"
#include "protocol/resp/core/command.h"

namespace trove::resp {

// Why slices: the walk is O(keys) and Redis, single-threaded, stalls every
// client meanwhile. Here only the calling connection waits: between slices
// its connection is suspended and the next slice is a task on its own
// worker's inbox, so the worker's other connections are served in between
// (at most one slice, ~1 ms, of extra latency each turn), and clients on
// other workers never notice. No stripe lock is held across a yield: the
// engine's Scan takes each stripe per bucket, and its cursor survives hash
// table growth. Keys written during the walk may or may not be seen, as
// with SCAN; keys present throughout are seen exactly once. For FLUSHDB and
// FLUSHALL that means: every key present when the flush starts is deleted,
// and a key another client writes while it runs may survive or not (Redis
// orders the whole flush before or after such a write).
struct SlicedWalk {
  engine::Engine* engine = nullptr;
  uint64_t cursor = 0;
  uint64_t conn_id = 0;
  int proto = 2;
  std::function<void(const engine::ItemRef&)> visit;
  // Runs after each Scan call, with no stripe held (FLUSHDB deletes the keys
  // the slice collected here). May be empty.
  std::function<void()> after_slice;
  std::function<void(RespWriter&)> finish;  // writes the reply once the walk ends
  // For a walk that gathers its reply as it goes (KEYS): the bytes that reply
  // will take so far. After each Scan call the walk checks the client's
  // output limit against its unsent output plus these, and past it stops
  // mid-run and closes the client (Redis's KEYS stops on CLIENT_CLOSE_ASAP),
  // so a huge keyspace cannot build a reply the limit forbids. Not checked
  // inside EXEC, which runs whole. Null: no check.
  const size_t* reply_bytes = nullptr;
  bool killed = false;  // stopped by that check
};

// Runs `walk` for ctx's connection: to the end at once when it is short, or
// inside EXEC, or without a connection (unit tests); otherwise in slices,
// with the reply written when the last slice ends.
void RunSlicedWalk(CommandContext& ctx, std::shared_ptr<SlicedWalk> walk);

}  // namespace trove::resp
