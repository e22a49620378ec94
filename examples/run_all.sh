#!/usr/bin/env bash
# Every gradcli command on the seeds, plus a JSON pipeline. Run from the repository root:
#   bash examples/run_all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SEED=(--arg x1=5 --arg x2=7)

echo "== tape: gradient of s with respect to w1 (seed 1: 5.0)"
gradcli tape @examples/weighted_sum.grad "${SEED[@]}" --wrt w1

echo "== grad: gradients_function, with respect to the arguments x1, x2 (2.0, 3.0)"
gradcli grad @examples/weighted_sum.grad "${SEED[@]}"

echo "== implicit: (gradient, variable) pairs (5.0 for w1, 7.0 for w2)"
gradcli implicit @examples/weighted_sum.grad "${SEED[@]}"

echo "== implicit with w1 untrainable: only w2 (7.0)"
gradcli implicit @examples/weighted_sum_frozen_w1.grad "${SEED[@]}"

echo "== value-grad: the value 31.0 and the pairs"
gradcli value-grad @examples/weighted_sum.grad "${SEED[@]}"

echo "== compare: the four APIs side by side"
gradcli compare @examples/weighted_sum.grad "${SEED[@]}"

echo "== seed 2: y = x * x at x = 3 (6.0), cross-checked with sympy and finite differences"
gradcli tape @examples/square.grad --check

echo "== a regression loss with W and b read from CSV files"
gradcli value-grad @examples/regression.grad \
  --var W=@examples/data/W.csv --var b=@examples/data/b.csv \
  --arg X=@examples/data/X.csv --arg Y=@examples/data/Y.csv --check

echo "== JSON pipeline: take w2's gradient out of the JSON"
json=$(gradcli value-grad @examples/weighted_sum.grad "${SEED[@]}" --json)
echo "$json"
if command -v jq >/dev/null; then
  echo "$json" | jq '.gradients[] | select(.name == "w2") | .gradient'
else
  echo "$json" | python -c 'import json, sys; d = json.load(sys.stdin); print([g["gradient"] for g in d["gradients"] if g["name"] == "w2"][0])'
fi

echo "== plain output for shell arithmetic: the value, then one line per gradient"
gradcli value-grad @examples/weighted_sum.grad "${SEED[@]}" --plain

echo "== the function table"
gradcli functions | sed -n '1,12p'   # sed reads it all: no broken pipe
