// CollectionCodec: a collection's compact byte form (CollectionBase::Encode)
// behind one byte that says whether it had left the compact encoding, so
// OBJECT ENCODING reads the same after a warm restart. Main thread.
#include "protocol/resp/types/collection_codec.h"

#include <memory>
#include <string>
#include <type_traits>

#include "protocol/resp/types/collections.h"

namespace trove::resp {
namespace {

template <typename T>
std::unique_ptr<engine::HeapValue> DecodeAs(std::string_view bytes, bool was_compact) {
  auto v = std::make_unique<T>();
  if (!v->Decode(bytes)) return nullptr;
  // Thresholds of -1 push any value out of the compact encoding, which it
  // never re-enters (the past thresholds are not known here, and not needed).
  if constexpr (std::is_same_v<T, SetValue>) {
    if (!was_compact) v->CheckEncoding(-1, -1, -1);
  } else if constexpr (!std::is_same_v<T, ListValue>) {
    if (!was_compact) v->CheckEncoding(-1, -1);
  }
  return v;
}

class Codec final : public engine::HeapCodec {
 public:
  void Encode(engine::ValueType, const engine::HeapValue& v, std::string* out) const override {
    const auto& c = static_cast<const CollectionBase&>(v);
    std::string body;
    c.Encode(&body);
    out->push_back(c.compact() ? '\1' : '\0');
    out->append(body);
  }

  std::unique_ptr<engine::HeapValue> Decode(engine::ValueType type,
                                            std::string_view bytes) const override {
    if (bytes.empty()) return nullptr;
    const bool was_compact = bytes[0] == '\1';
    bytes.remove_prefix(1);
    switch (type) {
      case engine::ValueType::kList:
        return DecodeAs<ListValue>(bytes, was_compact);
      case engine::ValueType::kHash:
        return DecodeAs<HashValue>(bytes, was_compact);
      case engine::ValueType::kSet:
        return DecodeAs<SetValue>(bytes, was_compact);
      case engine::ValueType::kZset:
        return DecodeAs<ZsetValue>(bytes, was_compact);
      case engine::ValueType::kString:
        break;
    }
    return nullptr;
  }
};

}  // namespace

const engine::HeapCodec* CollectionCodec() {
  static const Codec codec;
  return &codec;
}

}  // namespace trove::resp
