// trove-bench entry point: parses options, runs the optional prefill and the
// measured phase, prints the results. Main thread; see load.h for the rest.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "key_chooser.h"
#include "load.h"
#include "options.h"
#include "report.h"
#include "value_gen.h"

int main(int argc, char** argv) {
  using namespace trove::bench;
  Options o;
  bool help = false;
  trove::Status st = ParseOptions(argc, argv, &o, &help);
  if (!st.ok()) {
    std::fprintf(stderr, "trove-bench: %s\n(try --help)\n", st.ToString().c_str());
    return 1;
  }
  if (help) {
    std::fputs(UsageText(), stdout);
    return 0;
  }
  bool progress = o.progress < 0 ? isatty(STDERR_FILENO) != 0 : o.progress == 1;
  ValueGen values(o.key_prefix, o.value_min, o.value_max);

  if (o.prefill) {
    Options pre = o;
    pre.set_weight = 1;
    pre.get_weight = 0;
    pre.pattern = KeyPattern::kSequential;
    pre.requests = o.key_count;
    pre.multiget = 1;
    pre.rate = 0;
    pre.pipeline = o.pipeline < 16 ? 16 : o.pipeline;
    auto r = RunLoad(pre, values, nullptr, false);
    if (!r.ok()) {
      std::fprintf(stderr, "trove-bench: prefill: %s\n", r.status().ToString().c_str());
      return 2;
    }
    std::fprintf(stderr, "prefill: %llu keys in %.2f s, %llu errors\n",
                 static_cast<unsigned long long>(r->stats.ops), r->measured_s,
                 static_cast<unsigned long long>(r->stats.errors()));
  }

  std::unique_ptr<ZipfTable> zipf;
  if (o.pattern == KeyPattern::kZipf) {
    zipf = std::make_unique<ZipfTable>(o.key_count, o.zipf_exponent);
  }
  auto r = RunLoad(o, values, zipf.get(), progress);
  if (!r.ok()) {
    std::fprintf(stderr, "trove-bench: %s\n", r.status().ToString().c_str());
    return 2;
  }
  PrintSummary(o.json ? stderr : stdout, o, r.value());
  if (o.json) PrintJson(stdout, o, r.value());
  return r->stats.errors() > 0 ? 3 : 0;
}
