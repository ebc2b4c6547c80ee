// KeyEvents: Redis's keyspace notifications over the RESP front's pub/sub
// hub: the notify-keyspace-events setting, publishing an event, and the
// expired / evicted events the engine reports from any of its threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/thread_annotations.h"
#include "engine/item_observer.h"
#include "net/worker_group.h"
#include "protocol/key_events.h"
#include "protocol/resp/services/pubsub.h"
#include "protocol/resp/services/tracking.h"

namespace trove::resp {

// Thread safety: Notify and OnRemoved may run on any thread; Configure too
// (CONFIG SET, on a worker). The removal queue is guarded by mu_, a leaf
// lock that OnRemoved takes with the item's stripe (and maybe its LRU lock)
// held: nothing else is ever done under it.
//
// Why removals go through a queue and a thread: the engine reports them with
// locks held, and publishing posts to other workers, whose inboxes may be
// full while they wait for those very locks. The reporter thread holds no
// engine lock when it publishes, so it only ever waits for a worker to drain.
//
// Invariants:
//  1. enabled() is EffectiveKeyEventClasses(flags()) at every moment after
//     Configure returns.
//  2. The queue holds at most kMaxQueued removals; past that they are
//     dropped and counted (dropped()), so a burst of expiry can never grow
//     memory without bound. Removals are published in the order reported.
//     A drop while tracking is on makes the reporter send every tracking
//     client a flush (null) message: a client may lose its cache, never
//     keep a stale entry.
class KeyEvents final : public protocol::KeyEventSink,
                        public engine::ItemObserver,
                        private NonCopyable {
 public:
  static constexpr size_t kMaxQueued = 65536;

  KeyEvents(PubSubHub* hub, Tracking* tracking) : hub_(hub), tracking_(tracking) {}
  ~KeyEvents() override;

  // Where messages are delivered (null: in place, for tests without workers).
  void set_group(net::WorkerGroup* g) { group_ = g; }
  // Asks the engine to look for expired items now (the server wires the LRU
  // crawler here). While `x` is configured it runs every second, so an
  // expired key's event comes within about a second even if nobody reads
  // it, as Redis's active expiry does; `active` is DEBUG SET-ACTIVE-EXPIRE.
  void set_expiry_scan(std::function<void()> scan, const std::atomic<bool>* active) {
    expiry_scan_ = std::move(scan);
    active_expire_ = active;
  }

  // notify-keyspace-events.
  void Configure(uint32_t flags) EXCLUDES(mu_);
  uint32_t flags() const { return flags_.load(std::memory_order_relaxed); }

  // KeyEventSink. REQUIRES: no engine lock held on this thread.
  void Notify(uint32_t cls, std::string_view event, std::string_view ekey) override;
  void InvalidateKey(std::string_view ekey) override;
  void InvalidateAll() override;

  // Client tracking turned on (the first client) or off (the last): sets
  // kKeTracking in enabled() from Tracking::active(), read under mu_, so the
  // last of two racing calls sees the newer state. While on, expired and
  // evicted keys are queued for invalidation and the expiry scan runs every
  // second.
  void TrackingChanged() EXCLUDES(mu_);

  // ItemObserver: queue an expired or evicted key for the reporter thread.
  // A key evicted on a thread with an open Tracking::EvictionCapture (a RESP
  // command running) is handed to that capture for tracking instead, so its
  // invalidation precedes the command's reply; its event is still queued.
  bool WantsRemovals() const override {
    return (enabled() & (protocol::kKeClassExpired | protocol::kKeClassEvicted |
                         protocol::kKeTracking)) != 0;
  }
  void OnRemoved(const engine::ItemRemoval& r) override EXCLUDES(mu_);

  uint64_t dropped() const EXCLUDES(mu_);

 private:
  struct Removal {
    bool evicted;
    bool track;  // the reporter invalidates it (false: a capture took it)
    std::string ekey;
  };
  void StartThreadLocked() REQUIRES(mu_);
  // enabled_ from flags_ and tracking_on_.
  void UpdateEnabledLocked() REQUIRES(mu_);
  void Loop() EXCLUDES(mu_);

  PubSubHub* const hub_;
  Tracking* const tracking_;
  net::WorkerGroup* group_ = nullptr;
  std::function<void()> expiry_scan_;
  const std::atomic<bool>* active_expire_ = nullptr;
  std::atomic<uint32_t> flags_{0};

  mutable Mutex mu_{LockRank::kLeaf};  // see above
  CondVar cv_{&mu_};
  std::deque<Removal> queue_ GUARDED_BY(mu_);
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
  bool tracking_on_ GUARDED_BY(mu_) = false;
  // A removal was dropped while tracking: the reporter invalidates every
  // client's cache (a flush message) rather than leave one stale.
  bool tracking_overflow_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_ GUARDED_BY(mu_);
};

}  // namespace trove::resp
