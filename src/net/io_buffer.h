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
#include "net/buffer_pool.h"

namespace trove::net {

// Bytes read from a socket, consumed from the front by a parser. Holds no
// memory while empty: Reserve takes a BufferPool block (or, for one large
// value, a heap buffer) and ReleaseIfEmpty gives it back once everything
// read has been parsed, so an idle connection costs no buffer.
// Invariants: begin_ <= end_ <= cap_; buf_ == nullptr <=> cap_ == 0;
// cap_ == BufferPool::kBlockSize <=> buf_ is a pool block (heap buffers are
// always larger).
class InputBuffer : NonCopyable {
 public:
  InputBuffer() = default;
  ~InputBuffer() { Release(); }
  const char* data() const { return buf_ + begin_; }
  size_t size() const { return end_ - begin_; }
  void Consume(size_t n);
  // Ensures at least n bytes of free space after the data (taking storage,
  // moving the data to the front, or growing).
  void Reserve(size_t n);
  char* write_ptr() { return buf_ + end_; }
  size_t writable() const { return cap_ - end_; }
  void Commit(size_t n) { end_ += n; }
  // Gives the storage back when no unparsed byte is left. Pointers into the
  // consumed bytes are dead after this (poisoned under ASan).
  void ReleaseIfEmpty() {
    if (begin_ == end_) Release();
  }
  size_t capacity() const { return cap_; }

 private:
  void Release();

  char* buf_ = nullptr;
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

// Replies waiting to be written: small replies are copied into 16 KiB blocks
// borrowed from the thread's BufferPool and adjacent copies coalesce into one
// iovec; values are referenced in place. Flush() sends everything with
// sendmsg, keeping its place on a partial write. Once everything is written
// the blocks go back to the pool, so an idle connection holds none. No
// allocation per request once the pool and the entry array have grown.
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
    char* mem;  // a BufferPool block
    size_t used = 0;
  };
  static constexpr size_t kBlockSize = BufferPool::kBlockSize;
  Block* CurrentBlock(size_t need);
  void ResetIfDrained();
  // Forgets every entry (their releasers have run) and gives every block
  // and the entry array back to the thread's pools.
  void Reset();

  std::vector<Entry> entries_;
  size_t head_ = 0;        // first unsent entry
  size_t head_off_ = 0;    // bytes of entries_[head_] already sent
  std::vector<Block> blocks_;
  size_t cur_block_ = 0;
  size_t pending_ = 0;
  bool last_is_copy_ = false;  // entries_.back() ends at the current block's used mark
};

}  // namespace trove::net
