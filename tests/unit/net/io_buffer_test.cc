#include "net/io_buffer.h"
#include "net/buffer_pool.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace trove::net {
namespace {

struct Counter {
  int released = 0;
  static void Release(void* ctx, void*) { static_cast<Counter*>(ctx)->released++; }
};

TEST(OutputBufferTest, AdjacentCopiesCoalesceIntoOneIovec) {
  OutputBuffer out;
  out.Append("VALUE k 0 1\r\n");
  out.Append("END\r\n");
  iovec iov[4];
  EXPECT_EQ(out.PendingIov(iov, 4), 1);
  EXPECT_EQ(out.ToString(), "VALUE k 0 1\r\nEND\r\n");
}

TEST(OutputBufferTest, ExternalSpansAreReleasedAfterWrite) {
  OutputBuffer out;
  Counter c;
  std::string value = "hello\r\n";
  iovec span{value.data(), value.size()};
  out.Append("VALUE k 0 5\r\n");
  out.AppendExternal(&span, 1, Releaser{&Counter::Release, &c, nullptr});
  out.Append("END\r\n");
  EXPECT_EQ(out.ToString(), "VALUE k 0 5\r\nhello\r\nEND\r\n");
  size_t total = out.pending_bytes();
  out.Advance(15);  // into the value
  EXPECT_EQ(c.released, 0);
  out.Advance(5);   // past the value
  EXPECT_EQ(c.released, 1);
  out.Advance(total - 20);
  EXPECT_TRUE(out.empty());
}

TEST(OutputBufferTest, SmallValuesAreCopiedAndReleasedAtOnce) {
  OutputBuffer out;
  Counter c;
  std::string a = "hel", b = "lo\r\n";
  iovec spans[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
  out.Append("$5\r\n");
  out.AppendValue(spans, 2, Releaser{&Counter::Release, &c, nullptr});
  EXPECT_EQ(c.released, 1);  // nothing refers to the item any more
  a = "XXX";                 // the buffer holds its own copy
  out.Append("+OK\r\n");
  iovec iov[4];
  EXPECT_EQ(out.PendingIov(iov, 4), 1);  // one coalesced copy
  EXPECT_EQ(out.ToString(), "$5\r\nhello\r\n+OK\r\n");
}

TEST(OutputBufferTest, LargeValuesAreReferencedUntilWritten) {
  OutputBuffer out;
  Counter c;
  std::string value(OutputBuffer::kCopyValueMax + 1, 'v');
  iovec span{value.data(), value.size()};
  out.AppendValue(&span, 1, Releaser{&Counter::Release, &c, nullptr});
  EXPECT_EQ(c.released, 0);
  iovec iov[4];
  ASSERT_EQ(out.PendingIov(iov, 4), 1);
  EXPECT_EQ(iov[0].iov_base, value.data());  // sent from the caller's memory
  out.Advance(value.size());
  EXPECT_EQ(c.released, 1);
}

TEST(OutputBufferTest, AppendCopyOfCopiesOnlyWhatIsPending) {
  OutputBuffer staged;
  Counter c;
  std::string value = "abc\r\n";
  iovec span{value.data(), value.size()};
  staged.Append("$3\r\n");
  staged.AppendExternal(&span, 1, Releaser{&Counter::Release, &c, nullptr});
  staged.Advance(1);  // a consumed prefix is not copied
  OutputBuffer out;
  out.Append("+OK\r\n");
  out.AppendCopyOf(staged);
  EXPECT_EQ(out.ToString(), "+OK\r\n3\r\nabc\r\n");
  EXPECT_EQ(staged.ToString(), "3\r\nabc\r\n");  // unchanged
  staged.Clear();
  EXPECT_EQ(c.released, 1);
  EXPECT_EQ(out.ToString(), "+OK\r\n3\r\nabc\r\n");  // owns its copy
}

TEST(OutputBufferTest, ClearRunsReleasers) {
  OutputBuffer out;
  Counter c;
  char v[3] = {'a', '\r', '\n'};
  iovec span{v, 3};
  out.AppendExternal(&span, 1, Releaser{&Counter::Release, &c, nullptr});
  out.Clear();
  EXPECT_EQ(c.released, 1);
  EXPECT_TRUE(out.empty());
}

TEST(OutputBufferTest, PartialWritesKeepTheirPlace) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  OutputBuffer out;
  std::string expect;
  for (int i = 0; i < 20000; ++i) {
    std::string line = "line " + std::to_string(i) + "\r\n";
    out.Append(line);
    expect += line;
  }
  std::string got;
  char buf[65536];
  while (!out.empty()) {
    int64_t w = out.Flush(sv[0]);
    ASSERT_GE(w, 0);
    ssize_t r;
    while ((r = read(sv[1], buf, sizeof(buf))) > 0) got.append(buf, r);
  }
  ssize_t r;
  while ((r = read(sv[1], buf, sizeof(buf))) > 0) got.append(buf, r);
  EXPECT_EQ(got, expect);
  close(sv[0]);
  close(sv[1]);
}

TEST(InputBufferTest, ReserveMovesOrGrows) {
  InputBuffer in;
  in.Reserve(16);
  ASSERT_EQ(in.capacity(), BufferPool::kBlockSize);  // a pool block
  const size_t cap = in.capacity();
  std::memset(in.write_ptr(), 'x', cap - 10);
  in.Commit(cap - 10);
  std::memcpy(in.write_ptr(), "0123456789", 10);
  in.Commit(10);
  in.Consume(cap - 2);
  in.Reserve(12);  // moves "89" to the front of the same block
  EXPECT_EQ(in.capacity(), cap);
  EXPECT_EQ(std::string(in.data(), in.size()), "89");
  EXPECT_GE(in.writable(), 12u);
  in.Reserve(100000);  // one large value: a heap buffer
  EXPECT_EQ(std::string(in.data(), in.size()), "89");
  EXPECT_GE(in.writable(), 100000u);
  EXPECT_GT(in.capacity(), BufferPool::kBlockSize);
}

// An idle connection holds no input buffer: storage is taken for a read and
// given back once everything read has been consumed.
TEST(InputBufferTest, HoldsNoMemoryWhenEmpty) {
  InputBuffer in;
  EXPECT_EQ(in.capacity(), 0u);
  EXPECT_EQ(in.size(), 0u);
  in.ReleaseIfEmpty();  // nothing to give back
  in.Reserve(1024);
  const size_t free_before = BufferPool::FreeCount();
  std::memcpy(in.write_ptr(), "get k\r\nget", 10);
  in.Commit(10);
  in.Consume(7);
  in.ReleaseIfEmpty();  // "get" is unparsed: kept
  EXPECT_EQ(std::string(in.data(), in.size()), "get");
  EXPECT_EQ(in.capacity(), BufferPool::kBlockSize);
  in.Consume(3);
  in.ReleaseIfEmpty();
  EXPECT_EQ(in.capacity(), 0u);
  EXPECT_EQ(BufferPool::FreeCount(), free_before + 1);  // back in this thread's pool
  in.Reserve(1);  // and taken again from it
  EXPECT_EQ(BufferPool::FreeCount(), free_before);
}

TEST(InputBufferTest, LargeValueBufferIsFreedWhenParsed) {
  InputBuffer in;
  in.Reserve(1 << 20);
  EXPECT_GE(in.capacity(), size_t{1} << 20);
  std::memset(in.write_ptr(), 'v', 1 << 20);
  in.Commit(1 << 20);
  in.Consume(1 << 20);
  in.ReleaseIfEmpty();
  EXPECT_EQ(in.capacity(), 0u);
}

// Output blocks go back to the pool once written: an idle connection keeps
// none, and the next reply takes one again without allocating.
TEST(OutputBufferTest, BlocksReturnToThePoolWhenDrained) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  OutputBuffer out;
  out.Append("VALUE k 0 1\r\nv\r\nEND\r\n");
  const size_t free_before = BufferPool::FreeCount();
  ASSERT_GT(out.Flush(sv[0]), 0);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(BufferPool::FreeCount(), free_before + 1);
  // A Reserve that nothing was written to keeps no block either.
  out.Reserve(100);
  out.Commit(0);
  EXPECT_EQ(BufferPool::FreeCount(), free_before + 1);
  // Unwritten output dropped by Clear gives its blocks back too.
  out.Append(std::string(40000, 'x'));  // three blocks, from the pool while it has some
  const size_t during = BufferPool::FreeCount();
  EXPECT_EQ(during, free_before + 1 - std::min<size_t>(3, free_before + 1));
  out.Clear();
  EXPECT_EQ(BufferPool::FreeCount(), during + 3);
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
}  // namespace trove::net
