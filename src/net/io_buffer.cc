// InputBuffer / OutputBuffer implementation. Worker thread only.
#include "net/io_buffer.h"

#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/check.h"
#include "common/vector_pool.h"
#include "net/buffer_pool.h"

namespace trove::net {

void InputBuffer::Consume(size_t n) {
  DCHECK(n <= size());
  begin_ += n;
  if (begin_ == end_) begin_ = end_ = 0;
}

void InputBuffer::Reserve(size_t n) {
  if (cap_ - end_ >= n) return;
  const size_t live = end_ - begin_;
  if (begin_ > 0 && cap_ - live >= n) {
    std::memmove(buf_, buf_ + begin_, live);
    begin_ = 0;
    end_ = live;
    return;
  }
  char* nb;
  size_t ncap;
  if (live + n <= BufferPool::kBlockSize) {
    // Only reached without storage: a pool block with room enough would
    // have taken the branches above.
    DCHECK(buf_ == nullptr);
    nb = BufferPool::Take();
    ncap = BufferPool::kBlockSize;
  } else {
    ncap = cap_ > BufferPool::kBlockSize ? cap_ * 2 : 2 * BufferPool::kBlockSize;
    while (ncap - live < n) ncap *= 2;
    nb = static_cast<char*>(std::malloc(ncap));
    CHECK(nb != nullptr);
  }
  if (live > 0) std::memcpy(nb, buf_ + begin_, live);
  Release();
  buf_ = nb;
  cap_ = ncap;
  begin_ = 0;
  end_ = live;
}

void InputBuffer::Release() {
  if (buf_ != nullptr) {
    if (cap_ == BufferPool::kBlockSize) {
      BufferPool::Give(buf_);
    } else {
      std::free(buf_);
    }
  }
  buf_ = nullptr;
  cap_ = begin_ = end_ = 0;
}

OutputBuffer::OutputBuffer() = default;

OutputBuffer::~OutputBuffer() { Clear(); }

void OutputBuffer::Reset() {
  head_ = head_off_ = 0;
  pending_ = 0;
  for (auto& b : blocks_) BufferPool::Give(b.mem);
  VectorPool<Block>::Give(&blocks_);
  cur_block_ = 0;
  last_is_copy_ = false;
  // The entry array goes back to the thread's spares (a burst's big one is
  // freed): an idle connection holds none, a busy one takes one back.
  VectorPool<Entry>::Give(&entries_);
}

OutputBuffer::Block* OutputBuffer::CurrentBlock(size_t need) {
  CHECK(need <= kBlockSize);
  if (blocks_.empty()) {
    if (blocks_.capacity() == 0) VectorPool<Block>::Take(&blocks_);
    blocks_.push_back(Block{BufferPool::Take(), 0});
    cur_block_ = 0;
  }
  Block* b = &blocks_[cur_block_];
  if (kBlockSize - b->used < need) {
    ++cur_block_;
    if (cur_block_ == blocks_.size()) {
      blocks_.push_back(Block{BufferPool::Take(), 0});
    }
    b = &blocks_[cur_block_];
    b->used = 0;
    last_is_copy_ = false;
  }
  return b;
}

void OutputBuffer::Append(std::string_view s) {
  while (!s.empty()) {
    size_t n = s.size() < kBlockSize ? s.size() : kBlockSize;
    char* p = Reserve(n);
    std::memcpy(p, s.data(), n);
    Commit(n);
    s.remove_prefix(n);
  }
}

char* OutputBuffer::Reserve(size_t n) {
  Block* b = CurrentBlock(n);
  return b->mem + b->used;
}

void OutputBuffer::Commit(size_t n) {
  if (n == 0) {
    ResetIfDrained();  // a Reserve nothing was written to holds no block
    return;
  }
  Block* b = &blocks_[cur_block_];
  char* p = b->mem + b->used;
  if (last_is_copy_ && !entries_.empty() && entries_.back().base + entries_.back().len == p) {
    entries_.back().len += n;
  } else {
    if (entries_.capacity() == 0) VectorPool<Entry>::Take(&entries_);
    entries_.push_back(Entry{p, n, Releaser{}});
  }
  b->used += n;
  pending_ += n;
  last_is_copy_ = true;
}

void OutputBuffer::AppendExternal(const iovec* spans, int n, Releaser rel) {
  if (entries_.capacity() == 0) VectorPool<Entry>::Take(&entries_);
  for (int i = 0; i < n; ++i) {
    bool last = i == n - 1;
    entries_.push_back(Entry{static_cast<const char*>(spans[i].iov_base), spans[i].iov_len,
                             last ? rel : Releaser{}});
    pending_ += spans[i].iov_len;
  }
  if (n == 0 && rel.fn) rel.fn(rel.ctx, rel.obj);
  last_is_copy_ = false;
}

void OutputBuffer::AppendValue(const iovec* spans, int n, Releaser rel) {
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += spans[i].iov_len;
  if (total > kCopyValueMax) {
    AppendExternal(spans, n, rel);
    return;
  }
  char* p = Reserve(total);
  size_t off = 0;
  for (int i = 0; i < n; ++i) {
    std::memcpy(p + off, spans[i].iov_base, spans[i].iov_len);
    off += spans[i].iov_len;
  }
  Commit(total);
  if (rel.fn) rel.fn(rel.ctx, rel.obj);
}

int OutputBuffer::PendingIov(iovec* out, int max) const {
  int k = 0;
  for (size_t i = head_; i < entries_.size() && k < max; ++i) {
    size_t off = i == head_ ? head_off_ : 0;
    if (entries_[i].len == off) continue;
    out[k].iov_base = const_cast<char*>(entries_[i].base + off);
    out[k].iov_len = entries_[i].len - off;
    ++k;
  }
  return k;
}

void OutputBuffer::Advance(size_t n) {
  DCHECK(n <= pending_);
  pending_ -= n;
  while (head_ < entries_.size()) {
    Entry& e = entries_[head_];
    size_t left = e.len - head_off_;
    if (n < left) {
      head_off_ += n;
      break;
    }
    n -= left;
    if (e.rel.fn) e.rel.fn(e.rel.ctx, e.rel.obj);
    ++head_;
    head_off_ = 0;
  }
  ResetIfDrained();
}

void OutputBuffer::ResetIfDrained() {
  if (head_ < entries_.size()) return;
  Reset();
}

int64_t OutputBuffer::Flush(int fd) {
  int64_t total = 0;
  while (pending_ > 0) {
    iovec iov[IOV_MAX < 256 ? IOV_MAX : 256];
    int n = PendingIov(iov, static_cast<int>(sizeof(iov) / sizeof(iov[0])));
    // sendmsg, not writev: a socket write through sendmsg skips the file
    // position lock writev takes (fdget_pos, 1-2% of a pipeline-1 request),
    // and MSG_NOSIGNAL makes a vanished peer an EPIPE here, never a signal.
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return total;
      return -errno;
    }
    Advance(static_cast<size_t>(w));
    total += w;
    size_t asked = 0;
    for (int i = 0; i < n; ++i) asked += iov[i].iov_len;
    if (static_cast<size_t>(w) < asked) return total;  // socket full
  }
  return total;
}

void OutputBuffer::Clear() {
  for (size_t i = head_; i < entries_.size(); ++i) {
    if (entries_[i].rel.fn) entries_[i].rel.fn(entries_[i].rel.ctx, entries_[i].rel.obj);
  }
  Reset();
}

void OutputBuffer::AppendCopyOf(const OutputBuffer& other) {
  for (size_t i = other.head_; i < other.entries_.size(); ++i) {
    size_t off = i == other.head_ ? other.head_off_ : 0;
    Append(other.entries_[i].base + off, other.entries_[i].len - off);
  }
}

std::string OutputBuffer::ToString() const {
  std::string s;
  for (size_t i = head_; i < entries_.size(); ++i) {
    size_t off = i == head_ ? head_off_ : 0;
    s.append(entries_[i].base + off, entries_[i].len - off);
  }
  return s;
}

}  // namespace trove::net
