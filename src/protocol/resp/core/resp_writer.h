// RespWriter: formats RESP2/RESP3 replies into a connection's OutputBuffer.
// The only place error text reaches a client (CR/LF stripped). Runs on the
// connection's worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "net/io_buffer.h"

namespace trove::resp {

// Where a writer counts its error replies (INFO errorstats and
// total_error_replies): the worker's WorkerStats.
class ErrorSink {
 public:
  virtual void CountError(std::string_view msg) = 0;

 protected:
  ~ErrorSink() = default;
};

// Appends replies for one connection in its negotiated protocol (2 or 3).
// RESP3-only types degrade to their RESP2 forms as Redis does: map -> flat
// array, set -> array, double -> bulk string, null -> $-1 / *-1,
// boolean -> integer, verbatim -> bulk string, big number -> bulk string.
//
// Thread safety: none; owned by the connection's worker.
// Invariant: every reply written is one complete RESP value (aggregates are
// completed by the caller writing exactly the announced element count).
class RespWriter {
 public:
  explicit RespWriter(net::OutputBuffer* out, int proto = 2) : out_(out), proto_(proto) {}

  void set_proto(int p) { proto_ = p; }
  int proto() const { return proto_; }
  net::OutputBuffer* out() { return out_; }

  void Simple(std::string_view s);  // "+s"
  void Ok() { Simple("OK"); }
  // msg is "CODE text" ("ERR syntax error", "WRONGTYPE ..."); CR/LF become spaces.
  void Error(std::string_view msg);
  // An error reply already counted where it arose (a script passing on the
  // error of a command it called), or one that is never counted.
  void ErrorCounted(std::string_view msg);
  // Error replies written so far (a command failed if this moved while it ran).
  uint64_t errors() const { return errors_; }
  // Where Error counts; null (scratch writers): not counted.
  void set_error_sink(ErrorSink* s) { sink_ = s; }
  ErrorSink* error_sink() const { return sink_; }
  void Integer(int64_t v);
  void Bulk(std::string_view s);
  // Sends an item's value straight from item memory (the reference moves into
  // the output buffer and is dropped once written).
  void BulkItem(engine::ItemRef item);
  // A bulk string referenced in place, not copied: s must stay valid until
  // rel runs (once s is written or the output is dropped).
  void BulkShared(std::string_view s, net::Releaser rel);
  void Null();       // missing bulk: $-1 / _
  void NullArray();  // missing aggregate: *-1 / _
  void ArrayHeader(size_t n);
  void MapHeader(size_t pairs);  // %n / *2n
  void SetHeader(size_t n);      // ~n / *n
  void PushHeader(size_t n);     // >n / *n
  void Double(double d);         // ,d / bulk "%.17g" (Redis 7.0)
  // ,d / bulk d in FormatLongDouble's form: Redis 7.0's addReplyHumanLongDouble
  // (GEOPOS and WITHCOORD coordinates).
  void HumanDouble(long double d);
  void Bool(bool b);             // #t/#f / :1/:0
  void Verbatim(std::string_view s, std::string_view fmt = "txt");
  void BigNumber(std::string_view digits);
  // Several bulk strings as an array.
  void BulkArray(const std::string_view* items, size_t n);

 private:
  void Header(char c, size_t n);
  // "<c>text\r\n" with each CR or LF of text written as a space.
  void OneLine(char c, std::string_view text);
  net::OutputBuffer* out_;
  int proto_;
  uint64_t errors_ = 0;
  ErrorSink* sink_ = nullptr;
};

// Redis 7.0's reply form of a double ("%.17g", "inf", "-inf").
std::string FormatDouble(double d);
// Redis's long-double form for INCRBYFLOAT / HINCRBYFLOAT ("%.17Lg", trimmed).
std::string FormatLongDouble(long double d);

}  // namespace trove::resp
