// ACL: rule parsing and descriptions (Selector, User), the checks against
// command specs, and the AclStore (SETUSER staging, AUTH, requirepass, the
// ACL file, the log), plus readers racing SETUSER. Test thread, and four
// threads in the concurrency test.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/sha256.h"
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/services/acl_user.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/services/latency_histogram.h"

namespace trove::resp::acl {
namespace {

const CommandSpec& Spec(const char* name) { return *CommandTable::Get().Find(name); }

Denied Check(const User& u, std::vector<std::string_view> argv, size_t* pos = nullptr) {
  size_t p = 0;
  const CommandSpec& s = Spec(std::string(argv[0]).c_str());
  int slot = HistogramSlots::Get().SlotOf(s, argv);
  Denied d = u.Check(s, slot, argv, &p);
  if (pos) *pos = p;
  return d;
}

User Make(std::vector<std::string_view> rules) {
  User u("u", false);
  for (std::string_view r : rules) EXPECT_EQ(u.Apply(r, false), "") << r;
  return u;
}

TEST(AclCategories, KnownNamesAndImplicitOnes) {
  EXPECT_EQ(CategoryByName("READ"), kCatRead);
  EXPECT_EQ(CategoryByName("nosuch"), 0u);
  const CommandCategories& cc = CommandCategories::Get();
  const auto of = [&](const char* n) { return cc.of(static_cast<size_t>(cc.Find(n))); };
  EXPECT_EQ(of("get"), kCatRead | kCatString | kCatFast);
  EXPECT_EQ(of("keys"), kCatKeyspace | kCatRead | kCatSlow | kCatDangerous);
  EXPECT_EQ(of("blpop"), kCatWrite | kCatList | kCatSlow | kCatBlocking);
  EXPECT_EQ(of("client"), kCatSlow);
  EXPECT_EQ(of("client|kill"), kCatAdmin | kCatSlow | kCatDangerous | kCatConnection);
  EXPECT_EQ(of("client|id"), kCatSlow | kCatConnection);
  EXPECT_EQ(of("memcache|get") & kCatRead, kCatRead);
  EXPECT_EQ(cc.parent(static_cast<size_t>(cc.Find("config|get"))), cc.Find("config"));
}

TEST(AclUser, NewUserIsOffAndDescribesItself) {
  User u("bob", false);
  EXPECT_FALSE(u.enabled());
  EXPECT_EQ(u.Describe(), "off sanitize-payload resetchannels -@all");
  EXPECT_EQ(Check(u, {"get", "k"}), Denied::kCmd);
  User all("carol", true);
  EXPECT_EQ(all.root().DescribeChannels(), "&*");
}

TEST(AclUser, RulesAndTheirErrors) {
  User u("u", false);
  EXPECT_EQ(u.Apply("bogus", false), "Syntax error");
  EXPECT_EQ(u.Apply("+nosuch", false), "Unknown command or category name in ACL");
  EXPECT_EQ(u.Apply("-@nosuch", false), "Unknown command or category name in ACL");
  EXPECT_EQ(u.Apply("%X~k", false), "Syntax error");
  EXPECT_EQ(u.Apply("%R", false), "Syntax error");
  EXPECT_EQ(u.Apply("#abc", false).substr(0, 22), "The password hash must");
  EXPECT_EQ(u.Apply("<nope", false).substr(0, 12), "The password");
  EXPECT_EQ(u.Apply("+client|id|x", false), "Allowing first-arg of a subcommand is not supported");
  EXPECT_EQ(u.Apply("allkeys", false), "");
  EXPECT_NE(u.Apply("~k*", false), "");  // after allkeys
  EXPECT_EQ(u.Apply("allchannels", false), "");
  EXPECT_NE(u.Apply("&c", false), "");
  EXPECT_EQ(u.Apply("+get|x", false), "");  // first-arg form of a plain command
}

TEST(AclUser, CommandRulesCompactAsRedis72) {
  User u = Make({"+@all", "-@hash", "-@slow", "+hget"});
  EXPECT_EQ(u.root().DescribeCommands(), "+@all -@hash -@slow +hget");
  u.Apply("-@hash", false);
  EXPECT_EQ(u.root().DescribeCommands(), "+@all -@slow +hget -@hash");
  u.Apply("-@all", false);
  EXPECT_EQ(u.root().DescribeCommands(), "-@all");
  for (auto r : {"+client|list", "+config|get", "+config", "+acl|list", "-acl"}) u.Apply(r, false);
  EXPECT_EQ(u.root().DescribeCommands(), "-@all +client|list +config -acl");
}

TEST(AclUser, CommandSubcommandAndCategoryChecks) {
  User u = Make({"~*", "+@string", "-set", "+client|id", "+select|0"});
  EXPECT_EQ(Check(u, {"get", "k"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"set", "k", "v"}), Denied::kCmd);
  EXPECT_EQ(Check(u, {"client", "id"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"client", "list"}), Denied::kCmd);
  EXPECT_EQ(Check(u, {"select", "0"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"select", "1"}), Denied::kCmd);
  EXPECT_EQ(Check(u, {"auth", "x"}), Denied::kOk);  // no-auth commands always pass
  User admin = Make({"~*", "+@all", "-@dangerous"});
  EXPECT_EQ(Check(admin, {"keys", "*"}), Denied::kCmd);
  EXPECT_EQ(Check(admin, {"config", "get", "x"}), Denied::kCmd);
  EXPECT_EQ(Check(admin, {"client", "id"}), Denied::kOk);
  EXPECT_FALSE(admin.unrestricted());
  EXPECT_TRUE(Make({"~*", "&*", "+@all"}).unrestricted());
}

TEST(AclUser, KeyPermissionsFollowKeySpecs) {
  User u = Make({"+@all", "%R~r*", "%W~w*", "~rw*"});
  size_t pos = 0;
  EXPECT_EQ(Check(u, {"get", "r1"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"get", "w1"}, &pos), Denied::kKey);
  EXPECT_EQ(pos, 1u);
  EXPECT_EQ(Check(u, {"set", "w1", "v"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"set", "w1", "v", "GET"}), Denied::kKey);
  EXPECT_EQ(Check(u, {"incr", "w1"}), Denied::kKey);  // reads and writes
  EXPECT_EQ(Check(u, {"incr", "rw1"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"exists", "w1"}), Denied::kOk);  // either permission
  EXPECT_EQ(Check(u, {"exists", "x"}), Denied::kKey);
  EXPECT_EQ(Check(u, {"copy", "r1", "w1"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"copy", "w1", "r1"}), Denied::kKey);
  EXPECT_EQ(Check(u, {"sinterstore", "w1", "r1", "r2"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"mset", "w1", "a", "r1", "b"}, &pos), Denied::kKey);
  EXPECT_EQ(pos, 3u);
}

TEST(AclUser, ChannelsAndPatterns) {
  User u = Make({"+@all", "resetchannels", "&news.*", "&lit*"});
  EXPECT_EQ(Check(u, {"publish", "news.1", "m"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"publish", "other", "m"}), Denied::kChannel);
  EXPECT_EQ(Check(u, {"subscribe", "news.a", "x"}), Denied::kChannel);
  EXPECT_EQ(Check(u, {"psubscribe", "lit*"}), Denied::kOk);   // literal match
  EXPECT_EQ(Check(u, {"psubscribe", "li*"}), Denied::kChannel);
  EXPECT_EQ(Check(u, {"unsubscribe", "other"}), Denied::kOk);  // never checked
}

TEST(AclUser, SelectorsAreTriedInTurn) {
  User u = Make({"-@all", "+get", "~a*", "(+set ~b*)"});
  EXPECT_EQ(Check(u, {"get", "a1"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"set", "b1", "v"}), Denied::kOk);
  EXPECT_EQ(Check(u, {"set", "a1", "v"}), Denied::kKey);  // the more specific failure wins
  EXPECT_EQ(Check(u, {"del", "b1"}), Denied::kCmd);
  EXPECT_EQ(u.Describe(),
            "off sanitize-payload ~a* resetchannels -@all +get (~b* resetchannels -@all +set)");
  u.Apply("clearselectors", false);
  EXPECT_EQ(Check(u, {"set", "b1", "v"}), Denied::kCmd);
}

TEST(AclUser, PasswordsAreHashes) {
  User u = Make({"on", ">secret", ">secret"});
  ASSERT_EQ(u.password_hashes().size(), 1u);
  EXPECT_EQ(u.password_hashes()[0], Sha256Hex("secret"));
  EXPECT_TRUE(u.PasswordMatches("secret"));
  EXPECT_FALSE(u.PasswordMatches("Secret"));
  EXPECT_EQ(u.Describe().find("secret"), std::string::npos);
  u.Apply("nopass", false);
  EXPECT_TRUE(u.PasswordMatches("anything"));
  u.Apply("reset", false);
  EXPECT_FALSE(u.enabled());
  EXPECT_FALSE(u.PasswordMatches("anything"));
}

TEST(AclStore, SetUserIsAllOrNothing) {
  AclStore s;
  const uint64_t e0 = s.epoch();
  std::vector<std::string_view> good = {"on", ">p", "+get", "~k"};
  EXPECT_EQ(s.SetUser("u", good), "");
  EXPECT_GT(s.epoch(), e0);
  std::vector<std::string_view> bad = {"+set", "bogus"};
  EXPECT_EQ(s.SetUser("u", bad), "ERR Error in ACL SETUSER modifier 'bogus': Syntax error");
  EXPECT_EQ(Check(*s.Get("u"), {"set", "k", "v"}), Denied::kCmd);
  std::vector<std::string_view> open = {"(+get"};
  EXPECT_EQ(s.SetUser("u", open), "ERR Unmatched parenthesis in acl selector starting at '(+get'.");
  EXPECT_NE(s.Authenticate("u", "p"), nullptr);
  EXPECT_EQ(s.Authenticate("u", "q"), nullptr);
  EXPECT_EQ(s.Authenticate("nobody", "p"), nullptr);
  std::vector<std::string_view> names = {"u", "default", "nobody"};
  EXPECT_EQ(s.DelUsers(names), 1u);
  EXPECT_NE(s.Get("default"), nullptr);
}

TEST(AclStore, RequirepassClosesTheDefaultUser) {
  AclStore s;
  EXPECT_TRUE(s.default_open());
  s.SetRequirepass("pw");
  EXPECT_FALSE(s.default_open());
  EXPECT_NE(s.Authenticate("default", "pw"), nullptr);
  EXPECT_EQ(s.Get("default")->password_hashes()[0], Sha256Hex("pw"));
  s.SetRequirepass("");
  EXPECT_TRUE(s.default_open());
}

TEST(AclStore, FileParsingReportsEveryProblem) {
  AclStore s;
  s.set_aclfile("f.acl");
  std::map<std::string, std::shared_ptr<User>> users;
  EXPECT_EQ(s.ParseFile("user a on >x ~* +@all\n\n  user b (+get ~k*)\n", &users), "");
  EXPECT_EQ(users.size(), 2u);
  users.clear();
  std::string err = s.ParseFile("user a +nosuch\nuser a on\nbogus\n", &users);
  EXPECT_NE(err.find("f.acl:1: Error in applying operation '+nosuch'"), std::string::npos);
  EXPECT_NE(err.find("Duplicate user 'a' found on line 2"), std::string::npos);
  EXPECT_NE(err.find("f.acl:3 should start with user keyword"), std::string::npos);
}

TEST(AclStore, LogMergesSimilarEntriesAndTrims) {
  AclStore s;
  s.AddLog(Denied::kCmd, "toplevel", "get", "u", "id=1", 1000);
  s.AddLog(Denied::kCmd, "toplevel", "get", "u", "id=2", 2000);
  s.AddLog(Denied::kKey, "multi", "k", "u", "id=3", 3000);
  std::vector<LogEntry> e = s.LogEntries(10);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].reason, Denied::kKey);
  EXPECT_EQ(e[1].count, 2u);
  EXPECT_EQ(e[1].client_info, "id=2");
  EXPECT_EQ(e[1].created_ms, 1000);
  EXPECT_EQ(e[1].updated_ms, 2000);
  EXPECT_EQ(s.denied(Denied::kCmd), 2u);
  s.AddLog(Denied::kCmd, "toplevel", "get", "u", "id=4", 100000);  // over 60 s: new entry
  EXPECT_EQ(s.LogEntries(10).size(), 3u);
  s.set_log_max_len(1);
  EXPECT_EQ(s.LogEntries(10).size(), 1u);
  s.ResetLog();
  EXPECT_TRUE(s.LogEntries(10).empty());
}

TEST(RateBuckets, BurstRefillCapAndAllOrNothing) {
  RateBuckets b;
  uint64_t gc = 0, gb = 0;
  const int64_t s = 1'000'000'000;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.Acquire(1, 0, 10, 0, s, 0, 0, &gc, &gb), RateResult::kOk);
  EXPECT_EQ(b.Acquire(1, 0, 10, 0, s, 0, 0, &gc, &gb), RateResult::kCommands);
  // Half a second refills half a second's worth.
  EXPECT_EQ(b.Acquire(5, 0, 10, 0, s + s / 2, 0, 0, &gc, &gb), RateResult::kOk);
  EXPECT_EQ(b.Acquire(1, 0, 10, 0, s + s / 2, 0, 0, &gc, &gb), RateResult::kCommands);
  // Ten idle seconds still leave only one second's worth.
  EXPECT_EQ(b.Acquire(11, 0, 10, 0, 12 * s, 0, 0, &gc, &gb), RateResult::kCommands);
  EXPECT_EQ(b.Acquire(10, 0, 10, 0, 12 * s, 0, 0, &gc, &gb), RateResult::kOk);
  EXPECT_EQ(b.rejected_cps.load(), 3u);
  // A refusal on bytes consumes no command token; a lease takes extras.
  RateBuckets c;
  EXPECT_EQ(c.Acquire(1, 500, 100, 100, s, 0, 0, &gc, &gb), RateResult::kBytes);
  EXPECT_EQ(c.Acquire(1, 10, 100, 100, s, 20, 30, &gc, &gb), RateResult::kOk);
  EXPECT_EQ(gc, 20u);
  EXPECT_EQ(gb, 30u);
  c.Release(20, 30, 100, 100);
  EXPECT_EQ(c.Acquire(99, 90, 100, 100, s, 0, 0, &gc, &gb), RateResult::kOk);
  EXPECT_EQ(c.Acquire(1, 0, 100, 100, s, 0, 0, &gc, &gb), RateResult::kCommands);
}

TEST(AclUser, RateLimitRules) {
  User u = Make({"ratelimit:cps=10", "ratelimit:bps=2000"});
  EXPECT_TRUE(u.rate_limited());
  EXPECT_EQ(u.cps(), 10u);
  EXPECT_EQ(u.bps(), 2000u);
  EXPECT_NE(u.Describe().find("ratelimit:cps=10 ratelimit:bps=2000 "), std::string::npos);
  EXPECT_EQ(u.Apply("ratelimit:cps=x", false), "Syntax error");
  EXPECT_EQ(u.Apply("ratelimit:cps=0", false), "");
  EXPECT_EQ(u.cps(), 0u);
  u.Apply("resetratelimit", false);
  EXPECT_FALSE(u.rate_limited());
}

// Readers resolve users and check commands while another thread rewrites
// them: every User seen is a complete, immutable version (TSan: no race).
TEST(AclStoreConcurrency, ReadersRaceSetUser) {
  AclStore s;
  std::vector<std::string_view> init = {"on", "nopass", "~*", "+get"};
  ASSERT_EQ(s.SetUser("u", init), "");
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checks{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        std::shared_ptr<const User> u = s.Get("u");
        ASSERT_NE(u, nullptr);
        Denied d = Check(*u, {"get", "k"});
        ASSERT_TRUE(d == Denied::kOk || d == Denied::kCmd);
        (void)s.epoch();
        checks.fetch_add(1);
      }
    });
  }
  // On a loaded machine the readers may start late: race them for real.
  while (checks.load() < 50) std::this_thread::yield();
  for (int i = 0; i < 300; ++i) {
    std::vector<std::string_view> r = {i % 2 ? "-get" : "+get", ">p"};
    ASSERT_EQ(s.SetUser("u", r), "");
    s.AddLog(Denied::kCmd, "toplevel", "get", "u", "x", i);
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_GT(checks.load(), 0u);
}

}  // namespace
}  // namespace trove::resp::acl
