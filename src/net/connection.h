// Connection: the state of one client socket pinned to a worker, and the
// messages that create it. Touched only by its worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "net/io_buffer.h"
#include "net/protocol_handler.h"

namespace trove::net {

// A freshly accepted socket on its way from the acceptor to a worker.
struct NewConn {
  int fd = -1;
  uint64_t id = 0;
  ProtocolFactory* factory = nullptr;
  bool is_unix = false;
  std::string peer;         // "ip:port", "[v6]:port" or the unix path
  std::string listen_name;  // the listener's name, "tcp:0.0.0.0:11211"
};

// One client connection. Owner: its worker thread, for the connection's whole
// life; no other thread reads or writes any field (other threads reach it by
// sending the worker a message naming `id`).
//
// Thread safety: worker thread only; no locks.
//
// Invariants:
//  1. fd >= 0 until closed; once closed is true the object is only waiting to
//     be freed at the top of the worker loop and nothing touches its socket.
//  2. read_paused implies the epoll mask lacks EPOLLIN.
//  3. in_ready implies the connection appears exactly once in the worker's
//     ready list.
//  4. After handler->WantsClose() no more input is parsed; the connection
//     closes as soon as `out` is empty.
//  5. flush_queued implies the connection appears exactly once in the
//     worker's flush list.
struct Connection {
  int fd = -1;
  uint64_t id = 0;
  bool is_unix = false;
  std::string peer;
  std::string listen_name;
  std::unique_ptr<ProtocolHandler> handler;
  InputBuffer in;
  OutputBuffer out;
  uint32_t epoll_mask = 0;        // what epoll currently watches for
  bool read_paused = false;       // unsent output above kOutputSoftLimit
  bool closing = false;           // close once `out` drains
  bool closed = false;
  bool in_ready = false;          // queued to parse buffered input again
  bool close_requested = false;   // CloseConnection by id: closes at a safe point
  bool flush_queued = false;      // output waits for the end of the loop turn
  int64_t last_active_ns = 0;     // Clock::MonoNanos of the last input
};

}  // namespace trove::net
