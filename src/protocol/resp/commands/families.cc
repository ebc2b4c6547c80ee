// The one list of RESP command families, in table order. Each family is a
// file in this folder that defines Register<Name>Commands(t), appending its
// CommandSpecs; adding a family is that file and one line here
// (docs/ARCHITECTURE.md, "How to add a RESP command family").
#include <vector>

#include "protocol/resp/core/command.h"

#define TROVE_RESP_FAMILIES(X)                                            \
  X(Connection)    /* connection.cc: AUTH HELLO PING SELECT QUIT RESET */ \
  X(Client)        /* client.cc: CLIENT *; tracking.cc the tracking subcommands */ \
  X(Monitor)       /* monitor.cc */                                       \
  X(Acl)           /* acl.cc */                                           \
  X(Server)        /* server.cc: SWAPDB DBSIZE FLUSH* TIME ... SHUTDOWN */ \
  X(Info)          /* info.cc */                                          \
  X(Memory)        /* memory.cc */                                        \
  X(Config)        /* config.cc */                                        \
  X(Command)       /* command.cc: COMMAND * */                            \
  X(Introspection) /* introspection.cc: LATENCY DEBUG OBJECT ... */       \
  X(Slowlog)       /* slowlog.cc */                                       \
  X(Key)           /* keys.cc */                                          \
  X(Expiry)        /* expiry.cc: EXPIRE TTL PERSIST ... */                \
  X(Dump)          /* dump.cc: DUMP RESTORE */                            \
  X(String)        /* strings.cc */                                       \
  X(StringRange)   /* string_ranges.cc: APPEND STRLEN GETRANGE SETRANGE LCS */ \
  X(Bitmap)        /* bitmaps.cc: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD(_RO) */ \
  X(HyperLogLog)   /* hyperloglog.cc: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST */ \
  X(Transaction)   /* transactions.cc: MULTI EXEC DISCARD WATCH UNWATCH */ \
  X(Scripting)     /* scripting.cc: EVAL EVALSHA SCRIPT (+ scripting_lua.cc, scripting_call.cc) */ \
  X(Function)      /* functions.cc: FUNCTION FCALL FCALL_RO (+ scripting_library.cc) */ \
  X(List)          /* lists.cc */                                         \
  X(Blocking)      /* blocking.cc: BLPOP BLMOVE BZPOPMIN ... */           \
  X(Hash)          /* hashes.cc */                                        \
  X(HashFieldExpiry) /* hash_field_expiry.cc: HEXPIRE HTTL HPERSIST ... */ \
  X(Set)           /* sets.cc */                                          \
  X(Zset)          /* zsets.cc (+ zsets_range.cc, zsets_setops.cc) */     \
  X(Sort)          /* sort.cc: SORT SORT_RO (+ sort_patterns.cc) */       \
  X(Geo)           /* geo.cc: GEOADD GEOPOS GEODIST GEOHASH; geo_search.cc GEOSEARCH GEORADIUS* */ \
  X(PubSub)        /* pubsub.cc */

namespace trove::resp {

#define TROVE_DECLARE_FAMILY(name) void Register##name##Commands(std::vector<CommandSpec>* t);
TROVE_RESP_FAMILIES(TROVE_DECLARE_FAMILY)
#undef TROVE_DECLARE_FAMILY

void RegisterCommandFamilies(std::vector<CommandSpec>* t) {
#define TROVE_REGISTER_FAMILY(name) Register##name##Commands(t);
  TROVE_RESP_FAMILIES(TROVE_REGISTER_FAMILY)
#undef TROVE_REGISTER_FAMILY
}

}  // namespace trove::resp
