// RespTls: Redis's tls-* values and their errors, one context built from
// every setting of a CONFIG SET call, a failed build keeping everything,
// tls-auth-clients as a verify mode. Certificates from the openssl command
// line into a temporary folder.
#include "protocol/resp/services/tls_settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace trove::resp {
namespace {

using Changes = std::vector<std::pair<std::string, std::string>>;

class RespTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/trove-resptls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* n : {"a", "b"}) {
      const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
                              " -nodes -days 2 -subj /CN=" + std::string(n) + " -keyout " +
                              Path(std::string(n) + ".key") + " -out " +
                              Path(std::string(n) + ".crt") + " >/dev/null 2>&1";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string Path(const std::string& f) { return dir_ + "/" + f; }

  static RespTlsConfig Config() {
    RespTlsConfig c;
    c.port = 6380;
    c.cert_file = Path("a.crt");
    c.key_file = Path("a.key");
    c.auth_clients = 0;
    return c;
  }
  inline static std::string dir_;
};

TEST_F(RespTlsTest, StartChecksInRedissOrder) {
  RespTlsConfig c = Config();
  c.cert_file.clear();
  std::string err;
  EXPECT_FALSE(RespTls(c).Start(&err));
  EXPECT_EQ(err, "No tls-cert-file configured!");
  c = Config();
  c.auth_clients = 1;  // yes, without a CA
  EXPECT_FALSE(RespTls(c).Start(&err));
  EXPECT_NE(err.find("Either tls-ca-cert-file or tls-ca-cert-dir"), std::string::npos);
  c = Config();
  c.protocols = "TLSv1.2 TLSv9";
  EXPECT_FALSE(RespTls(c).Start(&err));
  EXPECT_NE(err.find("Invalid tls-protocols specified"), std::string::npos);
  RespTls ok(Config());
  EXPECT_TRUE(ok.Start(&err)) << err;
  EXPECT_NE(ok.holder()->current(), nullptr);
}

TEST_F(RespTlsTest, ValuesAndErrors) {
  RespTls t(Config());
  std::string err, bad;
  bool failed = false;
  ASSERT_TRUE(t.Start(&err));
  EXPECT_EQ(t.Get("tls-auth-clients"), "no");
  EXPECT_EQ(t.Get("tls-session-cache-size"), "20480");
  EXPECT_EQ(t.Get("tls-protocols"), "");
  EXPECT_FALSE(t.Set({{"tls-session-caching", "maybe"}}, &bad, &err, &failed));
  EXPECT_EQ(err, "argument must be 'yes' or 'no'");
  EXPECT_EQ(bad, "tls-session-caching");
  EXPECT_FALSE(failed);
  EXPECT_FALSE(t.Set({{"tls-auth-clients", "sometimes"}}, &bad, &err, &failed));
  EXPECT_EQ(err, "argument(s) must be one of the following: no, yes, optional");
  EXPECT_FALSE(t.Set({{"tls-session-cache-size", "-1"}}, &bad, &err, &failed));
  EXPECT_EQ(err, "argument must be between 0 and 2147483647 inclusive");
  EXPECT_FALSE(t.Set({{"tls-cluster", "yes"}}, &bad, &err, &failed));
  EXPECT_TRUE(t.Set({{"tls-cluster", "no"}}, &bad, &err, &failed));
  EXPECT_FALSE(t.Set({{"tls-client-cert-file", "/x"}}, &bad, &err, &failed));
  // tls-auth-clients: the verify mode of the next connection, no rebuild.
  const auto* before = t.holder()->current().get();
  EXPECT_TRUE(t.Set({{"tls-auth-clients", "optional"}}, &bad, &err, &failed));
  EXPECT_EQ(t.verify_mode()->load(), 1);
  EXPECT_EQ(t.holder()->current().get(), before);
  EXPECT_TRUE(t.Set({{"tls-auth-clients-user", "cn"}}, &bad, &err, &failed));
  EXPECT_TRUE(t.auth_user_cn());
  EXPECT_EQ(t.Get("tls-auth-clients-user"), "CN");
}

TEST_F(RespTlsTest, OneBuildForTheWholeCallOrNothing) {
  RespTls t(Config());
  std::string err, bad;
  bool failed = false;
  ASSERT_TRUE(t.Start(&err));
  auto first = t.holder()->current();
  // The certificate alone does not match the key: the build fails, the
  // first tls-* name is blamed, and nothing of the call is kept.
  EXPECT_FALSE(t.Set({{"tls-session-cache-size", "5"}, {"tls-cert-file", Path("b.crt")}}, &bad,
                     &err, &failed));
  EXPECT_TRUE(failed);
  EXPECT_EQ(bad, "tls-session-cache-size");
  EXPECT_EQ(t.Get("tls-cert-file"), Path("a.crt"));
  EXPECT_EQ(t.Get("tls-session-cache-size"), "20480");
  EXPECT_EQ(t.holder()->current(), first);
  // Both in one call: one new context.
  EXPECT_TRUE(t.Set({{"tls-cert-file", Path("b.crt")}, {"tls-key-file", Path("b.key")}}, &bad,
                    &err, &failed))
      << err;
  auto second = t.holder()->current();
  EXPECT_NE(second, first);
  // The same file name again reloads (a renewed certificate).
  EXPECT_TRUE(t.Set({{"tls-cert-file", Path("b.crt")}}, &bad, &err, &failed));
  EXPECT_NE(t.holder()->current(), second);
  // An unchanged non-file value does not.
  auto third = t.holder()->current();
  EXPECT_TRUE(t.Set({{"tls-session-caching", "yes"}}, &bad, &err, &failed));
  EXPECT_EQ(t.holder()->current(), third);
}

TEST_F(RespTlsTest, NothingIsBuiltWithoutATlsPort) {
  RespTlsConfig c = Config();
  c.port = 0;
  RespTls t(c);
  std::string err, bad;
  bool failed = false;
  // As Redis: with TLS off the values are kept, nothing is checked by a build.
  EXPECT_TRUE(t.Set({{"tls-cert-file", "/nonexistent"}}, &bad, &err, &failed));
  EXPECT_EQ(t.Get("tls-cert-file"), "/nonexistent");
  EXPECT_EQ(t.holder()->current(), nullptr);
}

TEST_F(RespTlsTest, CommandLineOptions) {
  RespTlsConfig c;
  std::string err;
  EXPECT_TRUE(RespTls::ParseOption(&c, "tls-port", "6380", &err));
  EXPECT_EQ(c.port, 6380);
  EXPECT_FALSE(RespTls::ParseOption(&c, "tls-port", "70000", &err));
  EXPECT_TRUE(RespTls::ParseOption(&c, "tls-auth-clients", "OPTIONAL", &err));
  EXPECT_EQ(c.auth_clients, 2);
  EXPECT_TRUE(RespTls::ParseOption(&c, "tls-protocols", "TLSv1.3", &err));
  EXPECT_EQ(c.protocols, "TLSv1.3");
}

}  // namespace
}  // namespace trove::resp
