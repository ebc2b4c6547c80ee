// The server-wide function libraries (function_library.h). Any worker.
#include "protocol/resp/services/function_library.h"

#include <iterator>
#include <utility>

#include "protocol/resp/core/command_table.h"

namespace trove::resp {

uint32_t FunctionFlagNamed(std::string_view name) {
  for (size_t b = 0; b < std::size(kFunctionFlagNames); ++b)
    if (name == kFunctionFlagNames[b]) return 1u << b;
  return 0;
}

bool FunctionLibraries::FunctionsFree(const FunctionLibrary& lib, std::string_view except,
                                      std::string* err) const {
  for (const FunctionInfo& f : lib.functions) {
    auto it = by_function_.find(ToLower(f.name));
    if (it != by_function_.end() && it->second != except) {
      *err = "Function " + f.name + " already exists";
      return false;
    }
  }
  return true;
}

void FunctionLibraries::Insert(FunctionLibrary lib) {
  for (const FunctionInfo& f : lib.functions) by_function_[ToLower(f.name)] = lib.name;
  std::string name = lib.name;
  libraries_[std::move(name)] = std::move(lib);
}

void FunctionLibraries::Erase(std::map<std::string, FunctionLibrary, std::less<>>::iterator it) {
  for (const FunctionInfo& f : it->second.functions) by_function_.erase(ToLower(f.name));
  libraries_.erase(it);
}

bool FunctionLibraries::Add(FunctionLibrary lib, bool replace, std::string* err) {
  MutexLock l(&mu_);
  auto old = libraries_.find(lib.name);
  if (old != libraries_.end() && !replace) {
    *err = "Library '" + lib.name + "' already exists";
    return false;
  }
  if (!FunctionsFree(lib, old != libraries_.end() ? std::string_view(lib.name) : "", err))
    return false;
  if (old != libraries_.end()) Erase(old);
  Insert(std::move(lib));
  epoch_.fetch_add(1, std::memory_order_release);
  return true;
}

bool FunctionLibraries::Restore(std::vector<FunctionLibrary> libs, RestorePolicy policy,
                                std::string* err) {
  MutexLock l(&mu_);
  // Within the payload itself, names must be unique too.
  std::map<std::string, std::string, std::less<>> seen;
  for (const FunctionLibrary& lib : libs) {
    for (const FunctionInfo& f : lib.functions) {
      if (!seen.emplace(ToLower(f.name), lib.name).second) {
        *err = "Function " + f.name + " already exists";
        return false;
      }
    }
  }
  if (policy == RestorePolicy::kFlush) {
    libraries_.clear();
    by_function_.clear();
  } else {
    for (const FunctionLibrary& lib : libs) {
      const bool exists = libraries_.count(lib.name) != 0;
      if (exists && policy == RestorePolicy::kAppend) {
        *err = "Library " + lib.name + " already exists";
        return false;
      }
    }
    // With REPLACE, a function may move only within its own library (or
    // into a library the payload replaces as well).
    for (const FunctionLibrary& lib : libs) {
      for (const FunctionInfo& f : lib.functions) {
        auto it = by_function_.find(ToLower(f.name));
        if (it == by_function_.end() || it->second == lib.name) continue;
        bool replaced = false;
        for (const FunctionLibrary& other : libs) replaced |= other.name == it->second;
        if (!replaced) {
          *err = "Function " + f.name + " already exists";
          return false;
        }
      }
    }
    for (const FunctionLibrary& lib : libs) {
      auto old = libraries_.find(lib.name);
      if (old != libraries_.end()) Erase(old);
    }
  }
  for (FunctionLibrary& lib : libs) Insert(std::move(lib));
  epoch_.fetch_add(1, std::memory_order_release);
  return true;
}

bool FunctionLibraries::Delete(std::string_view name) {
  MutexLock l(&mu_);
  auto it = libraries_.find(name);
  if (it == libraries_.end()) return false;
  Erase(it);
  epoch_.fetch_add(1, std::memory_order_release);
  return true;
}

void FunctionLibraries::Flush() {
  MutexLock l(&mu_);
  libraries_.clear();
  by_function_.clear();
  epoch_.fetch_add(1, std::memory_order_release);
}

std::vector<FunctionLibrary> FunctionLibraries::Snapshot() const {
  MutexLock l(&mu_);
  std::vector<FunctionLibrary> out;
  out.reserve(libraries_.size());
  for (const auto& [name, lib] : libraries_) out.push_back(lib);
  return out;
}

size_t FunctionLibraries::library_count() const {
  MutexLock l(&mu_);
  return libraries_.size();
}

size_t FunctionLibraries::function_count() const {
  MutexLock l(&mu_);
  return by_function_.size();
}

size_t FunctionLibraries::bytes() const {
  MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [name, lib] : libraries_) {
    n += name.size() + lib.code.size() + sizeof(FunctionLibrary);
    for (const FunctionInfo& f : lib.functions)
      n += sizeof(FunctionInfo) + f.name.size() + (f.description ? f.description->size() : 0);
  }
  return n;
}

}  // namespace trove::resp
