// Server wiring in-process (real engine and protocols on loopback), and the
// trove binary's command-line behaviour (exit codes, signals, pid file).
#include "server/server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/net/test_support.h"

namespace trove::server {
namespace {

using net::testing::Client;

std::string TempPath(const std::string& what) {
  return "/tmp/trove_server_test_" + std::to_string(::getpid()) + "_" + what;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

template <typename F>
bool Eventually(F cond, int ms = 5000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

Config MustParse(std::vector<std::string> args) {
  args.insert(args.begin(), "trove");
  auto r = ParseArgs(args);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : Config{};
}

std::string Stat(const std::vector<std::pair<std::string, std::string>>& st,
                 const std::string& name) {
  for (auto& [k, v] : st) {
    if (k == name) return v;
  }
  return "<missing>";
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_file_ = TempPath("ports");
    Config cfg = MustParse({"-p", "0", "--resp-port", "0", "--port-file", port_file_, "-t", "2",
                            "-l", "127.0.0.1", "-c", "3", "-A"});
    auto s = Server::Create(cfg);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s.value());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    ::unlink(port_file_.c_str());
  }
  std::string port_file_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, WritesBoundPortsToThePortFile) {
  ASSERT_GT(server_->memcache_port(), 0);
  ASSERT_GT(server_->resp_port(), 0);
  EXPECT_NE(server_->memcache_port(), server_->resp_port());
  EXPECT_EQ(ReadFile(port_file_), "memcache " + std::to_string(server_->memcache_port()) +
                                      "\nresp " + std::to_string(server_->resp_port()) + "\n");
}

TEST_F(ServerTest, ServesMemcacheAndRespOnTheirPorts) {
  Client mc = Client::Tcp(server_->memcache_port());
  ASSERT_TRUE(mc.Send("version\r\n"));
  EXPECT_EQ(mc.ReadLine(), std::string("VERSION ") + kVersion + "\r\n");
  ASSERT_TRUE(mc.Send("set k 5 0 2\r\nhi\r\nget k\r\n"));
  EXPECT_EQ(mc.ReadLine(), "STORED\r\n");
  EXPECT_EQ(mc.ReadLine(), "VALUE k 5 2\r\n");
  Client resp = Client::Tcp(server_->resp_port());
  ASSERT_TRUE(resp.Send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
  // The same keyspace: RESP sees what memcache stored.
  EXPECT_EQ(resp.ReadLine(), "$2\r\n");
  EXPECT_EQ(resp.ReadLine(), "hi\r\n");
}

TEST_F(ServerTest, ServerStatsCountConnections) {
  Client a = Client::Tcp(server_->memcache_port());
  Client b = Client::Tcp(server_->memcache_port());
  a.Send("version\r\n");
  a.ReadLine();
  b.Send("version\r\n");
  b.ReadLine();
  auto st = server_->ServerStats();
  EXPECT_EQ(Stat(st, "curr_connections"), "2");
  EXPECT_EQ(Stat(st, "total_connections"), "2");
  EXPECT_EQ(Stat(st, "max_connections"), "3");
  EXPECT_EQ(Stat(st, "threads"), "2");
  EXPECT_EQ(Stat(st, "version"), kVersion);
  EXPECT_EQ(Stat(st, "pid"), std::to_string(::getpid()));
  EXPECT_EQ(Stat(st, "libevent"), "none");
  EXPECT_EQ(Stat(st, "pointer_size"), "64");
  EXPECT_NE(Stat(st, "rusage_user").find('.'), std::string::npos);
  EXPECT_EQ(Stat(st, "bytes_read"), "18");
  auto settings = server_->SettingsStats();
  EXPECT_EQ(Stat(settings, "maxconns"), "3");
  EXPECT_EQ(Stat(settings, "num_threads"), "2");
  EXPECT_EQ(Stat(settings, "tcpport"), std::to_string(server_->memcache_port()));
  EXPECT_EQ(Stat(settings, "shutdown_command"), "yes");
  EXPECT_EQ(Stat(settings, "inter"), "127.0.0.1");
}

// Each port counts its own connections (issue 14): memcached's -c (3 here)
// for the memcached port, maxclients (starting at -c) for the RESP port.
TEST_F(ServerTest, ConnectionLimitsArePerPort) {
  std::vector<Client> resp;
  for (int i = 0; i < 3; ++i) {
    resp.push_back(Client::Tcp(server_->resp_port()));
    ASSERT_TRUE(resp.back().Send("*1\r\n$4\r\nPING\r\n"));
    EXPECT_EQ(resp.back().ReadLine(), "+PONG\r\n");
  }
  Client e = Client::Tcp(server_->resp_port());
  EXPECT_EQ(e.ReadLine(), "-ERR max number of clients reached\r\n");
  // The RESP connections take none of the memcached port's three slots.
  std::vector<Client> mc;
  for (int i = 0; i < 3; ++i) {
    mc.push_back(Client::Tcp(server_->memcache_port()));
    ASSERT_TRUE(mc.back().Send("version\r\n"));
    EXPECT_EQ(mc.back().ReadLine().rfind("VERSION ", 0), 0u);
  }
  Client d = Client::Tcp(server_->memcache_port());
  EXPECT_EQ(d.ReadLine(), "ERROR Too many open connections\r\n");
  EXPECT_EQ(Stat(server_->ServerStats(), "rejected_connections"), "1");
  EXPECT_EQ(Stat(server_->ServerStats(), "curr_connections"), "3");
}

TEST_F(ServerTest, StatsConnsAndCloseById) {
  Client a = Client::Tcp(server_->memcache_port());
  a.Send("version\r\n");
  a.ReadLine();
  auto conns = server_->Connections();
  ASSERT_EQ(conns.size(), 1u);
  EXPECT_EQ(conns[0].listen_addr, "tcp:127.0.0.1:" + std::to_string(server_->memcache_port()));
  EXPECT_TRUE(server_->CloseConnection(conns[0].id));
  EXPECT_TRUE(a.SeesEof());
  EXPECT_FALSE(server_->CloseConnection(conns[0].id));
}

TEST_F(ServerTest, ShutdownCommandEndsWaitAndRemovesThePortFile) {
  std::thread waiter([this] { server_->WaitForShutdown(); });
  Client a = Client::Tcp(server_->memcache_port());
  ASSERT_TRUE(a.Send("shutdown\r\n"));
  waiter.join();  // returns only because the protocol asked
  server_->Shutdown();
  EXPECT_TRUE(a.SeesEof());
  EXPECT_FALSE(Exists(port_file_));
}

// --- the binary ---

struct RunResult {
  int code = -1;
  std::string output;
};

RunResult RunBinary(const std::string& args) {
  std::string cmd = std::string(TROVE_BIN) + " " + args + " 2>&1";
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string UserFlag() { return ::geteuid() == 0 ? " -u root" : ""; }

TEST(BinaryTest, BadOptionsExit64WithOneLine) {
  for (const char* args : {"-j", "--bogus", "-p abc", "-t 0", "-c 0", "-I 100", "-o bogus_opt",
                           "-o hot_lru_pct=90", "-B binary", "-U 70000", "-f 0.5", "-R 0",
                           "-o idle_timeout=abc", "-a 999", "stray"}) {
    RunResult r = RunBinary(std::string(args) + UserFlag());
    EXPECT_EQ(r.code, 64) << args << ": " << r.output;
    ASSERT_FALSE(r.output.empty()) << args;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << args << ": " << r.output;
  }
}

TEST(BinaryTest, VersionAndHelp) {
  RunResult v = RunBinary("-V");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.output, std::string("memcached ") + kVersion + "\n");
  RunResult h = RunBinary("-h");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.output.find("-p, --port"), std::string::npos);
}

TEST(BinaryTest, RootNeedsTheUserSwitch) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root";
  RunResult r = RunBinary("-p 0 --resp-port 0");
  EXPECT_EQ(r.code, 64);
  EXPECT_EQ(r.output, "must add '-u root' to start as root\n");
  RunResult u = RunBinary("-u no_such_user_trove -p 0");
  EXPECT_NE(u.code, 0);
  EXPECT_NE(u.output.find("can't find the user"), std::string::npos);
}

TEST(BinaryTest, SigtermShutsDownCleanlyAndRemovesThePidFile) {
  std::string pid_file = TempPath("bin.pid");
  std::string port_file = TempPath("bin.ports");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<std::string> a = {TROVE_BIN, "-p", "0", "--resp-port", "0", "--port-file",
                                  port_file, "-P", pid_file, "-l", "127.0.0.1", "-t", "2"};
    if (::geteuid() == 0) {
      a.push_back("-u");
      a.push_back("root");
    }
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ASSERT_TRUE(Eventually([&] { return Exists(port_file) && Exists(pid_file); }));
  EXPECT_EQ(ReadFile(pid_file), std::to_string(child) + "\n");
  std::string ports = ReadFile(port_file);
  int port = std::stoi(ports.substr(ports.find(' ') + 1));
  {
    Client c = Client::Tcp(port);
    ASSERT_TRUE(c.ok());
    c.Send("version\r\n");
    EXPECT_EQ(c.ReadLine(), std::string("VERSION ") + kVersion + "\r\n");
    ::kill(child, SIGHUP);  // ignored
    c.Send("version\r\n");
    EXPECT_EQ(c.ReadLine(), std::string("VERSION ") + kVersion + "\r\n");
    ::kill(child, SIGTERM);
    EXPECT_TRUE(c.SeesEof());
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_FALSE(Exists(pid_file));
  EXPECT_FALSE(Exists(port_file));
}

TEST(BinaryTest, DaemonizeWritesThePidOfTheDaemon) {
  std::string pid_file = TempPath("daemon.pid");
  std::string port_file = TempPath("daemon.ports");
  RunResult r = RunBinary("-d -p 0 --resp-port 0 -l 127.0.0.1 -t 1 -P " + pid_file +
                          " --port-file " + port_file + UserFlag());
  EXPECT_EQ(r.code, 0) << r.output;  // the parent returns at once
  ASSERT_TRUE(Eventually([&] { return Exists(port_file) && Exists(pid_file); }));
  pid_t pid = std::stoi(ReadFile(pid_file));
  EXPECT_EQ(::kill(pid, 0), 0);
  ::kill(pid, SIGTERM);
  EXPECT_TRUE(Eventually([&] { return !Exists(pid_file); }));
}

TEST(BinaryTest, UnixSocketWithMask) {
  std::string sock = TempPath("unix.sock");
  std::string port_file = TempPath("unix.ports");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<std::string> a = {TROVE_BIN, "-s", sock, "-a", "0770", "--resp-port", "0",
                                  "--port-file", port_file, "-t", "1"};
    if (::geteuid() == 0) {
      a.push_back("-u");
      a.push_back("root");
    }
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ASSERT_TRUE(Eventually([&] { return Exists(port_file); }));
  // -s turns the TCP memcache port off; RESP stays on TCP.
  EXPECT_EQ(ReadFile(port_file).find("memcache"), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat(sock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0770u);
  {
    Client c = Client::Unix(sock);
    ASSERT_TRUE(c.ok());
    c.Send("version\r\n");
    EXPECT_EQ(c.ReadLine(), std::string("VERSION ") + kVersion + "\r\n");
  }
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::unlink(sock.c_str());
}

}  // namespace
}  // namespace trove::server
