#!/usr/bin/env node
console.log('llmcp');
