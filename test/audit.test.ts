// `sluice audit` reads what happened from workflow histories alone: hooks' gates, approvals with
// who and when, body retries with their failures, post-execute rewrites, final results — and the
// session events it rebuilds equal the JSONL session log the worker wrote.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditHistories, type SessionAudit } from '../client/audit';
import { readHistoryFile } from '../client/history';
import { renderAudit } from '../client/render';
import type { BatchOutput } from '../pipeline/types';
import demoConfig from '../sluice.config';
import type { StageContext } from '../define/config';
import { readSessionLog } from '../stores/sink';
import { sessionLogPath } from '../stores/session-log-path';
import type { SessionLogCheck } from '../cli/audit';
import { startHarness, type Harness } from './harness';
import { pendingApproval } from './eventually';
import { runCli as cli } from './run-cli';

const FIXTURE = path.join(__dirname, 'fixtures', 'histories', '1.0.0', 'mixed-batch.json');

let h: Harness;
beforeAll(async () => {
  // The demo's tools and policy, plus a pre-execute handler that records hook events as the
  // command-hook dialects do, so the audit must place them under the right call and stage.
  const hookLike = (ctx: StageContext) => {
    ctx.emit('hook/invoked', { turn: ctx.turn, point: 'pre-execute', dialect: 'test', handlerId: 'audit-hook' });
    ctx.emit('hook/result', {
      turn: ctx.turn,
      point: 'pre-execute',
      handlerId: 'audit-hook',
      decision: 'allow',
      durationMs: 1,
    });
  };
  h = await startHarness('audit', { ...demoConfig, preExecute: [...(demoConfig.preExecute ?? []), hookLike] });
});
afterAll(() => h?.close());

describe('audit', () => {
  it('tells the story of the recorded batch: gates, approval, retry, rewrite, results', async () => {
    const audit = auditHistories([readHistoryFile(FIXTURE)]);
    const [b] = audit.batches;
    expect(b).toMatchObject({
      workflowId: 'sluice-batch:fixture-mixed:1:1',
      sessionId: 'fixture-mixed',
      status: 'completed',
    });
    const call = (id: string) => b.calls.find((c) => c.callId === id)!;
    expect(b.calls.map((c) => [c.callId, c.preExecute?.gate, c.result?.isError])).toEqual([
      ['weather', 'allow', false],
      ['delete', 'deny', true],
      ['email', 'ask', false],
      ['quote', 'allow', false],
      ['customer', 'allow', false],
    ]);
    expect(call('delete').body).toBeUndefined();
    expect(call('delete').result?.error?.code).toBe('DENIED');
    expect(call('email').approval).toMatchObject({
      outcome: 'allowed-once',
      by: 'fixture-approver',
      decisionReason: 'recorded fixture',
    });
    expect(call('email').approval!.latencyMs).toBe(
      Date.parse(call('email').approval!.decidedAt!) - Date.parse(call('email').approval!.askedAt!),
    );
    expect(call('email').guards?.gate).toBe('allow');
    expect(call('email').result?.card?.title).toBe('Email sent to ada@example.com');
    expect(call('quote').body).toMatchObject({
      attempts: 2,
      outcome: 'completed',
      failures: [{ attempt: 1, message: 'fetch_quote failed: upstream quote service timed out' }],
    });
    expect(call('customer').settle?.rewritten).toBe(true);
    expect(call('customer').result?.text).toContain('[REDACTED]');
    expect(call('weather').settle?.rewritten).toBe(false);
    expect(b.decisions).toEqual([
      expect.objectContaining({
        via: 'update',
        decision: 'approve',
        by: 'fixture-approver',
        result: 'applied',
        outcome: 'allowed-once',
      }),
    ]);
    expect(b.contexts).toEqual([
      { source: 'post-execute handler redactSecrets', content: expect.stringContaining('redacted') },
    ]);

    const printed = await cli(['audit', FIXTURE]);
    expect(printed.code).toBe(0);
    expect(printed.output).toBe(renderAudit(audit));
    for (const line of [
      'pre-execute   deny [DENIED]: deleting files is not allowed in this workspace',
      'allowed-once by fixture-approver — recorded fixture at',
      'body          completed on attempt 2',
      'attempt 1 failed: fetch_quote failed: upstream quote service timed out [SluiceToolBodyError]',
      'post-execute  rewrote the result: …le.com", "apiKey": "sk-live-7f3a9c2e1b" } → …le.com", "apiKey": "[REDACTED]" }',
      'result        ✓ sent to ada@example.com (message id sluice-batch:fixture-mixed:1:1/email)   [card: Email sent to ada@example.com]',
    ]) {
      expect(printed.output).toContain(line);
    }
  });

  it('a session audited from the server rebuilds exactly the JSONL session log', async () => {
    const sessionId = `audit-${process.pid}-${Date.now()}`;
    const first = await h.client.startBatch({
      sessionId,
      turn: 1,
      step: 1,
      calls: [
        { id: 'w', name: 'get_weather', arguments: { city: 'Oslo' } },
        { id: 'e', name: 'send_email', arguments: { to: 'ada@example.com', subject: 's', body: 'b' } },
        { id: 'q', name: 'fetch_quote', arguments: { symbol: 'ABC' } },
      ],
    });
    const p = await pendingApproval(h.client, first.workflowId);
    // A refused decision first: the audit must show it, and the log must hold its event.
    await expect(
      h.client.approve(p.approvalId, { workflowId: first.workflowId, by: 'mallory', argsDigest: 'sha256:bogus' }),
    ).rejects.toThrow(/decision refused/);
    await h.client.approve(p.approvalId, {
      workflowId: first.workflowId,
      by: 'auditor-test',
      argsDigest: p.argsDigest,
    });
    const out1: BatchOutput = await first.result();
    const out2 = await h.client.runBatch({
      sessionId,
      turn: 2,
      step: 1,
      startSeq: out1.nextSeq,
      state: out1.state,
      calls: [{ id: 'c', name: 'lookup_customer', arguments: { id: '7' } }],
    });
    expect(out2.nextSeq).toBeGreaterThan(out1.nextSeq);

    const r = await cli(['audit', sessionId, '--json', '--address', inject('temporalAddress')]);
    expect(r.code, r.output).toBe(0);
    const audit: SessionAudit = JSON.parse(r.output);
    expect(audit.batches.map((b) => b.workflowId)).toEqual([first.workflowId, `sluice-batch:${sessionId}:2:1`]);
    expect(audit.events).toEqual(await readSessionLog(h.stateDir, sessionId));
    expect(audit.events.map((e) => e.seq)).toEqual([...Array(out2.nextSeq).keys()]);

    const decisions = audit.batches[0].decisions.map((d) => [d.by, d.result]);
    expect(decisions).toEqual([
      ['mallory', 'refused'],
      ['auditor-test', 'applied'],
    ]);
    expect(audit.batches[0].calls.find((c) => c.callId === 'q')!.body!.attempts).toBe(2);
    expect(
      audit.batches[0].calls.map((c) => c.preExecute!.emitted.map((e) => `${e.type}:${e.data.handlerId}`)),
    ).toEqual([
      ['hook/invoked:audit-hook', 'hook/result:audit-hook'],
      ['hook/invoked:audit-hook', 'hook/result:audit-hook'],
      ['hook/invoked:audit-hook', 'hook/result:audit-hook'],
    ]);
    const printed = await cli(['audit', first.workflowId, '--address', inject('temporalAddress')]);
    expect(printed.output).toContain(
      'hook/result {"turn":1,"point":"pre-execute","handlerId":"audit-hook","decision":"allow","durationMs":1}',
    );
    expect(audit.batches[1].calls[0].settle?.rewritten).toBe(true);
  });

  it('a session log checked against the batches says what each difference means', async () => {
    const sessionId = `audit-log-${process.pid}-${Date.now()}`;
    const out = await h.client.runBatch({
      sessionId,
      turn: 1,
      step: 1,
      calls: [
        { id: 'w', name: 'get_weather', arguments: { city: 'Oslo' } },
        { id: 'v', name: 'get_weather', arguments: { city: 'Rome' } },
      ],
    });
    expect(out.nextSeq).toBeGreaterThanOrEqual(3);
    const audit = (...more: string[]) =>
      cli(['audit', sessionId, '--state-dir', h.stateDir, '--address', inject('temporalAddress'), ...more]);
    expect((await audit()).output).toContain(`${out.nextSeq} event(s), every event of the completed batches in it`);
    // As the log reads after a worker was killed mid-attempt (seq 0 written first by the lost
    // attempt, 2 ms earlier), plus an event changed by hand and one lost.
    const file = sessionLogPath(h.stateDir, sessionId);
    const events = (await readSessionLog(h.stateDir, sessionId)).map((e) =>
      e.seq === 0
        ? { ...e, time: new Date(Date.parse(e.time) - 2).toISOString() }
        : e.seq === 1
          ? { ...e, data: { ...e.data, forged: true } }
          : e,
    );
    fs.writeFileSync(
      file,
      events
        .filter((e) => e.seq !== 2)
        .map((e) => `${JSON.stringify(e)}\n`)
        .join(''),
    );
    const r = await audit();
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain("seqs 0 differ from the batches' events in their time only (the same event");
    expect(r.output).toContain('nothing to do');
    expect(r.output).toContain("seqs 1 differ from the batches' events in what they say (the history is the record");
    expect(r.output).toContain('missing seqs 2 that the batches recorded');
    const json = JSON.parse((await audit('--json')).output) as { logs: SessionLogCheck[] };
    expect(json.logs[0]).toMatchObject({ retimed: [0], differing: [1], missing: [2] });
  });

  it('an unknown target says what to do', async () => {
    const r = await cli(['audit', 'no-such-session-or-batch', '--address', inject('temporalAddress')]);
    expect(r.code).toBe(1);
    expect(r.output).toContain('no workflow no-such-session-or-batch and no batch of a session');
  });
});
