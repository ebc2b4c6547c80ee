// Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH,
// PUBSUB, and the delivery of messages to a subscriber. Connection's worker.
#include <string>

#include "common/glob.h"
#include "net/worker.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {

using Kind = PubSubState::Kind;

namespace {

const char* ConfirmWord(Kind k, bool sub) {
  switch (k) {
    case Kind::kChannel:
      return sub ? "subscribe" : "unsubscribe";
    case Kind::kPattern:
      return sub ? "psubscribe" : "punsubscribe";
    case Kind::kShard:
      return sub ? "ssubscribe" : "sunsubscribe";
  }
  return "";
}

// [word, name or null, count]: RESP3 push, RESP2 array.
void Confirm(RespWriter* w, Kind k, bool sub, const std::string_view* name, size_t count) {
  w->PushHeader(3);
  w->Bulk(ConfirmWord(k, sub));
  if (name != nullptr) {
    w->Bulk(*name);
  } else {
    w->Null();
  }
  w->Integer(static_cast<int64_t>(count));
}

size_t CountFor(const PubSubState& ps, Kind k) {
  return k == Kind::kShard ? ps.shard_count() : ps.global_count();
}

// Confirmations go to ctx.push: they reach the client even under CLIENT
// REPLY OFF|SKIP, as Redis's CLIENT_PUSHING replies do.
void SubscribeCmd(CommandContext& ctx, Kind k) {
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ctx.client->Subscribe(k, ctx.argv[i]);
    Confirm(ctx.push, k, true, &ctx.argv[i], CountFor(ctx.conn->pubsub(), k));
  }
}

void UnsubscribeCmd(CommandContext& ctx, Kind k) {
  const PubSubState& ps = ctx.conn->pubsub();
  if (ctx.argc() > 1) {
    for (size_t i = 1; i < ctx.argc(); ++i) {
      ctx.client->Unsubscribe(k, ctx.argv[i]);
      Confirm(ctx.push, k, false, &ctx.argv[i], CountFor(ps, k));
    }
    return;
  }
  if (ps.set(k).empty()) {  // Redis always answers once
    Confirm(ctx.push, k, false, nullptr, CountFor(ps, k));
    return;
  }
  std::vector<std::string> names(ps.set(k).begin(), ps.set(k).end());
  for (const std::string& n : names) {
    ctx.client->Unsubscribe(k, n);
    std::string_view v = n;
    Confirm(ctx.push, k, false, &v, CountFor(ps, k));
  }
}

void CmdSubscribe(CommandContext& ctx) { SubscribeCmd(ctx, Kind::kChannel); }
void CmdPSubscribe(CommandContext& ctx) { SubscribeCmd(ctx, Kind::kPattern); }
void CmdSSubscribe(CommandContext& ctx) { SubscribeCmd(ctx, Kind::kShard); }
void CmdUnsubscribe(CommandContext& ctx) { UnsubscribeCmd(ctx, Kind::kChannel); }
void CmdPUnsubscribe(CommandContext& ctx) { UnsubscribeCmd(ctx, Kind::kPattern); }
void CmdSUnsubscribe(CommandContext& ctx) { UnsubscribeCmd(ctx, Kind::kShard); }

void PublishCmd(CommandContext& ctx, bool shard) {
  net::ConnControl* self = ctx.client->control();
  net::WorkerGroup* group = self != nullptr ? &self->group() : nullptr;
  size_t n = ctx.server->pubsub().Publish(ctx.argv[1], ctx.argv[2], shard, group);
  ctx.w->Integer(static_cast<int64_t>(n));
}

void CmdPublish(CommandContext& ctx) { PublishCmd(ctx, false); }
void CmdSPublish(CommandContext& ctx) { PublishCmd(ctx, true); }

void CmdPubsub(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  PubSubHub& hub = ctx.server->pubsub();
  if ((sub == "channels" || sub == "shardchannels") && ctx.argc() <= 3) {
    std::vector<std::string> names =
        hub.Channels(sub == "shardchannels", ctx.argc() == 3 ? ctx.argv[2] : std::string_view());
    ctx.w->ArrayHeader(names.size());
    for (const std::string& n : names) ctx.w->Bulk(n);
  } else if (sub == "numsub" || sub == "shardnumsub") {
    // A flat array of channel, count pairs in RESP2 and RESP3 alike.
    ctx.w->ArrayHeader(2 * (ctx.argc() - 2));
    for (size_t i = 2; i < ctx.argc(); ++i) {
      ctx.w->Bulk(ctx.argv[i]);
      ctx.w->Integer(static_cast<int64_t>(hub.NumSub(sub == "shardnumsub", ctx.argv[i])));
    }
  } else if (sub == "numpat" && ctx.argc() == 2) {
    ctx.w->Integer(static_cast<int64_t>(hub.NumPat()));
  } else if (sub == "help" && ctx.argc() == 2) {
    static const char* kHelp[] = {
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Print this help."};
    ctx.w->ArrayHeader(sizeof(kHelp) / sizeof(kHelp[0]));
    for (const char* line : kHelp) ctx.w->Simple(line);
  } else if (sub == "numpat" || sub == "help") {  // arity from Redis's subcommand table
    ctx.Error("ERR wrong number of arguments for 'pubsub|" + sub + "' command");
  } else if (sub == "channels" || sub == "shardchannels") {  // Redis checks these inline
    SubcommandSyntaxError(ctx);
  } else {
    std::string m = "ERR unknown subcommand '";
    m.append(ctx.argv[1].substr(0, 128));
    m += "'. Try PUBSUB HELP.";
    ctx.Error(m);
  }
}

}  // namespace

void RegisterPubSubCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t, "pubsub"};
  const uint32_t sub = kCmdPubsub | kCmdLoading | kCmdStale | kCmdPubsubOk;
  add("subscribe", -2, sub, CmdSubscribe, "Listens for messages published to channels.", "2.0.0");
  add("psubscribe", -2, sub, CmdPSubscribe,
      "Listens for messages published to channels that match one or more patterns.", "2.0.0");
  add("ssubscribe", -2, sub, CmdSSubscribe, "Listens for messages published to shard channels.",
      "7.0.0");
  add("unsubscribe", -1, sub, CmdUnsubscribe, "Stops listening to messages posted to channels.",
      "2.0.0");
  add("punsubscribe", -1, sub, CmdPUnsubscribe,
      "Stops listening to messages published to channels that match one or more patterns.",
      "2.0.0");
  add("sunsubscribe", -1, sub, CmdSUnsubscribe,
      "Stops listening to messages posted to shard channels.", "7.0.0");
  const uint32_t pub = kCmdPubsub | kCmdLoading | kCmdStale | kCmdFast;
  add("publish", 3, pub, CmdPublish, "Posts a message to a channel.", "2.0.0");
  add("spublish", 3, pub, CmdSPublish, "Post a message to a shard channel", "7.0.0");
  add("pubsub", -2, kCmdPubsub | kCmdLoading | kCmdStale, CmdPubsub,
      "A container for Pub/Sub commands.", "2.8.0");
}

}  // namespace trove::resp
