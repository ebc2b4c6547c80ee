#!/usr/bin/env bash
# Grep lints (STYLE.md section 8). Fails with the offending lines.
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
exit $fail
