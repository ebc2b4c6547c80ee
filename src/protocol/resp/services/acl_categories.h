// ACL command categories (Redis 7's 21, in Redis's order), the categories
// of every command, subcommand and memcached-port command slot
// (HistogramSlots), and the names of Redis's commands Trove lacks.
// Immutable after first use; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace trove::resp::acl {

inline constexpr size_t kCategoryCount = 21;
// Bit i of a category mask is kCategoryNames[i].
inline constexpr std::string_view kCategoryNames[kCategoryCount] = {
    "keyspace", "read",  "write",    "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",  "stream",     "pubsub",      "admin",
    "fast",     "slow",  "blocking", "dangerous", "connection", "transaction", "scripting"};

// Category masks (bit i is kCategoryNames[i]).
inline constexpr uint32_t kCatKeyspace = 1u << 0;
inline constexpr uint32_t kCatRead = 1u << 1;
inline constexpr uint32_t kCatWrite = 1u << 2;
inline constexpr uint32_t kCatSet = 1u << 3;
inline constexpr uint32_t kCatSortedSet = 1u << 4;
inline constexpr uint32_t kCatList = 1u << 5;
inline constexpr uint32_t kCatHash = 1u << 6;
inline constexpr uint32_t kCatString = 1u << 7;
inline constexpr uint32_t kCatBitmap = 1u << 8;
inline constexpr uint32_t kCatHyperloglog = 1u << 9;
inline constexpr uint32_t kCatGeo = 1u << 10;
inline constexpr uint32_t kCatPubsub = 1u << 12;
inline constexpr uint32_t kCatAdmin = 1u << 13;
inline constexpr uint32_t kCatFast = 1u << 14;
inline constexpr uint32_t kCatSlow = 1u << 15;
inline constexpr uint32_t kCatBlocking = 1u << 16;
inline constexpr uint32_t kCatDangerous = 1u << 17;
inline constexpr uint32_t kCatConnection = 1u << 18;
inline constexpr uint32_t kCatTransaction = 1u << 19;
inline constexpr uint32_t kCatScripting = 1u << 20;

// The mask of a category name (case-insensitive), 0 if unknown.
uint32_t CategoryByName(std::string_view name);

// What a name is among the commands Redis 7.4 has and Trove does not
// implement (CLUSTER, EVAL, GEOADD, XADD, ...), so that ACL rules naming
// them are accepted and described as Redis accepts them; kNone for any other
// name (case-insensitive; "parent|sub" for a subcommand).
enum class RedisOnly : uint8_t { kNone, kCommand, kContainer, kSubcommand };
RedisOnly RedisOnlyCommand(std::string_view fullname);

// Categories per HistogramSlots slot, and the slot tree the ACL rules walk:
// a container's slot has its subcommands' slots as children.
class CommandCategories {
 public:
  static const CommandCategories& Get();
  size_t size() const { return cats_.size(); }
  uint32_t of(size_t slot) const { return cats_[slot]; }
  // The subcommand slots of a container slot ([begin, end), empty if none).
  size_t sub_begin(size_t slot) const { return sub_begin_[slot]; }
  size_t sub_end(size_t slot) const { return sub_end_[slot]; }
  // The container of a subcommand slot, or -1.
  int parent(size_t slot) const { return parent_[slot]; }
  // A slot by full name ("get", "client|list", "memcache|get"),
  // case-insensitive; -1 if none.
  int Find(std::string_view fullname) const;

 private:
  CommandCategories();
  std::vector<uint32_t> cats_;
  std::vector<size_t> sub_begin_, sub_end_;
  std::vector<int> parent_;
};

}  // namespace trove::resp::acl
