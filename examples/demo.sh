#!/usr/bin/env bash
# The main job: record a real PyTorch training run, eager and compiled, into this repository's knowledge
# base (kb.toml at the root, entries/), then compare the two, list, search, show the compiled run,
# render the whole knowledge base as a static site in site/, and end with the answer: kb board.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-80}

for mode in eager compiled; do
  kb record --workload tiny-lm --backend cpu --mode "$mode" --tag demo \
    --note "The README's main job: a small transformer LM trained on generated text." \
    -- python examples/train_tiny_lm.py --mode "$mode" --steps "$steps"
done

# The two runs side by side: what differs, timings by phase, throughput with ratios, compile evidence.
kb compare --workload tiny-lm --by mode
kb ls --workload tiny-lm --tag demo --sort metric.tokens_per_s --limit 2
kb search 'workload:tiny-lm mode:compiled' --limit 1
newest=$(kb ls --workload tiny-lm --mode compiled --limit 1 --json | python -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
kb show "$newest"

# The static site: every entry, lists with facets, comparisons, trend charts, decisions and search.
kb site build
echo "Open site/index.html in a browser, or run 'kb site serve' for search at http://127.0.0.1:8000/."

# The answer the runs give: which mode wins for tiny-lm, at what preparation cost, on what evidence;
# then what is still missing before believing it.
kb board --workload tiny-lm
kb board --workload tiny-lm --missing
