// Code Mode against the real server: sub-calls through the full pipeline, approvals inside a
// program, denials a program catches, and programs that break the sandbox's limits.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditHistories } from '../client/audit';
import { loadHistories } from '../client/history';
import { argsDigest } from '../pipeline/digest';
import type { BatchOutput } from '../pipeline/types';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { batchWorkflowId, codeCallUpdate } from '../workflows/definitions';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually, pendingApproval } from './eventually';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-code-mode-'));
fs.writeFileSync(path.join(dir, 'a.txt'), '1');
fs.writeFileSync(path.join(dir, 'b.txt'), '2');
fs.writeFileSync(path.join(dir, 'c.txt'), '3');
fs.writeFileSync(path.join(dir, 'secret.txt'), '42');
const lineage: { callId: string; parentCallId?: string; idempotencyKey: string }[] = [];

const config = defineConfig({
  tools: [
    defineTool({
      name: 'read_file',
      description: 'Reads a text file.',
      input: z.object({ path: z.string() }),
      execute: ({ path: p }) => fs.readFileSync(path.join(dir, p), 'utf8'),
    }),
    defineTool({
      name: 'guarded',
      description: 'Appends a line to guarded.log, after a person approves.',
      input: z.object({ line: z.string() }),
      approval: 'ask',
      execute: ({ line }) => {
        fs.appendFileSync(path.join(dir, 'guarded.log'), `${line}\n`);
        return `appended ${line}`;
      },
    }),
    codeModeTool({ limits: { cpuMs: 1_000 }, heartbeatTimeoutMs: 3_000 }),
  ],
  preExecute: [
    {
      name: 'no-secrets',
      handler: (ctx) => {
        if (ctx.call.parentCallId)
          lineage.push({
            callId: ctx.call.id,
            parentCallId: ctx.call.parentCallId,
            idempotencyKey: ctx.idempotencyKey,
          });
        return ctx.call.name === 'read_file' && ctx.call.args.path === 'secret.txt'
          ? { kind: 'deny', reason: 'secret.txt is off limits' }
          : undefined;
      },
    },
  ],
  postExecute: [
    {
      name: 'note-reads',
      handler: async (ctx) => {
        if (ctx.call.name === 'read_file' && !ctx.result.isError) ctx.addContext(`read ${ctx.call.args.path}`);
        // The unawaited sub-call's settle outlasts its program's, whatever the load: the batch has
        // committed its own call first and must wait for the sub-call's handler (the test below).
        if (ctx.call.args.line === 'unawaited-1') await new Promise((r) => setTimeout(r, 2_000));
      },
    },
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('code-mode', config);
});
afterAll(() => h?.close());

const runCode = (code: string, description = 'test program', options = {}) =>
  batch([{ name: 'run_code', args: { code, description } }], { options });
const types = (out: BatchOutput) => out.events.map((e) => e.type);
const ofType = (out: BatchOutput, type: string) => out.events.filter((e) => e.type === type);

const pendingInside = (workflowId: string) => pendingApproval(h.client, workflowId);

describe('Code Mode sub-calls', () => {
  it('reads three files through the pipeline and returns their sum', async () => {
    const out = await h.client.runBatch(
      runCode(
        "let sum = 0;\nfor (const f of ['a.txt', 'b.txt', 'c.txt']) sum += Number(await tools.read_file({ path: f }));\nconsole.log('sum is', sum);\nreturn sum;",
      ),
    );
    const r = out.results[0].result;
    expect(r.isError).toBe(false);
    expect(text(r)).toBe('Logs:\nsum is 6\n\nResult:\n6');
    expect(r.meta).toMatchObject({ subCalls: 3 });

    const starts = ofType(out, 'tool/code-dispatch-start');
    const ends = ofType(out, 'tool/code-dispatch');
    expect(starts.map((e) => e.data.subCallId)).toEqual(['call-1:code:0', 'call-1:code:1', 'call-1:code:2']);
    expect(starts[0].data).toEqual({
      rootCallId: 'call-1',
      parentCallId: 'call-1',
      subCallId: 'call-1:code:0',
      name: 'read_file',
      arguments: '{"path":"a.txt"}',
    });
    expect(ends.map((e) => [e.data.subCallId, e.data.isError, e.data.content])).toEqual([
      ['call-1:code:0', false, [{ type: 'text', text: '1' }]],
      ['call-1:code:1', false, [{ type: 'text', text: '2' }]],
      ['call-1:code:2', false, [{ type: 'text', text: '3' }]],
    ]);
    // Each start precedes its own sub-call's end; the batch has exactly one tool/call and tool/result.
    for (const [i, s] of starts.entries()) expect(s.seq).toBeLessThan(ends[i].seq);
    expect(ofType(out, 'tool/call')).toHaveLength(1);
    expect(ofType(out, 'tool/result')).toHaveLength(1);

    // The sub-calls' contexts were held for the run_code result: after it, in sub-call order.
    const resultSeq = ofType(out, 'tool/result')[0].seq;
    const messages = ofType(out, 'user/message');
    expect(messages.map((m) => m.data.content)).toEqual(['read a.txt', 'read b.txt', 'read c.txt']);
    expect(messages.every((m) => m.seq > resultSeq)).toBe(true);
    expect(messages[0].data.source).toBe('post-execute handler note-reads');
    expect(out.messages.map((m) => m.role)).toEqual(['tool', 'user', 'user', 'user']);

    // Pre-execute saw each sub-call with its lineage; its idempotency key derives from the parent's.
    const wf = batchWorkflowId(out.sessionId, out.turn, out.step);
    expect(lineage.filter((l) => l.idempotencyKey.startsWith(wf))).toEqual(
      [0, 1, 2].map((n) => ({
        callId: `call-1:code:${n}`,
        parentCallId: 'call-1',
        idempotencyKey: `${wf}/call-1:code:${n}`,
      })),
    );
  });

  it('rejects a denied sub-call inside the program, which catches it and goes on', async () => {
    const out = await h.client.runBatch(
      runCode(
        "const got = [];\nfor (const p of ['a.txt', 'secret.txt', 'c.txt']) {\n  try { got.push(await tools.read_file({ path: p })); }\n  catch (e) { got.push('denied: ' + e.message); }\n}\nreturn got;",
      ),
    );
    const r = out.results[0].result;
    expect(r.isError).toBe(false);
    expect(text(r)).toBe(`Result:\n${JSON.stringify(['1', 'denied: secret.txt is off limits', '3'], null, 2)}`);
    const ends = ofType(out, 'tool/code-dispatch');
    expect(ends.map((e) => e.data.isError)).toEqual([false, true, false]);
    expect(ends[1].data.error).toEqual({ message: 'secret.txt is off limits', code: 'DENIED' });
    expect(ofType(out, 'tool/result')).toHaveLength(1);
  });

  it('the audit names each sub-call with its tool and arguments, and shows its result', async () => {
    const out = await h.client.runBatch(
      runCode(
        "const a = await tools.read_file({ path: 'a.txt' });\ntry { await tools.read_file({ path: 'secret.txt' }); } catch {}\nreturn a;",
      ),
    );
    const wf = batchWorkflowId(out.sessionId, out.turn, out.step);
    const [audit] = auditHistories(await loadHistories(wf, h.client.temporal)).batches;
    const subCalls = audit.calls.filter((c) => c.callId.includes(':code:'));
    expect(subCalls.map((c) => [c.callId, c.name, c.arguments, c.result?.isError, c.result?.text])).toEqual([
      ['call-1:code:0', 'read_file', '{"path":"a.txt"}', false, '1'],
      ['call-1:code:1', 'read_file', '{"path":"secret.txt"}', true, 'Error: secret.txt is off limits'],
    ]);
    expect(subCalls[1].result?.error).toEqual({ message: 'secret.txt is off limits', code: 'DENIED' });
  });

  it('refuses a description-less program with INVALID_ARGS', async () => {
    const out = await h.client.runBatch(runCode('return 1', '  '));
    const r = out.results[0].result;
    expect(r.error?.code).toBe('INVALID_ARGS');
    expect(r.error?.message).toContain('description must say in a few words what the program does');
  });
});

describe('approval inside a program', () => {
  const program =
    "try {\n  return await tools.guarded({ line: 'LINE' });\n} catch (e) {\n  return 'refused: ' + e.message;\n}";

  it('shows the approval everywhere, with its parent call, and runs the sub-call once approved', async () => {
    const req = runCode(program.replace('LINE', 'approved-1'));
    const handle = await h.client.startBatch(req);
    const pending = await pendingInside(handle.workflowId);
    expect(pending).toMatchObject({
      callId: 'call-1:code:0',
      parentCallId: 'call-1',
      toolName: 'guarded',
      arguments: { line: 'approved-1' },
    });
    const state = await h.client.batchState(handle.workflowId);
    expect(state.status).toBe('awaiting-approval');
    expect(state.calls).toContainEqual(
      expect.objectContaining({
        callId: 'call-1:code:0',
        name: 'guarded',
        parentCallId: 'call-1',
        stage: 'awaiting-approval',
      }),
    );
    // The search attributes list it too, so any approval UI finds it with no worker involved.
    expect(await eventually('the approval in search attributes', () => h.client.findApproval(pending.approvalId))).toBe(
      handle.workflowId,
    );
    await eventually('the approval in the pending list', async () =>
      (await h.client.pendingApprovals()).find((p) => p.approvalId === pending.approvalId),
    );

    expect(await h.client.approve(pending.approvalId, { by: 'tester', workflowId: handle.workflowId })).toEqual({
      approvalId: pending.approvalId,
      outcome: 'allowed-once',
      by: 'tester',
    });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('Result:\nappended approved-1');
    expect(
      fs
        .readFileSync(path.join(dir, 'guarded.log'), 'utf8')
        .split('\n')
        .filter((l) => l === 'approved-1'),
    ).toHaveLength(1);
    expect(types(out)).toEqual([
      'tool/call',
      'tool/code-dispatch-start',
      'approval/asked',
      'approval/decided',
      'tool/code-dispatch',
      'tool/result',
    ]);
    expect(ofType(out, 'approval/asked')[0].data.parentCallId).toBe('call-1');
  });

  it('rejects the sub-call when the person says no', async () => {
    const handle = await h.client.startBatch(runCode(program.replace('LINE', 'rejected-1')));
    const pending = await pendingInside(handle.workflowId);
    await h.client.deny(pending.approvalId, { by: 'tester', reason: 'not today', workflowId: handle.workflowId });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe(
      'Result:\nrefused: the call was rejected by tester: not today. Do not retry it unchanged; ask the user what they want instead.',
    );
    expect(
      fs.existsSync(path.join(dir, 'guarded.log')) &&
        fs.readFileSync(path.join(dir, 'guarded.log'), 'utf8').includes('rejected-1'),
    ).toBe(false);
  });

  it('fails the program with CODE_RUN_FAILED when nobody answers and it does not catch', async () => {
    const out = await h.client.runBatch(
      runCode("await tools.guarded({ line: 'timed-out-1' });\nreturn 'unreachable';", 'test program', {
        approvalTimeoutMs: 1_500,
      }),
    );
    const r = out.results[0].result;
    expect(r.error?.code).toBe('CODE_RUN_FAILED');
    expect(r.error?.message).toMatch(
      /^the program failed: Error: approval was required but not given \(no decision within 2s \(deny timeout\)\); the call did not run\./,
    );
    expect(ofType(out, 'approval/decided')[0].data.outcome).toBe('unavailable');
  });

  it('refuses a sub-call that differs from the recorded one at the same index, or comes out of order', async () => {
    const handle = await h.client.startBatch(runCode(program.replace('LINE', 'forged-1')));
    const pending = await pendingInside(handle.workflowId);
    const refusal = (req: object) =>
      h.client.temporal.workflow
        .getHandle(handle.workflowId)
        .executeUpdate(codeCallUpdate, {
          args: [
            {
              token: `${handle.workflowId}/call-1`,
              parentCallId: 'call-1',
              arguments: '{"path":"a.txt"}',
              argsDigest: argsDigest({ path: 'a.txt' }),
              ...req,
            } as never,
          ],
        })
        .then(
          () => 'accepted',
          (err: Error & { cause?: Error }) => err.cause?.message ?? err.message,
        );
    expect(await refusal({ index: 0, name: 'read_file' })).toMatch(
      /^the program of run_code call call-1 is not deterministic: re-run after a restart, its sub-call #0 is read_file \(arguments sha256:\w+\), but the first run's sub-call #0 was guarded/,
    );
    expect(await refusal({ index: 3, name: 'read_file' })).toBe(
      'sub-call #3 of call-1 arrived before sub-call #1; sub-calls run one at a time, in order',
    );
    expect(await refusal({ index: 1, name: 'read_file', token: 'guess' })).toBe(
      'the sub-call does not carry the token of run_code call call-1',
    );
    expect(await refusal({ index: 1, name: 'run_code' })).toBe(
      'a program cannot call run_code itself; call the other tools directly',
    );
    await h.client.deny(pending.approvalId, { workflowId: handle.workflowId });
    const out = await handle.result();
    // Refused requests left nothing in the batch's record.
    expect(ofType(out, 'tool/code-dispatch-start')).toHaveLength(1);
  });

  it('across an upgrade, a sub-call sent under the old update id and the new one runs once', async () => {
    // Update ids used to name the tool and digest (sluice-code:<parent>:<index>:<name>:<digest>);
    // now they name only the place. A program that started on an older worker and is re-run on a
    // newer one sends the same sub-call under both: it must attach to the one recorded sub-call.
    const handle = await h.client.startBatch(runCode(program.replace('LINE', 'upgraded-1')));
    const pending = await pendingInside(handle.workflowId);
    const args = { line: 'upgraded-1' };
    const oldStyle = h.client.temporal.workflow.getHandle(handle.workflowId).executeUpdate(codeCallUpdate, {
      args: [
        {
          token: `${handle.workflowId}/call-1`,
          parentCallId: 'call-1',
          index: 0,
          name: 'guarded',
          arguments: JSON.stringify(args),
          argsDigest: argsDigest(args),
        },
      ],
      updateId: `sluice-code:call-1:0:guarded:${argsDigest(args)}`,
    });
    await h.client.approve(pending.approvalId, { workflowId: handle.workflowId, argsDigest: pending.argsDigest });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('Result:\nappended upgraded-1');
    expect(await oldStyle).toMatchObject({ subCallId: 'call-1:code:0', isError: false, value: 'appended upgraded-1' });
    expect(ofType(out, 'tool/code-dispatch-start')).toHaveLength(1);
    const lines = fs.readFileSync(path.join(dir, 'guarded.log'), 'utf8').split('\n');
    expect(lines.filter((l) => l === 'upgraded-1')).toHaveLength(1);
  });

  it('a sub-call still running when its program ended is settled before the batch returns', async () => {
    // The program does not await its call: run_code ends while the sub-call waits for a person.
    // Its ask is withdrawn, and the sub-call's update handler is still settling it when the batch
    // has committed every call of its own (the sub-call's post-execute is made slow above); the
    // batch waits for that handler before it returns. The program's end waits until the workflow
    // has taken the call (tools/code-mode/sandbox.ts), so the call is always asked, then withdrawn.
    const out = await h.client.runBatch(
      runCode("tools.guarded({ line: 'unawaited-1' }).catch(() => {});\nreturn 'done';", 'unawaited call'),
    );
    expect(out.results[0].result).toMatchObject({ isError: false });
    const at = (type: string, pred: (d: Record<string, unknown>) => boolean = () => true) =>
      out.events.findIndex((e) => e.type === type && pred(e.data as Record<string, unknown>));
    const programSettled = at('tool/result', (d) => d.callId === 'call-1');
    const dispatched = at('tool/code-dispatch', (d) => d.subCallId === 'call-1:code:0');
    expect(ofType(out, 'approval/decided')[0].data).toMatchObject({
      outcome: 'cancelled',
      reason: 'the program of call-1 ended',
    });
    expect(programSettled).toBeGreaterThanOrEqual(0);
    expect(dispatched).toBeGreaterThan(programSettled);
    expect(out.events[dispatched].data).toMatchObject({ isError: true, error: { code: 'DENIED' } });
    expect(
      fs.existsSync(path.join(dir, 'guarded.log')) &&
        fs.readFileSync(path.join(dir, 'guarded.log'), 'utf8').includes('unawaited-1'),
    ).toBe(false);
  });
});

describe('cancelling the batch', () => {
  it('stops a program that waits on an approval inside it, and the sub-call with it', async () => {
    const handle = await h.client.startBatch(runCode("await tools.guarded({ line: 'cancelled-1' });"));
    await pendingInside(handle.workflowId);
    await h.client.temporal.workflow.getHandle(handle.workflowId).cancel();
    const out = await handle.result();
    expect(out.cancelled).toBe(true);
    expect(ofType(out, 'approval/decided')[0].data.outcome).toBe('cancelled');
    expect(ofType(out, 'tool/code-dispatch')[0].data).toMatchObject({ subCallId: 'call-1:code:0', isError: true });
    expect(out.results[0].result.error).toEqual({
      message: 'run_code was aborted because the batch was cancelled',
      code: 'ABORTED',
    });
    expect(
      fs.existsSync(path.join(dir, 'guarded.log')) &&
        fs.readFileSync(path.join(dir, 'guarded.log'), 'utf8').includes('cancelled-1'),
    ).toBe(false);
  });
});

describe('programs that break the limits end in CODE_RUN_FAILED', () => {
  const cases: [string, string, RegExp][] = [
    ['an endless loop', 'for (;;) {}', /used more than 1000 ms of CPU time \(the limit\) and was stopped/],
    [
      'a memory bomb',
      'const a = [];\nfor (;;) a.push(new Array(100000).fill(a.length));',
      /ran out of memory \(the limit is 64 MB\)/,
    ],
    [
      'deep recursion',
      'const f = (n) => f(n + 1) + 1;\nreturn f(0);',
      /overflowed its stack \(the limit is 512 KB\)[^]*at f \(program:1:\d+\) \(\d+ times\)/,
    ],
    [
      'reaching process through the Function constructor',
      "return this.constructor.constructor('return process')();",
      /ReferenceError: 'process' is not defined/,
    ],
    ['import()', "return await import('fs');", /cannot import modules; call tools.<name>\(args\) instead/],
    [
      'require',
      "return require('child_process').execSync('id').toString();",
      /ReferenceError: 'require' is not defined/,
    ],
    [
      '50 MB of logs',
      "const mb = 'x'.repeat(1 << 20);\nfor (let i = 0; i < 50; i++) console.log(mb);",
      /wrote more than 100000 characters of logs \(the limit\) and was stopped/,
    ],
  ];
  for (const [what, code, message] of cases) {
    it(what, async () => {
      const out = await h.client.runBatch(runCode(code));
      const r = out.results[0].result;
      expect(r.isError).toBe(true);
      expect(r.error?.code).toBe('CODE_RUN_FAILED');
      expect(r.error?.message).toMatch(message);
      expect(text(r).length).toBeLessThan(200_000 + 200);
    });
  }

  it('rejects non-JSON sub-call arguments before anything is dispatched or recorded', async () => {
    const out = await h.client.runBatch(
      runCode(
        "const cyclic = { path: 'a.txt' };\ncyclic.self = cyclic;\nfor (const args of [{ path: () => 1 }, { path: 10n }, cyclic]) {\n  try { await tools.read_file(args); } catch (e) { console.log(e.message); }\n}\nawait tools.read_file({ path: NaN });",
      ),
    );
    const r = out.results[0].result;
    expect(r.error?.code).toBe('CODE_RUN_FAILED');
    expect(r.error?.message).toBe(
      'the program failed: Error: arguments.path is not lossless JSON: NaN has no JSON form\n  at anonymous (program:6:22)',
    );
    expect(text(r)).toContain(
      'Logs:\narguments.path is not lossless JSON: a function has no JSON form\narguments.path is not lossless JSON: a bigint has no JSON form\narguments.self is not lossless JSON: it contains a cycle',
    );
    expect(ofType(out, 'tool/code-dispatch-start')).toHaveLength(0);
    expect(types(out)).toEqual(['tool/call', 'tool/result']);
    expect(r.meta).toMatchObject({ subCalls: 0 });
  });

  it('leaves the worker healthy: a normal batch runs after all of them', async () => {
    const out = await h.client.runBatch(
      batch([
        { name: 'read_file', args: { path: 'b.txt' } },
        { name: 'run_code', args: { code: "return await tools.read_file({ path: 'a.txt' })", description: 'read a' } },
      ]),
    );
    expect(out.results.map((x) => text(x.result))).toEqual(['2', 'Result:\n1']);
  });
});
