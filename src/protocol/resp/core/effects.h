// Effects: what a command leaves for its caller to carry out once the
// item-lock stripes are released. Part of the command seam (execute.h,
// docs/ARCHITECTURE.md): handlers and the seam only append here; the caller
// (a connection after each command, an EXEC after the whole transaction, a
// blocked client's wake-up on the writer's worker) drains it with no stripe
// held, because draining posts to other workers that may be waiting for
// those stripes.
//
// Drain order (connection/session.cc, DrainEffects): keyspace events, then
// tracking invalidations, then the blocked clients of the ready keys; a
// request to close the caller is honoured after its reply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trove::resp {

struct Effects {
  struct KeyEvent {
    uint32_t cls;       // protocol::kKeClass* of the event
    const char* event;  // a static string ("set", "del", ...)
    std::string ekey;   // the engine key (database prefix included)
  };
  std::vector<KeyEvent> key_events;        // keyspace notifications, in order
  std::vector<std::string> invalidations;  // engine keys changed (client tracking), once each
  std::vector<std::string> ready_keys;     // lists/zsets that got data, once each
  bool close_caller = false;               // QUIT, SHUTDOWN: close after the reply

  void AddKeyEvent(uint32_t cls, const char* event, std::string_view ekey) {
    key_events.push_back({cls, event, std::string(ekey)});
  }
  void AddInvalidation(std::string_view ekey) { AddOnce(&invalidations, ekey); }
  void AddReadyKey(std::string_view ekey) { AddOnce(&ready_keys, ekey); }
  bool has_keyspace_effects() const {
    return !key_events.empty() || !invalidations.empty() || !ready_keys.empty();
  }

 private:
  // A handful of keys per command: a linear scan beats a set.
  static void AddOnce(std::vector<std::string>* v, std::string_view k) {
    for (const std::string& e : *v) {
      if (e == k) return;
    }
    v->emplace_back(k);
  }
};

}  // namespace trove::resp
