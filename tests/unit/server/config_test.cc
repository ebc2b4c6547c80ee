#include "server/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace trove::server {
namespace {

Result<Config> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "trove");
  return ParseArgs(args);
}

Config Ok(std::vector<std::string> args) {
  auto r = Parse(args);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : Config{};
}

std::string Err(std::vector<std::string> args) {
  auto r = Parse(args);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string("<accepted>") : std::string(r.status().message());
}

TEST(ConfigTest, DefaultsAreMemcached) {
  Config c = Ok({});
  EXPECT_EQ(c.port, 11211);
  EXPECT_EQ(c.udp_port, 0);
  EXPECT_EQ(c.resp_port, 6379);
  EXPECT_EQ(c.num_threads, 4);
  EXPECT_EQ(c.max_connections, 1024u);
  EXPECT_EQ(c.reqs_per_event, 20);
  EXPECT_EQ(c.backlog, 1024);
  EXPECT_EQ(c.mem_limit, 64ull << 20);
  EXPECT_EQ(c.item_size_max, 1u << 20);
  EXPECT_EQ(c.slab_chunk_max, 512u * 1024);
  EXPECT_DOUBLE_EQ(c.factor, 1.25);
  EXPECT_EQ(c.chunk_size, 48u);
  EXPECT_EQ(c.unix_mask, 0700);
  EXPECT_TRUE(c.use_cas);
  EXPECT_TRUE(c.evict_to_free);
  EXPECT_FALSE(c.enable_shutdown);
  EXPECT_EQ(c.idle_timeout_s, 0);
  EXPECT_EQ(c.action, Config::Action::kRun);
}

TEST(ConfigTest, ShortOptionsWithSeparateAndAttachedValues) {
  Config c = Ok({"-p", "12000", "-t8", "-c", "50", "-m", "128", "-R", "5", "-b", "64", "-M",
                 "-C", "-A", "-f", "1.5", "-n", "96", "-P", "/tmp/p.pid", "-u", "nobody", "-d",
                 "-L", "-k", "-r", "-F", "-X", "-B", "ascii", "-U", "0", "-a", "755"});
  EXPECT_EQ(c.port, 12000);
  EXPECT_EQ(c.num_threads, 8);
  EXPECT_EQ(c.max_connections, 50u);
  EXPECT_EQ(c.mem_limit, 128ull << 20);
  EXPECT_EQ(c.reqs_per_event, 5);
  EXPECT_EQ(c.backlog, 64);
  EXPECT_FALSE(c.evict_to_free);
  EXPECT_FALSE(c.use_cas);
  EXPECT_TRUE(c.enable_shutdown);
  EXPECT_DOUBLE_EQ(c.factor, 1.5);
  EXPECT_EQ(c.chunk_size, 96u);
  EXPECT_EQ(c.pid_file, "/tmp/p.pid");
  EXPECT_EQ(c.user, "nobody");
  EXPECT_TRUE(c.daemonize);
  EXPECT_TRUE(c.prealloc);
  EXPECT_TRUE(c.lock_memory);
  EXPECT_TRUE(c.coredumps);
  EXPECT_TRUE(c.disable_flush_all);
  EXPECT_TRUE(c.disable_dumping);
  EXPECT_EQ(c.protocol, "ascii");
  EXPECT_EQ(c.unix_mask, 0755);
}

TEST(ConfigTest, LongOptions) {
  Config c = Ok({"--port=12001", "--listen=127.0.0.1", "--memory-limit=32", "--threads=2",
                 "--max-connections=77", "--enable-shutdown", "--disable-cas",
                 "--max-item-size=2m", "--max-reqs-per-event", "7", "--listen-backlog=9",
                 "--protocol=auto", "--disable-evictions", "--pidfile=/x", "--user=u",
                 "--slab-growth-factor=2", "--slab-min-size=64", "--resp-port=6390",
                 "--port-file=/tmp/pf", "--unix-mask=711", "--extended=idle_timeout=9"});
  EXPECT_EQ(c.port, 12001);
  EXPECT_EQ(c.listen, (std::vector<std::string>{"127.0.0.1"}));
  EXPECT_EQ(c.mem_limit, 32ull << 20);
  EXPECT_EQ(c.num_threads, 2);
  EXPECT_EQ(c.max_connections, 77u);
  EXPECT_TRUE(c.enable_shutdown);
  EXPECT_FALSE(c.use_cas);
  EXPECT_EQ(c.item_size_max, 2u << 20);
  EXPECT_EQ(c.reqs_per_event, 7);
  EXPECT_EQ(c.backlog, 9);
  EXPECT_FALSE(c.evict_to_free);
  EXPECT_EQ(c.pid_file, "/x");
  EXPECT_EQ(c.user, "u");
  EXPECT_DOUBLE_EQ(c.factor, 2.0);
  EXPECT_EQ(c.chunk_size, 64u);
  EXPECT_EQ(c.resp_port, 6390);
  EXPECT_EQ(c.port_file, "/tmp/pf");
  EXPECT_EQ(c.unix_mask, 0711);
  EXPECT_EQ(c.idle_timeout_s, 9);
  EXPECT_EQ(Ok({"--conn-limit=5"}).max_connections, 5u);
  EXPECT_EQ(Ok({"--udp-port=0"}).udp_port, 0);
  EXPECT_EQ(Ok({"--unix-socket=/tmp/s"}).unix_socket, "/tmp/s");
}

TEST(ConfigTest, VerbosityCounts) {
  EXPECT_EQ(Ok({"-v"}).verbose, 1);
  EXPECT_EQ(Ok({"-vv"}).verbose, 2);
  EXPECT_EQ(Ok({"-vvv"}).verbose, 3);
  EXPECT_EQ(Ok({"-v", "-v"}).verbose, 2);
  EXPECT_EQ(Ok({"--verbose"}).verbose, 1);
}

TEST(ConfigTest, HelpVersionLicenseSkipValidation) {
  EXPECT_EQ(Ok({"-h"}).action, Config::Action::kHelp);
  EXPECT_EQ(Ok({"--help"}).action, Config::Action::kHelp);
  EXPECT_EQ(Ok({"-V"}).action, Config::Action::kVersion);
  EXPECT_EQ(Ok({"--version"}).action, Config::Action::kVersion);
  EXPECT_EQ(Ok({"-i"}).action, Config::Action::kLicense);
  EXPECT_NE(HelpText().find("--resp-port"), std::string::npos);
  EXPECT_NE(HelpText().find(kVersion), std::string::npos);
}

TEST(ConfigTest, ListenAddressesCommaListAndRepeats) {
  Config c = Ok({"-l", "127.0.0.1,[::1]:11300", "-l", "10.1.2.3:5"});
  EXPECT_EQ(c.listen, (std::vector<std::string>{"127.0.0.1", "[::1]:11300", "10.1.2.3:5"}));
  EXPECT_NE(Err({"-l", "[::1"}).find("invalid listen address"), std::string::npos);
  EXPECT_NE(Err({"-l", "1.2.3.4:99999"}).find("invalid listen address"), std::string::npos);
}

TEST(ConfigTest, ItemSizeSuffixesAndMemcachedBounds) {
  EXPECT_EQ(Ok({"-I", "2m"}).item_size_max, 2u << 20);
  EXPECT_EQ(Ok({"-I", "1024k"}).item_size_max, 1u << 20);
  EXPECT_EQ(Ok({"-I", "1048576"}).item_size_max, 1u << 20);
  EXPECT_EQ(Ok({"-m", "4096", "-I", "1g"}).item_size_max, 1u << 30);
  EXPECT_EQ(Err({"-I", "100"}), "Item max size cannot be less than 1024 bytes.");
  EXPECT_EQ(Err({"-m", "4096", "-I", "1025m"}),
            "Cannot set item size limit higher than a gigabyte.");
  EXPECT_EQ(Err({"-I", "40m"}), "Cannot set item size limit higher than 1/2 of memory max.");
  EXPECT_NE(Err({"-I", "1k"}).find("cannot be larger than -I"), std::string::npos);
  EXPECT_NE(Err({"-I", "1000k"}).find("evenly divisible"), std::string::npos);
  EXPECT_NE(Err({"-I", "abc"}).find("invalid max item size"), std::string::npos);
  // A smaller chunk max makes small -I legal, as in memcached.
  // slab_chunk_max is in kilobytes (1..1024), as memcached 1.6 takes it.
  Config c = Ok({"-I", "1k", "-o", "slab_chunk_max=1"});
  EXPECT_EQ(c.slab_chunk_max, 1024u);
  EXPECT_EQ(Ok({"-o", "slab_chunk_max=16"}).slab_chunk_max, 16u * 1024);
  EXPECT_EQ(Err({"-o", "slab_chunk_max=2048"}), "slab_chunk_max must be specified in kilobytes.");
  EXPECT_EQ(Err({"-o", "slab_chunk_max=0"}), "slab_chunk_max must be >= 0");
  EXPECT_NE(Err({"-o", "slab_chunk_max=x"}).find("could not parse argument to slab_chunk_max"),
            std::string::npos);
  EXPECT_NE(Err({"-o", "slab_chunk_max=1000"}).find("evenly divisible"), std::string::npos);
}

TEST(ConfigTest, BadNumbersAreRejectedWithAReason) {
  EXPECT_NE(Err({"-p", "abc"}).find("invalid TCP port"), std::string::npos);
  EXPECT_NE(Err({"-p", "70000"}).find("invalid TCP port"), std::string::npos);
  EXPECT_EQ(Err({"-t", "0"}), "Number of threads must be greater than 0");
  EXPECT_NE(Err({"-t", "x"}).find("invalid number of threads"), std::string::npos);
  EXPECT_EQ(Err({"-c", "0"}), "Maximum connections must be greater than 0");
  EXPECT_EQ(Err({"-R", "0"}), "Number of requests per event must be greater than 0");
  EXPECT_EQ(Err({"-f", "0.5"}), "Factor must be greater than 1");
  EXPECT_EQ(Err({"-f", "1"}), "Factor must be greater than 1");
  EXPECT_EQ(Err({"-n", "0"}), "Chunk size must be greater than 0");
  EXPECT_NE(Err({"-m", "abc"}).find("invalid memory limit"), std::string::npos);
  EXPECT_NE(Err({"-m", "0"}).find("greater than 0"), std::string::npos);
  EXPECT_NE(Err({"-b", "x"}).find("invalid backlog"), std::string::npos);
  EXPECT_NE(Err({"-a", "999"}).find("octal"), std::string::npos);
  EXPECT_NE(Err({"-a", "1777"}).find("octal"), std::string::npos);
  EXPECT_NE(Err({"--resp-port=-1"}).find("invalid RESP port"), std::string::npos);
}

TEST(ConfigTest, AdminPort) {
  EXPECT_EQ(Ok({}).admin_port, -1);  // off by default
  Config c = Ok({"--admin-port", "7000"});
  EXPECT_EQ(c.admin_port, 7000);
  EXPECT_EQ(c.admin_bind, "127.0.0.1");
  EXPECT_EQ(Ok({"--admin-port=0", "--admin-bind=0.0.0.0"}).admin_bind, "0.0.0.0");
  EXPECT_NE(Err({"--admin-port=70000"}).find("invalid port for --admin-port"), std::string::npos);
  EXPECT_NE(HelpText().find("--admin-port"), std::string::npos);
}

TEST(ConfigTest, ProtectedMode) {
  EXPECT_TRUE(Ok({}).protected_mode);
  EXPECT_TRUE(Ok({}).ToRespOptions().protected_mode);
  EXPECT_FALSE(Ok({"--protected-mode", "no"}).protected_mode);
  EXPECT_FALSE(Ok({"--protected-mode=NO"}).ToRespOptions().protected_mode);
  EXPECT_TRUE(Ok({"--protected-mode", "Yes"}).protected_mode);
  EXPECT_EQ(Err({"--protected-mode", "maybe"}), "--protected-mode takes yes or no, not 'maybe'");
  EXPECT_NE(HelpText().find("--protected-mode"), std::string::npos);
}

TEST(ConfigTest, RespPortAskedForOrDefault) {
  // Only an asked-for RESP port makes a bind failure fatal (server.cc).
  ::unsetenv("TROVE_RESP_PORT");
  EXPECT_FALSE(Ok({}).resp_port_set);
  EXPECT_TRUE(Ok({"--resp-port", "7001"}).resp_port_set);
  ::setenv("TROVE_RESP_PORT", "7002", 1);
  Config c = Ok({});
  EXPECT_EQ(c.resp_port, 7002);
  EXPECT_TRUE(c.resp_port_set);
  ::unsetenv("TROVE_RESP_PORT");
}

TEST(ConfigTest, MemoryLimitAcceptsUnitSuffix) {
  EXPECT_EQ(Ok({"-m", "1g"}).mem_limit, 1ull << 30);
  EXPECT_EQ(Ok({"-m", "2048"}).mem_limit, 2048ull << 20);
}

TEST(ConfigTest, UnknownOptionsAndMissingArguments) {
  EXPECT_EQ(Err({"-j"}), "invalid option -- 'j'");
  EXPECT_EQ(Err({"--bogus"}), "unrecognized option '--bogus'");
  EXPECT_EQ(Err({"-p"}), "option requires an argument -- 'p'");
  EXPECT_NE(Err({"--port"}).find("requires an argument"), std::string::npos);
  EXPECT_NE(Err({"stray"}).find("unexpected argument 'stray'"), std::string::npos);
}

TEST(ConfigTest, ParsingTwiceStartsFresh) {
  EXPECT_EQ(Ok({"-p", "1"}).port, 1);
  EXPECT_EQ(Ok({"-t", "3"}).port, 11211);
  EXPECT_EQ(Err({"-j"}), "invalid option -- 'j'");
  EXPECT_EQ(Ok({"-t", "3"}).num_threads, 3);
}

TEST(ConfigTest, UdpAndBinaryAreRefusedClearly) {
  EXPECT_EQ(Ok({"-U", "0"}).udp_port, 0);
  EXPECT_EQ(Ok({"-U", "11211"}).udp_port, 11211);
  EXPECT_NE(Err({"-B", "binary"}).find("binary protocol is not supported"), std::string::npos);
  EXPECT_NE(Err({"-B", "foo"}).find("Invalid value for binding protocol: foo"),
            std::string::npos);
  EXPECT_EQ(Ok({"-B", "auto"}).protocol, "auto");
  EXPECT_NE(Err({"-S"}).find("SASL"), std::string::npos);
}

TEST(ConfigTest, TlsOptions) {
  Config c = Ok({"-Z", "-o", "ssl_chain_cert=/c.pem,ssl_key=/k.pem,ssl_verify_mode=3",
                 "-o", "ssl_ca_cert=/ca.pem,ssl_ciphers=HIGH,ssl_min_version=3,ssl_wbuf_size=64",
                 "-o", "ssl_session_cache,ssl_kernel_tls,ssl_keyformat=2,ssl_handshake_timeout=3"});
  EXPECT_TRUE(c.ssl_enabled);
  EXPECT_EQ(c.ssl.chain_cert, "/c.pem");
  EXPECT_EQ(c.ssl.key, "/k.pem");
  EXPECT_EQ(c.ssl.verify_mode, 3);
  EXPECT_EQ(c.ssl.ca_cert, "/ca.pem");
  EXPECT_EQ(c.ssl.ciphers, "HIGH");
  EXPECT_EQ(c.ssl.min_version, 3);
  EXPECT_EQ(c.ssl_wbuf_size, 64u * 1024);
  EXPECT_TRUE(c.ssl.session_cache);
  EXPECT_TRUE(c.ssl.kernel_tls);
  EXPECT_EQ(c.ssl.keyformat, 2);
  EXPECT_EQ(c.ssl_handshake_timeout_s, 3);
  EXPECT_EQ(c.ToNetOptions().tls_handshake_timeout_ms, 3000);
  EXPECT_EQ(c.ToNetOptions().tls_wbuf_size, 64u * 1024);
  // memcached's words for bad values.
  EXPECT_NE(Err({"-Z", "-o", "ssl_verify_mode=4"}).find("Invalid ssl_verify_mode. Use help"),
            std::string::npos);
  EXPECT_NE(Err({"-Z", "-o", "ssl_min_version=v"}).find("could not parse argument to ssl_min_version"),
            std::string::npos);
  EXPECT_NE(Err({"-Z", "-o", "ssl_chain_cert"}).find("Missing ssl_chain_cert argument"),
            std::string::npos);
  // Options that would do nothing are refused.
  EXPECT_NE(Err({"-o", "ssl_chain_cert=/x"}).find("need -Z"), std::string::npos);
  EXPECT_NE(Err({"-l", "btls:127.0.0.1"}).find("'btls' option is valid only when SSL is enabled"),
            std::string::npos);
  // Listener prefixes come first, before proto[] and the tag.
  ListenSpec spec;
  std::string err;
  ASSERT_TRUE(ParseListenSpec("mtls:proto[ascii]:tag_tools_:127.0.0.1:11212", &spec, &err));
  EXPECT_EQ(spec.tls, ListenSpec::Tls::kMutual);
  EXPECT_EQ(spec.proto, "ascii");
  EXPECT_EQ(spec.tag, "tools");
  EXPECT_EQ(spec.addr, "127.0.0.1:11212");
  ASSERT_TRUE(ParseListenSpec("notls:127.0.0.1", &spec, &err));
  EXPECT_EQ(spec.tls, ListenSpec::Tls::kNone);
  // Redis's --tls-* options are kept as given for the RESP side.
  c = Ok({"--tls-port", "6380", "--tls-cert-file", "/s.crt"});
  ASSERT_EQ(c.resp_tls.size(), 2u);
  EXPECT_EQ(c.resp_tls[0], (std::pair<std::string, std::string>{"tls-port", "6380"}));
  EXPECT_EQ(c.resp_tls[1], (std::pair<std::string, std::string>{"tls-cert-file", "/s.crt"}));
}

TEST(ConfigTest, MemoryFileReachesTheEngineAndIsListed) {
  EXPECT_TRUE(Ok({}).memory_file.empty());
  Config c = Ok({"-e", "/dev/shm/trove.mem"});
  EXPECT_EQ(c.memory_file, "/dev/shm/trove.mem");
  EXPECT_EQ(c.ToEngineOptions().memory_file, "/dev/shm/trove.mem");
  EXPECT_EQ(Ok({"--memory-file=/tmp/m"}).memory_file, "/tmp/m");
  EXPECT_NE(HelpText().find("-e, --memory-file=<file>"), std::string::npos);
}

TEST(ConfigTest, ExtendedOptionsReachTheEngine) {
  Config c = Ok({"-o",
                 "hashpower=20,no_lru_maintainer,no_lru_crawler,hot_lru_pct=10,warm_lru_pct=30,"
                 "hot_max_factor=0.5,warm_max_factor=3,slab_automove=2,"
                 "slab_automove_ratio=0.5,no_slab_reassign,idle_timeout=30,"
                 "lru_crawler_sleep=50,lru_crawler_tocrawl=9"});
  EXPECT_EQ(c.hashpower, 20);
  EXPECT_FALSE(c.lru_maintainer);
  EXPECT_FALSE(c.lru_crawler);
  EXPECT_EQ(c.hot_lru_pct, 10);
  EXPECT_EQ(c.warm_lru_pct, 30);
  EXPECT_DOUBLE_EQ(c.hot_max_factor, 0.5);
  EXPECT_DOUBLE_EQ(c.warm_max_factor, 3.0);
  EXPECT_EQ(c.slab_automove, 2);
  EXPECT_DOUBLE_EQ(c.slab_automove_ratio, 0.5);
  EXPECT_FALSE(c.slab_reassign);
  EXPECT_EQ(c.idle_timeout_s, 30);
  EXPECT_EQ(c.hash_algorithm, "xxh64");
  EXPECT_NE(Err({"-o", "hash_algorithm=murmur3"}).find("always hashed with xxh64"),
            std::string::npos);
  EXPECT_EQ(c.lru_crawler_sleep, 50u);
  EXPECT_EQ(c.lru_crawler_tocrawl, 9u);
  engine::EngineOptions e = c.ToEngineOptions();
  EXPECT_EQ(e.hashpower_init, 20);
  EXPECT_FALSE(e.lru_maintainer);
  EXPECT_FALSE(e.lru_crawler);
  EXPECT_EQ(e.hot_lru_pct, 10);
  EXPECT_EQ(e.slab_automove, 2);
  EXPECT_FALSE(e.slab_reassign);
}

TEST(ConfigTest, TempLruNames) {
  Config c = Ok({"-o", "temporary_ttl=30"});
  EXPECT_TRUE(c.temp_lru);
  EXPECT_EQ(c.temp_ttl, 30u);
  EXPECT_TRUE(Ok({"-o", "temp_lru"}).temp_lru);
  EXPECT_EQ(Ok({"-o", "temp_ttl=5"}).temp_ttl, 5u);
  EXPECT_NE(Err({"-o", "no_lru_maintainer,temp_lru"}).find("lru_maintainer"),
            std::string::npos);
}

TEST(ConfigTest, ExtendedOptionValueChecks) {
  EXPECT_EQ(Err({"-o", "bogus_opt"}), "Illegal suboption \"bogus_opt\"");
  EXPECT_EQ(Err({"-o", "hot_lru_pct=90"}), "hot_lru_pct must be > 1 and < 80");
  EXPECT_EQ(Err({"-o", "warm_lru_pct=1"}), "warm_lru_pct must be > 1 and < 80");
  EXPECT_EQ(Err({"-o", "hot_lru_pct=50,warm_lru_pct=40"}),
            "hot_lru_pct + warm_lru_pct cannot be more than 80% combined");
  EXPECT_EQ(Err({"-o", "hot_max_factor=0"}), "hot_max_factor must be > 0");
  EXPECT_EQ(Err({"-o", "slab_automove=5"}), "slab_automove must be between 0 and 2");
  EXPECT_EQ(Err({"-o", "slab_automove_ratio=2"}), "slab_automove_ratio must be > 0 and < 1");
  EXPECT_EQ(Err({"-o", "hash_algorithm=foo"}),
            "Unknown hash_algorithm option (jenkins, murmur3, xxh3)");
  EXPECT_EQ(Err({"-o", "hashpower=70"}), "Initial hashtable multiplier of 70 is too high");
  EXPECT_EQ(Err({"-o", "hashpower=5"}), "Initial hashtable multiplier of 5 is too low");
  EXPECT_EQ(Err({"-o", "tail_repair_time=5"}),
            "Cannot set tail_repair_time to less than 10 seconds");
  EXPECT_EQ(Err({"-o", "lru_crawler_sleep=2000000"}),
            "LRU crawler sleep must be between 0 and 1 second");
  EXPECT_EQ(Err({"-o", "lru_crawler_tocrawl=x"}),
            "lru_crawler_tocrawl takes a numeric 32bit value");
  EXPECT_NE(Err({"-o", "idle_timeout=abc"}).find("could not parse"), std::string::npos);
  EXPECT_NE(Err({"-o", "idle_timeout"}).find("Missing idle_timeout"), std::string::npos);
  EXPECT_NE(Err({"-o", "hashpower"}).find("Missing hashpower"), std::string::npos);
  EXPECT_NE(Err({"-o", "worker_logbuf_size=x"}).find("could not parse"), std::string::npos);
}

TEST(ConfigTest, ProxyOptionsAndTaggedListeners) {
  Config c = Ok({"-o", "proxy_config=/a.lua:/b.lua,proxy_arg=hello", "-l", "127.0.0.1",
                 "-l", "tag_b_:127.0.0.1:12052", "-l", "tag[cccc]:127.0.0.1:12053"});
  EXPECT_EQ(c.proxy_config, "/a.lua:/b.lua");
  EXPECT_EQ(c.proxy_arg, "hello");
  EXPECT_TRUE(c.proxy_arg_set);
  ASSERT_EQ(c.listen.size(), 3u);  // several -l accumulate
  ListenSpec s;
  std::string err;
  ASSERT_TRUE(ParseListenSpec("tag_b_:127.0.0.1:12052", &s, &err));
  EXPECT_EQ(s.tag, "b");
  EXPECT_EQ(s.addr, "127.0.0.1:12052");
  ASSERT_TRUE(ParseListenSpec("proto[proxy]:tag[cccc]:[::1]:5", &s, &err));
  EXPECT_EQ(s.proto, "proxy");
  EXPECT_EQ(s.tag, "cccc");
  EXPECT_EQ(s.addr, "[::1]:5");
  ASSERT_TRUE(ParseListenSpec("127.0.0.1", &s, &err));
  EXPECT_EQ(s.tag, "");
  EXPECT_FALSE(ParseListenSpec("tag_toolongtag_:127.0.0.1", &s, &err));
  EXPECT_NE(err.find("between 1 and 8"), std::string::npos);
  EXPECT_NE(Err({"-l", "proto[binary]:127.0.0.1"}).find("only ascii and proxy"), std::string::npos);
}

TEST(ConfigTest, OptionsForFeaturesTroveLacksAreRefused) {
  // Nothing is accepted and ignored: each names what Trove lacks.
  EXPECT_NE(Err({"-o", "ext_path=/tmp/x:1G"}).find("extstore is not supported"), std::string::npos);
  EXPECT_NE(Err({"-o", "ext_threads=2"}).find("extstore is not supported"), std::string::npos);
  EXPECT_NE(Err({"-o", "proxy_uring"}).find("not supported by Trove's proxy"), std::string::npos);
  for (const char* o : {"track_sizes", "no_hashexpand", "slab_sizes=100-200", "num_napi_ids=2",
                        "drop_privileges", "meta_response_old", "sock_cookie_id=1"}) {
    EXPECT_NE(Err({"-o", o}).find("is not supported by Trove"), std::string::npos) << o;
  }
  EXPECT_NE(Err({"-o", "tail_repair_time=60"}).find("not supported"), std::string::npos);
  EXPECT_EQ(Ok({"-o", "tail_repair_time=0"}).tail_repair_time, 0);
  EXPECT_NE(Err({"-N", "4"}).find("not supported"), std::string::npos);
  // memcached's own no-ops stay accepted, with no warning.
  Config c = Ok({"-o", "inline_ascii_resp,no_inline_ascii_resp,no_drop_privileges,modern,"
                       "maxconns_fast,worker_logbuf_size=64"});
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.maxconns_fast);
  EXPECT_FALSE(Ok({"-o", "no_maxconns_fast"}).maxconns_fast);
}

TEST(ConfigTest, NoModernRestoresOldDefaults) {
  Config c = Ok({"-o", "no_modern"});
  EXPECT_FALSE(c.slab_reassign);
  EXPECT_EQ(c.slab_automove, 0);
  EXPECT_FALSE(c.lru_maintainer);
  EXPECT_FALSE(c.lru_segmented);
  EXPECT_TRUE(Ok({"-o", "modern"}).lru_segmented);
  EXPECT_EQ(c.slab_chunk_max, 1u << 20);
}

TEST(ConfigTest, PrefixDelimiterTurnsDetailOn) {
  Config c = Ok({"-D", "/"});
  EXPECT_EQ(c.prefix_delimiter, '/');
  EXPECT_TRUE(c.detail_enabled);
  EXPECT_FALSE(Parse({"-D", "ab"}).ok());
}

TEST(ConfigTest, BuildsSubsystemOptions) {
  Config c = Ok({"-t", "2", "-c", "9", "-R", "3", "-C", "-I", "2m", "-o", "idle_timeout=4",
                 "-m", "100", "-M", "-f", "1.1", "-n", "32", "-L"});
  net::NetServerOptions n = c.ToNetOptions();
  EXPECT_EQ(n.num_workers, 2);
  EXPECT_EQ(n.max_connections, 9u);
  EXPECT_EQ(n.idle_timeout_s, 4);
  memcache::ProtocolOptions p = c.ToProtocolOptions();
  EXPECT_EQ(p.reqs_per_event, 3);
  EXPECT_FALSE(p.cas_enabled);
  EXPECT_EQ(p.item_size_max, 2u << 20);
  EXPECT_EQ(p.version, kVersion);
  engine::EngineOptions e = c.ToEngineOptions();
  EXPECT_EQ(e.mem_limit, 100ull << 20);
  EXPECT_EQ(e.item_size_max, 2u << 20);
  EXPECT_FALSE(e.evict_to_free);
  EXPECT_FALSE(e.use_cas);
  EXPECT_DOUBLE_EQ(e.factor, 1.1);
  EXPECT_EQ(e.chunk_size_min, 32u);
  EXPECT_TRUE(e.prealloc);
  EXPECT_EQ(e.slab_chunk_max, 512u * 1024);
}

}  // namespace
TEST(ConfigTest, TroveRespPortEnvironmentSetsTheDefault) {
  ::setenv("TROVE_RESP_PORT", "0", 1);
  EXPECT_EQ(Ok({}).resp_port, 0);
  EXPECT_EQ(Ok({"--resp-port", "7000"}).resp_port, 7000);  // the flag still wins
  ::setenv("TROVE_RESP_PORT", "x", 1);
  EXPECT_NE(Err({}).find("invalid TROVE_RESP_PORT"), std::string::npos);
  ::unsetenv("TROVE_RESP_PORT");
  EXPECT_EQ(Ok({}).resp_port, 6379);
}

}  // namespace trove::server
