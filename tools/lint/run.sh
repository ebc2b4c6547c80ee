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
# A doc sentence must not call a flag refused while `trove -h` lists it (the
# flags are read from HelpText() in src/server/config.cc; see the script).
check "doc calls a flag refused that trove -h lists" "$(/usr/bin/python3 tools/lint/doc_flags.py 2>&1)"
exit $fail
