// Stored results: a result over its bound is written once (a 20 MB result takes about 20 MB on
// disk), read back whole through readStoredResult and `sluice result`, and deleted after the
// retention, by the worker itself or by `sluice results prune`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { main } from '../cli';
import { defineConfig, defineTool } from '../define/config';
import { pruneStoredResults, readStoredResult } from '../stores/stored-results';
import { eventually } from './eventually';
import { batch, startHarness, text, type Harness } from './harness';

const MB = 1024 * 1024;

function bigText(n: number, tag: string): string {
  let s = '';
  for (let i = 0; s.length < n; i++) s += `${tag} line ${i} .......................................................\n`;
  return s.slice(0, n);
}

const tools = [
  defineTool({
    name: 'huge',
    description: 'A result of n megabytes.',
    input: z.object({ mb: z.number() }),
    execute: ({ mb }) => bigText(mb * MB, 'huge'),
  }),
  defineTool({
    name: 'huge_rewritten',
    description: 'A large result a post-execute handler replaces with another large one.',
    input: z.object({}),
    execute: () => bigText(MB, 'original'),
  }),
];

let h: Harness;
const resultsDir = () => path.join(h.stateDir, 'results');
const du = (dir: string) =>
  fs.existsSync(dir) ? fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0) : 0;

async function cli(args: string[]): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const code = await main([...args, '--state-dir', h.stateDir], (s) => lines.push(s));
  return { code, output: lines.join('\n') };
}

beforeAll(async () => {
  h = await startHarness(
    'stored',
    defineConfig({
      tools,
      resultRetention: '2h',
      postExecute: [
        function rewrite(ctx) {
          if (ctx.call.name !== 'huge_rewritten') return undefined;
          return { action: 'accept', content: [{ type: 'text', text: bigText(MB, 'rewritten') }] };
        },
      ],
    }),
  );
});
afterAll(() => h?.close());

describe('stored results', () => {
  it('a 20 MB result is written once and read back whole by the public API and `sluice result`', async () => {
    const before = du(resultsDir());
    const out = await h.client.runBatch(batch([{ name: 'huge', args: { mb: 20 } }]));
    const r = out.results[0].result;
    const ref = (r.meta?.storedResult as { ref: string }).ref;
    expect(text(r)).toContain(ref);
    const written = du(resultsDir()) - before;
    expect(written).toBeGreaterThan(20 * MB);
    expect(written).toBeLessThan(21 * MB); // once (JSON escapes its newlines), not three times

    const stored = await readStoredResult(ref, { stateDir: h.stateDir });
    expect(stored?.isError).toBe(false);
    expect(text(stored!)).toBe(bigText(20 * MB, 'huge'));

    const shown = await cli(['result', ref, '--text']);
    expect(shown.code).toBe(0);
    expect(shown.output).toBe(bigText(20 * MB, 'huge'));
    const json = JSON.parse((await cli(['result', ref])).output);
    expect(json.content[0].text.length).toBe(20 * MB);
  }, 120_000);

  it('a result a stage rewrote is stored as the model would have read it', async () => {
    const out = await h.client.runBatch(batch([{ name: 'huge_rewritten' }]));
    const ref = (out.results[0].result.meta?.storedResult as { ref: string }).ref;
    expect(text((await readStoredResult(ref, { stateDir: h.stateDir }))!)).toBe(bigText(MB, 'rewritten'));
  });

  it('an unknown reference says where it looked and how long results are kept', async () => {
    expect(await readStoredResult('sluice-result:nothing-here.json', { stateDir: h.stateDir })).toBeUndefined();
    const missing = await cli(['result', 'sluice-result:nothing-here.json']);
    expect(missing.code).not.toBe(0);
  });

  it('retention: the worker deletes results older than its setting at start; `sluice results prune` by hand', async () => {
    const dir = resultsDir();
    fs.mkdirSync(dir, { recursive: true });
    const old = path.join(dir, 'old-result.json');
    const recent = path.join(dir, 'recent-result.json');
    fs.writeFileSync(old, JSON.stringify({ key: 'old', value: { content: [], isError: false } }));
    fs.writeFileSync(recent, JSON.stringify({ key: 'recent', value: { content: [], isError: false } }));
    const threeHoursAgo = new Date(Date.now() - 3 * 3_600_000);
    fs.utimesSync(old, threeHoursAgo, threeHoursAgo);
    // A worker (re)starting with resultRetention '2h' deletes the old one, keeps the recent one.
    await h.stopWorker();
    await h.startWorker();
    await eventually('the worker to delete the result older than its retention', () => !fs.existsSync(old));
    expect(fs.existsSync(recent)).toBe(true);

    const hourAgo = new Date(Date.now() - 90 * 60_000);
    fs.utimesSync(recent, hourAgo, hourAgo);
    const pruned = await cli(['results', 'prune', '--older-than', '1h']);
    expect(pruned.code).toBe(0);
    expect(pruned.output).toMatch(/^deleted 1 stored result\(s\), \d+ bytes, older than 1h/);
    expect(fs.existsSync(recent)).toBe(false);
    expect(await pruneStoredResults(3_600_000, { stateDir: h.stateDir })).toEqual({ results: 0, bytes: 0 });

    const bad = await cli(['results', 'prune', '--older-than', '5m']);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('at least an hour');
  });

  it('a retention setting Sluice cannot use is refused when the config is defined', () => {
    expect(() => defineConfig({ tools: [], resultRetention: 'a week' })).toThrow(/'30d', '12h' or '90m'/);
    expect(() => defineConfig({ tools: [], resultRetention: '10m' })).toThrow(/at least an hour/);
    expect(() => defineConfig({ tools: [], resultRetention: false })).not.toThrow();
    expect(() => defineConfig({ tools: [], resultRetention: '7d' })).not.toThrow();
  });
});
