#!/usr/bin/env bash
# Renders the diagrams of docs/ from their Graphviz sources: docs/diagrams/<name>.dot -> <name>.png.
# Needs Graphviz's `dot` (Debian/Ubuntu: apt-get install -y graphviz; macOS: brew install graphviz).
set -euo pipefail
cd "$(dirname "$0")"
command -v dot >/dev/null || { echo "render.sh: Graphviz 'dot' not found (apt-get install -y graphviz)" >&2; exit 1; }
for src in *.dot; do
  dot -Tpng -Gdpi=110 "$src" -o "${src%.dot}.png"
  echo "rendered ${src%.dot}.png"
done
