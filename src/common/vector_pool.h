// VectorPool<T>: a thread's spare std::vector<T> buffers. An object that
// needs a vector only while it is busy (a connection's output entries while
// replies wait to be written, a RESP parser's spans while a request is read)
// gives its buffer back when idle and takes a spare one when busy again, so
// an idle connection holds none (issue 42) and a busy one still allocates
// nothing per request once the pool has grown.
//
// Thread safety: thread-local. A buffer given back on another thread joins
// that thread's pool (plain heap memory; nothing ties it to a thread).
// Invariant: every spare is empty, with a capacity in (0, kMaxCapacity].
#pragma once

#include <cstddef>
#include <vector>

namespace trove {

template <typename T>
class VectorPool {
 public:
  static constexpr size_t kMaxSpare = 64;
  // Bigger buffers (a burst's) are freed rather than kept.
  static constexpr size_t kMaxCapacity = 256;

  // Gives *v, if it has no buffer, a spare one (when there is one).
  static void Take(std::vector<T>* v) {
    std::vector<std::vector<T>>& s = Spare();
    if (v->capacity() == 0 && !s.empty()) {
      v->swap(s.back());
      s.pop_back();
    }
  }
  // Takes *v's buffer for later; *v is left empty without a buffer.
  static void Give(std::vector<T>* v) {
    v->clear();
    if (v->capacity() == 0) return;
    std::vector<std::vector<T>>& s = Spare();
    if (s.size() < kMaxSpare && v->capacity() <= kMaxCapacity) {
      s.emplace_back();  // within the reserved capacity: no allocation
      s.back().swap(*v);
    } else {
      std::vector<T>().swap(*v);
    }
  }
  static size_t SpareCount() { return Spare().size(); }

 private:
  static std::vector<std::vector<T>>& Spare() {
    static thread_local std::vector<std::vector<T>> spare = [] {
      std::vector<std::vector<T>> v;
      v.reserve(kMaxSpare);
      return v;
    }();
    return spare;
  }
};

}  // namespace trove
