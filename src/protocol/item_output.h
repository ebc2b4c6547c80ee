// AppendItemValue: queues an item's value (and CRLF) on an output buffer by
// reference, for both protocols' reply writers. Runs on the worker thread.
#pragma once

#include <sys/uio.h>

#include "engine/engine.h"
#include "net/io_buffer.h"

namespace trove::protocol {

// Appends the value of `ref` (with the stored "\r\n" when with_crlf) and
// hands the reference to the buffer, which drops it once the bytes are sent.
// A chunked value may have more spans than one array holds: they go in
// batches, the reference riding on the last one. No allocation beyond the
// buffer's own entry list.
inline void AppendItemValue(net::OutputBuffer* out, engine::ItemRef ref, bool with_crlf) {
  constexpr int kBatch = 64;
  iovec spans[kBatch];
  net::Releaser rel{&engine::Engine::ReleaseRaw, ref.engine(), nullptr};
  // The common case asks the item once: fewer spans than the array holds.
  const int first = ref.ValueSpans(spans, kBatch, with_crlf);
  const size_t total = first < kBatch ? static_cast<size_t>(first) : ref.SpanCount(with_crlf);
  if (total <= static_cast<size_t>(kBatch)) {
    rel.obj = ref.Detach();
    out->AppendValue(spans, first, rel);  // may copy a small value and release at once
    return;
  }
  // Referenced throughout: the reference must outlive every batch's bytes.
  size_t done = 0;
  while (done < total) {
    const int n = ref.ValueSpans(spans, kBatch, with_crlf, done);
    done += static_cast<size_t>(n);
    if (done >= total || n == 0) {
      rel.obj = ref.Detach();
      out->AppendExternal(spans, n, rel);
      return;
    }
    out->AppendExternal(spans, n, net::Releaser{});
  }
}

}  // namespace trove::protocol
