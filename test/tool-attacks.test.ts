// The built-in tools attacked the way an adversarial review did (issue 10), through the real
// pipeline on a real worker: each attack must now fail to get through.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsTools } from '../tools';
import { defineConfig, defineTool } from '../worker/config';
import { z } from 'zod';
import { batch, startHarness, text, type Harness } from './harness';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-attacks-')));
const root = path.join(base, 'ws');
fs.mkdirSync(root);

let h: Harness;
beforeAll(async () => {
  const ping = defineTool({
    name: 'ping',
    description: 'Answers pong.',
    input: z.object({}),
    execute: () => 'pong',
  });
  h = await startHarness('attacks', defineConfig({ tools: [...fsTools({ root }), ping] }));
});
afterAll(() => h?.close());

describe('grep with a hostile pattern (issue 10, item 4)', () => {
  it('answers ^(a+)+$ over a long line without freezing the worker: an unrelated batch completes too', async () => {
    // A backtracking engine needs about 2^n steps for n a's followed by a non-match; 5,000 is
    // beyond any timeout, so only a linear-time engine lets both batches finish.
    fs.writeFileSync(path.join(root, 'evil.txt'), `${'a'.repeat(5000)}!\naaaa\n`);
    const grep = h.client.runBatch(
      batch([{ name: 'grep', args: { pattern: '^(a+)+$', output_mode: 'content', path: 'evil.txt' } }]),
    );
    const unrelated = await h.client.runBatch(batch([{ name: 'ping' }]));
    expect(text(unrelated.results[0].result)).toBe('pong');
    const out = await grep;
    expect(out.results[0].result.isError).toBe(false);
    expect(text(out.results[0].result)).toBe('evil.txt:2:aaaa');
  });

  it('refuses what a linear-time engine cannot run (backreferences, lookahead) with a clear error', async () => {
    const out = await h.client.runBatch(
      batch([
        { name: 'grep', args: { pattern: '(a)\\1' } },
        { name: 'grep', args: { pattern: 'a(?=b)' } },
      ]),
    );
    for (const r of out.results) {
      expect(r.result).toMatchObject({ isError: true, error: { code: 'INVALID_ARGS' } });
      expect(text(r.result)).toMatch(/not a valid regular expression.*RE2 syntax.*backreferences are not supported/);
    }
  });
});
