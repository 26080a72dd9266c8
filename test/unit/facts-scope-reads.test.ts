// How often a facts-scope call reads the fact store (activities/facts-scope.ts, activities/preflight.ts),
// counted through the real stages with a Cedar policy: a call is always written, the scope read once
// per stage and only when an extension that may judge the call reads facts, and the file store reads
// each of the scope's files once per read. A store that is down still denies a call a fact-reading policy judges.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { stageKit } from '../../activities/kit';
import { preflightStages } from '../../activities/preflight';
import type { WireCallRef } from '../../codec/stages';
import { defineConfig, defineTool, type Guard, mayReadFacts, type Named } from '../../define/config';
import { policyRules } from '../../hooks/policy';
import { shellParserReady } from '../../hooks/shell';
import { type FactStore, fileFactStore } from '../../stores/fact-store';

// Every scope file the fact store reads, as its text is parsed.
const counted = vi.hoisted(() => ({ files: [] as string[] }));
vi.mock('../../stores/jsonl', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../stores/jsonl')>();
  return {
    ...real,
    parseJsonl: (text: string) => {
      counted.files.push(text);
      return real.parseJsonl(text);
    },
  };
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const scratch: string[] = [];
afterAll(() => {
  for (const d of scratch) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratch.push(d);
  return d;
}

/** A Cedar workspace: send_email reads `emailsLastHour` (at most 2 an hour), note reads no fact. */
function workspace(): string {
  const ws = tmp('facts-reads-ws-');
  fs.mkdirSync(path.join(ws, '.cedar'));
  fs.writeFileSync(
    path.join(ws, '.cedar', 'schema.cedarschema'),
    `action "send_email" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { to: String }, session: { emailsLastHour: Long } }
};
action "note" appliesTo {
  principal: Sluice::Session,
  resource: Sluice::Tool,
  context: { args: { text: String } }
};
`,
  );
  fs.writeFileSync(
    path.join(ws, '.cedar', 'facts.json'),
    JSON.stringify({ emailsLastHour: { count: { tool: 'send_email', window: '1h' } } }),
  );
  fs.writeFileSync(
    path.join(ws, '.cedar', 'limits.cedar'),
    `@id("email-limit")
forbid (principal, action == Action::"send_email", resource)
when { context.session.emailsLastHour >= 2 };

permit (principal, action == Action::"send_email", resource);

permit (principal, action == Action::"note", resource);
`,
  );
  return ws;
}

const policy = policyRules({ workspace: workspace() });
const tools = [
  defineTool({
    name: 'send_email',
    description: 'Sends an email.',
    input: z.object({ to: z.string() }),
    execute: async () => 'sent',
  }),
  defineTool({
    name: 'note',
    description: 'Keeps a note.',
    input: z.object({ text: z.string() }),
    execute: async () => 'ok',
  }),
];

/** A store that counts what the stages ask of it, over the file store (or one that is down). */
function counting(down = false) {
  const inner = fileFactStore(tmp('facts-reads-state-'));
  const n = { writes: 0, reads: 0 };
  const fail = async (): Promise<never> => {
    throw new Error('connect ECONNREFUSED');
  };
  const store: FactStore = {
    where: down ? 'the test store' : inner.where,
    write: down ? fail : (...a) => (n.writes++, inner.write(...a)),
    read: down ? fail : (...a) => (n.reads++, inner.read(...a)),
    settle: inner.settle,
    ran: inner.ran,
    prune: inner.prune,
  };
  return { store, n, inner };
}

function call(batch: number, name: string, args: object): WireCallRef {
  const workflowId = `sluice-batch:s${batch}:1:1`;
  return {
    workflowId,
    sessionId: `s${batch}`,
    turn: 1,
    step: 1,
    callId: `c${batch}`,
    name,
    args: args as WireCallRef['args'],
    idempotencyKey: `${workflowId}/c${batch}`,
    state: {},
    record: { calls: [], now: Date.now(), reach: 'batch' },
    factsScope: 'user:alice',
  };
}

beforeEach(async () => {
  await shellParserReady();
  counted.files.length = 0;
});

describe('reading a facts scope', () => {
  it("a call a fact-reading policy judges: one write, one read, each of the scope's files read once; the third over the limit", async () => {
    const { store, n } = counting();
    const stages = preflightStages(stageKit(defineConfig({ tools, preExecute: policy.preExecute }), { facts: store }));
    const gates = [];
    for (const b of [1, 2, 3]) {
      const before = counted.files.length;
      const [r] = await stages.preflightInOrder([call(b, 'send_email', { to: `x${b}` })]);
      gates.push(r.gate.kind);
      // Each of the scope's files read once: one a day on disk.
      const days = fs.readdirSync(path.join(store.where, sha('user:alice')));
      expect(counted.files.length - before).toBe(days.length);
    }
    expect(gates).toEqual(['dispatch', 'dispatch', 'denied']);
    expect(n).toEqual({ writes: 3, reads: 3 });
  });

  it('a call no fact-reading policy judges is written, and counts for others, but the scope is not read', async () => {
    const { store, n, inner } = counting();
    const stages = preflightStages(stageKit(defineConfig({ tools, preExecute: policy.preExecute }), { facts: store }));
    const [r] = await stages.preflightInOrder([call(1, 'note', { text: 'hi' })]);
    expect(r.gate.kind).toBe('dispatch');
    expect(n).toEqual({ writes: 1, reads: 0 });
    expect(counted.files).toEqual([]);
    expect((await inner.read('user:alice', 'another batch', 0)).map((c) => c.tool)).toEqual(['note']);
    // Its policy/decided records no facts folded from the unread scope.
    expect(r.events.find((e) => e.type === 'policy/decided')?.data.facts).toBeUndefined();
  });

  it('the guards: no read for an approved call under the same policy; a guard that does not say whether it reads facts, one', async () => {
    const { store, n } = counting();
    const askedUnder = { digest: policy.digest, decision: 'ask' as const, files: [] };
    const quiet = preflightStages(stageKit(defineConfig({ tools, preExecute: policy.preExecute }), { facts: store }));
    await quiet.guards({ ...call(1, 'send_email', { to: 'x' }), askedUnder });
    expect(n.reads).toBe(0);
    const other = { ...askedUnder, digest: 'sha256:another-policy' };
    await quiet.guards({ ...call(2, 'send_email', { to: 'x' }), askedUnder: other });
    expect(n.reads).toBe(1);
    const guard: Guard = async () => undefined;
    const guarded = defineConfig({ tools, preExecute: policy.preExecute, guards: [guard] });
    await preflightStages(stageKit(guarded, { facts: store })).guards(call(3, 'note', { text: 'x' }));
    expect(n.reads).toBe(2);
  });

  it('a store that is down: the fact-reading policy denies, naming the store; a call no fact reads is still judged', async () => {
    const { store } = counting(true);
    const stages = preflightStages(stageKit(defineConfig({ tools, preExecute: policy.preExecute }), { facts: store }));
    const [email] = await stages.preflightInOrder([call(1, 'send_email', { to: 'x' })]);
    expect(email.gate).toMatchObject({
      kind: 'denied',
      message: expect.stringMatching(/test store could not be reached/),
    });
    const [note] = await stages.preflightInOrder([call(2, 'note', { text: 'x' })]);
    expect(note.gate.kind).toBe('dispatch');
  });

  it('mayReadFacts: any extension that does not say no may read', () => {
    const says = fc.oneof(
      fc.constant(undefined),
      fc.boolean(),
      fc.boolean().map((b) => () => b),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), says)), (exts) => {
        const named: Named<Guard>[] = exts.map(([plain, readsFacts]) =>
          plain
            ? async () => undefined
            : { name: 'g', handler: async () => undefined, ...(readsFacts === undefined ? {} : { readsFacts }) },
        );
        const expected = exts.some(([plain, r]) => plain || r === undefined || (typeof r === 'function' ? r() : r));
        expect(mayReadFacts(named, 'send_email')).toBe(expected);
      }),
    );
  });
});
