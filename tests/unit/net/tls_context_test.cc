// TlsContext: builds from memcached's ssl_* settings, refuses bad files
// with memcached's messages, and serves a real handshake (in memory, over a
// BIO pair); TlsContextHolder keeps the old context when a reload fails.
// Certificates come from the openssl command line into a temporary folder.
#include "net/tls_context.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace trove::net {
namespace {

class TlsContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/trove-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    MakeCert("a", "trove-a");
    MakeCert("b", "trove-b");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  // A self-signed certificate (CN=cn) and its key: <dir>/<name>.crt/.key.
  static void MakeCert(const std::string& name, const std::string& cn) {
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + cn +
                            " -keyout " + Path(name + ".key") + " -out " +
                            Path(name + ".crt") + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static std::string Path(const std::string& f) { return dir_ + "/" + f; }

  static TlsSettings Settings(const std::string& name) {
    TlsSettings s;
    s.chain_cert = Path(name + ".crt");
    s.key = Path(name + ".key");
    return s;
  }

  static std::string dir_;
};

std::string TlsContextTest::dir_;

// Runs a handshake between a client and an SSL of ctx over a BIO pair;
// returns the server certificate's subject CN the client saw.
std::string HandshakeCn(const TlsContext& server) {
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  SSL* c = SSL_new(cctx);
  SSL* s = SSL_new(server.ctx());
  BIO *cb, *sb;
  BIO_new_bio_pair(&cb, 0, &sb, 0);
  SSL_set_bio(c, cb, cb);
  SSL_set_bio(s, sb, sb);
  SSL_set_connect_state(c);
  SSL_set_accept_state(s);
  bool done = false;
  for (int i = 0; i < 20 && !done; ++i) {
    const int rc = SSL_do_handshake(c);
    const int rs = SSL_do_handshake(s);
    done = rc == 1 && rs == 1;
  }
  std::string cn;
  if (done) {
    X509* peer = SSL_get1_peer_certificate(c);
    char buf[128] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, buf, sizeof buf);
    cn = buf;
    X509_free(peer);
  }
  SSL_free(c);
  SSL_free(s);
  SSL_CTX_free(cctx);
  return cn;
}

TEST_F(TlsContextTest, BuildsAndServesAHandshake) {
  std::string err;
  auto ctx = TlsContext::Build(Settings("a"), &err);
  ASSERT_TRUE(ctx) << err;
  EXPECT_EQ(HandshakeCn(*ctx), "trove-a");
}

TEST_F(TlsContextTest, RefusesBadFilesWithMemcachedsWords) {
  std::string err;
  TlsSettings s = Settings("a");
  s.chain_cert = Path("missing.crt");
  EXPECT_FALSE(TlsContext::Build(s, &err));
  EXPECT_EQ(err.rfind("Error loading the certificate chain: " + s.chain_cert + " : ", 0), 0u) << err;
  s = Settings("a");
  s.key = Path("missing.key");
  EXPECT_FALSE(TlsContext::Build(s, &err));
  EXPECT_EQ(err.rfind("Error loading the key: " + s.key + " : ", 0), 0u) << err;
  s = Settings("a");
  s.key = Path("b.key");  // another certificate's key: OpenSSL 3 refuses it at load
  EXPECT_FALSE(TlsContext::Build(s, &err));
  EXPECT_EQ(err.rfind("Error loading the key: " + s.key + " : ", 0), 0u) << err;
  EXPECT_NE(err.find("key values mismatch"), std::string::npos) << err;
  s = Settings("a");
  s.ca_cert = Path("missing-ca.crt");
  EXPECT_FALSE(TlsContext::Build(s, &err));
  EXPECT_EQ(err.rfind("Error loading the CA certificate: ", 0), 0u) << err;
  s = Settings("a");
  s.verify_mode = 4;
  EXPECT_FALSE(TlsContext::Build(s, &err));
  s = Settings("a");
  s.ciphers = "NO-SUCH-CIPHER";
  EXPECT_FALSE(TlsContext::Build(s, &err));
  EXPECT_EQ(err.rfind("Error setting the cipher list: ", 0), 0u) << err;
}

TEST_F(TlsContextTest, ReloadSwapsWholeOrKeepsTheOld) {
  TlsContextHolder h;
  std::string err;
  EXPECT_FALSE(h.current());
  ASSERT_TRUE(h.Reload(Settings("a"), &err)) << err;
  auto first = h.current();
  EXPECT_GT(h.loaded_at(), 0);
  TlsSettings bad = Settings("b");
  bad.key = Path("a.key");
  EXPECT_FALSE(h.Reload(bad, &err));
  EXPECT_EQ(h.current(), first);  // a failed reload changes nothing
  ASSERT_TRUE(h.Reload(Settings("b"), &err)) << err;
  EXPECT_EQ(HandshakeCn(*h.current()), "trove-b");
  EXPECT_EQ(HandshakeCn(*first), "trove-a");  // a connection's context lives on
}

TEST(TlsVersionNameTest, MemcachedsNames) {
  EXPECT_STREQ(TlsVersionName(0), "tlsv1.0");
  EXPECT_STREQ(TlsVersionName(2), "tlsv1.2");
  EXPECT_STREQ(TlsVersionName(3), "tlsv1.3");
  EXPECT_STREQ(TlsVersionName(9), "unknown");
}

}  // namespace
}  // namespace trove::net
