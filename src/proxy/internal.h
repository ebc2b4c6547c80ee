// The proxy's way into Trove's own cache and stats: mcp.internal(r),
// mcp.internal_handler (a handle target) and mcp.server_stats([sub]).
// LocalServer is implemented in src/server (server/proxy_local.h) over the
// memcache protocol handler, so the proxy never includes the engine
// (docs/STYLE.md, "Layout and layering"). InternalCache runs on one worker.
#pragma once

#include <lua5.4/lua.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/non_copyable.h"
#include "net/io_buffer.h"
#include "net/protocol_handler.h"

namespace trove::proxy {

struct RequestUd;
struct ResponseUd;

// The metatable of mcp.internal_handler (memcached's "mcp.internal_be"):
// fg:new_handle accepts it like a pool.
inline constexpr const char* kInternalMt = "mcp.internal_be";

// What the proxy asks of the server it runs in.
// Thread safety: NewHandler on the worker that will use the handler;
// Stats from any thread (calls are serialized by the implementation).
class LocalServer {
 public:
  virtual ~LocalServer() = default;
  // A memcached protocol handler over Trove's own cache with no connection
  // behind it (no ConnControl, so it never suspends, resumes or closes a
  // connection) for worker `worker_id`. Its requests are the proxy's own:
  // no -Y authentication and no -o read_buf_mem_limit budget apply.
  virtual std::unique_ptr<net::ProtocolHandler> NewHandler(int worker_id) = 0;
  // The lines of the memcached port's `stats <sub>` reply (`stats` for an
  // empty sub) as (name, value) pairs; false when that reply is an error.
  // REQUIRES: sub is one word of [a-z_] (the caller picks it from a list).
  virtual bool Stats(std::string_view sub, std::vector<std::pair<std::string, std::string>>* out) = 0;
};

// One worker's way into the cache: a request object in, a response object
// out, synchronously (memcached's proxy_internal.c runs the same commands
// inline on the worker).
//
// Thread safety: the owner worker thread only.
//
// Invariants:
//  1. No item reference outlives Run: the reply is copied out of the
//     handler's output, then the output is cleared, which releases every
//     item it referenced (values are referenced in place, not copied).
//  2. The handler is given exactly one whole request per Run. When it does
//     not consume all of it, or wants to close, it is replaced, so a later
//     request is never read as part of an earlier one.
//  3. The cache always answers: noreply becomes "noreplY" and meta q flags
//     spaces, as for a backend (BackendBytes); the proxy drops what the
//     client asked not to see when it writes the route's result.
//  4. No allocation per request once warm: the request bytes, the output
//     buffer and the response object's bytes keep their capacity.
class InternalCache : NonCopyable {
 public:
  InternalCache(LocalServer* local, int worker_id);
  ~InternalCache();

  // Runs request `r` on the cache and fills *res (its bytes, the parsed
  // reply, cmd; `failed` when the cache gave no reply a client could read).
  void Run(const RequestUd& r, ResponseUd* res);

 private:
  LocalServer* const local_;
  const int worker_id_;
  std::unique_ptr<net::ProtocolHandler> handler_;
  net::OutputBuffer out_;
  std::string req_;  // the request bytes as the cache gets them (invariant 3)
};

// Registers mcp.internal, mcp.internal_handler and mcp.server_stats in the
// mcp table on the stack top (every VM; each raises a Lua error in the
// wrong kind of VM, as the other mcp functions do).
void OpenInternalFunctions(lua_State* L);

// memcached's mcp.start_arg for -o proxy_arg=`arg` (pushed): the string as
// it is, or, when it holds a ':', a table of its ':'-separated parts, each
// "name_value" (name = value, both strings) or "name" (name = true).
void PushStartArg(lua_State* L, std::string_view arg);

}  // namespace trove::proxy
