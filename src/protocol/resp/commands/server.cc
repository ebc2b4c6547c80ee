// Server commands over the keyspace (SWAPDB DBSIZE FLUSHDB FLUSHALL), TIME,
// SHUTDOWN, what a standalone Redis without persistence answers (ROLE,
// LASTSAVE, LOLWUT), the helpers the split command files share, and the
// registration of every connection and server command. Connection's worker.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/keyspace_walk.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {

namespace {

// "<prefix><sub, cut at 128 bytes>'. Try <CMD> HELP."
void SubcommandError(CommandContext& ctx, std::string_view prefix) {
  std::string m(prefix);
  m.append(ctx.argv[1].substr(0, 128));
  m += "'. Try ";
  for (const char* c = ctx.spec->name; *c; ++c) {
    m.push_back(*c >= 'a' && *c <= 'z' ? static_cast<char>(*c - 'a' + 'A') : *c);
  }
  m += " HELP.";
  ctx.Error(m);
}

}  // namespace

void UnknownSubcommand(CommandContext& ctx) { SubcommandError(ctx, "ERR unknown subcommand '"); }

void SubcommandSyntaxError(CommandContext& ctx) {
  SubcommandError(ctx, "ERR unknown subcommand or wrong number of arguments for '");
}

void WriteHelp(CommandContext& ctx, std::span<const std::string_view> lines) {
  ctx.w->ArrayHeader(lines.size());
  for (std::string_view l : lines) ctx.w->Simple(l);
}

void SubArity(CommandContext& ctx) {
  std::string m = "ERR wrong number of arguments for '";
  m += ctx.spec->name;
  m += "|";
  m += ToLower(ctx.argv[1]);
  m += "' command";
  ctx.Error(m);
}

void AddField(std::string* s, std::string_view k, std::string_view v) {
  s->append(k);
  s->push_back(':');
  s->append(v);
  s->append("\r\n");
}

void AddField(std::string* s, std::string_view k, int64_t v) {
  std::string n;
  AppendI64(n, v);
  AddField(s, k, n);
}

namespace {

using engine::ItemRef;

void CmdSwapDb(CommandContext& ctx) {
  int64_t a, b;
  if (!ParseStrictInt64(ctx.argv[1], &a)) {
    ctx.Error("ERR invalid first DB index");
    return;
  }
  if (!ParseStrictInt64(ctx.argv[2], &b)) {
    ctx.Error("ERR invalid second DB index");
    return;
  }
  if (a < 0 || a >= ctx.server->databases() || b < 0 || b >= ctx.server->databases()) {
    ctx.Error("ERR DB index is out of range");
    return;
  }
  if (a != b) SwapDatabases(ctx, static_cast<int>(a), static_cast<int>(b));
  ctx.w->Ok();
}

void CmdDbSize(CommandContext& ctx) {
  auto n = std::make_shared<int64_t>(0);
  auto walk = std::make_shared<SlicedWalk>();
  walk->engine = ctx.engine;
  const int db = ctx.db();
  walk->visit = [n, db](const engine::ItemRef& it) {
    int kdb;
    std::string_view k;
    DecodeDbKey(it.key(), &kdb, &k);
    if (kdb == db) ++*n;
  };
  walk->finish = [n](RespWriter& w) { w.Integer(*n); };
  RunSlicedWalk(ctx, std::move(walk));
}

bool FlushOptions(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    ctx.SyntaxError();
    return false;
  }
  if (ctx.argc() == 2 && !EqualsIgnoreCase(ctx.argv[1], "sync") &&
      !EqualsIgnoreCase(ctx.argv[1], "async")) {
    ctx.SyntaxError();
    return false;
  }
  return true;
}

// FLUSHDB (db >= 0) or FLUSHALL (db < 0), in slices: each slice collects
// its keys, then deletes them with no stripe held (keyspace_walk.h).
void FlushInSlices(CommandContext& ctx, int db) {
  struct State {
    std::vector<std::string> keys;  // engine keys of the current slice
    engine::ThreadStats* ts;
    engine::Engine* engine;
  };
  auto st = std::make_shared<State>(State{{}, ctx.ts, ctx.engine});
  auto walk = std::make_shared<SlicedWalk>();
  walk->engine = ctx.engine;
  walk->visit = [st, db](const ItemRef& it) {
    if (db >= 0) {
      int kdb;
      std::string_view k;
      DecodeDbKey(it.key(), &kdb, &k);
      if (kdb != db) return;
    }
    st->keys.emplace_back(it.key());
  };
  walk->after_slice = [st] {
    engine::DeleteArgs da;
    for (const auto& k : st->keys) st->engine->Delete(k, da, st->ts);
    st->keys.clear();
  };
  // Every tracking client learns of the flush once it is done, after its
  // reply (Redis's trackingInvalidateKeysOnFlush: a null key list).
  // The table empties even with nobody tracking now (closed clients' reads).
  Tracking* tracking = &ctx.server->tracking();
  walk->finish = [tracking](RespWriter& w) {
    w.Ok();
    tracking->InvalidateAll();
  };
  RunSlicedWalk(ctx, std::move(walk));
}

void CmdFlushDb(CommandContext& ctx) {
  if (!FlushOptions(ctx)) return;
  FlushInSlices(ctx, ctx.db());
}

void CmdFlushAll(CommandContext& ctx) {
  if (!FlushOptions(ctx)) return;
  FlushInSlices(ctx, -1);
}

void CmdTime(CommandContext& ctx) {
  int64_t us = ctx.server->NowUs();
  std::string a, b;
  AppendI64(a, us / 1000000);
  AppendI64(b, us % 1000000);
  ctx.w->ArrayHeader(2);
  ctx.w->Bulk(a);
  ctx.w->Bulk(b);
}

void CmdShutdown(CommandContext& ctx) {
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string o = ToLower(ctx.argv[i]);
    if (o != "nosave" && o != "save" && o != "now" && o != "force" && o != "abort") {
      ctx.SyntaxError();
      return;
    }
  }
  net::ServerServices* sv = ctx.server->services();
  if (sv == nullptr || !sv->ShutdownEnabled()) {
    ctx.Error("ERR Errors trying to SHUTDOWN. Check logs.");
    return;
  }
  sv->RequestShutdown();
  ctx.fx->close_caller = true;
}

// A standalone server: Trove never replicates.
void CmdRole(CommandContext& ctx) {
  ctx.w->ArrayHeader(3);
  ctx.w->Bulk("master");
  ctx.w->Integer(0);
  ctx.w->ArrayHeader(0);
}

// Trove never saves the dataset to disk: the last save stays the server's
// start, which is what Redis answers until its first save.
void CmdLastSave(CommandContext& ctx) { ctx.w->Integer(ctx.server->start_unix()); }

// SAVE / BGSAVE: Trove is a cache and keeps no snapshot (memcached's -e
// memory file is its warm restart), so both are refused with a reason, never
// accepted. SAVE is not allowed inside MULTI, as in Redis.
void CmdSave(CommandContext& ctx) {
  ctx.Error("ERR Trove keeps no snapshots on disk: SAVE and BGSAVE are not supported");
}

// LOLWUT's art: dots on a grid printed as Unicode braille characters, each
// character a cell of 2 x 4 dots.
// Thread safety: a local of one LOLWUT call.
class DotCanvas {
 public:
  DotCanvas(int width, int height)
      : width_(width),
        height_(height),
        dots_(static_cast<size_t>(width) * static_cast<size_t>(height)) {}

  void Set(int x, int y) {
    if (x >= 0 && y >= 0 && x < width_ && y < height_) dots_[Index(x, y)] = 1;
  }

  // Bresenham's line from (x0, y0) to (x1, y1), both ends included.
  void Line(int x0, int y0, int x1, int y1) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      Set(x0, y0);
      if (x0 == x1 && y0 == y1) return;
      const int e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }

  // One line of text per 4 rows of dots, each ending in a newline.
  void AppendTo(std::string* out) const {
    // Dot (dx, dy) of a cell is bit kBit[dy][dx] of the character U+2800 + bits.
    static constexpr unsigned kBit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
    for (int y = 0; y < height_; y += 4) {
      for (int x = 0; x < width_; x += 2) {
        unsigned bits = 0;
        for (int dy = 0; dy < 4; ++dy) {
          for (int dx = 0; dx < 2; ++dx) {
            if (Get(x + dx, y + dy)) bits |= kBit[dy][dx];
          }
        }
        // U+2800 + bits in UTF-8 is E2, A0 | bits >> 6, 80 | (bits & 3F).
        out->push_back('\xE2');
        out->push_back(static_cast<char>(0xA0 | (bits >> 6)));
        out->push_back(static_cast<char>(0x80 | (bits & 0x3F)));
      }
      out->push_back('\n');
    }
  }

 private:
  size_t Index(int x, int y) const {
    return static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x);
  }
  bool Get(int x, int y) const { return x < width_ && y < height_ && dots_[Index(x, y)] != 0; }

  int width_, height_;
  std::vector<uint8_t> dots_;
};

// LOLWUT VERSION 5 [columns [squares-per-row [squares-per-column]]]: rows of
// squares that fall into more and more disorder going down, after Georg
// Nees's Schotter, with Redis's defaults and bounds (66 columns, 8 x 12
// squares). False (with the error sent) when an argument is not an integer.
bool Schotter(CommandContext& ctx, std::span<const std::string_view> args, std::string* out) {
  int64_t v[3] = {66, 8, 12};
  static constexpr int64_t kMax[3] = {1000, 200, 200};
  for (size_t i = 0; i < args.size() && i < 3; ++i) {
    if (!ParseStrictInt64(args[i], &v[i])) {
      ctx.NotInteger();
      return false;
    }
    v[i] = std::clamp<int64_t>(v[i], 1, kMax[i]);
  }
  const int width = static_cast<int>(v[0]) * 2;
  const int per_row = static_cast<int>(v[1]);
  const int pad = width > 4 ? 2 : 0;
  const int side = std::max(1, (width - 2 * pad) / per_row);
  // Redis draws whatever was asked (up to 800 M dots); at most 4 M dots here
  // (a reply of about 1.5 MB), by drawing fewer rows of squares.
  constexpr int kMaxDots = 1 << 22;
  const int per_col =
      std::max(1, std::min(static_cast<int>(v[2]), (kMaxDots / width - 2 * pad) / side));
  DotCanvas canvas(width, side * per_col + 2 * pad);
  std::mt19937 rng(static_cast<uint32_t>(ctx.server->NowUs()));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  constexpr double kQuarterTurn = 1.5707963267948966;
  const double half = side / 2.0;
  for (int r = 0; r < per_col; ++r) {
    const double disorder = static_cast<double>(r) / per_col;
    for (int c = 0; c < per_row; ++c) {
      const double angle = unit(rng) * disorder * kQuarterTurn / 2;
      const double cx = pad + c * side + half + unit(rng) * disorder * half;
      const double cy = pad + r * side + half + unit(rng) * disorder * half;
      int px[4], py[4];
      for (int k = 0; k < 4; ++k) {
        const double a = angle + kQuarterTurn * (k + 0.5);  // the corners at 45, 135, ... degrees
        px[k] = static_cast<int>(std::lround(cx + std::cos(a) * half * std::sqrt(2.0)));
        py[k] = static_cast<int>(std::lround(cy + std::sin(a) * half * std::sqrt(2.0)));
      }
      for (int k = 0; k < 4; ++k) canvas.Line(px[k], py[k], px[(k + 1) % 4], py[(k + 1) % 4]);
    }
  }
  canvas.AppendTo(out);
  *out += "\nGeorg Nees - schotter, plotter on paper, 1968. ";
  return true;
}

// LOLWUT [VERSION <n> [art arguments]]: the art of version 5; for any other
// version (Trove's own, 7, by default) only the version line, as Redis 7
// answers for a version without art of its own.
void CmdLolwut(CommandContext& ctx) {
  std::string_view version(kRedisVersion);
  int64_t major = 0;
  if (!ParseStrictInt64(version.substr(0, version.find('.')), &major)) major = 0;
  std::span<const std::string_view> art_args;
  if (ctx.argc() >= 3 && EqualsIgnoreCase(ctx.argv[1], "version")) {
    if (!ParseStrictInt64(ctx.argv[2], &major)) {
      ctx.NotInteger();
      return;
    }
    art_args = ctx.argv.subspan(3);
  }
  std::string out;
  if (major == 5 && !Schotter(ctx, art_args, &out)) return;
  out += "Redis ver. ";
  out += kRedisVersion;
  out += '\n';
  ctx.w->Verbatim(out);
}

}  // namespace

void RegisterServerCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  add("swapdb", 3, kCmdWrite | kCmdFast | kCmdGlobal, CmdSwapDb, "server",
      "Swaps two Redis databases.", "4.0.0");
  add("dbsize", 1, kCmdReadonly | kCmdFast | kCmdGlobal, CmdDbSize, "server",
      "Returns the number of keys in the database.", "1.0.0");
  add("flushdb", -1, kCmdWrite | kCmdGlobal, CmdFlushDb, "server",
      "Remove all keys from the current database.", "1.0.0");
  add("flushall", -1, kCmdWrite | kCmdGlobal, CmdFlushAll, "server",
      "Removes all keys from all databases.", "1.0.0");
  add("time", 1, kCmdFast | kCmdLoading | kCmdStale, CmdTime, "server", "Returns the server time.",
      "2.6.0");
  add("role", 1, kCmdFast | kCmdLoading | kCmdStale, CmdRole, "server",
      "Returns the replication role.", "2.8.12");
  add("lastsave", 1, kCmdFast | kCmdLoading | kCmdStale, CmdLastSave, "server",
      "Returns the Unix timestamp of the last successful save to disk.", "1.0.0");
  add("save", 1, kCmdAdmin | kCmdNoMulti, CmdSave, "server",
      "Synchronously saves the database(s) to disk.", "1.0.0");
  add("bgsave", -1, kCmdAdmin, CmdSave, "server",
      "Asynchronously saves the database(s) to disk.", "1.0.0");
  add("lolwut", -1, kCmdReadonly | kCmdFast, CmdLolwut, "server",
      "Displays computer art and the Redis version", "5.0.0");
  add("shutdown", -1, kCmdAdmin | kCmdNoMulti | kCmdLoading | kCmdStale, CmdShutdown, "server",
      "Synchronously saves the database(s) to disk and shuts down the Redis server.", "1.0.0");
}

}  // namespace trove::resp
