#!/usr/bin/env bash
# Runs a command as on a machine where redis-server was never installed:
# every PATH directory that holds a redis-* or valkey-* program is replaced
# by a directory of links to its other programs, so the rest of PATH (go,
# git, node, taskset...) stays reachable and only the servers and their
# tools are gone. Usage: .ci/without-redis.sh go test -race ./...
set -euo pipefail
shadow=$(mktemp -d)
trap 'rm -rf "$shadow"' EXIT
hidden=() path=()
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  [ -d "$dir" ] || continue
  if ! compgen -G "$dir/redis-*" >/dev/null && ! compgen -G "$dir/valkey-*" >/dev/null; then
    path+=("$dir")
    continue
  fi
  copy="$shadow/$(printf '%s' "$dir" | tr / _)"
  mkdir -p "$copy"
  for f in "$dir"/* "$dir"/.[!.]*; do
    [ -e "$f" ] || continue
    case "$(basename "$f")" in
      redis-* | valkey-*) hidden+=("$f") ;;
      *) ln -s "$f" "$copy/" ;;
    esac
  done
  path+=("$copy")
done
PATH=$(IFS=:; printf '%s' "${path[*]}")
export PATH
if command -v redis-server >/dev/null || command -v redis-sentinel >/dev/null || command -v redis-cli >/dev/null; then
  echo "without-redis: a redis program is still on PATH: $(command -v redis-server redis-sentinel redis-cli)" >&2
  exit 1
fi
echo "without-redis: hidden from PATH: ${hidden[*]:-nothing (none installed)}"
"$@"
