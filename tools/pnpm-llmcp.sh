#!/bin/sh
# `pnpm llmcp …` runs the CLI from sources (root package.json: "trap : INT; sh tools/pnpm-llmcp.sh").
# Only node takes the terminal's Ctrl-C: pnpm's shell and this one ignore SIGINT, so a
# clean stop is not reported as a killed script. A clean signal stop (the CLI's exit 130,
# "stopped with a checkpoint") is handed to pnpm as 0, so pnpm prints no ELIFECYCLE line
# after it; every other status passes through. The installed `llmcp` binary keeps 130.
trap : INT
node --conditions=@llmcp/source --import tsx "$(dirname "$0")/../packages/cli/src/bin.ts" "$@"
status=$?
if [ "$status" -eq 130 ]; then exit 0; fi
exit "$status"
