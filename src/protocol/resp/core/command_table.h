// CommandTable: every RESP command Trove knows, with Redis's arity, flags and
// key positions. Built once, immutable afterwards; read by any worker.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/resp/core/command.h"

namespace trove::resp {

// Thread safety: immutable after construction (Get() builds it on first use
// under the C++ static-initialisation guard), so any thread may read it.
class CommandTable {
 public:
  static const CommandTable& Get();

  // Case-insensitive lookup; nullptr if unknown.
  const CommandSpec* Find(std::string_view name) const;
  const std::vector<CommandSpec>& all() const { return specs_; }
  size_t size() const { return specs_.size(); }

  // Indexes of the key arguments of a call (after the arity check).
  static void KeyIndexes(const CommandSpec& spec, std::span<const std::string_view> argv,
                         std::vector<size_t>* out);

 private:
  CommandTable();
  std::vector<CommandSpec> specs_;
  std::unordered_map<std::string, size_t> by_name_;
};

// Key positions of "numkeys key [key ...]" with numkeys at argv[at]
// (LMPOP, ZMPOP, SINTERCARD, ZUNION ...); nothing when numkeys is not a
// positive integer (the command itself then replies with the error).
void NumKeysAt(size_t at, std::span<const std::string_view> argv, std::vector<size_t>* out);
// KeysFn forms: numkeys at argv[1]; at argv[2] (BLMPOP/BZMPOP, after the
// timeout); or a destination at argv[1] and numkeys at argv[2].
void NumKeysAt1(std::span<const std::string_view> argv, std::vector<size_t>* out);
void NumKeysAt2(std::span<const std::string_view> argv, std::vector<size_t>* out);
void DestAndNumKeysAt2(std::span<const std::string_view> argv, std::vector<size_t>* out);
// Where the key count of `spec` is in argv (1 or 2), from its KeysFn; -1
// for a command whose keys do not follow a count.
int KeyCountAt(const CommandSpec& spec);
// BITFIELD's key flags vary as Redis's bitfieldGetKeys finds them: true when
// every subcommand of argv (the whole call, argv[0] the command) is a GET or
// OVERFLOW, so the key is only read (RO access, read permission); any SET,
// INCRBY or malformed subcommand makes it RW access update. In bitmaps.cc.
bool BitfieldReadOnly(std::span<const std::string_view> argv);

// Lower-cases ASCII.
std::string ToLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace trove::resp
