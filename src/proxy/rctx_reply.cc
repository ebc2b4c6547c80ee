// What a finished route gives its client (noreply / quiet rules, the
// multiget END) and the proxyreqs log lines of the request engine (rctx.h).
#include <algorithm>
#include <string>

#include "proxy/runtime.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

constexpr char kBackendFailure[] = "SERVER_ERROR backend failure\r\n";
constexpr char kBadResponse[] = "SERVER_ERROR bad response\r\n";
constexpr std::string_view kEnd = "END\r\n";

// memcached's _set_noreply_mode: what the client of `req` must not see.
bool Quiet(const ReqInfo& req, const ResponseUd& r) {
  if (req.meta && req.HasFlag('q')) {
    const int code = r.code();
    return code == memcache::kCodeEnd || (r.cmd != kCmdMg && code == memcache::kCodeOk);
  }
  return req.noreply && r.ok();
}

}  // namespace

std::string_view ProxyWorker::Output(Rctx* rc, int idx) {
  lua_State* co = rc->co;
  std::string_view out = kBadResponse;
  if (auto* r = static_cast<ResponseUd*>(TestUd(co, idx, vm_ctx_.response_mt))) {
    if (Quiet(rc->req->info, *r)) return {};
    out = r->failed ? std::string_view(kBackendFailure) : std::string_view(r->bytes);
  } else if (lua_type(co, idx) == LUA_TSTRING) {
    size_t n = 0;
    const char* s = lua_tolstring(co, idx, &n);
    out = std::string_view(s, n);
  }
  // One key of a split multiget: the reply's END goes; one END follows the last key.
  if (rc->multiget && out.size() >= kEnd.size() && out.substr(out.size() - kEnd.size()) == kEnd) {
    out.remove_suffix(kEnd.size());
  }
  return out;
}

int ProxyWorker::TopCfd(const Rctx* rc) const {
  while (rc->is_child && rc->parent != nullptr) rc = rc->parent;
  return rc->cfd;
}

void ProxyWorker::LogBackendRequest(const BackendOp& op, const RequestUd& rq, const ResponseUd& res,
                                    uint8_t flags, int cfd) {
  const BackendOptions& o = op.log_spec->opts;
  ProxyShared* sh = rt_->shared();
  if (!sh->Watching(net::kLogProxyreqs)) return;
  const bool error = !res.ok();
  bool log = o.log_rate == 1 || (o.log_errors && error) ||
             (o.log_deadline_ms > 0 && res.elapsed_us > o.log_deadline_ms * 1000);
  if (!log && o.log_rate > 1) {
    sample_seed_ ^= sample_seed_ << 13;
    sample_seed_ ^= sample_seed_ >> 7;
    sample_seed_ ^= sample_seed_ << 17;
    log = sample_seed_ % static_cast<uint64_t>(o.log_rate) == 0;
  }
  if (!log) return;
  sh->Log(net::kLogProxyreqs,
          ProxyReqLine(rq, &res, flags, cfd, o.log_tag, op.log_spec->host, op.log_spec->port));
}

std::string ProxyReqLine(const RequestUd& rq, const ResponseUd* res, uint8_t flags, int cfd,
                         std::string_view detail, std::string_view host, std::string_view port) {
  // memcached's LOGGER_PROXY_REQ line.
  int type = 0, code = 0, status = 0;
  int64_t elapsed = 0;
  if (res != nullptr) {
    type = res->failed ? memcache::kTypeFail : res->parsed.type;
    code = res->code();
    status = res->ok() ? 0 : -1;
    elapsed = res->elapsed_us;
  }
  const char* cls = (flags & kResGood) ? "good" : (flags & kResOk) ? "ok" : "any";
  std::string body = "type=proxy_req elapsed=" + std::to_string(elapsed) +
                     " type=" + std::to_string(type) + " code=" + std::to_string(code) +
                     " status=" + std::to_string(status) + " res=" + cls +
                     " cfd=" + std::to_string(cfd) + " be=";
  body.append(host).append(":").append(port).append(" detail=").append(detail).append(" req=");
  const std::string_view line = rq.line();
  body.append(line.substr(0, std::min<size_t>(line.size(), 300)));
  return body;
}

}  // namespace trove::proxy
