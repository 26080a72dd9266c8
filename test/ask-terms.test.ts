// One ask, every view: what a pre-execute handler's ask says (AskTerms: its reason, the policy it
// was raised under) reaches the pending approval as `sluice approvals` lists it, the approvers'
// notice and the `approval/asked` event, each term by the one list of them (pipeline/ask.ts), so a
// term added to AskTerms is checked here too, end to end through a real worker.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK_TERMS, type ApprovalNotice } from '../pipeline/ask';
import type { AskTerms, PendingApproval } from '../pipeline/types';
import { defineConfig } from '../define/config';
import { batch, startHarness, type Harness } from './harness';
import { deployTool } from './fixtures/deploy-tool';

/** Every term, set: the compiler asks for a value here when AskTerms gains a field. */
const terms: Required<AskTerms> = {
  reason: 'deploys to prod are looked at by a person',
  policy: {
    digest: `sha256:${'ab'.repeat(32)}`,
    decision: 'ask',
    rule: { source: 'claude', file: '.claude/settings.json', line: 7, text: 'Bash(deploy:*)' },
    files: [{ source: 'claude', file: '.claude/settings.json', digest: `sha256:${'cd'.repeat(32)}` }],
  },
  facts: { deploysToday: 3, testsFailedThisTurn: false },
  shadow: { decision: 'deny', file: '.cedar-next/deploy.cedar', line: 2, rule: 'forbid (…)', policyId: 'no-friday' },
};

let h: Harness;
let server: http.Server;
const notices: ApprovalNotice[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      notices.push(JSON.parse(body) as ApprovalNotice);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  h = await startHarness(
    'ask-terms',
    defineConfig({
      tools: [deployTool({ approval: undefined, approvalTimeoutMs: 120_000 })],
      preExecute: [{ name: 'deploys ask', handler: () => ({ kind: 'ask' as const, ...terms }) }],
      notifiers: [{ kind: 'webhook', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` }],
    }),
  );
});
afterAll(async () => {
  await h?.close();
  server?.close();
});

/** Polls a read until it finds what it waits for (a meeting point, never a timing margin). */
async function until<T>(read: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const found = await read();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const termsOf = (view: object) => Object.fromEntries(ASK_TERMS.map((k) => [k, (view as Record<string, unknown>)[k]]));

describe('the terms of an ask', () => {
  it("a handler's reason and policy reach the listed pending approval, the notice and approval/asked", async () => {
    const handle = await h.client.startBatch(batch([{ id: 'd', name: 'deploy', args: { env: 'prod' } }]));
    const inMemo: PendingApproval = await until(async () =>
      (await h.client.readApprovals(handle.workflowId)).pending.find((p) => p.callId === 'd'),
    );
    const listed = await until(async () =>
      (await h.client.approvals.list()).find((p) => p.approvalId === inMemo.approvalId),
    );
    const notice = await until(() => notices.find((n) => n.approvalId === inMemo.approvalId && n.kind === 'asked'));
    await h.client.approvals.deny(inMemo.approvalId, {
      workflowId: handle.workflowId,
      argsDigest: inMemo.argsDigest,
      by: 'reviewer',
    });
    const out = await handle.result();
    const asked = out.events.find((e) => e.type === 'approval/asked' && e.data.callId === 'd')!.data;

    expect(ASK_TERMS.length).toBe(Object.keys(terms).length);
    for (const view of [inMemo, listed, notice, asked]) expect(termsOf(view)).toEqual(terms);
    // The event keeps the shape 1.0 recorded, which `sluice audit` and `export` read.
    expect(asked).toMatchObject({ id: inMemo.approvalId, toolName: 'deploy', argsDigest: inMemo.argsDigest });
    expect(out.results[0].result.isError).toBe(true);
  });
});
