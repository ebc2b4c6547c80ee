// ReplyWriter (see reply_writer.h).
#include "protocol/memcache/reply_writer.h"

#include <cstring>

#include "common/str_append.h"
#include "protocol/item_output.h"

namespace trove::memcache {

char* ReplyWriter::Sanitize(char* p, std::string_view s) {
  for (char c : s) *p++ = (c == '\r' || c == '\n') ? ' ' : c;
  return p;
}

void ReplyWriter::Word(std::string_view w) {
  if (quiet_) return;
  char* p = out_->Reserve(w.size() + 2);
  std::memcpy(p, w.data(), w.size());
  p[w.size()] = '\r';
  p[w.size() + 1] = '\n';
  out_->Commit(w.size() + 2);
}

void ReplyWriter::Error() { Word("ERROR"); }

void ReplyWriter::Prefixed(std::string_view prefix, std::string_view msg) {
  if (quiet_) return;
  // Error details are short; cap them so one Reserve always suffices.
  if (msg.size() > 1024) msg = msg.substr(0, 1024);
  char* start = out_->Reserve(prefix.size() + msg.size() + 2);
  char* p = start;
  if (!prefix.empty()) std::memcpy(p, prefix.data(), prefix.size());
  p = Sanitize(p + prefix.size(), msg);
  *p++ = '\r';
  *p++ = '\n';
  out_->Commit(static_cast<size_t>(p - start));
}

void ReplyWriter::Status(std::string_view text) { Prefixed({}, text); }
void ReplyWriter::ClientError(std::string_view msg) { Prefixed("CLIENT_ERROR ", msg); }
void ReplyWriter::ServerError(std::string_view msg) { Prefixed("SERVER_ERROR ", msg); }

void ReplyWriter::Stat(std::string_view name, std::string_view value) {
  if (quiet_) return;
  if (name.size() > 4096) name = name.substr(0, 4096);
  if (value.size() > 8192) value = value.substr(0, 8192);
  char* start = out_->Reserve(name.size() + value.size() + 8);
  char* p = start;
  std::memcpy(p, "STAT ", 5);
  p = Sanitize(p + 5, name);
  *p++ = ' ';
  p = Sanitize(p, value);
  *p++ = '\r';
  *p++ = '\n';
  out_->Commit(static_cast<size_t>(p - start));
}

void ReplyWriter::Stat(std::string_view name, uint64_t value) {
  char buf[20];
  Stat(name, std::string_view(buf, static_cast<size_t>(FormatU64(buf, value) - buf)));
}

void ReplyWriter::Number(uint64_t n) {
  if (quiet_) return;
  char* start = out_->Reserve(22);
  char* p = FormatU64(start, n);
  *p++ = '\r';
  *p++ = '\n';
  out_->Commit(static_cast<size_t>(p - start));
}

void ReplyWriter::Trusted(std::string_view s) {
  if (!quiet_) out_->Append(s);
}

void ReplyWriter::ItemValue(engine::ItemRef ref) {
  if (quiet_) return;  // ref drops its reference here
  protocol::AppendItemValue(out_, std::move(ref), /*with_crlf=*/true);
}

}  // namespace trove::memcache
