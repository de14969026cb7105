#!/usr/bin/env bash
# The main job: record a real PyTorch training run, eager and compiled, each repeated so that the answer
# stands on more than one run, into this repository's knowledge base (kb.toml at the root, entries/).
# The compiled runs are checked against eager's loss curve (numerics), and their compile is measured
# cold (an empty Inductor cache) and warm (the same cache again). Then compare the two, list, search, show
# the compiled run, render the whole knowledge base as a static site in site/, and end with the answer:
# kb board. REPEATS=3 and STEPS=40 by default: 7 recorded runs; 15 minutes on a two-core machine shared at a
# load average of 12, much less on an idle one.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-40}
repeats=${REPEATS:-3}
# The eager loss curve (the compiled runs' reference) and the compile cache stay in the ignored .kb/ folder.
work=.kb/demo
rm -rf "$work" && mkdir -p "$work"
note="The README's main job: a small transformer LM trained on generated text."

# Eager, repeated; its loss curve is the reference the compiled runs are checked against.
kb record --repeat "$repeats" --workload tiny-lm --backend cpu --mode eager --tag demo --note "$note" \
  -- python examples/train_tiny_lm.py --mode eager --steps "$steps" --loss-out "$work/eager-loss.txt"
# Compiled: once into an empty compile cache (cold), then repeated with that cache kept (warm).
export TORCHINDUCTOR_CACHE_DIR="$work/inductor"
kb record --workload tiny-lm --backend cpu --mode compiled --tag demo --tag cold --note "$note" \
  -- python examples/train_tiny_lm.py --mode compiled --steps "$steps" --loss-reference "$work/eager-loss.txt"
kb record --repeat "$repeats" --workload tiny-lm --backend cpu --mode compiled --tag demo --tag warm --note "$note" \
  -- python examples/train_tiny_lm.py --mode compiled --steps "$steps" --loss-reference "$work/eager-loss.txt"

# The two modes side by side, each with its repeats: what differs, timings by phase, throughput with
# ratios and verdicts, compile evidence.
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
