#!/usr/bin/env bash
# Installs the real agent clients that tests/it/agent_real_*.rs drive (Claude Code, Codex
# CLI, Gemini CLI), at the versions package.json and package-lock.json beside this script
# pin, with `npm ci` into target/agents-npm ($GIT_CHECKPOINT_AGENTS_NPM names another
# folder). A folder installed from the same lock file is kept as it is, and npm's own cache
# keeps the packages between runs. Then prints one line per client, "ok <name> <version>"
# or "missing <name>", and exits 0 either way: the caller decides what a missing one means.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${GIT_CHECKPOINT_AGENTS_NPM:-$here/../../target/agents-npm}
mkdir -p "$dest"
if ! cmp -s "$here/package-lock.json" "$dest/.installed-from.json"; then
  rm -f "$dest/.installed-from.json"
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  if (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    cp "$here/package-lock.json" "$dest/.installed-from.json"
  else
    echo "npm ci failed in $dest" >&2
  fi
fi
bin=$dest/node_modules/.bin
# Claude Code's launcher is a placeholder until its postinstall puts the native binary
# for this platform in its place; an npm that skipped install scripts left it there.
if ! "$bin/claude" --version >/dev/null 2>&1 && [ -f "$dest/node_modules/@anthropic-ai/claude-code/install.cjs" ]; then
  (cd "$dest/node_modules/@anthropic-ai/claude-code" && node install.cjs >&2)
fi
for client in claude codex gemini; do
  if version=$("$bin/$client" --version 2>/dev/null | head -n 1) && [ -n "$version" ]; then
    echo "ok $client $version"
  else
    echo "missing $client"
  fi
done
