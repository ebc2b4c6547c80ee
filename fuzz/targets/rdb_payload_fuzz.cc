// libFuzzer target: the RDB payload reader of FUNCTION RESTORE
// (protocol/resp/types/rdb_codec.h) and the LZF decompressor under it
// (common/lzf.h), on untrusted bytes.
// Input: byte 0 chooses the mode: even, the rest is a whole payload (footer
// checked, then read as opcodes and strings as FUNCTION RESTORE reads it);
// odd, bytes 1-2 are an expected length and the rest an LZF stream.
// Checks: no read outside the input (ASan), no crash, decompression never
// returns more than the expected length, and a string written by
// AppendRdbString reads back equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/lzf.h"
#include "protocol/resp/types/rdb_codec.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void ReadPayload(std::string_view payload) {
  std::string_view body;
  if (!trove::resp::StripRdbFooter(payload, &body)) body = payload;  // read it anyway
  trove::resp::RdbReader in(body);
  while (!in.done()) {
    uint8_t type;
    if (!in.ReadByte(&type)) return;
    std::string s;
    if (!in.ReadString(&s)) return;
    // Round trip: what Trove writes for this string reads back the same.
    std::string out;
    trove::resp::AppendRdbString(&out, s);
    trove::resp::RdbReader again(out);
    std::string back;
    Check(again.ReadString(&back) && back == s && again.done());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    ReadPayload(in);
    return 0;
  }
  if (in.size() < 2) return 0;
  const size_t expected = static_cast<uint8_t>(in[0]) | (static_cast<size_t>(static_cast<uint8_t>(in[1])) << 8);
  std::string out;
  if (trove::LzfDecompress(in.substr(2), expected, &out)) Check(out.size() == expected);
  Check(out.size() <= expected);
  return 0;
}
