// After tsc: the files the compiled package reads at run time that are not TypeScript.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
for (const file of [
  'servers/inbox/page.html',
  'servers/inbox/session.html',
  'servers/inbox/cards.html',
  'codec/encrypted-failures.js',
]) {
  const to = path.join(root, 'dist', file);
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(path.join(root, file), to);
}
