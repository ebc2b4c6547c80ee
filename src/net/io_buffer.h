// InputBuffer and OutputBuffer: per-connection byte buffers. Owned by the
// connection's worker thread only; no locking.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/non_copyable.h"

namespace trove::net {

// Bytes read from a socket, consumed from the front by a parser.
// Invariant: begin_ <= end_ <= cap_.
class InputBuffer {
 public:
  explicit InputBuffer(size_t initial = 16 * 1024);
  const char* data() const { return buf_.get() + begin_; }
  size_t size() const { return end_ - begin_; }
  void Consume(size_t n);
  // Ensures at least n bytes of free space after the data (moving or growing).
  void Reserve(size_t n);
  char* write_ptr() { return buf_.get() + end_; }
  size_t writable() const { return cap_ - end_; }
  void Commit(size_t n) { end_ += n; }
  // Gives back memory above `keep` bytes when empty (after a large value).
  void ShrinkIfIdle(size_t keep);
  size_t capacity() const { return cap_; }

 private:
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// A release hook for bytes that live outside the buffer (item memory): called
// once when every byte of the span group has been written or the buffer is
// cleared. fn(ctx, obj), e.g. engine::Engine::ReleaseRaw(engine, item).
struct Releaser {
  void (*fn)(void* ctx, void* obj) = nullptr;
  void* ctx = nullptr;
  void* obj = nullptr;
};

// Replies waiting to be written: small replies are copied into reused 16 KiB
// blocks and adjacent copies coalesce into one iovec; values are referenced in
// place. Flush() sends everything with sendmsg, keeping its place on a partial
// write. No allocation per request once blocks and the entry array have grown.
class OutputBuffer : NonCopyable {
 public:
  OutputBuffer();
  ~OutputBuffer();

  void Append(std::string_view s);
  void Append(const char* p, size_t n) { Append(std::string_view(p, n)); }
  // Room for n bytes of copied output (n <= 16 KiB); then Commit(used).
  char* Reserve(size_t n);
  void Commit(size_t n);
  // References external spans; rel runs after the last of them is written.
  void AppendExternal(const iovec* spans, int n, Releaser rel);
  // An item value: referenced in place (AppendExternal), except that values
  // of at most kCopyValueMax bytes are copied and rel runs at once. For a
  // small value the copy is cheaper than what a reference costs: an iovec
  // the kernel walks separately, two refcount updates, and a second touch of
  // the item's cache line after the write (docs/adr/0004).
  static constexpr size_t kCopyValueMax = 256;
  void AppendValue(const iovec* spans, int n, Releaser rel);

  // Writes as much as the socket takes. Returns bytes written, 0 if the
  // socket would block, or -errno on a hard error.
  int64_t Flush(int fd);
  // Collects the pending data as iovecs (for tests and custom senders).
  int PendingIov(iovec* out, int max) const;
  // Marks n bytes as sent (what Flush does after sendmsg).
  void Advance(size_t n);

  size_t pending_bytes() const { return pending_; }
  bool empty() const { return pending_ == 0; }
  // Drops all pending output, running every releaser.
  void Clear();
  // Copies everything pending in `other` to the end of this buffer (a staged
  // reply being committed); `other` is unchanged.
  void AppendCopyOf(const OutputBuffer& other);
  // Everything pending, copied out (tests).
  std::string ToString() const;

 private:
  struct Entry {
    const char* base;
    size_t len;
    Releaser rel;   // fn == nullptr for copied bytes
  };
  struct Block {
    std::unique_ptr<char[]> mem;
    size_t used = 0;
  };
  static constexpr size_t kBlockSize = 16 * 1024;
  Block* CurrentBlock(size_t need);
  void ResetIfDrained();

  std::vector<Entry> entries_;
  size_t head_ = 0;        // first unsent entry
  size_t head_off_ = 0;    // bytes of entries_[head_] already sent
  std::vector<Block> blocks_;
  size_t cur_block_ = 0;
  size_t pending_ = 0;
  bool last_is_copy_ = false;  // entries_.back() ends at the current block's used mark
};

}  // namespace trove::net
