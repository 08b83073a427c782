#!/usr/bin/env node
// The `llmcp` command: runs the built CLI (dist/bin.js). This launcher is part of the sources, so installing the
// workspace links the command before anything is built; in the repository run `pnpm build` first, or
// `pnpm llmcp …` (which runs the sources).
import '../dist/bin.js';
