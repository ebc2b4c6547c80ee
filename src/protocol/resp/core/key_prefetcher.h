// KeyPrefetcher: the RESP look-ahead scanner for protocol::PrefetchWindow.
// Stateless: the window is the thread's (PrefetchWindow::ForThread).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"
#include "protocol/prefetch_window.h"

namespace trove::resp {

// Scans only well-formed multibulk requests ("*N\r\n$L\r\n...") and takes
// argv[1] as the key; anything else ends the look-ahead for this batch.
class KeyPrefetcher {
 public:
  // Starts `owner`'s input buffer (each OnData call).
  static void Reset(const void* owner) { protocol::PrefetchWindow::ForThread().Reset(owner); }
  // Called before running the request that ends `end` bytes into data.
  static void Before(const void* owner, const engine::Engine* e, int db, const char* data,
                     size_t len, size_t end) {
    protocol::PrefetchWindow::ForThread().Before(owner, e, data, len, end,
                   [db](const char* d, size_t n, size_t start, size_t* stop, uint64_t* hv) {
                     return ScanRequest(db, d, n, start, stop, hv);
                   });
  }

  // Scans one request at data[start, len): where it ends and the engine hash
  // of its argv[1] in database db. False if it is incomplete or not a plain
  // multibulk request of 2 to 64 arguments.
  static bool ScanRequest(int db, const char* data, size_t len, size_t start, size_t* end,
                          uint64_t* hv);
};

}  // namespace trove::resp
