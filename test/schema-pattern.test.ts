// Issue 22 item 5: a JSON Schema `pattern` like ^(a+)+$ froze the worker on 29 a's and a "!"
// (ajv's default RegExp backtracks, doubling its time per character, in preflight, body and
// settle alike). Schema patterns now run on RE2. Here an MCP server lists that pattern, and a plain
// JSON Schema tool has it too: an argument of 40 a's and a "!" is refused as INVALID_ARGS (the
// vitest timeout is the guard; at 40 characters a backtracking engine would take days), a
// matching argument runs, an unrelated batch is unaffected, and a pattern RE2 cannot run (a
// backreference) is refused when the tool is listed, with a clear reason.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mcpSource, type McpSource } from '../tools/mcp';
import { defineConfig, defineTool } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

const SERVER = path.join(__dirname, 'fixtures', 'mcp', 'pattern-server.mjs');
const hostile = `${'a'.repeat(40)}!`;

let h: Harness;
let source: McpSource;
let calls: string;

beforeAll(async () => {
  calls = path.join(fs.mkdtempSync(path.join(inject('runDir'), 'schema-pattern-')), 'calls.log');
  source = mcpSource({ server: 'pat', command: process.execPath, args: [SERVER, calls] });
  const local = defineTool({
    name: 'letters',
    description: 'A run of a letters, as a plain JSON Schema tool.',
    input: { type: 'object', properties: { text: { type: 'string', pattern: '^(a+)+$' } }, required: ['text'] },
    execute: (args: { text: string }) => `letters ${args.text.length}`,
  });
  h = await startHarness('schema-pattern', defineConfig({ tools: [...(await source.tools()), local] }));
});
afterAll(async () => {
  await h?.close();
  await source?.close();
});

const serverGot = () => (fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8').trim().split('\n') : []);

describe('schema patterns', () => {
  it('a pattern RE2 cannot run is refused when the server lists it, saying why', () => {
    expect(h).toBeDefined();
    const twice = source.warnings.find((w) => w.startsWith('twice was left out'));
    expect(twice).toMatch(/cannot be checked in linear time/);
    expect(twice).toMatch(/backreferences or lookaround/);
  });

  it('40 a\'s and a "!" against ^(a+)+$ is INVALID_ARGS at once; a match runs; other batches are unaffected', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'm1', name: 'mcp__pat__shout', args: { text: hostile } },
        { id: 'm2', name: 'letters', args: { text: hostile } },
        { id: 'm3', name: 'mcp__pat__shout', args: { text: 'a'.repeat(40) } },
      ]),
    );
    for (const r of out.results.slice(0, 2)) {
      expect(r.result.isError).toBe(true);
      expect(r.result.error?.code).toBe('INVALID_ARGS');
      expect(text(r.result)).toContain('must match pattern');
    }
    expect(text(out.results[2].result)).toBe(`shout: ${'a'.repeat(40)}`);
    // The server only ever got the argument that matched.
    expect(serverGot()).toEqual([`shout ${JSON.stringify({ text: 'a'.repeat(40) })}`]);

    // Many hostile calls in flight do not hold up an unrelated batch.
    const flood = h.client.runBatch(
      batch(Array.from({ length: 20 }, (_, i) => ({ id: `f${i}`, name: 'letters', args: { text: `${hostile}${i}` } }))),
    );
    const other = await h.client.runBatch(batch([{ id: 'e', name: 'mcp__pat__echo', args: { text: 'still here' } }]));
    expect(text(other.results[0].result)).toBe('echo: still here');
    expect((await flood).results.every((r) => r.result.error?.code === 'INVALID_ARGS')).toBe(true);
  });
});
