// Client tools (`runsOn: 'client'`) on the real dev server: a call waits while no client is
// attached and a client that attaches later runs it; with no client in time it ends
// CLIENT_UNAVAILABLE; a client killed mid-body gives a retry (idempotent) or OUTCOME_UNKNOWN
// (at-most-once); and only the session's own client key can answer: another session's client, a
// process that knows only the session id, or one that polls the task queue and signs with its own
// key, cannot.
import { type ChildProcess, spawn } from 'node:child_process';
import { sign } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ClientKey, createClientKey, saveClientKey, serveClientTools } from '../client/client-tools';
import { sessionHandle, startSession } from '../client/session';
import { FileResultStore } from '../stores/claim-check';
import { defineConfig } from '../define/config';
import { codeModeTool } from '../tools/code-mode';
import { type ClientWait, clientSignedText, clientTaskQueue } from '../pipeline/client-tools';
import { main } from '../cli';
import type { BatchState } from '../pipeline/types';
import { stateQuery } from '../workflows/definitions';
import clientConfig from './fixtures/client-tools.config';
import { clientTools } from './fixtures/client-tools.config';
import { eventually } from './eventually';
import { batch, type Harness, startHarness, text } from './harness';

let h: Harness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Code Mode too: a program's sub-calls reach client tools through the same pipeline.
  h = await startHarness('client-tools', defineConfig({ tools: [...clientConfig.tools, codeModeTool()] }));
  process.env.SLUICE_TEST_DIR = h.stateDir;
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await h?.close();
});

/** A batch of a fresh session whose client is `key`. */
function clientBatch(key: ClientKey, calls: Parameters<typeof batch>[0]) {
  return batch(calls, { options: { client: key.binding } });
}

/** A client of `sessionId` in its own process, which the test may kill with SIGKILL. */
async function childClient(sessionId: string, key: ClientKey): Promise<ChildProcess> {
  const keyFile = path.join(h.stateDir, `${sessionId}.key.json`);
  saveClientKey(keyFile, key);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'fixtures', 'client-tools-client.ts')],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        SLUICE_ADDRESS: inject('temporalAddress'),
        SLUICE_SESSION: sessionId,
        SLUICE_CLIENT_KEY: keyFile,
        SLUICE_TEST_DIR: h.stateDir,
      },
    },
  );
  children.push(child);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('serving')) resolve();
    });
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`the client exited (${code}) before it served:\n${out}`)));
  });
  return child;
}

function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return exited;
}

const marker = (callId: string, attempt: number) => path.join(h.stateDir, `${callId}.${attempt}.started`);

describe('client tools', () => {
  it('a call waits for the user device while no client is attached; a client attaching later runs it', async () => {
    const key = createClientKey();
    const req = clientBatch(key, [{ id: 'n1', name: 'note', args: { text: 'hello' } }]);
    const handle = await h.client.startBatch(req);
    const state = await eventually('the call waiting on the client', async () => {
      const s = (await h.client.temporal.workflow.getHandle(handle.workflowId).query(stateQuery)) as BatchState;
      return s.calls.find((c) => c.callId === 'n1' && c.stage === 'on-client') && s;
    });
    expect(state.status).toBe('running');
    // `sluice approvals` lists the wait from the server alone, as a wait for the device and not a
    // card anyone can decide; the listing may lag the batch a moment (visibility).
    const listing = async () => {
      const lines: string[] = [];
      const args = ['approvals', '--json', '--address', inject('temporalAddress'), '--session', req.sessionId];
      expect(await main(args, (s) => lines.push(s))).toBe(0);
      return JSON.parse(lines.join('\n')) as { pending: unknown[]; clientWaits: ClientWait[] } | unknown[];
    };
    const listed = await eventually('sluice approvals listing the client wait', async () => {
      const l = await listing();
      return !Array.isArray(l) && l.clientWaits.length > 0 && l;
    });
    expect(listed.pending).toEqual([]);
    expect(listed.clientWaits).toEqual([
      expect.objectContaining({ callId: 'n1', name: 'note', sessionId: req.sessionId, workflowId: handle.workflowId }),
    ]);
    const text: string[] = [];
    await main(['approvals', '--address', inject('temporalAddress'), '--session', req.sessionId], (s) => text.push(s));
    expect(text.join('\n')).toContain(`waiting for the user's device: note (call n1, session ${req.sessionId}`);
    const server = await serveClientTools(sessionHandle(h.client, req.sessionId), { tools: clientTools, key });
    try {
      const out = await handle.result();
      const [r] = out.results;
      expect(r.result.isError).toBe(false);
      expect(r.result.value).toEqual({ saw: 'hello', pid: process.pid });
      expect(out.events.map((e) => e.type)).toContain('client/waiting');
      // What the body added with addContext follows the batch, as a worker-side body's does.
      expect(JSON.stringify(out.messages)).toContain("the user's device showed hello");
      // Taken, then ended: the listing comes to show no wait (visibility may lag the batch).
      await eventually('the client wait gone from the listing', async () =>
        (await h.client.approvals.clientWaits({ sessionId: req.sessionId })).length === 0 ? true : undefined,
      );
    } finally {
      await server.stop();
    }
  });

  it('with no client of its own in time the call ends CLIENT_UNAVAILABLE; other clients cannot take it', async () => {
    const key = createClientKey();
    const req = clientBatch(key, [{ id: 'q1', name: 'quick' }]);
    // Another session's client, and a process that knows the session id but not its key.
    const other = createClientKey();
    const otherSession = await serveClientTools(sessionHandle(h.client, `${req.sessionId}-other`), {
      tools: clientTools,
      key: other,
    });
    const sameIdNoKey = await serveClientTools(sessionHandle(h.client, req.sessionId), {
      tools: clientTools,
      key: createClientKey(),
    });
    try {
      const out = await h.client.runBatch(req);
      const [r] = out.results;
      expect(r.result.isError).toBe(true);
      expect(r.result.error?.code).toBe('CLIENT_UNAVAILABLE');
      expect(text(r.result)).toContain('no client of this session took the call within 2s');
    } finally {
      await otherSession.stop();
      await sameIdNoKey.stop();
    }
  });

  it('a session started without a client key ends a client call CLIENT_UNAVAILABLE at once', async () => {
    const out = await h.client.runBatch(batch([{ id: 'x', name: 'note', args: { text: 'x' } }]));
    expect(out.results[0].result.error?.code).toBe('CLIENT_UNAVAILABLE');
    expect(text(out.results[0].result)).toContain('no client attached');
  });

  it("an answer from a poller of the session's task queue signed with another key is refused", async () => {
    const key = createClientKey();
    const req = clientBatch(key, [{ id: 'f1', name: 'note', args: { text: 'real' } }]);
    const rogueKey = createClientKey();
    const rogueSigner = (await import('node:crypto')).createPrivateKey({
      key: rogueKey.privateKey as never,
      format: 'jwk',
    });
    // It knows the task queue (the name is no secret) and claims the session's key id.
    const rogue = await Worker.create({
      connection: h.connection,
      taskQueue: clientTaskQueue(req.sessionId, key.binding.keyId),
      activities: {
        async runClientTool(call: { callId: string }) {
          const { Context } = await import('@temporalio/activity');
          const outcome = JSON.stringify({
            candidate: { content: [{ type: 'text', text: 'forged' }], isError: false },
          });
          const wf = Context.current().info.workflowExecution?.workflowId ?? '';
          const signature = sign(null, Buffer.from(clientSignedText(wf, call.callId, outcome)), rogueSigner);
          return { keyId: key.binding.keyId, outcome, signature: signature.toString('base64url') };
        },
      },
    });
    const running = rogue.run();
    try {
      const out = await h.client.runBatch(req);
      const [r] = out.results;
      expect(r.result.error?.code).toBe('CLIENT_UNVERIFIED');
      expect(text(r.result)).not.toContain('forged');
      expect(out.events.find((e) => e.type === 'client/refused')?.data.callId).toBe('f1');
    } finally {
      rogue.shutdown();
      await running;
    }
  });

  it('`sluice chat --client-tools` is the session client: it serves the note, and keeps its key for --resume', async () => {
    const sessionId = `chat-client-${process.pid}-${Date.now()}`;
    const chat = spawn(
      process.execPath,
      [
        path.join(__dirname, '..', 'bin', 'sluice.js'),
        'chat',
        '--script',
        path.join(__dirname, 'fixtures', 'client-tools-chat.json'),
        '--play',
        '--session',
        sessionId,
        '--client-tools',
        path.join(__dirname, 'fixtures', 'client-tools.config.ts'),
        '--address',
        inject('temporalAddress'),
        '--task-queue',
        h.taskQueue,
        '--state-dir',
        h.stateDir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SLUICE_TEST_DIR: h.stateDir } },
    );
    children.push(chat);
    let out = '';
    chat.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    chat.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => chat.once('exit', resolve));
    expect(out, out).toContain('Client tools served here: note, quick, sync, pay.');
    expect(out).toContain('from the chat');
    expect(code, out).toBe(0);
    const store = new FileResultStore(path.join(h.stateDir, 'results'));
    const transcript = JSON.stringify(await sessionHandle(h.client, sessionId).transcript(store));
    expect(transcript).toContain('"saw":"from the chat"');
    // Only the chat's own key could have answered; it is kept for `sluice chat --resume`.
    const keyFile = path.join(h.stateDir, 'client-keys', `${sessionId}.json`);
    expect(fs.statSync(keyFile).mode & 0o077).toBe(0);
  });

  it('a durable session lists the call waiting on its client, and its turn ends once a client runs it', async () => {
    const key = createClientKey();
    const sessionId = `session-client-${process.pid}-${Date.now()}`;
    const session = await startSession(h.client, {
      sessionId,
      model: `script:${path.join(__dirname, 'fixtures', 'client-tools-chat.json')}`,
      batch: { client: key.binding },
    });
    const turn = session.send('show the note');
    const waiting = await eventually('the session to list its call waiting on the client', async () => {
      const calls = await session.clientCalls();
      return calls.length > 0 && calls;
    });
    expect(waiting).toEqual([{ callId: 'c1', name: 'note' }]);
    const server = await serveClientTools(session, { tools: clientTools, key });
    try {
      expect((await turn).reason).toBe('done');
      expect(await session.clientCalls()).toEqual([]);
    } finally {
      await server.stop();
      await session.cancel();
    }
  });

  it('a Code Mode program calls a client tool: the sub-call runs on the client', async () => {
    const key = createClientKey();
    const code = "const r = await tools.note({ text: 'from code' });\nreturn r.saw;";
    const req = clientBatch(key, [{ id: 'rc', name: 'run_code', args: { code, description: 'calls a client tool' } }]);
    const server = await serveClientTools(sessionHandle(h.client, req.sessionId), { tools: clientTools, key });
    try {
      const out = await h.client.runBatch(req);
      const r = out.results[0].result;
      expect(r.isError, text(r)).toBe(false);
      expect(text(r)).toContain('from code');
      const sub = out.events.find((e) => e.type === 'tool/code-dispatch');
      expect(sub?.data).toMatchObject({ subCallId: 'rc:code:0', isError: false });
      expect(out.events.find((e) => e.type === 'client/waiting')?.data.callId).toBe('rc:code:0');
    } finally {
      await server.stop();
    }
  });

  it('a client killed mid-body: an idempotent body is run again by the client that attaches next', async () => {
    const key = createClientKey();
    const req = clientBatch(key, [{ id: 's1', name: 'sync' }]);
    const handle = await h.client.startBatch(req);
    const child = await childClient(req.sessionId, key);
    await eventually('the first attempt running on the client', () => fs.existsSync(marker('s1', 1)));
    await killed(child);
    const server = await serveClientTools(sessionHandle(h.client, req.sessionId), { tools: clientTools, key });
    try {
      const out = await handle.result();
      expect(out.results[0].result.value).toEqual({ attempt: 2, pid: process.pid });
      expect(fs.existsSync(marker('s1', 2))).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it('a client killed mid-body: an at-most-once body ends OUTCOME_UNKNOWN and is not run again', async () => {
    const key = createClientKey();
    const req = clientBatch(key, [{ id: 'p1', name: 'pay' }]);
    const handle = await h.client.startBatch(req);
    const child = await childClient(req.sessionId, key);
    await eventually('the body running on the client', () => fs.existsSync(marker('p1', 1)));
    await killed(child);
    // A client attached again is there to take a second attempt, were one ever scheduled.
    const server = await serveClientTools(sessionHandle(h.client, req.sessionId), { tools: clientTools, key });
    try {
      const out = await handle.result();
      expect(out.results[0].result.error?.code).toBe('OUTCOME_UNKNOWN');
      expect(fs.existsSync(marker('p1', 2))).toBe(false);
    } finally {
      await server.stop();
    }
  });
});
