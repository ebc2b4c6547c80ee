// Readers of the packed blobs inside Redis's RDB objects: listpack (Redis
// 7.0+ small hashes, zsets, sets and list nodes), ziplist (the same before
// 7.0), intset (small integer sets) and zipmap (hashes before 2.6). RESTORE
// gets them from clients, so each reader checks the whole structure (header
// sizes and counts, every entry inside the blob, back-links, the end marker)
// and never reads outside `blob`. Any thread; no state.
#pragma once

#include <functional>
#include <string_view>

namespace trove::resp {

// Receives one entry; an integer entry arrives as its decimal text. The view
// is valid only during the call. Returning false stops the walk, which then
// fails.
using PackedEntryFn = std::function<bool(std::string_view)>;
using PackedPairFn = std::function<bool(std::string_view, std::string_view)>;
// Also says whether the entry was stored as an integer (a listpack keeps
// "12" written as a string apart from the integer 12; the TTLs in Redis's
// hash listpacks with field TTLs must be integers).
using PackedTypedEntryFn = std::function<bool(std::string_view, bool is_int)>;

// Each walks every entry in order and returns true only if the blob is well
// formed and every call returned true. An empty listpack or ziplist is
// well formed (the caller decides whether it may be); an empty intset or
// zipmap is not (Redis never writes one).
bool WalkListpack(std::string_view blob, const PackedEntryFn& each);
bool WalkListpackTyped(std::string_view blob, const PackedTypedEntryFn& each);
bool WalkZiplist(std::string_view blob, const PackedEntryFn& each);
// Intset members must be strictly ascending (so no duplicates).
bool WalkIntset(std::string_view blob, const PackedEntryFn& each);
// Field/value pairs.
bool WalkZipmap(std::string_view blob, const PackedPairFn& each);

}  // namespace trove::resp
