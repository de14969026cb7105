#!/usr/bin/env bash
# A team's CI job, run in a clone of the knowledge base's repository on the machine under test: record a run
# (also when it fails), push its entry to the team's repository, and build the site for a static host.
#   WORKLOAD=tiny-lm BACKEND=cpu MODE=eager bash examples/team-record.sh -- python train.py --steps 40
# KB_BRANCH (default main) is the branch entries go to, BASE_URL (default /) the path the site is served under,
# e.g. /kb/ for https://team.github.io/kb/. The site goes to site/, which git ignores. Exits with the run's
# code, after its entry is pushed and the site built.
set -uo pipefail
[ "${1:-}" = "--" ] && shift
branch=${KB_BRANCH:-main}

kb init . > /dev/null || exit 1  # a fresh clone has entries and kb.toml; this adds the ignored caches

# The run: kb record writes its entry whatever happens to it, so a failed run is evidence too.
kb record --workload "${WORKLOAD:?set WORKLOAD}" --backend "${BACKEND:?set BACKEND}" ${MODE:+--mode "$MODE"} \
  --tag ci ${CI_TAG:+--tag "$CI_TAG"} -- "$@"
recorded=$?

# Entries are new files with names that never collide: whatever other runners pushed meanwhile, the rebase
# applies. Retried, for a push that lost the race to another runner's.
git add entries && git commit -q -m "kb: ${WORKLOAD} on ${BACKEND}${MODE:+ ($MODE)}" || exit 1
pushed=1
for attempt in 1 2 3; do
  if git pull -q --rebase origin "$branch" && git push -q origin "HEAD:$branch"; then
    pushed=0
    break
  fi
  echo "kb: push attempt $attempt failed; trying again" >&2
done
[ "$pushed" -eq 0 ] || { echo "kb: the entry is committed here but not pushed" >&2; exit 1; }

# The site, from every entry the team has pushed so far (the rebase brought them in).
kb site build --base-url "${BASE_URL:-/}" || exit 1
exit "$recorded"
