// KeyEvents: publishing keyspace notifications, and the reporter thread for
// the engine's expired / evicted removals.
#include "protocol/resp/services/keyspace_events.h"

#include <chrono>
#include <vector>

#include "common/str_append.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

KeyEvents::~KeyEvents() {
  std::thread t;
  {
    MutexLock l(&mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.SignalAll();
  if (t.joinable()) t.join();
}

void KeyEvents::Configure(uint32_t flags) {
  MutexLock l(&mu_);
  flags_.store(flags, std::memory_order_relaxed);
  UpdateEnabledLocked();
}

void KeyEvents::TrackingChanged() {
  MutexLock l(&mu_);
  tracking_on_ = tracking_ != nullptr && tracking_->active();
  UpdateEnabledLocked();
}

void KeyEvents::UpdateEnabledLocked() {
  uint32_t eff = protocol::EffectiveKeyEventClasses(flags_.load(std::memory_order_relaxed));
  if (tracking_on_) eff |= protocol::kKeTracking;
  enabled_.store(eff, std::memory_order_relaxed);
  if ((eff & (protocol::kKeClassExpired | protocol::kKeClassEvicted | protocol::kKeTracking)) !=
      0) {
    StartThreadLocked();
  }
}

void KeyEvents::InvalidateKey(std::string_view ekey) {
  if (tracking_ == nullptr) return;
  int db = 0;
  std::string_view key;
  DecodeDbKey(ekey, &db, &key);
  tracking_->Invalidate(key, 0);
}

void KeyEvents::InvalidateAll() {
  if (tracking_ != nullptr) tracking_->InvalidateAll();
}

void KeyEvents::Notify(uint32_t cls, std::string_view event, std::string_view ekey) {
  const uint32_t on = enabled();
  if ((on & cls) == 0) return;
  int db = 0;
  std::string_view key;
  DecodeDbKey(ekey, &db, &key);
  std::string channel;
  channel.reserve(24 + key.size() + event.size());
  // "__<kind>@<db>__:<name>" carrying message.
  auto publish = [&](const char* kind, std::string_view name, std::string_view message) {
    channel = kind;
    AppendU64(channel, static_cast<uint64_t>(db));
    channel += "__:";
    channel.append(name);
    hub_->Publish(channel, message, /*shard=*/false, group_);
  };
  if (on & protocol::kKeClassKeyspace) publish("__keyspace@", key, event);
  if (on & protocol::kKeClassKeyevent) publish("__keyevent@", event, key);
}

void KeyEvents::OnRemoved(const engine::ItemRemoval& r) {
  const bool evicted = r.cause == engine::RemovalCause::kEvicted;
  const uint32_t cls = evicted ? protocol::kKeClassEvicted : protocol::kKeClassExpired;
  const uint32_t on = enabled();
  if ((on & (cls | protocol::kKeTracking)) == 0) return;
  bool track = (on & protocol::kKeTracking) != 0;
  if (track && evicted && tracking_ != nullptr) {
    int db = 0;
    std::string_view key;
    DecodeDbKey(r.key, &db, &key);
    if (Tracking::CaptureEvicted(key)) track = false;  // its command's session invalidates it
  }
  if ((on & cls) == 0 && !track) return;
  {
    MutexLock l(&mu_);
    if (queue_.size() >= kMaxQueued) {
      ++dropped_;
      if (tracking_on_ && track) tracking_overflow_ = true;
      return;
    }
    queue_.push_back({evicted, track, std::string(r.key)});
  }
  cv_.Signal();
}

uint64_t KeyEvents::dropped() const {
  MutexLock l(&mu_);
  return dropped_;
}

void KeyEvents::StartThreadLocked() {
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void KeyEvents::Loop() {
  using Clock = std::chrono::steady_clock;
  auto next_scan = Clock::now() + std::chrono::seconds(1);
  std::deque<Removal> batch;
  std::vector<std::string_view> names;
  for (;;) {
    bool overflow = false;
    {
      MutexLock l(&mu_);
      if (queue_.empty() && !stop_) cv_.WaitFor(100);
      if (stop_) return;
      batch.swap(queue_);
      overflow = tracking_overflow_;
      tracking_overflow_ = false;
    }
    // Published with no lock held (see the class comment).
    const bool tracking = (enabled() & protocol::kKeTracking) != 0 && tracking_ != nullptr;
    names.clear();
    for (const Removal& r : batch) {
      Notify(r.evicted ? protocol::kKeClassEvicted : protocol::kKeClassExpired,
             r.evicted ? "evicted" : "expired", r.ekey);
      if (tracking && r.track) {
        int db = 0;
        std::string_view key;
        DecodeDbKey(r.ekey, &db, &key);
        names.push_back(key);
      }
    }
    if (!names.empty()) tracking_->Invalidate(names, 0);
    if (overflow && tracking_ != nullptr) tracking_->InvalidateAll();
    batch.clear();
    if (Clock::now() >= next_scan) {
      next_scan = Clock::now() + std::chrono::seconds(1);
      const bool active =
          active_expire_ == nullptr || active_expire_->load(std::memory_order_relaxed);
      if (expiry_scan_ && active &&
          (enabled() & (protocol::kKeClassExpired | protocol::kKeTracking)) != 0) {
        expiry_scan_();
      }
    }
  }
}

}  // namespace trove::resp
