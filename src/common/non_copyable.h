// NonCopyable: a base for classes that own a thread, a descriptor, memory or a
// registration and so must be neither copied nor moved. Header only.
#pragma once

namespace trove {

// Deriving (privately: `class Worker : NonCopyable`) deletes the copy
// constructor and copy assignment of the derived class, and with them its
// implicit moves. It adds no state; the base is empty.
class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace trove
