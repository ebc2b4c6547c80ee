// libFuzzer target: the proxy's request parser (memcached's process_request
// rules), the request edits routes make (token and flag rendering,
// appending), the bytes sent to a backend, and router lookups, on arbitrary
// input. Checks that a request object always stays parseable and in bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proxy/request.h"
#include "proxy/router.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// The request object's invariants.
void CheckRequest(const trove::proxy::RequestUd& r) {
  Check(r.line_len + r.eol_len <= r.bytes.size());
  Check(r.info.key_off + r.info.key_len <= r.line_len);
  trove::proxy::ReqInfo again;
  const std::string_view line = r.line();
  Check(trove::proxy::ParseRequest(line, line.size() + r.eol_len, &again) == 0);
  Check(again.cmd == r.info.cmd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trove::proxy;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first line is the request; what follows drives the edits.
  const size_t nl = in.find('\n');
  const std::string_view line = in.substr(0, nl == std::string_view::npos ? in.size() : nl);
  const std::string_view ops = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  ReqInfo info;
  const int st = ParseRequest(line, line.size() + 2, &info);
  Check(st == 0 || st == -1 || st == -2);
  // Router lookups take any key.
  RouterConf router;
  router.map["a"].any = 1;
  router.def = 2;
  for (RouterConf::Type t : {RouterConf::kShortSep, RouterConf::kLongSep, RouterConf::kAnchorSmall,
                             RouterConf::kAnchorBig, RouterConf::kCmdMap}) {
    router.type = t;
    router.lstop = "+#";
    router.lstart = "=?";
    const int ref = router.Route(line, info.cmd);
    Check(ref == 1 || ref == 2 || ref == -2);  // LUA_NOREF
  }
  if (st != 0) return 0;
  Check(info.key_off + info.key_len <= line.size());
  RequestUd r;
  std::string bytes(line);
  bytes += "\r\n";
  if (info.has_value && info.vlen < 4096) bytes.append(info.vlen, 'v').append("\r\n");
  r.Assign(bytes, line.size(), 2, info, 0);
  std::string out;
  for (size_t i = 0; i + 2 < ops.size(); i += 3) {
    const char op = ops[i];
    const char flag = ops[i + 1];
    const size_t n = static_cast<unsigned char>(ops[i + 2]) % 8;
    const std::string tok(ops.substr(i + 3, n));
    const size_t idx = static_cast<unsigned char>(flag) % 8;
    switch (op % 5) {
      case 0: (void)r.Render(idx, flag >= 'A' && flag <= 'z' ? flag : 0, tok); break;
      case 1: (void)r.Append(flag >= 'A' && flag <= 'z' ? flag : 0, tok); break;
      case 2: Check(r.Token(idx).size() <= r.line_len); break;
      case 3: {
        const size_t fi = r.FlagIndex(flag);
        Check(fi == 0 || r.Token(fi).size() >= 1);
        break;
      }
      default:
        BackendBytes(r, &out);
        Check(out.size() == r.bytes.size());
        break;
    }
    i += n;
    CheckRequest(r);
  }
  return 0;
}
