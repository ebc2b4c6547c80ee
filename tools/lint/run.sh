#!/usr/bin/env bash
# Lints that need no build (docs/STYLE.md, section 8, lists them and why).
# Fails with the offending lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fail=0
check() {  # description, grep output
  if [[ -n "$2" ]]; then echo "lint: $1"; echo "$2"; fail=1; fi
}
check "std::mutex outside common/" "$(grep -rn 'std::mutex' src --include='*.h' --include='*.cc' | grep -v '^src/common/')"
check "wall-clock read outside common/clock" "$(grep -rnE '\b(clock_gettime|gettimeofday)\s*\(|std::chrono::system_clock' src --include='*.h' --include='*.cc' | grep -v '^src/common/clock')"
check "engine must not include net/ or protocol/" "$(grep -rnE '#include "(net|protocol|server|proxy)/' src/engine)"
check "net must not include protocol/ or server/" "$(grep -rnE '#include "(protocol|server|proxy)/' src/net)"
# Inside the RESP front (docs/ARCHITECTURE.md, "Include rules"): the
# connection handler is the top layer; value types know no services, commands
# or connection; the runtime (core/, services/) knows no command family.
R=src/protocol/resp
check "resp: only connection/ includes connection/" "$(grep -rnE '#include "protocol/resp/connection/' $R/core $R/types $R/services $R/commands)"
check "resp: types/ includes only core/ and types/" "$(grep -rnE '#include "protocol/resp/(services|commands|connection)/' $R/types)"
check "resp: core/ and services/ never include commands/" "$(grep -rnE '#include "protocol/resp/commands/' $R/core $R/services)"
check "only server/ includes the RESP front from outside it" "$(grep -rnE '#include "protocol/resp/' src --include='*.h' --include='*.cc' | grep -vE '^src/(protocol/resp|server)/')"
check "memcache/ and resp/ do not include each other" "$(grep -rnE '#include "protocol/resp/' src/protocol/memcache; grep -rnE '#include "protocol/memcache/' $R)"
# A doc sentence must not call a flag refused while `trove -h` lists it (the
# flags are read from HelpText() in src/server/config.cc; see the script).
check "doc calls a flag refused that trove -h lists" "$(/usr/bin/python3 tools/lint/doc_flags.py 2>&1)"
exit $fail
