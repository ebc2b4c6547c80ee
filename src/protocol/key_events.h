// KeyEventSink: how writes reach Redis's keyspace notifications
// (notify-keyspace-events) from either port. The RESP front implements it;
// the memcached port reports its writes to database 0 through it, which no
// peer does (memcached has no notifications, Redis sees no memcached writes).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace trove::protocol {

// The event classes, one bit per letter of notify-keyspace-events.
enum KeyEventClass : uint32_t {
  kKeClassKeyspace = 1u << 0,   // K: __keyspace@<db>__:<key>  <event>
  kKeClassKeyevent = 1u << 1,   // E: __keyevent@<db>__:<event>  <key>
  kKeClassGeneric = 1u << 2,    // g: DEL EXPIRE RENAME PERSIST COPY MOVE ...
  kKeClassString = 1u << 3,     // $
  kKeClassList = 1u << 4,       // l
  kKeClassSet = 1u << 5,        // s
  kKeClassHash = 1u << 6,       // h
  kKeClassZset = 1u << 7,       // z
  kKeClassExpired = 1u << 8,    // x
  kKeClassEvicted = 1u << 9,    // e
  kKeClassStream = 1u << 10,    // t (Trove has no streams: never raised)
  kKeClassKeyMiss = 1u << 11,   // m: a read found no key
  kKeClassModule = 1u << 12,    // d (Trove has no modules: never raised)
  kKeClassNew = 1u << 13,       // n: a key was created
  // Not a notification class: set in enabled() while any RESP client has
  // CLIENT TRACKING on, so that a write pays the same single test to learn
  // that it must report its key (KeyEventSink::InvalidateKey).
  kKeTracking = 1u << 31,
};
// A: every class but m and n, as Redis's NOTIFY_ALL.
inline constexpr uint32_t kKeClassAll = kKeClassGeneric | kKeClassString | kKeClassList |
                                        kKeClassSet | kKeClassHash | kKeClassZset |
                                        kKeClassExpired | kKeClassEvicted | kKeClassStream |
                                        kKeClassModule;

// Parses notify-keyspace-events ("KEA", "" ...) as Redis does; false on a
// character Redis does not know.
inline bool ParseKeyEventClasses(std::string_view s, uint32_t* out) {
  uint32_t f = 0;
  for (char c : s) {
    switch (c) {
      case 'A': f |= kKeClassAll; break;
      case 'g': f |= kKeClassGeneric; break;
      case '$': f |= kKeClassString; break;
      case 'l': f |= kKeClassList; break;
      case 's': f |= kKeClassSet; break;
      case 'h': f |= kKeClassHash; break;
      case 'z': f |= kKeClassZset; break;
      case 'x': f |= kKeClassExpired; break;
      case 'e': f |= kKeClassEvicted; break;
      case 'K': f |= kKeClassKeyspace; break;
      case 'E': f |= kKeClassKeyevent; break;
      case 't': f |= kKeClassStream; break;
      case 'm': f |= kKeClassKeyMiss; break;
      case 'd': f |= kKeClassModule; break;
      case 'n': f |= kKeClassNew; break;
      default: return false;
    }
  }
  *out = f;
  return true;
}

// The canonical form CONFIG GET prints, as Redis's
// keyspaceEventsFlagsToString ("A" for every class of A, then K E m), except
// that `n` follows `A` when set: Redis 7.0 prints "An" as "A" and so loses
// `n` on a CONFIG GET / CONFIG SET round trip.
inline std::string FormatKeyEventClasses(uint32_t f) {
  std::string r;
  if ((f & kKeClassAll) == kKeClassAll) {
    r += 'A';
  } else {
    static constexpr struct { uint32_t bit; char c; } kOrder[] = {
        {kKeClassGeneric, 'g'}, {kKeClassString, '$'}, {kKeClassList, 'l'},
        {kKeClassSet, 's'},     {kKeClassHash, 'h'},   {kKeClassZset, 'z'},
        {kKeClassExpired, 'x'}, {kKeClassEvicted, 'e'}, {kKeClassStream, 't'},
        {kKeClassModule, 'd'}};
    for (const auto& o : kOrder) {
      if (f & o.bit) r += o.c;
    }
  }
  if (f & kKeClassNew) r += 'n';
  if (f & kKeClassKeyspace) r += 'K';
  if (f & kKeClassKeyevent) r += 'E';
  if (f & kKeClassKeyMiss) r += 'm';
  return r;
}

// The classes that produce messages under configuration `f`: none unless
// K or E is set.
inline uint32_t EffectiveKeyEventClasses(uint32_t f) {
  return (f & (kKeClassKeyspace | kKeClassKeyevent)) != 0 ? f : 0;
}

// Thread safety: enabled() is a relaxed load, read once per command (or per
// memcached read batch); Notify may run on any worker that holds no engine
// lock (it posts to other workers, which may wait for their stripes).
class KeyEventSink {
 public:
  virtual ~KeyEventSink() = default;
  // The classes that produce a message: 0 unless K or E is also set, so one
  // test of `enabled() & class` decides whether an event is worth building.
  uint32_t enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Publishes `event` on `ekey` (an engine key: database-encoded) for class
  // `cls`, on the keyspace and/or keyevent channel as configured.
  virtual void Notify(uint32_t cls, std::string_view event, std::string_view ekey) = 0;
  // Client-side caching: `ekey` changed (a memcached-port write: no RESP
  // client made it), or every key went away (flush_all). Only called while
  // enabled() has kKeTracking. REQUIRES: no engine lock held.
  virtual void InvalidateKey(std::string_view ekey) { (void)ekey; }
  virtual void InvalidateAll() {}

 protected:
  std::atomic<uint32_t> enabled_{0};
};

}  // namespace trove::protocol
