// A session's files are kept apart from every other session's by construction
// (stores/session-log-path.ts). A batch run as session `<A>.live` once appended its `tool/call` and
// `tool/result` (its arguments) to A's live file, served on A's event stream; `.claims`,
// `.writers` and `.conflicts` named A's other beside files the same way. Here batches run as
// those sessions through a real worker, and A's event stream, live channel and later batches show
// A's calls only.
import * as fs from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followSessionEvents } from '../client/session-events';
import { defineConfig, defineTool } from '../define/config';
import { fileLiveChannel } from '../stores/live';
import { BESIDE_KINDS, besideLogPath, sessionLogPath } from '../stores/session-log-path';
import { batch, type Harness, startHarness, text } from './harness';

let h: Harness;
beforeAll(async () => {
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes text.',
    input: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: (args: { text: string }) => `echo: ${args.text}`,
  });
  h = await startHarness('session-file-names', defineConfig({ tools: [echo] }));
});
afterAll(async () => {
  await h?.close();
});

/** A's events from its log and live channel, up to and including the tool/result of `callId`. */
async function eventsOfUntil(sessionId: string, callId: string): Promise<string[]> {
  const abort = new AbortController();
  const seen: string[] = [];
  for await (const e of followSessionEvents(h.stateDir, sessionId, { live: true, signal: abort.signal })) {
    seen.push(JSON.stringify(e));
    if (e.type === 'tool/result' && (e.data as { callId?: string }).callId === callId) abort.abort();
  }
  return seen;
}

describe("a session id ending in a beside file's kind", () => {
  it('a batch as <A>.live, .claims, .writers, .conflicts never reaches A’s event stream, live channel or claims', async () => {
    const a = `victim-${process.pid}-${Date.now()}`;
    const first = await h.client.runBatch(
      batch([{ id: 'a1', name: 'echo', args: { text: 'A-one' } }], { sessionId: a }),
    );
    expect(text(first.results[0].result)).toBe('echo: A-one');
    for (const kind of BESIDE_KINDS) {
      const out = await h.client.runBatch(
        batch([{ id: `b-${kind}`, name: 'echo', args: { text: `B-SECRET-${kind}` } }], { sessionId: `${a}.${kind}` }),
      );
      expect(text(out.results[0].result)).toBe(`echo: B-SECRET-${kind}`);
      // B's log is its own file, not one of A's.
      expect(fs.readFileSync(sessionLogPath(h.stateDir, `${a}.${kind}`), 'utf8')).toContain(`B-SECRET-${kind}`);
    }
    // A's next batch is still A's: its claims and writers were not written over.
    const second = await h.client.runBatch(
      batch([{ id: 'a2', name: 'echo', args: { text: 'A-two' } }], { sessionId: a, step: 2, startSeq: first.nextSeq }),
    );
    expect(text(second.results[0].result)).toBe('echo: A-two');
    const stream = await eventsOfUntil(a, 'a2');
    expect(stream.join('\n')).toContain('A-two');
    expect(stream.join('\n')).not.toContain('B-SECRET');
    const live = await fileLiveChannel(h.stateDir).read(a);
    expect(JSON.stringify(live.events)).not.toContain('B-SECRET');
    for (const kind of BESIDE_KINDS) {
      const file = besideLogPath(h.stateDir, a, kind);
      if (fs.existsSync(file)) expect(fs.readFileSync(file, 'utf8')).not.toContain('B-SECRET');
    }
  });

  it('no session log is another session’s beside file, whatever the ids', () => {
    const id = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc
        .tuple(fc.string({ maxLength: 20 }), fc.constantFrom(...BESIDE_KINDS, 'LIVE', 'Claims'))
        .map(([s, k]) => `${s}.${k}`),
    );
    fc.assert(
      fc.property(id, id, (a, b) => {
        const log = sessionLogPath('state', b).toLowerCase();
        for (const kind of BESIDE_KINDS) expect(besideLogPath('state', a, kind).toLowerCase()).not.toBe(log);
      }),
      { numRuns: 2000 },
    );
  });
});
