// libFuzzer target: RESTORE's payload reader (protocol/resp/types/
// rdb_objects.h) and the packed blobs under it (rdb_packed.h) on untrusted
// bytes. Input: a payload body; the footer is appended here (version 10,
// the right checksum) so that the fuzzer reaches the body readers.
// Checks: no read outside the input (ASan), no crash, and a value that
// loads dumps again to a payload that loads to the same size and type (and,
// for a hash, the same field TTLs).
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

bool SameFieldTtls(const trove::resp::RdbValue& a, const trove::resp::RdbValue& b) {
  if (a.type != trove::engine::ValueType::kHash) return true;
  const auto& ha = static_cast<const trove::resp::HashValue&>(*a.coll);
  const auto& hb = static_cast<const trove::resp::HashValue&>(*b.coll);
  for (const auto& [f, v] : ha.Entries()) {
    if (ha.FieldExpiry(f) != hb.FieldExpiry(f)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trove::resp;  // NOLINT: one short target
  std::string payload(reinterpret_cast<const char*>(data), size);
  AppendRdbFooter(&payload);
  RdbValue v;
  if (LoadPayload(payload, &v) != RdbLoad::kOk) return 0;
  ApplyFieldTtls(&v);
  std::string again;
  if (v.coll != nullptr) {
    DumpCollection(v.type, *v.coll, &again);
  } else {
    DumpString(v.str, &again);
  }
  RdbValue back;
  Check(LoadPayload(again, &back) == RdbLoad::kOk);
  ApplyFieldTtls(&back);
  Check(back.type == v.type && SizeOf(back) == SizeOf(v) && SameFieldTtls(v, back));
  return 0;
}
