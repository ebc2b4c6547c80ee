// libFuzzer target: RESTORE's payload reader (protocol/resp/types/
// rdb_objects.h) and the packed blobs under it (rdb_packed.h) on untrusted
// bytes. Input: a payload body; the footer is appended here (version 10,
// the right checksum) so that the fuzzer reaches the body readers.
// Checks: no read outside the input (ASan), no crash, and a value that
// loads dumps again to a payload that loads to the same size and type.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "protocol/resp/types/rdb_codec.h"
#include "protocol/resp/types/rdb_objects.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

size_t SizeOf(const trove::resp::RdbValue& v) {
  return v.coll != nullptr ? v.coll->size() : v.str.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trove::resp;  // NOLINT: one short target
  std::string payload(reinterpret_cast<const char*>(data), size);
  AppendRdbFooter(&payload);
  RdbValue v;
  if (LoadPayload(payload, &v) != RdbLoad::kOk) return 0;
  std::string again;
  if (v.coll != nullptr) {
    DumpCollection(v.type, *v.coll, &again);
  } else {
    DumpString(v.str, &again);
  }
  RdbValue back;
  Check(LoadPayload(again, &back) == RdbLoad::kOk);
  Check(back.type == v.type && SizeOf(back) == SizeOf(v));
  return 0;
}
