// Inputs that used to hang a batch forever (no error, no deny timeout, runBatch never returning),
// sent the way the security review sent them, against the real server. Each must now end with a
// clear per-call or per-request error, and the batch must finish.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { BatchState, PendingApproval } from '../pipeline/types';
import { defineConfig, defineTool } from '../worker/config';
import { batch, startHarness, text, type Harness } from './harness';

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
  h = await startHarness('hang-attacks', defineConfig({ tools: [send, echo] }));
});
afterAll(() => h?.close());

async function pendingOf(workflowId: string, callId: string): Promise<PendingApproval> {
  for (;;) {
    const s = await h.client.batchState(workflowId).catch(() => undefined);
    const p = s?.pending.find((x) => x.callId === callId);
    if (p) return p;
    await new Promise((r) => setTimeout(r, 100));
  }
}

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
    let state: BatchState;
    for (;;) {
      state = await h.client.batchState(handle.workflowId);
      if (state.pending.length === 1) break;
    }
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
