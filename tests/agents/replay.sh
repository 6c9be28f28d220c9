#!/bin/sh
# Replays an agent CLI's recorded output (tests/fixtures/agents/*) as an automaton agent, to test
# the adapters' reading of it through real processes: writes the phase's artifact (unless
# REPLAY_WRITE=no), prints $REPLAY_FIXTURE, exits ${REPLAY_EXIT:-0}. The real CLIs themselves run
# in the offline tier (tests/real_agents/run.sh).
set -u
cat >/dev/null
if [ "${REPLAY_WRITE:-yes}" != no ]; then
  case $AUTOMATON_PHASE in
    referee) printf '# Verdict\n\nVerdict: PASS\n\n## Findings\nNone.\n' ;;
    *) printf '# %s\n\nReplayed.\n' "$AUTOMATON_PHASE" ;;
  esac > "$AUTOMATON_ARTIFACT"
fi
cat "$REPLAY_FIXTURE"
exit "${REPLAY_EXIT:-0}"
