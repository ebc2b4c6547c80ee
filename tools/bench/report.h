// trove-bench output: the summary table and the JSON document (main thread).
#pragma once

#include <cstdio>

#include "load.h"
#include "options.h"

namespace trove::bench {

void PrintSummary(std::FILE* f, const Options& o, const RunResult& r);
void PrintJson(std::FILE* f, const Options& o, const RunResult& r);

}  // namespace trove::bench
