#!/usr/bin/env bash
# Counts of ruff and mypy findings per package of netsleuth (and for tests/ and
# bench/), with the ruff rules that dominate: where the tree stands against
# `make lint`, to plan the clean-up package by package.
#   dev/lint_report.sh            # from the repository root, after `make setup`
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
ruff_out=$(mktemp); mypy_out=$(mktemp)
trap 'rm -f "$ruff_out" "$mypy_out"' EXIT
"$VENV/bin/ruff" check --output-format concise netsleuth tests bench >"$ruff_out" 2>/dev/null
"$VENV/bin/mypy" netsleuth >"$mypy_out" 2>/dev/null
# netsleuth/world/world.py:12:3: RULE msg -> netsleuth/core ; tests/test_x.py -> tests
unit() { sed -nE 's#^(netsleuth/[a-z_]+/|netsleuth/[a-z_]+\.py|tests/|bench/)[^:]*:[0-9]+:.*#\1#p' | sed -E 's#/$##'; }
printf '%-28s %6s %6s\n' "package" "ruff" "mypy"
join -a1 -a2 -e0 -o 0,1.2,2.2 \
  <(grep -E '^[a-z].*:[0-9]+:[0-9]+: [A-Z]+[0-9]+' "$ruff_out" | unit | sort | uniq -c | awk '{print $2, $1}' | sort) \
  <(grep -E ': error: ' "$mypy_out" | unit | sort | uniq -c | awk '{print $2, $1}' | sort) |
  awk '{printf "%-28s %6d %6d\n", $1, $2, $3; r += $2; m += $3} END {printf "%-28s %6d %6d\n", "total", r, m}'
echo
echo "ruff, by rule:"
grep -oE ': [A-Z]+[0-9]+ ' "$ruff_out" | sort | uniq -c | sort -rn | head -15
