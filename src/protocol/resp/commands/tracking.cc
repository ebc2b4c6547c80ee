// Client-side caching on the session: CLIENT TRACKING / CACHING / GETREDIR /
// TRACKINGINFO, remembering reads, queueing and sending invalidations, and
// writing them on the tracking client's (or its redirect target's) worker.
// Redis's behaviour and strings: networking.c (clientCommand) and tracking.c.
// Runs on the connection's worker.
#include <algorithm>
#include <string>
#include <vector>

#include "net/connection.h"
#include "net/worker.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {
namespace {

bool PrefixesOverlap(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  return a.substr(0, n) == b.substr(0, n);
}

// The prefixes of one CLIENT TRACKING ON ... BCAST call: none may overlap a
// prefix the client has, nor another of the call (Redis's
// checkPrefixCollisionsOrReply).
bool CheckPrefixes(CommandContext& ctx, const std::vector<std::string>& have,
                   const std::vector<std::string_view>& add) {
  for (size_t i = 0; i < add.size(); ++i) {
    for (const std::string& p : have) {
      if (PrefixesOverlap(p, add[i])) {
        ctx.Error("ERR Prefix '" + std::string(add[i]) + "' overlaps with an existing prefix '" +
                  p + "'. Prefixes for a single client must not overlap.");
        return false;
      }
    }
    for (size_t j = i + 1; j < add.size(); ++j) {
      if (PrefixesOverlap(add[i], add[j])) {
        ctx.Error("ERR Prefix '" + std::string(add[i]) + "' overlaps with another provided prefix '" +
                  std::string(add[j]) + "'. Prefixes for a single client must not overlap.");
        return false;
      }
    }
  }
  return true;
}

void ClientTracking(CommandContext& ctx) {
  TrackingState& t = ctx.conn->tracking();
  int64_t redirect = 0;
  bool bcast = false, optin = false, optout = false, noloop = false;
  std::vector<std::string_view> prefixes;
  for (size_t j = 3; j < ctx.argc(); ++j) {
    const bool more = j + 1 < ctx.argc();
    std::string o = ToLower(ctx.argv[j]);
    if (o == "redirect" && more) {
      ++j;
      if (redirect != 0) {
        ctx.Error("ERR A client can only redirect to a single other client");
        return;
      }
      if (!ParseStrictInt64(ctx.argv[j], &redirect)) {
        ctx.NotInteger();
        return;
      }
      if (redirect <= 0 || !ctx.server->live_clients().Contains(static_cast<uint64_t>(redirect))) {
        ctx.Error("ERR The client ID you want redirect to does not exist");
        return;
      }
    } else if (o == "bcast") {
      bcast = true;
    } else if (o == "optin") {
      optin = true;
    } else if (o == "optout") {
      optout = true;
    } else if (o == "noloop") {
      noloop = true;
    } else if (o == "prefix" && more) {
      prefixes.push_back(ctx.argv[++j]);
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  const std::string mode = ToLower(ctx.argv[2]);
  if (mode == "off") {
    ctx.client->DisableTracking();
    ctx.w->Ok();
    return;
  }
  if (mode != "on") {
    ctx.SyntaxError();
    return;
  }
  if (!bcast && !prefixes.empty()) {
    ctx.Error("ERR PREFIX option requires BCAST mode to be enabled");
    return;
  }
  if (t.on && t.bcast != bcast) {
    ctx.Error(
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
        "then re-enabling it with a different mode.");
    return;
  }
  if (bcast && (optin || optout)) {
    ctx.Error("ERR OPTIN and OPTOUT are not compatible with BCAST");
    return;
  }
  if (optin && optout) {
    ctx.Error("ERR You can't specify both OPTIN mode and OPTOUT mode");
    return;
  }
  if ((optin && t.optout) || (optout && t.optin)) {
    ctx.Error(
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
        "then re-enabling it with a different mode.");
    return;
  }
  if (bcast && !CheckPrefixes(ctx, t.prefixes, prefixes)) return;

  // enableTracking: the mode is set anew (a second ON without REDIRECT drops
  // the redirect); BCAST prefixes accumulate.
  Tracking& table = ctx.server->tracking();
  const uint64_t me = ctx.conn->identity().id();
  if (!t.on) table.ClientOn(me);
  t.on = true;
  t.broken_redirect = false;
  t.redirect = static_cast<uint64_t>(redirect);
  t.bcast = bcast;
  t.optin = optin;
  t.optout = optout;
  t.noloop = noloop;
  if (bcast) {
    if (prefixes.empty()) prefixes.push_back("");
    for (std::string_view p : prefixes) {
      if (std::find(t.prefixes.begin(), t.prefixes.end(), p) != t.prefixes.end()) continue;
      t.prefixes.emplace_back(p);
      table.AddPrefix(p, me);
    }
    std::sort(t.prefixes.begin(), t.prefixes.end());
  }
  ctx.w->Ok();
}

void ClientCaching(CommandContext& ctx) {
  TrackingState& t = ctx.conn->tracking();
  if (!t.on) {
    ctx.Error(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
        "OPTOUT mode enabled");
    return;
  }
  const std::string v = ToLower(ctx.argv[2]);
  if (v == "yes") {
    if (!t.optin) {
      ctx.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
      return;
    }
  } else if (v == "no") {
    if (!t.optout) {
      ctx.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
      return;
    }
  } else {
    ctx.SyntaxError();
    return;
  }
  t.caching = true;
  ctx.w->Ok();
}

void ClientTrackingInfo(CommandContext& ctx) {
  const TrackingState& t = ctx.conn->tracking();
  std::vector<const char*> flags;
  flags.push_back(t.on ? "on" : "off");
  if (t.bcast) flags.push_back("bcast");
  if (t.optin) {
    flags.push_back("optin");
    if (t.caching) flags.push_back("caching-yes");
  }
  if (t.optout) {
    flags.push_back("optout");
    if (t.caching) flags.push_back("caching-no");
  }
  if (t.noloop) flags.push_back("noloop");
  if (t.broken_redirect) flags.push_back("broken_redirect");
  RespWriter& w = *ctx.w;
  w.MapHeader(3);
  w.Bulk("flags");
  w.SetHeader(flags.size());
  for (const char* f : flags) w.Bulk(f);
  w.Bulk("redirect");
  w.Integer(t.on ? static_cast<int64_t>(t.redirect) : -1);
  w.Bulk("prefixes");
  w.ArrayHeader(t.prefixes.size());
  for (const std::string& p : t.prefixes) w.Bulk(p);
}

}  // namespace

// CLIENT's tracking subcommands (from CmdClient): false if `sub` is not one
// of them or its arity is wrong (the caller answers).
bool ClientTrackingCommand(CommandContext& ctx, std::string_view sub) {
  if (sub == "tracking" && ctx.argc() >= 3) {
    ClientTracking(ctx);
  } else if (sub == "caching" && ctx.argc() == 3) {
    ClientCaching(ctx);
  } else if (sub == "getredir" && ctx.argc() == 2) {
    const TrackingState& t = ctx.conn->tracking();
    ctx.w->Integer(t.on ? static_cast<int64_t>(t.redirect) : -1);
  } else if (sub == "trackinginfo" && ctx.argc() == 2) {
    ClientTrackingInfo(ctx);
  } else {
    return false;
  }
  return true;
}

}  // namespace trove::resp
