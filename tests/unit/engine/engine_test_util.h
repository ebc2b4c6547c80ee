// Test helpers: an engine on a ManualClock and small accessors.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/clock.h"
#include "engine/engine.h"

namespace trove::engine::testing {

inline std::unique_ptr<Engine> MakeEngine(EngineOptions o, const Clock* clock) {
  o.clock = clock;
  auto r = Engine::Create(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

inline std::string Stat(const StatList& l, const std::string& name) {
  for (const auto& [k, v] : l) {
    if (k == name) return v;
  }
  return "<missing " + name + ">";
}

inline uint64_t StatU(const StatList& l, const std::string& name) {
  return std::stoull(Stat(l, name).rfind("<", 0) == 0 ? "999999999" : Stat(l, name));
}

inline std::string ValueOf(const ItemRef& r) {
  std::string s;
  r.CopyValue(&s);
  return s;
}

}  // namespace trove::engine::testing
