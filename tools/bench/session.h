// ClientSession: the protocol side of one trove-bench connection, without
// the socket: it writes requests into an output buffer, remembers what it is
// waiting for, and matches and checks the replies fed back to it. Owned by
// one load thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "histogram.h"
#include "reply_parser.h"
#include "value_gen.h"

namespace trove::bench {

enum class Protocol { kText, kMeta, kResp };

// Per-thread counters and histograms. Owner thread only.
struct Stats {
  uint64_t completed = 0;  // every completed request, warm-up included
  uint64_t ops = 0;        // completed requests that started in the measured window
  uint64_t sets = 0;
  uint64_t gets = 0;  // get requests (a multiget counts once)
  uint64_t hits = 0;  // keys found
  uint64_t misses = 0;
  uint64_t err_malformed = 0;   // bytes that do not parse as a reply
  uint64_t err_unexpected = 0;  // a well-formed reply that is wrong here
  uint64_t err_mismatch = 0;    // a value that was never written for its key
  uint64_t err_connection = 0;  // refused, reset or closed connections
  LatencyHistogram all;
  LatencyHistogram set_lat;
  LatencyHistogram get_lat;
  std::string first_error;  // text of the first error seen (diagnostics)

  uint64_t errors() const { return err_malformed + err_unexpected + err_mismatch + err_connection; }
  void Merge(const Stats& o);
  void NoteError(std::string_view what);
};

// Thread safety: one owner thread; the ValueGen is shared read-only.
//
// Invariants:
//  1. pending_count_ <= depth, and the pending ring holds requests in the
//     order they were written (servers answer in order on one connection).
//  2. The output buffer never grows after construction: its capacity fits
//     `depth` of the largest request, and IssueX is only legal while
//     CanIssue().
class ClientSession {
 public:
  ClientSession(Protocol proto, const ValueGen* values, int depth, int multiget_width);

  bool CanIssue() const { return pending_count_ < depth_; }
  int pending() const { return pending_count_; }

  // Append a request to the output. `start_ns` is the time latency counts
  // from (the send time in closed loop, the intended time in open loop);
  // `measured` says whether its completion enters the stats.
  // REQUIRES: CanIssue(). keys has multiget_width entries for gets.
  void IssueSet(uint64_t key, uint32_t version, int64_t start_ns, bool measured);
  void IssueGet(const uint64_t* keys, int64_t start_ns, bool measured);

  // Bytes waiting to be written, and how many were written.
  std::string_view Output() const {
    return std::string_view(out_.data() + out_start_, out_end_ - out_start_);
  }
  void Consumed(size_t n);

  // Matches complete replies at the front of [p, p+n) against the pending
  // requests, recording latency (done_ns - start_ns) and checks into *stats.
  // Returns the bytes used; a partial reply is left for the next call.
  // Returns false (after counting the error) on malformed input or a reply
  // nobody asked for: the stream can't be resynchronised then.
  bool OnInput(const char* p, size_t n, int64_t done_ns, Stats* stats, size_t* used);

  // Longest single reply the session can expect (for sizing input buffers).
  size_t MaxReplySize() const;

 private:
  enum class Kind : uint8_t { kSet, kGet };
  struct Pending {
    Kind kind;
    bool measured;
    bool header_seen;  // RESP MGET: the array header arrived
    int done;          // sub-replies matched so far (keys for gets)
    int64_t start_ns;
    uint32_t version;
  };

  void Append(std::string_view s);
  void AppendU64(uint64_t v);
  void AppendKey(uint64_t k);
  void AppendRespBulkHeader(size_t len);
  Pending& Front() { return ring_[head_]; }
  const uint64_t* FrontKeys() const { return keys_.data() + static_cast<size_t>(head_) * width_; }
  void Complete(int64_t done_ns, Stats* stats);
  void CheckValue(uint64_t key, std::string_view data, Stats* stats);
  // Handle one parsed element for the front request. Return false on a
  // reply that can't belong to it (stream out of sync).
  bool OnMc(const McReply& r, int64_t done_ns, Stats* stats);
  bool OnResp(const RespReply& r, int64_t done_ns, Stats* stats);

  Protocol proto_;
  const ValueGen* values_;
  int depth_;
  int width_;
  std::vector<Pending> ring_;
  std::vector<uint64_t> keys_;  // depth_ * width_ key indexes, per ring slot
  int head_ = 0;
  int pending_count_ = 0;
  std::vector<char> out_;
  size_t out_start_ = 0;
  size_t out_end_ = 0;
  std::vector<char> key_buf_;
};

}  // namespace trove::bench
