// SlabAllocator: class sizes, the memory limit, free lists and page moves.
#include "engine/slab_allocator.h"

#include <gtest/gtest.h>

#include <vector>

namespace trove::engine {
namespace {

SlabOptions Opts(size_t limit = 4 << 20) {
  SlabOptions o;
  o.mem_limit = limit;
  o.page_size = 1 << 20;
  o.factor = 1.25;
  o.min_chunk = 96;
  o.slab_chunk_max = 512 * 1024;
  o.prealloc = false;
  return o;
}

TEST(SlabAllocatorTest, ClassSizesMatchMemcachedDefaults) {
  SlabAllocator s(Opts());
  // memcached 1.6 -f 1.25 -n 48: 96, 120, 152, 192, 240, 304 ...
  EXPECT_EQ(s.ChunkSize(1), 96u);
  EXPECT_EQ(s.ChunkSize(2), 120u);
  EXPECT_EQ(s.ChunkSize(3), 152u);
  EXPECT_EQ(s.ChunkSize(4), 192u);
  EXPECT_EQ(s.ChunkSize(5), 240u);
  EXPECT_EQ(s.ChunkSize(6), 304u);
  EXPECT_EQ(s.ChunkSize(s.largest_class()), 512u * 1024);
  EXPECT_EQ(s.ClassFor(96), 1);
  EXPECT_EQ(s.ClassFor(97), 2);
  EXPECT_EQ(s.ClassFor(512 * 1024 + 1), 0);
  for (int c = 2; c <= s.largest_class(); ++c) EXPECT_GT(s.ChunkSize(c), s.ChunkSize(c - 1));
}

TEST(SlabAllocatorTest, RespectsLimitButGivesEachClassAFirstPage) {
  SlabAllocator s(Opts(2 << 20));
  std::vector<Item*> got;
  while (Item* it = s.Alloc(1)) got.push_back(it);
  EXPECT_EQ(got.size(), 2 * ((1u << 20) / 96));
  EXPECT_EQ(s.malloced(), 2u << 20);
  // Another class still gets its first page.
  Item* other = s.Alloc(5);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(s.Alloc(5 + 1) != nullptr, true);
  // Freed chunks are reused before new pages.
  got.back()->refcount.store(0);
  s.Free(got.back());
  EXPECT_EQ(s.Alloc(1), got.back());
}

TEST(SlabAllocatorTest, MovePageToGlobalPoolAndReuse) {
  SlabAllocator s(Opts(8 << 20));
  std::vector<Item*> got;
  const size_t per_page = (1u << 20) / 96;
  for (size_t i = 0; i < per_page * 2; ++i) got.push_back(s.Alloc(1));
  ASSERT_EQ(s.Info(1).pages, 2u);
  for (Item* it : got) {
    it->refcount.store(0);
    s.Free(it);
  }
  ASSERT_TRUE(s.BeginMove(1));
  EXPECT_TRUE(s.MoveComplete());  // every chunk was free
  s.FinishMove(0);
  EXPECT_EQ(s.Info(1).pages, 1u);
  EXPECT_EQ(s.global_pool_pages(), 1u);
  size_t before = s.malloced();
  ASSERT_NE(s.Alloc(7), nullptr);
  EXPECT_EQ(s.global_pool_pages(), 0u);
  EXPECT_EQ(s.malloced(), before);  // came from the pool, not malloc
}

TEST(SlabAllocatorTest, BusyChunkBlocksMoveUntilFreed) {
  SlabAllocator s(Opts(8 << 20));
  const size_t per_page = (1u << 20) / 96;
  std::vector<Item*> got;
  for (size_t i = 0; i < per_page * 2; ++i) got.push_back(s.Alloc(1));
  // Free all but one chunk of the first page.
  for (size_t i = 1; i < got.size(); ++i) {
    got[i]->refcount.store(0);
    s.Free(got[i]);
  }
  ASSERT_TRUE(s.BeginMove(1));
  EXPECT_FALSE(s.MoveComplete());
  Item* chunk = nullptr;
  Item* owner = s.RefMovingChunkOwner(0, &chunk);
  ASSERT_EQ(owner, got[0]);
  EXPECT_EQ(chunk, got[0]);
  EXPECT_EQ(owner->refcount.load(), 2);
  owner->refcount.store(0);
  s.Free(owner);  // set aside, not back on the free list
  EXPECT_TRUE(s.MoveComplete());
  s.FinishMove(2);
  EXPECT_EQ(s.Info(1).pages, 1u);
  EXPECT_EQ(s.Info(2).pages, 1u);
}

TEST(SlabAllocatorTest, NoSpareWithOnePage) {
  SlabAllocator s(Opts());
  ASSERT_NE(s.Alloc(1), nullptr);
  EXPECT_FALSE(s.BeginMove(1));
}

}  // namespace
}  // namespace trove::engine
