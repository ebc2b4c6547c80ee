// trove: the server binary. Parses memcached's flags, applies the root rule,
// daemonizes if asked, runs the server until SIGTERM/SIGINT or "shutdown", or
// SIGUSR1 (graceful stop: with -e the item memory is saved for the next start).
#include <grp.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "server/config.h"
#include "server/server.h"

namespace {

using trove::server::Config;

constexpr int kExitNoUser = 67;  // sysexits.h EX_NOUSER, as memcached
constexpr int kExitOsErr = 71;   // sysexits.h EX_OSERR

// memcached's rule: root must name a user to run as (-u), and then runs as
// that user. Returns an exit code, or 0 to go on.
// -r: raise the core file limit as far as allowed (memcached's order and
// messages); a limit still at 0 is an error.
int ApplyCoreLimit(const Config& cfg) {
  if (!cfg.coredumps) return 0;
  rlimit old{};
  if (::getrlimit(RLIMIT_CORE, &old) == 0) {
    rlimit want{RLIM_INFINITY, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_CORE, &want) != 0) {
      want.rlim_cur = want.rlim_max = old.rlim_max;  // only up to the old hard limit
      (void)::setrlimit(RLIMIT_CORE, &want);
    }
  }
  rlimit now{};
  if (::getrlimit(RLIMIT_CORE, &now) != 0 || now.rlim_cur == 0) {
    std::fprintf(stderr, "failed to ensure corefile creation\n");
    return kExitOsErr;
  }
  return 0;
}

// memcached raises the open-file limit to -c at start (a descriptor per
// connection) and refuses to start when it cannot. Trove needs one per
// connection on each client port (the RESP port's maxclients starts at -c)
// plus a few of its own, so it raises the soft limit, and the hard one when
// allowed, toward 2 * -c + 64; it never lowers it, and fails with
// memcached's message only when not even -c descriptors are allowed.
int ApplyFileLimit(const Config& cfg) {
  rlimit cur{};
  if (::getrlimit(RLIMIT_NOFILE, &cur) != 0) {
    std::fprintf(stderr, "failed to getrlimit number of files\n");
    return kExitOsErr;
  }
  const rlim_t want = static_cast<rlim_t>(cfg.max_connections) * 2 + 64;
  if (cur.rlim_cur != RLIM_INFINITY && cur.rlim_cur < want) {
    rlimit next = cur;
    next.rlim_cur = want;
    if (next.rlim_max != RLIM_INFINITY && next.rlim_max < want) next.rlim_max = want;
    if (::setrlimit(RLIMIT_NOFILE, &next) != 0) {
      // Not allowed past the hard limit: as far as it goes.
      next.rlim_max = cur.rlim_max;
      next.rlim_cur = cur.rlim_max == RLIM_INFINITY ? want : std::min(want, cur.rlim_max);
      (void)::setrlimit(RLIMIT_NOFILE, &next);
    }
  }
  rlimit now{};
  if (::getrlimit(RLIMIT_NOFILE, &now) != 0 ||
      (now.rlim_cur != RLIM_INFINITY && now.rlim_cur < cfg.max_connections)) {
    std::fprintf(stderr,
                 "failed to set rlimit for open files. Try starting as root or requesting "
                 "smaller maxconns value.\n");
    return kExitOsErr;
  }
  return 0;
}

// -k: lock all memory, current and future (memcached only warns on failure).
void ApplyLockMemory(const Config& cfg) {
  if (cfg.lock_memory && ::mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    std::fprintf(stderr, "warning: -k invalid, mlockall() failed: %s\n", std::strerror(errno));
  }
}

int ApplyUser(const Config& cfg) {
  if (::getuid() != 0 && ::geteuid() != 0) return 0;  // -u only matters for root
  if (cfg.user.empty()) {
    std::fprintf(stderr, "must add '-u root' to start as root\n");  // memcached 1.6.45's words
    return trove::server::kExitUsage;
  }
  passwd* pw = ::getpwnam(cfg.user.c_str());
  if (pw == nullptr) {
    std::fprintf(stderr, "can't find the user %s to switch to\n", cfg.user.c_str());
    return kExitNoUser;
  }
  if (pw->pw_uid == 0) return 0;  // -u root: nothing to drop
  if (::setgroups(0, nullptr) != 0 && cfg.verbose > 0) {
    std::perror("setgroups");  // not fatal, as memcached
  }
  if (::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0) {
    std::fprintf(stderr, "failed to assume identity of user %s\n", cfg.user.c_str());
    return kExitOsErr;
  }
  return 0;
}

bool WritePidFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "Could not open the pid file %s for writing\n", path.c_str());
    return false;
  }
  std::fprintf(f, "%ld\n", static_cast<long>(::getpid()));
  return std::fclose(f) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  auto parsed = trove::server::ParseArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed.status().message()).c_str());
    return trove::server::kExitUsage;
  }
  const Config cfg = std::move(parsed).value();
  switch (cfg.action) {
    case Config::Action::kHelp:
      std::fputs(trove::server::HelpText().c_str(), stdout);
      return 0;
    case Config::Action::kVersion:
      std::printf("memcached %s\n", trove::server::kVersion);
      return 0;
    case Config::Action::kLicense:
      std::printf("trove %s: a memcached-compatible cache server. Written from scratch; "
                  "no memcached or libevent code is included.\n",
                  trove::server::kVersion);
      return 0;
    case Config::Action::kRun:
      break;
  }
  if (cfg.verbose >= 2) {
    for (const std::string& w : cfg.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
  if (int rc = ApplyCoreLimit(cfg); rc != 0) return rc;
  if (int rc = ApplyFileLimit(cfg); rc != 0) return rc;  // before -u gives up root
  if (int rc = ApplyUser(cfg); rc != 0) return rc;
  ApplyLockMemory(cfg);
  if (cfg.daemonize) {
    // Before any thread exists. The working directory is kept so relative
    // -P / --port-file paths mean what they meant on the command line.
    if (::daemon(1, cfg.verbose > 0 ? 1 : 0) != 0) {
      std::perror("failed to daemon() in order to daemonize");
      return kExitOsErr;
    }
  }
  trove::server::Server::BlockSignals();
  auto server = trove::server::Server::Create(cfg);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", std::string(server.status().message()).c_str());
    // A certificate or key that does not load is bad usage, as in memcached.
    if (server.status().code() == trove::StatusCode::kFailedPrecondition) return trove::server::kExitUsage;
    return kExitOsErr;
  }
  if (!cfg.pid_file.empty() && !WritePidFile(cfg.pid_file)) return kExitOsErr;
  trove::Status st = server.value()->Start();
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    if (!cfg.pid_file.empty()) ::unlink(cfg.pid_file.c_str());
    return kExitOsErr;
  }
  if (cfg.verbose > 0) {
    std::fprintf(stderr, "trove %s: memcache port %d, resp port %d, %d threads\n",
                 trove::server::kVersion, server.value()->memcache_port(),
                 server.value()->resp_port(), cfg.num_threads);
  }
  server.value()->WaitForShutdown();
  int rc = 0;
  if (server.value()->graceful_stop() && !cfg.memory_file.empty()) {
    trove::Status saved = server.value()->SaveForRestart();
    if (!saved.ok()) {
      std::fprintf(stderr, "[restart] failed to save metadata: %s\n",
                   std::string(saved.message()).c_str());
      rc = kExitOsErr;
    }
  }
  server.value()->Shutdown();
  if (!cfg.pid_file.empty()) ::unlink(cfg.pid_file.c_str());
  return rc;
}
