#!/usr/bin/env node
// In a checkout the CLI runs from its TypeScript source through tsx, so edits need no build; an
// installed package runs the compiled JavaScript with plain node.
const fs = require('node:fs');
const path = require('node:path');

// `sluice hook` runs once per harness tool call, on the call's critical path: it loads only the
// hook command (a Temporal client), not the whole CLI with the worker runtime.
const hook = process.argv[2] === 'hook' && !process.argv.includes('--help') && !process.argv.includes('-h');
const source = path.join(__dirname, '..', 'client', hook ? 'hook/command.ts' : 'cli.ts');
let cli;
if (fs.existsSync(source)) {
  require('tsx/cjs');
  cli = require(source);
} else {
  cli = require(hook ? '../dist/client/hook/command.js' : '../dist/client/cli.js');
}
const run = hook ? cli.hookMain(process.argv.slice(3)) : cli.main(process.argv.slice(2));
run.then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
