// Zset commands; run on the connection's worker with the keys' stripes held.
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/resp_server.h"

namespace trove::resp {

void RegisterZsetCommands(std::vector<CommandSpec>* t) { (void)t; }

}  // namespace trove::resp
