// Dogwood enforced (hooks/dogwood-policy.ts) through a real worker on the dev server: a session
// started with `sessionFacts: true` sends one email a turn under a Dogwood limit of three an hour,
// judged by the reference interpreter over the calls the session carried; the fourth is denied and
// every decision is on record in policy/decided with source `dogwood`. And it fails closed: no
// Python to run the reference denies, saying what to install. Needs dogwood-py (test setup
// installs it into .sluice/python); without it this test fails, it never skips.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { ModelRequest } from '../agent/models';
import { scriptedModel } from '../agent/adapters/scripted';
import { startSession } from '../client/session';
import { defineConfig, defineTool } from '../define/config';
import { dogwoodPolicy } from '../hooks';
import { contentText } from '../pipeline/session';
import { readSessionLog } from '../stores/sink';
import { batch, type Harness, startHarness } from './harness';

const SCHEMA = `namespace Agent {
  type SendEmailInput = { to: String };
  entity Gateway;
  entity OAuthUser;
  action "SendEmail" appliesTo {
    principal: [OAuthUser],
    resource: [Gateway],
    context: { input: SendEmailInput }
  };
}
`;
// The call being judged counts itself, as Dogwood counts it: n <= 3 lets three an hour.
const POLICY = `@id("email_hourly_limit")
permit (principal, action == Agent::Action::"SendEmail", resource)
when temporal {
  exists (n: Long). (
    (count for (t: Timepoint). where (
      formerly within 1h (Agent::Action::"SendEmail"::request{} && tp(t))
    )) == n
    && n <= 3
  )
};
`;
const SCOPE = {
  namespace: 'Agent',
  principal: 'Agent::OAuthUser::"alice"',
  resource: 'Agent::Gateway::"mail"',
  actions: { send_email: 'SendEmail' },
  input: 'arguments' as const,
};

function lastUserText(req: ModelRequest): string {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i];
    if (m.role === 'user' && !m.source) return contentText(m.content);
  }
  return '';
}

let h: Harness;
let ws: string;
const sent: string[] = [];

beforeAll(async () => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'dogwood-policy-')));
  fs.mkdirSync(path.join(ws, '.dogwood'));
  fs.writeFileSync(path.join(ws, '.dogwood', 'schema.cedarschema'), SCHEMA);
  fs.writeFileSync(path.join(ws, '.dogwood', 'limits.dw'), POLICY);
  h = await startHarness(
    'dogwood-policy',
    defineConfig({
      tools: [
        defineTool({
          name: 'send_email',
          description: 'Sends an email.',
          input: z.object({ to: z.string() }),
          execute: ({ to }) => {
            sent.push(to);
            return `sent to ${to}`;
          },
        }),
      ],
      preExecute: [dogwoodPolicy({ dir: '.dogwood', workspace: ws, scope: SCOPE })],
      models: {
        scripted: scriptedModel(async (req) => {
          const to = lastUserText(req).replace(/^email:/, '');
          if (req.step === 1) return { calls: [{ id: `e-${req.turn}`, name: 'send_email', args: { to } }] };
          const last = req.messages[req.messages.length - 1];
          return { text: last.role === 'tool' && last.isError ? `not sent to ${to}` : `sent to ${to}` };
        }),
      },
    }),
  );
});
afterAll(async () => {
  await h?.close();
});

describe('a Dogwood policy enforced', () => {
  it('three emails an hour: the fourth of a session is denied, every verdict on record as dogwood', async () => {
    const session = await startSession(h.client, {
      sessionId: `dogwood-${process.pid}-${Date.now()}`,
      model: 'scripted',
      sessionFacts: true,
    });
    const texts: string[] = [];
    for (let i = 1; i <= 4; i++) texts.push((await session.send(`email:p${i}`, { id: `m${i}` })).text);
    expect(texts).toEqual(['sent to p1', 'sent to p2', 'sent to p3', 'not sent to p4']);
    expect(sent).toEqual(['p1', 'p2', 'p3']);
    const decided = (await readSessionLog(h.stateDir, session.sessionId)).filter((e) => e.type === 'policy/decided');
    expect(decided.map((e) => e.data.decision)).toEqual(['allow', 'allow', 'allow', 'deny']);
    for (const e of decided)
      expect(e.data).toMatchObject({
        source: 'dogwood',
        policyId: 'email_hourly_limit',
        file: '.dogwood/limits.dw',
        line: 1,
        digest: expect.stringMatching(/^sha256:/),
      });
  });

  it('a batch that carries only its own calls is denied: the temporal condition reaches past it', async () => {
    const out = await h.client.runBatch(
      batch([{ id: 'b1', name: 'send_email', args: { to: 'q' } }], { options: { approvalChannel: false } }),
    );
    expect(out.results[0].result.error?.code).toBe('DENIED');
    expect(out.results[0].result.error?.message).toMatch(/sessionFacts: true/);
    expect(sent).not.toContain('q');
  });
});

/** Judges one call with `python` as the reference's Python; what it answered and what it recorded. */
async function judgeWith(python: string, timeoutMs?: number) {
  const { handler } = dogwoodPolicy({
    dir: '.dogwood',
    workspace: ws,
    scope: SCOPE,
    ...(timeoutMs ? { timeoutMs } : {}),
  });
  const saved = process.env.SLUICE_PYTHON;
  const events: { type: string; data: Record<string, unknown> }[] = [];
  process.env.SLUICE_PYTHON = python;
  try {
    const answer = await handler({
      call: { id: 'x1', name: 'send_email', args: { to: 'z' }, argsDigest: '' },
      tool: { name: 'send_email', description: '', aliases: [] },
      sessionId: 's',
      turn: 1,
      step: 1,
      workflowId: 'w',
      idempotencyKey: 'k',
      state: {},
      record: { calls: [], now: Date.now(), reach: 'session' },
      addContext: () => {},
      emit: (type, data) => events.push({ type, data }),
    });
    return { answer, events };
  } finally {
    if (saved === undefined) delete process.env.SLUICE_PYTHON;
    else process.env.SLUICE_PYTHON = saved;
  }
}

/** A stand-in for python3: a shell script with `body`. */
function fakePython(name: string, body: string): string {
  const file = path.join(ws, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe('Dogwood fails closed', () => {
  it('no Python to run the reference denies the call, saying what to install', async () => {
    const { answer, events } = await judgeWith(path.join(ws, 'no-python-here'));
    expect(answer).toMatchObject({ kind: 'deny', reason: expect.stringMatching(/pip install dogwood-py==0\.0\.12/) });
    expect(events).toEqual([
      { type: 'policy/decided', data: expect.objectContaining({ decision: 'deny', source: 'dogwood' }) },
    ]);
  });

  it('a reference that crashes denies the call with its exit and what it wrote', async () => {
    const { answer } = await judgeWith(fakePython('crashes', 'echo "Segmentation fault" >&2; exit 139'));
    expect(answer).toMatchObject({ kind: 'deny', reason: expect.stringMatching(/exited 139: Segmentation fault/) });
  });

  it('a reference that never answers is stopped and the call denied, saying how to give it longer', async () => {
    // It never answers at all, so whatever the timeout, it passes first.
    const { answer } = await judgeWith(fakePython('hangs', 'exec sleep 100000'), 500);
    expect(answer).toMatchObject({ kind: 'deny', reason: expect.stringMatching(/no answer within 500 ms.*timeoutMs/) });
  });
});
