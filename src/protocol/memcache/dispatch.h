// MemcacheHandler: the net::ProtocolHandler for memcached's text and meta
// protocol. It frames requests, runs them on the engine and writes replies.
// One handler per connection, used only on that connection's worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "net/event_loop.h"
#include "net/protocol_handler.h"
#include "protocol/memcache/command_table.h"
#include "protocol/memcache/memcache_protocol.h"
#include "protocol/memcache/meta_parser.h"
#include "protocol/memcache/reply_writer.h"
#include "protocol/memcache/text_parser.h"
#include "protocol/command_log.h"
#include "protocol/key_events.h"
#include "protocol/prefetch_window.h"

namespace trove::memcache {

// What every handler of one factory shares (read-only after creation).
struct HandlerContext {
  engine::Engine* engine = nullptr;
  net::ServerServices* services = nullptr;  // may be null in tests
  net::LogHub* log = nullptr;               // `watch`; may be null in tests
  protocol::CommandLog* cmd_log = nullptr;  // SLOWLOG/LATENCY on the RESP front; may be null
  // Keyspace notifications on the RESP front (database 0); may be null.
  protocol::KeyEventSink* key_events = nullptr;
  ProtocolOptions opts;
};

// Parses every complete request in the bytes it is offered, executes it with
// one engine call per key and appends the replies; item values are referenced
// from item memory, never copied.
// Thread safety: owner worker thread only (like the connection it serves).
// Invariants:
//  1. A request is consumed only once it is complete (line, and for storage
//     commands the value and its CRLF); an incomplete one is offered again.
//  2. swallow_ > 0 means the next swallow_ input bytes belong to a rejected
//     value (too large, bad flags) and are dropped before any parsing.
//  3. After close_ is set no further request is parsed.
//  4. While pending_.active, input bytes belong to that request's value
//     until pending_.got reaches its value length plus 2.
//  5. Once a command suspends the connection, OnData returns at once; the
//     command's reply (written when its answer arrives) comes before any
//     later request's.
class MemcacheHandler final : public net::ProtocolHandler {
 public:
  // `control` is the connection (null in tests that drive OnData directly;
  // then the commands that need other workers answer synchronously).
  MemcacheHandler(const HandlerContext* ctx, engine::ThreadStats* ts,
                  net::ConnControl* control = nullptr, int fd = -1,
                  protocol::CommandLog::Sink* sink = nullptr, std::string peer = {});
  ~MemcacheHandler() override;

  size_t OnData(const char* data, size_t len, net::OutputBuffer& out) override;
  bool WantsClose() const override { return close_; }
  bool CloseIsError() const override { return close_error_; }
  size_t BytesWanted() const override { return wanted_; }
  bool IsWatcher() const override { return watcher_id_ != 0; }
  void OnOutputDrained() override { GiveResponses(); }
  // The worker whose share of -o read_buf_mem_limit this connection uses.
  void set_worker(int worker) { worker_ = worker; }
  // ProtocolOptions::tls_user_cn: runs as the ACL user cn names if it
  // exists and is on (as after a -Y login); else nothing changes.
  void AuthenticateByCertificate(const std::string& cn);

 private:
  // -o read_buf_mem_limit: reserves n replies on this worker's share
  // (ResponseBudget); false when over it. Always true without a limit.
  bool TakeResponses(int64_t n) {
    if (ctx_->opts.responses == nullptr) return true;
    if (!ctx_->opts.responses->Take(worker_, n)) return false;
    responses_held_ += n;
    return true;
  }
  // The replies this connection held have been written.
  void GiveResponses() {
    if (responses_held_ == 0) return;
    ctx_->opts.responses->Give(worker_, responses_held_);
    responses_held_ = 0;
  }

  // Handles the request at the front of [data, data+len): finds its command
  // in the command table, runs the checks the table asks for (the keyless
  // permission check among them) and calls its handler. Returns the bytes it
  // consumed, 0 when the request is incomplete.
  size_t ProcessOne(const char* data, size_t len, ReplyWriter& w);
  // The table entry of a command word, or null (command_table.cc).
  static const McCommand* FindCommand(std::string_view word);

  // The command handlers (McCommand::run). Each returns the bytes consumed.
  // Text commands (text_commands.cc).
  size_t Retrieve(const Request& r, ReplyWriter& w);  // get gets gat gats
  size_t Storage(const Request& r, ReplyWriter& w);   // set add replace append prepend cas
  size_t Arith(const Request& r, ReplyWriter& w);     // incr decr
  size_t Delete(const Request& r, ReplyWriter& w);
  size_t Touch(const Request& r, ReplyWriter& w);
  size_t FlushAll(const Request& r, ReplyWriter& w);
  // Stats (stats_commands.cc).
  size_t Stats(const Request& r, ReplyWriter& w);
  void CacheDump(const ParsedLine& pl, ReplyWriter& w);
  // Admin (admin_commands.cc).
  size_t Verbosity(const Request& r, ReplyWriter& w);
  size_t CacheMemlimit(const Request& r, ReplyWriter& w);
  size_t RefreshCerts(const Request& r, ReplyWriter& w);  // -Z: reload the certificates
  size_t Shutdown(const Request& r, ReplyWriter& w);
  size_t Slabs(const Request& r, ReplyWriter& w);
  size_t LruCrawler(const Request& r, ReplyWriter& w);
  // `watch [types...]` (memcached 1.6): the connection becomes a log
  // watcher; it reads no more commands until it closes.
  size_t Watch(const Request& r, ReplyWriter& w);
  // version, quit, mn (command_table.cc).
  size_t Version(const Request& r, ReplyWriter& w);
  size_t Quit(const Request& r, ReplyWriter& w);
  size_t MetaNoop(const Request& r, ReplyWriter& w);
  // An unknown command: ERROR, or (memcached) a silent close when the line
  // ends in an HTTP/ token.
  void Unknown(const ParsedLine& pl, ReplyWriter& w);
  // What `watch fetchers/mutations/deletions` show, when someone watches.
  // The watched types are read once per OnData batch (log_mask_): a watcher
  // added mid-batch sees this connection's events from its next batch.
  bool Watching(net::LogType t) const { return (log_mask_ & t) != 0; }
  // Keyspace notifications for writes, as Redis names them (set, append,
  // incrby, del, expire ...): the enabled classes are read once per OnData
  // batch too, so with notifications off a write pays one test.
  bool Notifying(uint32_t cls) const { return (ke_mask_ & cls) != 0; }
  void Notify(uint32_t cls, const char* event, std::string_view key) {
    if (Notifying(cls)) ctx_->key_events->Notify(cls, event, key);
  }
  // Client tracking: this connection changed `key` (or, InvalidateAll, every
  // key): the RESP clients caching it are told. One test while nobody tracks.
  void Invalidate(std::string_view key) {
    if ((ke_mask_ & protocol::kKeTracking) != 0) ctx_->key_events->InvalidateKey(key);
  }
  // Only when `n` is configured (one lookup): the key has no live item.
  bool KeyIsNew(std::string_view key) {
    return Notifying(protocol::kKeClassNew) && !engine_->Peek(key, ts_);
  }
  // A successful store's events: new, then set / append / prepend, then
  // expire when it gave the item an expiry (Redis's SET EX order).
  void NotifyStore(std::string_view key, engine::StoreMode mode, bool has_expiry, bool was_new);
  // touch / gat / mg T: expire, or persist for an exptime of 0.
  void NotifyTouch(std::string_view key, int64_t exptime) {
    Notify(protocol::kKeClassGeneric, exptime != 0 ? "expire" : "persist", key);
  }
  // The lookup a store does first, as memcached's fetchers show it.
  void LogStoreLookup(std::string_view key);
  void LogStore(std::string_view key, engine::StoreResult r, engine::StoreMode mode,
                int64_t exptime, size_t n);
  // Meta commands (meta_commands.cc; ms in meta_set.cc).
  size_t MetaGet(const Request& r, ReplyWriter& w);
  size_t MetaSet(const Request& r, ReplyWriter& w);
  size_t MetaDelete(const Request& r, ReplyWriter& w);
  size_t MetaArith(const Request& r, ReplyWriter& w);
  size_t MetaDebug(const Request& r, ReplyWriter& w);
  // mg, md, ma: the checks before the flags are parsed, in memcached
  // 1.6.45's order, then the key's permission; `key_error` is the text for
  // an over-long key. False when it refused (and replied).
  bool MetaKeyChecks(const Request& r, const char* key_error, ReplyWriter& w);
  // mg, md: the flags (from word 2) and the opaque's length. False when it
  // refused (and replied).
  bool ParseMetaRequest(const ParsedLine& pl, MetaFlags* f, ReplyWriter& w);

  // The store path of the set family and ms (storage.cc).
  // Values of at least this size that have not fully arrived are read
  // straight into item memory (Engine::Allocate) as they come, so the input
  // buffer need not grow to hold them; smaller ones wait in the buffer.
  static constexpr size_t kDirectValueMin = 16 * 1024;

  // Allocates the item for a storage request and copies in the value bytes
  // already here (`after`). `line` is the meta request line (its flags shape
  // the reply); text requests pass an empty one. Returns the bytes consumed
  // after the request line.
  size_t StartDirectValue(std::string_view key, uint32_t flags, int64_t exptime, size_t n,
                          const engine::StoreArgs& args, bool meta, bool quiet,
                          std::string_view line, const char* after, size_t after_len,
                          ReplyWriter& w);
  // Copies more value (then CRLF) bytes into the pending item; stores it and
  // replies once complete. Returns the bytes consumed.
  size_t FeedPending(const char* data, size_t len, ReplyWriter& w);
  void FinishPending(ReplyWriter& w);
  // The reply word of a store's outcome: the text one (STORED, ...) or the
  // meta code (HD, ...). The outcomes that are server errors (too large, no
  // memory) are written to w instead and give null.
  static const char* StoreOutcomeWord(engine::StoreResult r, bool meta, ReplyWriter& w);
  void StoreReply(engine::StoreResult r, ReplyWriter& w);
  void MetaSetReply(const ParsedLine& pl, const MetaFlags& f, engine::StoreResult r, uint64_t cas,
                    ReplyWriter& w);

  // Starts dropping `n` bytes of a rejected value: what is already in the
  // buffer (`avail`) is consumed now, the rest on later calls. Returns the
  // bytes consumed now.
  size_t Swallow(size_t n, size_t avail);
  // Parses the <bytes> of a storage request (set family, ms) from
  // pl.tokens[at] into *n; false, with the client error written, when it is
  // missing or malformed. Until it parses the data block cannot be sized, so
  // the caller swallows nothing and the next line is read as a command.
  static bool ParseDataLength(const ParsedLine& pl, size_t at, size_t* n, ReplyWriter& w);
  // True when a value of vlen bytes can never fit an item (memcached's
  // item_size_ok), so it is rejected before it is read.
  bool TooLarge(size_t nkey, uint32_t flags, size_t vlen);  // counts store_too_large
  // memcached's ITEM_ntotal for an item (header, key, value, CAS, flags), as
  // "me" reports it and item_size_ok checks it.
  size_t ItemTotalSize(size_t nkey, uint32_t flags, size_t vlen) const;
  // The slab class memcached's slabs_init would give an item of that size.
  uint32_t SlabClassFor(size_t total) const;
  // Writes " k<key>" (base64 and " b" when binary) at p; returns the end.
  static char* PutKey(char* p, std::string_view key, bool binary);
  // When request flag `tok` is one that the meta replies with an item answer
  // alike (O opaque, k key, c cas), appends its reply flag at *p, moves *p
  // past it and returns true; false, *p untouched, for any other flag.
  static bool PutSharedFlag(char** p, std::string_view tok, std::string_view key, bool key_binary,
                            uint64_t cas);
  // A meta reply line with no value: `code`, then the O (opaque) and k (key,
  // in the request's form) flags the request asked for, echoed in its order.
  void StatusLine(const char* code, const ParsedLine& pl, const MetaFlags& f, ReplyWriter& w);

  // A storage request whose value is being read into item memory.
  struct PendingValue {
    bool active = false;
    bool meta = false;
    bool quiet = false;    // text noreply
    engine::ItemRef item;  // allocated, not yet stored
    engine::StoreArgs args;
    size_t n = 0;           // value bytes
    size_t got = 0;         // value plus CRLF bytes received so far
    char tail[2] = {0, 0};  // the two bytes after the value
    std::string line;       // meta request line (its capacity is reused)
  };

  // "stats conns" across workers: suspends the connection, answers when
  // every worker has described its connections.
  void StatsConnsAsync();
  static void WriteConns(const std::vector<net::ServerServices::ConnInfo>& conns,
                         ReplyWriter& w);

  const HandlerContext* ctx_;
  net::ConnControl* control_;
  engine::Engine* engine_;
  engine::ThreadStats* ts_;
  const int fd_;
  // Commands timed for SLOWLOG / LATENCY HISTOGRAM (null: not recorded).
  protocol::CommandLog::Sink* const sink_;
  const std::string peer_;
  protocol::McCmd last_cmd_ = protocol::kMcOther;  // what ProcessOne ran
  std::string_view last_line_;                     // its request line (valid during OnData)
  size_t swallow_ = 0;
  size_t wanted_ = 0;
  bool close_ = false;
  int worker_ = 0;               // the owning worker's id (ResponseBudget share)
  // CLIENT PAUSE (pause_hold.cc): the next request waits unconsumed.
  bool PauseHolds(const char* data, size_t len) const;
  void HoldForPause();
  void LeavePause();
  bool pause_held_ = false;  // in the pause's HeldOn(worker_) list
 public:
  bool IdleExempt() const override { return pause_held_; }
 private:
  net::Timer pause_timer_{[this] {
    if (control_ != nullptr) control_->Resume();
  }};
  int64_t responses_held_ = 0;   // replies reserved and not yet written
  bool close_error_ = false;
  uint32_t log_mask_ = 0;  // LogHub's watched types at the start of this OnData
  // -Y: until a `set` carries a valid "user pass", nothing else runs.
  bool authed_ = true;
  size_t auth_need_ = 0;  // bytes of the token (and CRLF) still to come; 0: reading the line
  size_t Authenticate(const char* data, size_t len, ReplyWriter& w);
  // -Y authentication (Authenticate) and per-user permissions after it
  // (user_access.cc): the ACL
  // user of the authfile name, re-resolved when the ACL changes. acl_open_
  // (no user or an unrestricted one) makes every check one branch.
  std::shared_ptr<const void> acl_user_;
  std::string acl_name_;
  uint64_t acl_epoch_ = 0;
  bool acl_open_ = true;
  bool acl_charged_ = false;  // this request has paid its rate-limit token
  uint64_t req_bytes_ = 0;    // this request's bytes (line, and value for storage)
  void SetAclUser(std::string_view name);
  // True when command c may run on key (empty: none) with the permission
  // its table entry names; else writes SERVER_ERROR NOPERM ... (or closes the
  // connection when its user was deleted or disabled). The one ACL check:
  // ProcessOne calls it for keyless commands, handlers for each key.
  bool Permit(const McCommand& c, std::string_view key, ReplyWriter& w) {
    return acl_open_ || PermitSlow(c.id, key, NeedOf(c.access), w);
  }
  bool PermitSlow(protocol::McCmd c, std::string_view key, uint8_t need, ReplyWriter& w);
  uint32_t ke_mask_ = 0;   // KeyEventSink::enabled() at the start of this OnData
  uint64_t watcher_id_ = 0;  // != 0: a `watch` connection (reads nothing more)
  PendingValue pending_;
  // Scratch for a base64-decoded meta key, used within one request: the
  // thread's, not each connection's (an idle connection's memory, issue 42).
  static char* KeyBuf();
};

}  // namespace trove::memcache
