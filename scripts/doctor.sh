#!/usr/bin/env bash
# `make doctor URL=<MCP URL> [TOKEN=<access token>]`: check a deployed MCP server from the outside
# (scripts/remote-doctor.ts; what each check means and its exit codes are in its header).
# The token travels in MCP_TOKEN, not on a command line. Extra arguments go to remote-doctor.ts (--json).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ -n "${1:-}" ]] || die "usage: make doctor URL=<MCP URL> [TOKEN=<access token>]"
command -v deno >/dev/null || die "deno not found: make setup installs it into tools/"
exec deno run --no-config --allow-net --allow-env=MCP_TOKEN "$ROOT/scripts/remote-doctor.ts" "$@"
