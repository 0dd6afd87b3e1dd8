#!/usr/bin/env bash
# Long crash loops of the real processes (#45): builds a release `vouch`, then kills the
# provider, the S3 gateway and a VICOS group member with SIGKILL at random instants of their
# work, restarts them and checks that nothing acknowledged is lost, nothing half-written is
# served, no honest crash is reported as a violation and every restart converges
# (vouch_testkit::crash, through `vouch sim --processes`).
#
#   scripts/crash-loop.sh [KILLS] [SEED] [COMPONENT...]
#
# KILLS per component (default 200), the first SEED (default: from the clock, printed), and the
# components (default: provider gateway member). ROUNDS=N runs N seeds in a row (SEED, SEED+1,
# ...). A failure prints its seed and kill, and the command that replays it; the script then
# exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

kills="${1:-200}"
seed="${2:-$(date +%s)}"
shift $(( $# > 2 ? 2 : $# ))
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(provider gateway member)
rounds="${ROUNDS:-1}"

cargo build --release --locked -p vouch-cli
vouch="$PWD/target/release/vouch"

echo "crash loops: ${kills} kills per component, seeds ${seed}..$(( seed + rounds - 1 )), components ${components[*]}"
for (( round = 0; round < rounds; round++ )); do
    s=$(( seed + round ))
    for component in "${components[@]}"; do
        echo "== ${component}, seed ${s}"
        if ! "$vouch" sim --processes --component "$component" --kills "$kills" --seed "$s"; then
            echo "FAILED: ${component}, seed ${s}; replay with:" >&2
            echo "  $vouch sim --processes --component $component --kills $kills --seed $s" >&2
            exit 1
        fi
    done
done
echo "crash loops: all passed"
