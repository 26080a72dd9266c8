// `sluice chat` as a person uses it: the real CLI in its own process, typed to through a pipe,
// against a worker in its own process. Killed mid-approval together with the worker, the chat is
// resumed with --resume: the open approval is asked again, no turn is lost or repeated, each
// body runs once, and the transcript equals an uninterrupted chat's.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sessionHandle } from '../client/session';
import { FileResultStore } from '../stores/claim-check';
import { readSessionLog } from '../stores/sink';
import { eventually } from './eventually';
import { runCli } from './run-cli';
import { spawnWorker, startHarness, type ChildWorker, type Harness } from './harness';
import { asStream } from './stream-provider';

const ROOT = path.join(__dirname, '..');
const CONFIG = path.join(__dirname, 'fixtures', 'session.config.ts');
const SCRIPT = path.join(__dirname, '..', 'examples', 'chat-script.json');
let h: Harness;
let worker: ChildWorker | undefined;

/** The OpenAI key the workers' environment holds (--model openai:…); it must reach no history. */
const SECRET = 'sk-chat-test-secret';
/** What the local OpenAI server was asked, with the key it was sent. */
const requests: { auth: string; body: { messages: { role: string; content: unknown }[] } }[] = [];
let openai: http.Server;

beforeAll(async () => {
  h = await startHarness('chat', { tools: [] }, { autoStart: false });
  openai = await startOpenAi();
});
afterAll(async () => {
  await worker?.kill();
  await h?.close();
  openai?.close();
});

// Every worker has the OpenAI key and address in its environment (a worker start is a Node start
// that loads TypeScript: one for each the tests need, none for the key).
const startWorker = async () => {
  worker = spawnWorker(CONFIG, h.taskQueue, h.stateDir, {
    SLUICE_TEST_DIR: h.stateDir,
    OPENAI_API_KEY: SECRET,
    OPENAI_BASE_URL: `http://127.0.0.1:${(openai.address() as AddressInfo).port}/v1`,
  });
  await worker.ready;
};
const lines = (file: string) =>
  fs.existsSync(path.join(h.stateDir, file))
    ? fs.readFileSync(path.join(h.stateDir, file), 'utf8').trim().split('\n').filter(Boolean)
    : [];

interface Chat {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  type: (line: string) => void;
  exit: Promise<number | null>;
}

function chat(args: string[]): Chat {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin', 'sluice.js'),
      'chat',
      ...args,
      '--address',
      inject('temporalAddress'),
      '--task-queue',
      h.taskQueue,
      '--state-dir',
      h.stateDir,
    ],
    { cwd: ROOT, env: { ...process.env, SLUICE_APPROVER: 'tester' } },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return {
    child,
    output: () => out,
    type: (line) => child.stdin.write(`${line}\n`),
    exit: new Promise((r) => child.on('exit', (code) => r(code))),
  };
}
const shows = (c: Chat, what: string | RegExp) =>
  eventually(
    `the chat to show ${what}`,
    () => (typeof what === 'string' ? c.output().includes(what) : what.test(c.output())),
    { timeoutMs: 60_000 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; it showed:\n${c.output()}`);
  });
const transcriptOf = (sessionId: string) =>
  sessionHandle(h.client, sessionId).transcript(new FileResultStore(path.join(h.stateDir, 'results')));

describe('sluice chat', () => {
  it('a whole conversation through a pipe: text, cards, y/n approval, /end', async () => {
    await startWorker();
    const c = chat(['--script', SCRIPT, '--session', `ref-${process.pid}`]);
    c.type('publish the report');
    await shows(c, 'Approve this call? [y/N]');
    c.type('y');
    await shows(c, 'model: Done: the report is out.');
    c.type('thanks');
    await shows(c, 'model: You are welcome.');
    c.type('/end');
    expect(await c.exit, c.output()).toBe(0);
    const out = c.output();
    expect(out).toContain('model: Noting it, then publishing.');
    expect(out).toContain('✓ note (n1): { "noted": 1 }');
    expect(out).toMatch(/┌ approval [0-9a-f-]{36}\n│ Publish the report/);
    expect(out).toContain('→ allowed-once by tester');
    expect(out).toContain('✓ publish (p1): published the report');
    expect(out).toContain('(the session ended: cancelled)');
    // each line shown once, in the conversation's order
    const order = [
      'you: publish the report',
      'model: Noting',
      '✓ publish (p1)',
      'model: Done',
      'you: thanks',
      'model: You are welcome',
    ];
    const at = order.map((s) => out.indexOf(s));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(out.split('model: Done: the report is out.')).toHaveLength(2);
  }, 120_000);

  it('chat and worker killed at an approval: --resume asks it again, nothing lost or run twice', async () => {
    const ref = `ref-${process.pid}`;
    const sessionId = `crash-${process.pid}`;
    const c = chat(['--script', SCRIPT, '--session', sessionId]);
    c.type('publish the report');
    await shows(c, 'Approve this call? [y/N]');
    const approvalId = /┌ approval ([0-9a-f-]{36})/.exec(c.output())![1];
    c.child.kill('SIGKILL');
    await c.exit;
    await worker!.kill('SIGKILL');
    worker = undefined;

    // with every worker down the resumed chat waits; the worker comes back
    const r = chat(['--resume', sessionId]);
    await shows(r, 'waiting for a worker');
    await startWorker();
    await shows(r, `Approve this call? [y/N]`);
    expect(r.output()).toContain(`┌ approval ${approvalId}`); // the same ask, not a new one
    expect(r.output()).toContain('you: publish the report'); // the turn it belongs to, recapped

    // resumed again with the worker up: the turn so far is recapped in order, then its open card
    r.child.kill('SIGKILL');
    await r.exit;
    const rb = chat(['--resume', sessionId]);
    await shows(rb, 'Approve this call? [y/N]');
    const seen = rb.output();
    const at = ['you: publish the report', 'model: Noting it, then publishing.', `┌ approval ${approvalId}`].map((l) =>
      seen.indexOf(l),
    );
    expect(
      at.every((i) => i >= 0),
      seen,
    ).toBe(true);
    expect(
      [...at].sort((a, b) => a - b),
      seen,
    ).toEqual(at);
    rb.type('y');
    await shows(rb, 'model: Done: the report is out.');

    // killed again between turns: the next resume just goes on
    rb.child.kill('SIGKILL');
    await rb.exit;
    const r2 = chat(['--resume', sessionId]);
    await shows(r2, /Resumed session crash-\d+: turn 1, idle/);
    r2.type('thanks');
    await shows(r2, 'model: You are welcome.');
    r2.type('/quit');
    expect(await r2.exit, r2.output()).toBe(0);
    expect(r2.output()).toContain(`Resume it with: npx sluice chat --resume ${sessionId}`);

    expect(await transcriptOf(sessionId)).toEqual(await transcriptOf(ref));
    const bodies = (id: string) => lines('bodies.log').filter((l) => l.includes(id));
    expect(bodies(sessionId)).toHaveLength(2); // note once, publish once
    expect(bodies(sessionId).filter((l) => l.startsWith('publish'))).toHaveLength(1);
    const events = await readSessionLog(h.stateDir, sessionId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'session/user')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'approval/decided').map((e) => e.data.outcome)).toEqual(['allowed-once']);
    await sessionHandle(h.client, sessionId).cancel();
  }, 360_000);

  it('--model openai:<model>: the real openai client in the worker, key from its environment only', async () => {
    if (!worker) await startWorker(); // this test run alone
    const sessionId = `openai-${process.pid}`;
    const c = chat(['--model', 'openai:gpt-test', '--session', sessionId]);
    c.type('publish the plan');
    await shows(c, 'Approve this call? [y/N]');
    c.type('y');
    await shows(c, 'model: Published: published the plan');
    c.type('/end');
    expect(await c.exit, c.output()).toBe(0);
    expect(c.output()).toContain('model: I will publish the plan.');
    expect(c.output()).toContain('✓ publish (call_1): published the plan');
    expect(requests).toHaveLength(2);
    expect(requests.every((r) => r.auth === `Bearer ${SECRET}`)).toBe(true);
    expect(requests[1].body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    // every payload of the session's history as text: the key is in none of them
    const history = payloadText(await sessionHandle(h.client, sessionId).workflow.fetchHistory());
    expect(history).toContain('publish the plan'); // the decoding works: the user's message is there
    expect(history).not.toContain(SECRET);
    expect(c.output()).not.toContain(SECRET);
  }, 240_000);

  it('usage problems and a session that does not exist are told plainly', async () => {
    // The usage problems through the CLI's function in this process (they are found before it
    // reads a line); the missing session through the process, whose exit status is what a script reads.
    const none = await runCli(['chat']);
    expect(none.code).toBe(2);
    expect(none.output).toContain('chat needs one of --script FILE');
    const missing = chat(['--resume', 'no-such-session']);
    expect(await missing.exit).toBe(1);
    expect(missing.output()).toContain('there is no session no-such-session on this server');
    const bad = await runCli(['chat', '--script', path.join(__dirname, 'fixtures', 'no-such-script.json')]);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(/no-such-script\.json is not readable JSON \(ENOENT\)/);
    // A CLI process loads the CLI from a cold start: a minute is not too long on a machine at
    // load 16 (a clean-clone run there timed out at 60 s).
  }, 180_000);
});

/** Every byte string in a history (payload data), decoded as UTF-8 and joined. */
function payloadText(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value)) return value.map(payloadText).join('\n');
  if (value && typeof value === 'object') return Object.values(value).map(payloadText).join('\n');
  return typeof value === 'string' ? value : '';
}

/** A local server speaking OpenAI's chat completions: a tool call first, then the answer. */
async function startOpenAi(): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw);
      requests.push({ auth: String(req.headers.authorization), body });
      const tool = body.messages.find((m: { role: string }) => m.role === 'tool');
      const message = tool
        ? { role: 'assistant', content: `Published: ${tool.content}`, refusal: null }
        : {
            role: 'assistant',
            content: 'I will publish the plan.',
            refusal: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'publish', arguments: '{"what":"the plan"}' } },
            ],
          };
      const answer = {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: body.model,
        choices: [{ index: 0, message, finish_reason: tool ? 'stop' : 'tool_calls', logprobs: null }],
        usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 },
      };
      // The adapter streams: the same answer in SSE.
      res.setHeader('content-type', body.stream ? 'text/event-stream' : 'application/json');
      res.end(body.stream ? asStream('/v1/chat/completions', answer) : JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return server;
}
