// ConnState: the per-connection RESP session state, nested by concern
// (identity, transaction, pub/sub, tracking, blocked), per docs/resp_modes.md
// section 2, "Connection state". Owned by the connection's worker thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/check.h"
#include "protocol/resp/services/acl_user.h"
#include "protocol/resp/services/block_registry.h"
#include "protocol/resp/services/watch_registry.h"

namespace trove::resp {

// Who the client is and what it negotiated.
// Memory (issue 42: every idle connection carries this): the names few
// clients set (CLIENT SETNAME, CLIENT SETINFO lib-name / lib-ver) live in a
// part allocated when the first of them is set non-empty and freed when all
// three are empty again; without it the getters return an empty string.
// Thread safety: owner worker only.
class Identity {
 public:
  uint64_t id() const { return id_; }
  const std::string& addr() const { return addr_; }
  const std::string& name() const { return names_ != nullptr ? names_->name : EmptyString(); }
  int proto() const { return proto_; }
  int db() const { return db_; }
  const std::string& user() const { return user_; }
  bool authenticated() const { return authenticated_; }

  void Init(uint64_t id, std::string addr) {
    id_ = id;
    addr_ = std::move(addr);
  }
  void SetName(std::string_view n) { SetNameField(&Names::name, n); }
  // CLIENT SETINFO, NO-EVICT, REPLY; the last command run (CLIENT LIST cmd=).
  const std::string& lib_name() const {
    return names_ != nullptr ? names_->lib_name : EmptyString();
  }
  const std::string& lib_ver() const { return names_ != nullptr ? names_->lib_ver : EmptyString(); }
  void SetLibName(std::string_view v) { SetNameField(&Names::lib_name, v); }
  void SetLibVer(std::string_view v) { SetNameField(&Names::lib_ver, v); }
  bool no_evict() const { return no_evict_; }
  // CLIENT NO-TOUCH: this client's reads leave the keys' LRU position and
  // last-access time alone (TOUCH still touches).
  bool no_touch() const { return no_touch_; }
  void SetNoTouch(bool on) { no_touch_ = on; }
  void SetNoEvict(bool on) { no_evict_ = on; }
  // CLIENT REPLY: kSkip is set by CLIENT REPLY SKIP and makes the next
  // command kSkipping (its reply dropped; kOn after it unless that command
  // changed the mode), as Redis's SKIP_NEXT / SKIP flags.
  enum class Reply : uint8_t { kOn, kOff, kSkip, kSkipping };
  Reply reply_mode() const { return reply_; }
  void SetReplyMode(Reply r) { reply_ = r; }
  const char* last_cmd() const { return last_cmd_; }
  void SetLastCmd(const char* c) { last_cmd_ = c; }
  void SetProto(int p) { proto_ = p; }
  void SelectDb(int db) { db_ = db; }
  // The ACL user this connection runs as (the default user until AUTH),
  // and the AclStore epoch it was looked up at (Session re-reads it when
  // the store's epoch moves).
  const std::shared_ptr<const acl::User>& acl_user() const { return acl_user_; }
  uint64_t acl_epoch() const { return acl_epoch_; }
  void SetAclUser(std::shared_ptr<const acl::User> u, uint64_t epoch) {
    acl_user_ = std::move(u);
    acl_epoch_ = epoch;
    unrestricted_ = acl_user_ == nullptr || acl_user_->unrestricted();
    rate_limited_ = acl_user_ != nullptr && acl_user_->rate_limited();
  }
  // No ACL check needed: the user may run anything on anything.
  bool unrestricted() const { return unrestricted_; }
  // Its user has ratelimit:cps / ratelimit:bps.
  bool rate_limited() const { return rate_limited_; }
  // Tokens taken from its user's rate buckets and not yet spent.
  // Made on first use: only rate-limited users take tokens.
  acl::RateLease& rate_lease() {
    if (rate_lease_ == nullptr) rate_lease_ = std::make_unique<acl::RateLease>();
    return *rate_lease_;
  }
  bool has_rate_lease() const { return rate_lease_ != nullptr; }
  void Authenticate(std::shared_ptr<const acl::User> u, uint64_t epoch) {
    user_ = u->name();
    SetAclUser(std::move(u), epoch);
    authenticated_ = true;
  }
  // Back to the default user; authenticated when it is on and nopass.
  void Deauthenticate(std::shared_ptr<const acl::User> def, uint64_t epoch, bool open) {
    user_ = "default";
    SetAclUser(std::move(def), epoch);
    authenticated_ = open;
  }
  // RESET: back to the state of a new connection (keeps id and address).
  void Reset(std::shared_ptr<const acl::User> def, uint64_t epoch, bool open) {
    SetName({});
    no_evict_ = false;
    no_touch_ = false;
    reply_ = Reply::kOn;
    proto_ = 2;
    db_ = 0;
    Deauthenticate(std::move(def), epoch, open);
  }

 private:
  // The rarely set names (see the class comment): present iff one is non-empty.
  struct Names {
    std::string name;
    std::string lib_name;
    std::string lib_ver;
  };
  static const std::string& EmptyString() {
    static const std::string kEmpty;
    return kEmpty;
  }
  // Sets one of the names, allocating the part on the first non-empty one
  // and freeing it when all three are empty.
  void SetNameField(std::string Names::*field, std::string_view v) {
    if (names_ == nullptr) {
      if (v.empty()) return;
      names_ = std::make_unique<Names>();
    }
    ((*names_).*field).assign(v);
    if (names_->name.empty() && names_->lib_name.empty() && names_->lib_ver.empty())
      names_.reset();
  }

  // Word-sized and larger fields first, so the small ones share the last word.
  uint64_t id_ = 0;
  std::string addr_;
  std::string user_ = "default";
  std::shared_ptr<const acl::User> acl_user_;  // null only in unit tests: no checks
  uint64_t acl_epoch_ = 0;
  std::unique_ptr<acl::RateLease> rate_lease_;  // see rate_lease()
  std::unique_ptr<Names> names_;   // null: no name, lib-name or lib-ver
  const char* last_cmd_ = "NULL";  // a CommandSpec name (static storage)
  int proto_ = 2;
  int db_ = 0;
  bool authenticated_ = true;
  bool unrestricted_ = true;
  bool rate_limited_ = false;
  bool no_evict_ = false;
  bool no_touch_ = false;
  Reply reply_ = Reply::kOn;
};

// A key's state as far as writes go: any write changes at least one field
// (WATCH compares it at EXEC, keyspace notifications around a command).
struct KeyVersion {
  uint64_t cas = 0;                // 0 when missing (or CAS is off)
  const void* identity = nullptr;  // the item seen (identity check when CAS is off); null = missing
  uint64_t heap_version = 0;       // in-place collection version
  int64_t expiry = 0;              // EXPIRE/PERSIST keep the CAS, so compare the expiry too
  bool present() const { return identity != nullptr; }
  bool operator==(const KeyVersion&) const = default;
};

// One WATCHed key and the version seen at WATCH time.
struct WatchedKey {
  std::string key;  // engine key (database-encoded)
  KeyVersion version;
};

// MULTI queue and WATCHed keys.
// Memory (issue 42: every idle connection carries this): the queue and the
// watch list live in a part allocated by the first queued command or WATCH
// and freed when both are empty again (EXEC, DISCARD, UNWATCH, RESET);
// without it queued() and watched() return an empty list. The registry keeps
// copies of the keys, never pointers into the part.
// Thread safety: owner worker only.
// Invariants: 1. queued() is empty unless active(). 2. dirty() only if active().
// 3. Once attached, the registry holds exactly this connection's watched keys
//    (every change of watched() goes through Watch/Unwatch, and the owner
//    calls Unwatch before the state dies).
// 4. lists_ is null iff queued() and watched() are both empty.
class TransactionState {
 public:
  // The server's registry of watched keys (INFO); tests may leave it null.
  void AttachRegistry(WatchRegistry* r) { registry_ = r; }
  bool active() const { return active_; }
  bool dirty() const { return dirty_; }
  void Begin() {
    active_ = true;
    dirty_ = false;
    ClearQueue();
  }
  void Queue(std::vector<std::string> argv) { MutableLists().queue.push_back(std::move(argv)); }
  void MarkDirty() {
    if (active_) dirty_ = true;
  }
  const std::vector<std::vector<std::string>>& queued() const {
    if (lists_ == nullptr) {
      static const std::vector<std::vector<std::string>> kEmpty;
      return kEmpty;
    }
    return lists_->queue;
  }
  // Ends MULTI (EXEC/DISCARD); watches are cleared separately.
  void End() {
    active_ = false;
    dirty_ = false;
    ClearQueue();
  }

  void Watch(WatchedKey w) {
    const bool first = watched().empty();
    for (const WatchedKey& k : watched())
      if (k.key == w.key) return;
    if (registry_ != nullptr) registry_->Add(w.key, first);
    MutableLists().watched.push_back(std::move(w));
  }
  // Only a connection that watches something touches the registry.
  void Unwatch() {
    if (watched().empty()) return;
    std::vector<WatchedKey>& keys = lists_->watched;
    if (registry_ != nullptr) registry_->RemoveClient(keys.begin(), keys.end());
    keys.clear();
    FreeListsIfEmpty();
  }
  const std::vector<WatchedKey>& watched() const {
    if (lists_ == nullptr) {
      static const std::vector<WatchedKey> kEmpty;
      return kEmpty;
    }
    return lists_->watched;
  }

 private:
  // The rarely used part (see the class comment).
  struct Lists {
    std::vector<std::vector<std::string>> queue;
    std::vector<WatchedKey> watched;
  };
  Lists& MutableLists() {
    if (lists_ == nullptr) lists_ = std::make_unique<Lists>();
    return *lists_;
  }
  void ClearQueue() {
    if (lists_ == nullptr) return;
    lists_->queue.clear();
    FreeListsIfEmpty();
  }
  void FreeListsIfEmpty() {
    if (lists_->queue.empty() && lists_->watched.empty()) lists_.reset();
  }

  std::unique_ptr<Lists> lists_;       // null: nothing queued or watched
  WatchRegistry* registry_ = nullptr;  // the server's; outlives every connection
  bool active_ = false;
  bool dirty_ = false;
};

// Subscriptions. "In pub/sub mode" is derived from the sets, never stored.
// The server-wide PubSubHub holds the same subscriptions keyed by name; the
// session keeps both in step (PubSubHub::Subscribe, services/pubsub.h).
// Memory (issue 42: every idle connection carries this): the three sets live
// in a part allocated by the first subscription and freed when the last one
// goes; without it set() is an empty set and the counts are 0. So the sets
// change only through Add / Remove / Clear (set() is read-only).
// Thread safety: owner worker only.
// Invariant: sets_ is null iff count() == 0.
class PubSubState {
 public:
  enum Kind : uint8_t { kChannel = 0, kPattern = 1, kShard = 2 };
  size_t count() const { return global_count() + shard_count(); }
  // Redis's subscription count: channels plus patterns (shard kept apart).
  size_t global_count() const {
    return sets_ != nullptr ? sets_->channels.size() + sets_->patterns.size() : 0;
  }
  size_t shard_count() const { return sets_ != nullptr ? sets_->shard_channels.size() : 0; }
  bool active() const { return count() > 0; }
  const std::set<std::string>& set(Kind k) const {
    if (sets_ == nullptr) {
      static const std::set<std::string> kEmpty;
      return kEmpty;
    }
    return sets_->of(k);
  }
  // Subscribes to `name`: false if already subscribed.
  bool Add(Kind k, std::string_view name) {
    if (sets_ == nullptr) sets_ = std::make_unique<Sets>();
    return sets_->of(k).emplace(name).second;
  }
  // Unsubscribes from `name`: false if not subscribed.
  bool Remove(Kind k, std::string_view name) {
    if (sets_ == nullptr) return false;
    std::set<std::string>& s = sets_->of(k);
    auto it = s.find(std::string(name));
    if (it == s.end()) return false;
    s.erase(it);
    if (count() == 0) sets_.reset();
    return true;
  }
  void Clear() { sets_.reset(); }

 private:
  // The rarely used part (see the class comment).
  struct Sets {
    std::set<std::string> channels;
    std::set<std::string> patterns;
    std::set<std::string> shard_channels;
    std::set<std::string>& of(Kind k) {
      return k == kChannel ? channels : k == kPattern ? patterns : shard_channels;
    }
    const std::set<std::string>& of(Kind k) const {
      return k == kChannel ? channels : k == kPattern ? patterns : shard_channels;
    }
  };

  std::unique_ptr<Sets> sets_;  // null: no subscription
};

// CLIENT TRACKING: this connection's mode (commands/tracking.cc). The server-wide
// table of remembered keys and prefixes is resp::Tracking; the session keeps
// both in step (ClientOn/Off, Add/RemovePrefix).
// Thread safety: owner worker only.
class TrackingState {
 public:
  bool enabled() const { return on; }
  // Turning tracking off forgets the mode; Session::DisableTracking also
  // updates the server's table first.
  void Clear() { *this = TrackingState(); }

  bool on = false;
  bool bcast = false;
  bool optin = false;
  bool optout = false;
  bool noloop = false;
  bool broken_redirect = false;  // the redirect target was gone when a message was due
  // CLIENT CACHING yes (OPTIN) / no (OPTOUT) for the next command (or the
  // whole MULTI ... EXEC it starts); cleared after any other command.
  bool caching = false;
  uint64_t redirect = 0;  // 0: none
  std::vector<std::string> prefixes;  // BCAST (one empty prefix: every key)
};

// The connection's half of the blocking commands (BLPOP and friends; the
// server's half is services/block_registry.h, the serving of ready keys
// services/blocked_serve.h). Used by connection/session_block.cc.
class BlockedState {
 public:
  // Blocked: waiting in `waiter`'s command (its reply comes by
  // DeliverBlockedReply, its time-out or CLIENT UNBLOCK).
  bool blocked() const { return waiter != nullptr; }
  // Fencing: the connection made keys ready and is suspended until every
  // worker has read its input up to that write (net::WorkerGroup::Fence);
  // then their blocked clients are served.
  bool fencing() const { return !fenced_keys.empty(); }

  std::shared_ptr<Waiter> waiter;  // while blocked
  uint64_t last_token = 0;         // the newest block's token (Waiter::token)
  int slot = -1;                   // the blocked command's histogram slot
  bool just_blocked = false;       // the running command blocked: counted when it ends
  std::vector<std::string> fenced_keys;  // ready keys waiting for the fence
};

// The whole state of one RESP connection.
// Memory: embedded in every RESP Session, so what most connections never use
// (names, MULTI queue and watches, subscriptions) sits in parts the nested
// classes allocate on first use and free when empty (issue 42).
// Thread safety: created on and used by the owner worker only; accessors
// DCHECK the owner thread.
class ConnState {
 public:
  ConnState() : owner_(std::this_thread::get_id()) {}

  Identity& identity() { return Owned(identity_); }
  const Identity& identity() const { return Owned(identity_); }
  TransactionState& txn() { return Owned(txn_); }
  const TransactionState& txn() const { return Owned(txn_); }
  PubSubState& pubsub() { return Owned(pubsub_); }
  const PubSubState& pubsub() const { return Owned(pubsub_); }
  TrackingState& tracking() { return Owned(tracking_); }
  const TrackingState& tracking() const { return Owned(tracking_); }
  BlockedState& blocked() { return Owned(blocked_); }
  const BlockedState& blocked() const { return Owned(blocked_); }

  // The NORMAL / TRANSACTION / PUB-SUB / BLOCKED views.
  bool in_transaction() const { return txn_.active(); }
  bool in_pubsub() const { return pubsub_.active(); }
  bool is_blocked() const { return blocked_.blocked(); }

  // RESET: discards MULTI, unwatches, unsubscribes, leaves tracking, back to
  // RESP2 / db 0 / default user.
  void Reset(std::shared_ptr<const acl::User> def, uint64_t epoch, bool open) {
    DCHECK(OnOwnerThread());
    txn_.End();
    txn_.Unwatch();
    pubsub_.Clear();
    tracking_.Clear();
    DCHECK(!blocked_.blocked() && !blocked_.fencing());  // both suspend the connection
    identity_.Reset(std::move(def), epoch, open);
  }

  bool OnOwnerThread() const { return std::this_thread::get_id() == owner_; }

 private:
  // Every accessor checks the owner thread (debug builds).
  template <typename T>
  T& Owned(T& part) const {
    DCHECK(OnOwnerThread());
    return part;
  }

  std::thread::id owner_;
  Identity identity_;
  TransactionState txn_;
  PubSubState pubsub_;
  TrackingState tracking_;
  BlockedState blocked_;
};

}  // namespace trove::resp
