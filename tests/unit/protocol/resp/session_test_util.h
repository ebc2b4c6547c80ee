// Test helper: a Session over the fake engine, fed raw bytes; test thread only.
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "engine/engine.h"
#include "net/io_buffer.h"
#include "protocol/resp/connection/resp_protocol.h"

namespace trove::resp {

class SessionHarness {
 public:
  SessionHarness() {
    engine::EngineOptions o;
    o.clock = &clock_;
    engine_ = std::move(engine::Engine::Create(o).value());
    factory_ = NewRespFactory(engine_.get(), nullptr, RespOptions());
    handler_ = NewConn();
  }
  std::unique_ptr<net::ProtocolHandler> NewConn() {
    net::ConnInfoView v;
    v.id = ++next_id_;
    v.peer = "127.0.0.1:1234";
    return factory_->Create(0, v);
  }
  // Feeds bytes to the main connection; returns the reply bytes.
  std::string Send(const std::string& bytes) { return SendOn(handler_.get(), bytes); }
  std::string SendOn(net::ProtocolHandler* h, const std::string& bytes) {
    pending_ += bytes;
    net::OutputBuffer out;
    size_t used = h->OnData(pending_.data(), pending_.size(), out);
    pending_.erase(0, used);
    return out.ToString();
  }
  // Sends one command given as words (multibulk).
  std::string Cmd(std::initializer_list<std::string> words) {
    std::string req = "*" + std::to_string(words.size()) + "\r\n";
    for (const auto& w : words) req += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    return Send(req);
  }
  net::ProtocolHandler* handler() { return handler_.get(); }
  ManualClock& clock() { return clock_; }
  engine::Engine* engine() { return engine_.get(); }

 private:
  ManualClock clock_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<net::ProtocolFactory> factory_;
  std::unique_ptr<net::ProtocolHandler> handler_;
  std::string pending_;
  uint64_t next_id_ = 0;
};

}  // namespace trove::resp
