#!/usr/bin/env node
// In a checkout the CLI runs from its TypeScript source through tsx, so edits need no build; an
// installed package runs the compiled JavaScript with plain node.
const fs = require('node:fs');
const path = require('node:path');

const source = path.join(__dirname, '..', 'client', 'cli.ts');
let cli;
if (fs.existsSync(source)) {
  require('tsx/cjs');
  cli = require(source);
} else {
  cli = require('../dist/client/cli.js');
}
cli.main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
