// The request context (mcp.rctx), as memcached's proxy_luafgen.c defines
// it: one slot of a function generator, with its own coroutine, request
// object and one queue entry per handle (a pool, or a child function
// generator whose slot this slot pins). A route enqueues requests on
// handles, waits for some of them (wait_cond, wait_handle,
// enqueue_and_wait, with optional timeouts) and returns a result; the slot
// goes back to its generator when the route has returned and every request
// it sent has come back (late replies are swallowed).
//
// Thread safety: the owner worker thread only.
//
// Invariants:
//  1. pending = (the coroutine, while it has not returned) + requests on
//     backends + child slots that have not drained. The slot is reset and
//     freed exactly when it reaches 0.
//  2. A handle goes Idle -> Queued -> Active -> Complete -> Waited once per
//     request; enqueueing a handle that is not Idle does nothing
//     (memcached's rule).
//  3. A child's result reaches its parent from the worker's deferred queue,
//     never from inside the parent's own resume.
//  4. A BackendOp names its slot by pointer; the slot clears that pointer
//     when it is collected, so a reply for a dead slot is dropped.
//  5. An internal-cache handle (mcp.internal_handler) is answered inside
//     Dispatch, with no backend; it counts in pending, as a request on a
//     backend does, until RunHandles hands its result to the wait, in handle
//     order, after every queued handle has been dispatched. So a wait sees
//     the same returns as with backends, only sooner.
#pragma once

#include <lua5.4/lua.hpp>

#include <memory>
#include <string>
#include <vector>

#include "net/event_loop.h"
#include "protocol/memcache/response_parser.h"
#include "proxy/backend.h"
#include "proxy/request.h"

namespace trove::proxy {

class ProxyWorker;
struct WorkerPool;
struct Rctx;
struct RouterConf;
struct FuncgenUd;

// Result classes (memcached's RQUEUE_R_*; RES_GOOD / RES_OK / RES_ANY in Lua).
inline constexpr uint8_t kResResume = 1 << 1;
inline constexpr uint8_t kResGood = 1 << 3;
inline constexpr uint8_t kResOk = 1 << 4;
inline constexpr uint8_t kResAny = 1 << 5;
inline constexpr uint8_t kResError = 1 << 7;

// Wait modes (WAIT_ANY .. WAIT_FASTGOOD are Lua's constants).
enum WaitMode : uint8_t {
  kWaitIdle = 0, kWaitAny, kWaitOk, kWaitGood, kWaitFastGood, kWaitHandle, kWaitSleep,
  kWaitZero,  // wait_cond(0): send what is queued, resume at once
};

// The response object (mcp.response).
struct ResponseUd {
  std::string bytes;
  memcache::ParsedReply parsed;
  bool failed = false;  // no reply (backend failure): status error, SERVER_ERROR code
  int cmd = 0;          // the request's command
  int64_t elapsed_us = 0;
  std::shared_ptr<const BackendSpec> be;  // who answered (log_req), null when none
  BufferCharge charge;  // a backend's reply held by a slot's handle, until the slot is reset
  bool ok() const { return !failed && !parsed.is_error(); }
  int code() const { return failed ? memcache::kCodeServerError : parsed.code; }
  // RES_GOOD / RES_OK / RES_ANY|ERROR, memcached's classification.
  uint8_t Class() const {
    if (!ok()) return kResAny | kResError;
    return parsed.code == memcache::kCodeEnd ? kResOk : kResGood;
  }
};

// One handle of a slot (memcached's mcp_rqueue_s).
struct HandleSlot {
  enum State : uint8_t { kIdle, kQueued, kActive, kComplete, kWaited };
  State state = kIdle;
  uint8_t flags = 0;
  std::shared_ptr<WorkerPool> pool;  // a pool handle
  bool internal = false;             // an mcp.internal_handler handle
  bool internal_done = false;        // answered by Dispatch, not yet returned (invariant 5)
  Rctx* child = nullptr;             // a child funcgen handle: the pinned slot
  int child_ref = LUA_NOREF;
  RequestUd* rq = nullptr;  // the queued request, held by req_ref until reset
  int req_ref = LUA_NOREF;
  ResponseUd* res = nullptr;  // this handle's response object (pool handles), reused
  int res_ref = LUA_NOREF;
  int result_ref = LUA_NOREF;  // a child's result (response or string), until reset
  int cb_ref = LUA_NOREF;      // handle_set_cb
  std::shared_ptr<BackendOp> op;  // made on first use, reused
};

// A slot: the userdata body of an mcp.rctx. Uservalue 1 is its handler
// function, uservalue 2 its funcgen.
struct Rctx {
  ProxyWorker* worker = nullptr;
  FuncgenUd* fgen = nullptr;  // its funcgen (uservalue 2 keeps it alive)
  int self_ref = LUA_NOREF;  // while in use (pending > 0), or pinned by a parent
  lua_State* co = nullptr;
  int co_ref = LUA_NOREF;
  RequestUd* req = nullptr;  // top-level slots: the client's request
  int req_ref = LUA_NOREF;
  std::vector<HandleSlot> h;
  int pending = 0;
  bool running = false;  // the coroutine has started and not returned
  WaitMode wait_mode = kWaitIdle;
  int wait_count = 0, wait_done = 0;
  size_t wait_handle = 0;
  net::Timer timer;
  Rctx* parent = nullptr;
  size_t parent_handle = 0;
  bool is_child = false;
  bool child_ok = false;  // a child's coroutine returned normally (its result on co's top)
  // Top-level request: where the reply goes.
  std::function<void(std::string_view)> finish;
  bool multiget = false;
  int cfd = 0;
  std::shared_ptr<const std::string> peer_cn;  // RequestView::peer_cn
  std::string fgen_name;
  // User objects (rctx:request_new / response_new, at most the funcgen's
  // user_objs): kept alive by the VM's table of them (mutator.cc) and
  // blanked by ResetUserObjects when the slot is released.
  std::vector<RequestUd*> user_reqs;
  std::vector<ResponseUd*> user_res;
  explicit Rctx(ProxyWorker* w);
};

// memcached's slot cleanup of user objects: each goes back to blank (its
// buffer kept unless large), so a route can mutate it again next request.
void ResetUserObjects(Rctx* rc);

// fg:ready{u = N}: 1..kMaxUserObjs user objects per slot (memcached's
// RQUEUE_UOBJ_MAX).
inline constexpr int kMaxUserObjs = 255;

// The funcgen userdata body (mcp.funcgen). Uservalue 1: { handles = {...},
// gen = f, arg = a } (a handle is a pool proxy or a funcgen); uservalue 2:
// its free slots {rctx...}. A router (mcp.router_new) is a funcgen with
// `router` set and no slots.
struct FuncgenUd {
  ProxyWorker* worker = nullptr;
  std::string name;
  bool ready = false;
  int64_t slots = 0;
  int user_objs = 0;             // fg:ready{u = N}
  RouterConf* router = nullptr;  // owned
  // The slot cache (slot_cache.cc): memcached's easing of idle slots.
  int64_t free_pressure = 0;
  int64_t free_waiter_s = 0;  // monotonic second after which a slot may be freed; 0: none
  // No attached hook reaches it any more (a reload replaced it): its idle
  // slots were freed, and slots that finish are freed, not cached.
  bool closed = false;
  // Closed with no slot left: no longer counted in funcs_<name> (as
  // memcached's cleanup), even while the VM has not collected it yet.
  bool retired = false;
};

// memcached's proxy_req log line body (watch proxyreqs) for request rq and
// its result (res null: no result; the zeros memcached logs).
std::string ProxyReqLine(const RequestUd& rq, const ResponseUd* res, uint8_t flags, int cfd,
                         std::string_view detail, std::string_view host, std::string_view port);

}  // namespace trove::proxy
