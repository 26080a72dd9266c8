// Inputs that used to hang a batch forever (no error, no deny timeout, runBatch never returning),
// sent the way the security review sent them, against the real server. Each must now end with a
// clear per-call or per-request error, and the batch must finish.
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { BatchState, PendingApproval } from '../pipeline/types';
import { SluiceError } from '../client/client';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { readSessionLog, sessionLogPath } from '../stores/sink';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually, pendingApproval } from './eventually';

const send = defineTool({
  name: 'send',
  description: 'sends a message (asks first)',
  input: z.object({ to: z.string() }),
  approval: 'ask',
  execute: ({ to }) => `sent to ${to}`,
});
const echo = defineTool({
  name: 'echo',
  description: 'returns its arguments',
  input: z.object({}).passthrough(),
  execute: (a) => `${JSON.stringify(a).length} characters`,
});

/** The stock Temporal CLI, run without blocking: the worker that answers it lives in this process. */
function temporal(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      inject('temporalCli'),
      [...args, '--address', inject('temporalAddress'), '--namespace', 'default'],
      (err, stdout, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness('hang-attacks', defineConfig({ tools: [send, echo, codeModeTool()] }));
});
afterAll(() => h?.close());

const pendingOf = (workflowId: string, callId: string): Promise<PendingApproval> =>
  pendingApproval(h.client, workflowId, (p) => p.callId === callId);

describe('a stock-CLI signal with fields of the wrong type', () => {
  it('is refused and recorded; the batch goes on and a valid decision still decides', async () => {
    const handle = await h.client.startBatch(batch([{ id: 'c1', name: 'send', args: { to: 'ada' } }]));
    const p = await pendingOf(handle.workflowId, 'c1');
    for (const input of [
      { approvalId: p.approvalId, decision: 'approve', argsDigest: { toString: 1 } },
      { approvalId: p.approvalId, decision: 'approve', by: ['mallory'] },
      { approvalId: p.approvalId, decision: 'deny', reason: { valueOf: 1 } },
    ]) {
      const sent = await temporal([
        'workflow',
        'signal',
        '--workflow-id',
        handle.workflowId,
        '--name',
        'sluice.decide',
        '--input',
        JSON.stringify(input),
      ]);
      expect(sent.status, sent.stderr).toBe(0);
    }
    // The workflow still answers queries (its tasks do not fail), and the approval is still open.
    const state: BatchState = await eventually('the batch to answer its query with one pending approval', async () => {
      const s = await h.client.batchState(handle.workflowId);
      return s.pending.length === 1 && s;
    });
    expect(state.pending[0].approvalId).toBe(p.approvalId);

    await h.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'ada', argsDigest: p.argsDigest });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('sent to ada');
    const refused = out.events.filter((e) => e.type === 'approval/refused');
    expect(refused.map((e) => [e.data.code, e.data.via])).toEqual([
      ['malformed', 'signal'],
      ['malformed', 'signal'],
      ['malformed', 'signal'],
    ]);
    expect(refused[0].data.problem).toContain('"argsDigest" must be a string (got an object)');
    expect(refused[1].data.problem).toContain('"by" must be a string (got an array)');
  });
});

/** `{"a": [[[…]]]}`, `depth` arrays deep: some 40 K characters for 20,000 levels, far under the 256 K limit. */
const deepArgs = (depth: number) => `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;

describe('arguments nested thousands of levels deep', () => {
  it('get a per-call INVALID_ARGS, first in the batch or right after another call; the others run', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'deep-1', name: 'echo', args: deepArgs(20_000) },
        { id: 'ok-1', name: 'echo', args: { x: [[[1]]] } },
        { id: 'deep-2', name: 'echo', args: deepArgs(10_000) },
        { id: 'ok-2', name: 'echo', args: { y: 1 } },
      ]),
    );
    expect(out.results.map((r) => [r.callId, r.result.error?.code])).toEqual([
      ['deep-1', 'INVALID_ARGS'],
      ['ok-1', undefined],
      ['deep-2', 'INVALID_ARGS'],
      ['ok-2', undefined],
    ]);
    expect(out.results[0].result.error?.message).toMatch(/nests arrays\/objects more than 256 levels deep/);
    expect(text(out.results[1].result)).toBe('13 characters');
  });

  it('inside a Code Mode program, are a catchable error and nothing is dispatched', async () => {
    const code = [
      'let v = 1;',
      'for (let i = 0; i < 20000; i++) v = [v];',
      'let caught = "";',
      'try { await tools.echo({ a: v }); } catch (e) { caught = String(e.message || e); }',
      'const ok = await tools.echo({ b: 2 });',
      'return { caught: caught.length > 0, ok };',
    ].join('\n');
    const out = await h.client.runBatch(batch([{ name: 'run_code', args: { code, description: 'deep arguments' } }]));
    const r = out.results[0].result;
    expect(r.isError, text(r)).toBe(false);
    expect(JSON.parse(text(r).replace(/^Result:\n/, ''))).toEqual({ caught: true, ok: '7 characters' });
    expect(out.events.filter((e) => e.type === 'tool/code-dispatch-start').map((e) => e.data.name)).toEqual(['echo']);
  });
});

describe('session ids', () => {
  it('a session id of 30 emoji runs, and its log file gets a name the file system accepts', async () => {
    const sessionId = '\u{1F600}'.repeat(30);
    const out = await h.client.runBatch({ ...batch([{ name: 'echo', args: { z: 1 } }]), sessionId });
    expect(out.results[0].result.isError).toBe(false);
    const file = sessionLogPath(h.stateDir, sessionId);
    expect(Buffer.byteLength(path.basename(file))).toBeLessThan(255);
    await eventually(
      'the session log to hold every event',
      async () => (await readSessionLog(h.stateDir, sessionId)).length >= out.events.length,
    );
    expect(await readSessionLog(h.stateDir, sessionId)).toEqual(out.events);
  });

  it('an unusable session id is refused at submission with what to do', async () => {
    for (const [sessionId, problem] of [
      ['x'.repeat(201), /sessionId is 201 characters, over the 200-character limit/],
      ['a\u001b[2Kb', /sessionId contains control characters/],
      ['line\nbreak', /sessionId contains control characters/],
      ['lone \ud800 surrogate', /sessionId contains a lone surrogate/],
    ] as const) {
      const err = await h.client.startBatch({ ...batch([{ name: 'echo' }]), sessionId }).then(
        () => undefined,
        (e) => e,
      );
      expect(err).toBeInstanceOf(SluiceError);
      expect(err.message).toMatch(problem);
    }
  });
});

describe('a session log folder that cannot be written', () => {
  it('does not wedge the batch: it completes, and the held events are written once the folder heals', async () => {
    const dir = path.join(h.stateDir, 'sessions');
    fs.mkdirSync(dir, { recursive: true });
    const readOnly = makeReadOnly(dir);
    const req = batch([
      { id: 'c1', name: 'echo', args: { n: 1 } },
      { id: 'c2', name: 'send', args: { to: 'bo' } },
      { id: 'c3', name: 'echo', args: { n: 3 } },
    ]);
    let out;
    try {
      expect(() => fs.writeFileSync(path.join(dir, 'probe'), 'x')).toThrow(/EROFS|EACCES/);
      const handle = await h.client.startBatch(req);
      const p = await pendingOf(handle.workflowId, 'c2');
      await h.client.approve(p.approvalId, { workflowId: handle.workflowId, by: 'ada', argsDigest: p.argsDigest });
      out = await handle.result();
      expect(out.results.map((r) => r.result.isError)).toEqual([false, false, false]);
      expect(fs.existsSync(sessionLogPath(h.stateDir, req.sessionId))).toBe(false);
    } finally {
      readOnly.undo();
    }
    // Retried in the background: the log catches up without another batch.
    await eventually(
      'the session log to catch up in the background',
      async () => (await readSessionLog(h.stateDir, req.sessionId)).length >= out.events.length,
    );
    expect(await readSessionLog(h.stateDir, req.sessionId)).toEqual(out.events);
  });
});

/**
 * Makes a folder read-only for this process: a read-only bind mount when running as root (root
 * ignores permission bits), else the permission bits.
 */
function makeReadOnly(dir: string): { undo(): void } {
  if (process.getuid?.() === 0) {
    execFileSync('mount', ['--bind', '-o', 'ro', dir, dir]);
    return { undo: () => execFileSync('umount', [dir]) };
  }
  fs.chmodSync(dir, 0o555);
  return { undo: () => fs.chmodSync(dir, 0o755) };
}
