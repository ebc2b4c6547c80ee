// RunLoad: the load threads of trove-bench (one epoll loop each, owning its
// connections) and the main-thread coordination and progress output.
#pragma once

#include "common/result.h"
#include "key_chooser.h"
#include "options.h"
#include "session.h"
#include "value_gen.h"

namespace trove::bench {

struct RunResult {
  Stats stats;
  double measured_s = 0;  // the measured window (or the whole run in --requests mode)
  int connected = 0;      // connections that opened
};

// Runs one load phase with `o` and blocks until it ends. Fails only when
// no connection could be opened; per-request problems land in the stats.
// `zipf` is required for KeyPattern::kZipf and must cover o.key_count keys.
Result<RunResult> RunLoad(const Options& o, const ValueGen& values, const ZipfTable* zipf,
                          bool show_progress);

}  // namespace trove::bench
