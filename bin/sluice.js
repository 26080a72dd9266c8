#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so users need no build step.
require('tsx/cjs');
require('../client/cli.ts')
  .main(process.argv.slice(2))
  .then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
