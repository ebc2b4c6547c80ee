// MemcacheHandler's part of CLIENT PAUSE (set on the RESP port): a WRITE
// pause holds this port's writes, an ALL pause every command. A held request
// stays unconsumed in the connection's input and is parsed again when the
// pause ends (the timer) or CLIENT UNPAUSE resumes the connection.
#include <algorithm>
#include <cstring>

#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/request_classify.h"
#include "protocol/memcache/text_parser.h"

namespace trove::memcache {

bool MemcacheHandler::PauseHolds(const char* data, size_t len) const {
  const int mode = ctx_->opts.pause->ModeAt(engine_->clock()->MonoNanos());
  if (mode == protocol::ClientPause::kNone) return false;
  const void* nl = std::memchr(data, '\n', len);
  if (nl == nullptr) return false;  // not a whole line yet: nothing runs anyway
  if (mode == protocol::ClientPause::kAll) return true;
  std::string_view line(data, static_cast<size_t>(static_cast<const char*>(nl) - data));
  switch (cmd::CmdOf(NthWord(line, 0))) {
    case cmd::kCmdSet: case cmd::kCmdAdd: case cmd::kCmdReplace: case cmd::kCmdAppend:
    case cmd::kCmdPrepend: case cmd::kCmdCas: case cmd::kCmdIncr: case cmd::kCmdDecr:
    case cmd::kCmdDelete: case cmd::kCmdTouch: case cmd::kCmdGat: case cmd::kCmdGats:
    case cmd::kCmdMs: case cmd::kCmdMd: case cmd::kCmdMa: case cmd::kCmdFlushAll:
      return true;  // the writes (gat/gats change the expiry)
    default:
      return false;
  }
}

void MemcacheHandler::HoldForPause() {
  protocol::ClientPause* p = ctx_->opts.pause;
  if (!pause_held_) {
    pause_held_ = true;
    p->HeldOn(worker_).push_back(control_->id());
    p->held.fetch_add(1, std::memory_order_relaxed);
  }
  control_->Suspend();
  const int64_t left = p->end_ns() - engine_->clock()->MonoNanos();
  // At most a day ahead (a "forever" pause must not overflow the timer);
  // a waiter woken before the end simply waits again.
  control_->loop().ArmAfter(&pause_timer_,
                            std::clamp<int64_t>(left / 1000000 + 1, 1, 86400 * 1000));
}

void MemcacheHandler::LeavePause() {
  protocol::ClientPause* p = ctx_->opts.pause;
  pause_held_ = false;
  auto& v = p->HeldOn(worker_);
  v.erase(std::remove(v.begin(), v.end(), control_->id()), v.end());
  p->held.fetch_sub(1, std::memory_order_relaxed);
  if (pause_timer_.armed()) control_->loop().Cancel(&pause_timer_);
}

}  // namespace trove::memcache
