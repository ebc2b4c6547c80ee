// RespWriter implementation; runs on the connection's worker.
#include "protocol/resp/core/resp_writer.h"

#include <sys/uio.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/str_append.h"
#include "protocol/item_output.h"

namespace trove::resp {

void RespWriter::Header(char c, size_t n) {
  char* p = out_->Reserve(24);
  char* s = p;
  *p++ = c;
  p = FormatU64(p, n);
  *p++ = '\r';
  *p++ = '\n';
  out_->Commit(static_cast<size_t>(p - s));
}

void RespWriter::OneLine(char c, std::string_view text) {
  std::string line;
  line.reserve(text.size() + 3);
  line.push_back(c);
  for (char t : text) line.push_back(t == '\r' || t == '\n' ? ' ' : t);
  line += "\r\n";
  out_->Append(line);
}

void RespWriter::Simple(std::string_view s) { OneLine('+', s); }

void RespWriter::Error(std::string_view msg) {
  ++errors_;
  if (sink_ != nullptr) sink_->CountError(msg);
  OneLine('-', msg);
}

void RespWriter::ErrorCounted(std::string_view msg) {
  ++errors_;
  OneLine('-', msg);
}

void RespWriter::Integer(int64_t v) {
  char* p = out_->Reserve(24);
  char* s = p;
  *p++ = ':';
  p = FormatI64(p, v);
  *p++ = '\r';
  *p++ = '\n';
  out_->Commit(static_cast<size_t>(p - s));
}

void RespWriter::Bulk(std::string_view s) {
  Header('$', s.size());
  if (s.size() <= 4096) {
    char* p = out_->Reserve(s.size() + 2);
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\r';
    p[s.size() + 1] = '\n';
    out_->Commit(s.size() + 2);
  } else {
    out_->Append(s);
    out_->Append("\r\n", 2);
  }
}

void RespWriter::BulkItem(engine::ItemRef item) {
  Header('$', item.value_length());
  protocol::AppendItemValue(out_, std::move(item), /*with_crlf=*/true);
}

void RespWriter::BulkShared(std::string_view s, net::Releaser rel) {
  Header('$', s.size());
  iovec span{const_cast<char*>(s.data()), s.size()};
  out_->AppendExternal(&span, 1, rel);
  out_->Append("\r\n", 2);
}

void RespWriter::Null() {
  if (proto_ == 3)
    out_->Append("_\r\n", 3);
  else
    out_->Append("$-1\r\n", 5);
}

void RespWriter::NullArray() {
  if (proto_ == 3)
    out_->Append("_\r\n", 3);
  else
    out_->Append("*-1\r\n", 5);
}

void RespWriter::ArrayHeader(size_t n) { Header('*', n); }
void RespWriter::MapHeader(size_t pairs) {
  if (proto_ == 3)
    Header('%', pairs);
  else
    Header('*', pairs * 2);
}
void RespWriter::SetHeader(size_t n) { Header(proto_ == 3 ? '~' : '*', n); }
void RespWriter::PushHeader(size_t n) { Header(proto_ == 3 ? '>' : '*', n); }

std::string FormatDouble(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (std::isnan(d)) return "nan";
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%.17g", d);
  return std::string(buf, static_cast<size_t>(n));
}

std::string FormatLongDouble(long double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[128];
  int n = std::snprintf(buf, sizeof buf, "%.17Lf", d);
  std::string s(buf, static_cast<size_t>(n));
  // Redis's humanfriendly form: fixed point, trailing zeros and dot removed.
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

void RespWriter::Double(double d) {
  if (proto_ == 3) {
    std::string s = ",";
    s += FormatDouble(d);
    s += "\r\n";
    out_->Append(s);
  } else {
    Bulk(FormatDouble(d));
  }
}

void RespWriter::HumanDouble(long double d) {
  if (proto_ == 3) {
    std::string s = ",";
    s += FormatLongDouble(d);
    s += "\r\n";
    out_->Append(s);
  } else {
    Bulk(FormatLongDouble(d));
  }
}

void RespWriter::Bool(bool b) {
  if (proto_ == 3)
    out_->Append(b ? "#t\r\n" : "#f\r\n", 4);
  else
    Integer(b ? 1 : 0);
}

void RespWriter::Verbatim(std::string_view s, std::string_view fmt) {
  if (proto_ != 3) {
    Bulk(s);
    return;
  }
  Header('=', s.size() + 4);
  std::string body(fmt.substr(0, 3));
  body.push_back(':');
  body.append(s);
  body += "\r\n";
  out_->Append(body);
}

void RespWriter::BigNumber(std::string_view digits) {
  if (proto_ != 3) {
    Bulk(digits);
    return;
  }
  std::string s = "(";
  s.append(digits);
  s += "\r\n";
  out_->Append(s);
}

void RespWriter::BulkArray(const std::string_view* items, size_t n) {
  ArrayHeader(n);
  for (size_t i = 0; i < n; ++i) Bulk(items[i]);
}

}  // namespace trove::resp
