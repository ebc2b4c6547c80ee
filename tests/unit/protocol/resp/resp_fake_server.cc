// resp_fake_server: the RESP front over the fake engine, one thread per
// connection, for running the python RESP tests without the real server.
// Usage: resp_fake_server PORT_FILE  (binds 127.0.0.1:0, writes the port).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "net/io_buffer.h"
#include "protocol/resp/connection/resp_protocol.h"

using namespace trove;

namespace {
void Serve(net::ProtocolFactory* f, int fd, uint64_t id, int worker) {
  net::ConnInfoView v;
  v.id = id;
  v.peer = "127.0.0.1:0";
  auto h = f->Create(worker, v);
  std::string in;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    net::OutputBuffer out;
    size_t used = h->OnData(in.data(), in.size(), out);
    in.erase(0, used);
    while (!out.empty()) {
      if (out.Flush(fd) < 0) break;
    }
    if (h->WantsClose()) break;
  }
  close(fd);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT_FILE\n", argv[0]);
    return 2;
  }
  engine::EngineOptions o;
  auto e = engine::Engine::Create(o);
  auto engine = std::move(e.value());
  resp::RespOptions ro;
  auto factory = resp::NewRespFactory(engine.get(), nullptr, ro);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(ls, 128) != 0) {
    std::perror("bind/listen");
    return 1;
  }
  socklen_t len = sizeof a;
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  FILE* pf = std::fopen(argv[1], "w");
  std::fprintf(pf, "resp %d\n", ntohs(a.sin_port));
  std::fclose(pf);
  uint64_t id = 0;
  while (true) {
    int fd = accept(ls, nullptr, nullptr);
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ++id;
    std::thread(Serve, factory.get(), fd, id, static_cast<int>(id % 4)).detach();
  }
}
