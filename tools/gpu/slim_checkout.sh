#!/usr/bin/env bash
# Makes the checkout small enough to travel to the GPU machine beside a bundle
# (the device tool carries the tracked and unignored files plus `carry`, 64 MiB
# in all), and puts it back afterwards. Nothing is deleted: the left-out paths
# leave git's index and are listed in .git/info/exclude, so they stay on disk
# here but do not travel; `off` restores the index and the exclude file.
#
# usage: tools/gpu/slim_checkout.sh on [PATH ...] | off | status
#   on      leave out PATHs (default: test/tokenizer docs/img, which no GPU
#           suite reads), and print what now travels
#   off     restore them (run it before any commit: committing while slim
#           would delete the left-out files from the repository)
#   status  whether the checkout is slim, and the size that travels
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
GIT_DIR=$(git rev-parse --git-dir)
STATE="$GIT_DIR/kiln-slim"          # the left-out paths, one a line
SAVED="$GIT_DIR/kiln-slim.exclude"  # .git/info/exclude as it was
EXCLUDE="$GIT_DIR/info/exclude"

travelling_bytes() {
  git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null |
    tail -1 | cut -f1
}

report() {
  local bytes
  bytes=$(travelling_bytes)
  echo "the checkout that travels: $((bytes / 1048576)) MiB ($bytes bytes); the limit is 64 MiB" \
    "with the carried paths"
}

case "${1:-}" in
on)
  shift
  if [ -f "$STATE" ]; then
    echo "slim_checkout: already slim (left out: $(tr '\n' ' ' <"$STATE")); run 'off' first" >&2
    exit 2
  fi
  paths=("$@")
  [ ${#paths[@]} -gt 0 ] || paths=(test/tokenizer docs/img)
  for p in "${paths[@]}"; do
    if [ -z "$(git ls-files -- "$p")" ]; then
      echo "slim_checkout: $p holds no tracked file" >&2
      exit 2
    fi
  done
  if ! git diff --cached --quiet; then
    echo "slim_checkout: the index has staged changes; commit or unstage them first" >&2
    exit 2
  fi
  mkdir -p "$(dirname "$EXCLUDE")"
  touch "$EXCLUDE"
  cp "$EXCLUDE" "$SAVED"
  printf '%s\n' "${paths[@]}" >"$STATE"
  for p in "${paths[@]}"; do
    git rm -r -q --cached -- "$p"
    echo "/$p" >>"$EXCLUDE"
  done
  # The left-out paths are staged as removed: a commit now would delete
  # them from the repository. A pre-commit hook refuses commits until 'off'.
  HOOK="$GIT_DIR/hooks/pre-commit"
  if [ ! -e "$HOOK" ]; then
    mkdir -p "$GIT_DIR/hooks"
    cat >"$HOOK" <<'HOOK_EOF'
#!/bin/sh
# Written by tools/gpu/slim_checkout.sh while the checkout is slim; 'off' removes it.
if [ -f "$(git rev-parse --git-dir)/kiln-slim" ]; then
  echo "pre-commit: the checkout is slim: its left-out paths are staged as removed, and" \
    "this commit would delete them; run 'tools/gpu/slim_checkout.sh off' first" >&2
  exit 1
fi
HOOK_EOF
    chmod +x "$HOOK"
    echo "$HOOK" >"$GIT_DIR/kiln-slim.hook"
  fi
  echo "slim_checkout: left out ${paths[*]} (restore with: tools/gpu/slim_checkout.sh off;" \
    "commits are refused until then)"
  report
  ;;
off)
  if [ ! -f "$STATE" ]; then
    echo "slim_checkout: not slim; nothing to restore"
    exit 0
  fi
  mapfile -t paths <"$STATE"
  git reset -q -- "${paths[@]}"
  cp "$SAVED" "$EXCLUDE"
  if [ -f "$GIT_DIR/kiln-slim.hook" ]; then
    rm -f "$(cat "$GIT_DIR/kiln-slim.hook")" "$GIT_DIR/kiln-slim.hook"
  fi
  rm -f "$STATE" "$SAVED"
  echo "slim_checkout: restored ${paths[*]}"
  report
  ;;
status)
  if [ -f "$STATE" ]; then
    echo "slim: left out $(tr '\n' ' ' <"$STATE")"
  else
    echo "not slim"
  fi
  report
  ;;
*)
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
