// Issue 25's parts as a user gets them: the packed tarball installed once, in one fresh app outside
// the checkout, with the MCP SDK (the gateway's optional peer), the worker runtime, the stock
// `@modelcontextprotocol/inspector-cli` and the agent SDKs from npm. The app's one config
// (test/fixtures/gateway-app/gateway.config.js) is loaded by its `sluice worker` and its
// `sluice gateway`: an upstream MCP server (test/fixtures/gateway/upstream.mjs, copied in; it logs
// every call it receives) and decision-only tools for `sluice hook` and the SDK integrations,
// under the Claude Code permission rules of the app's .claude/settings.json. Checked from there:
// - the inspector CLI lists and calls tools through `sluice gateway`, from the app's `.mcp.json`
//   (stdio) and over Streamable HTTP;
// - the MCP SDK's client calls through `sluice gateway --http`, which is killed (SIGKILL) while the
//   call waits for a person and started again: the client resumes the call by itself
//   (Last-Event-ID) and gets the one recorded result, the upstream having run once;
// - an ask answered in the installed inbox (`sluice ui`) in Chromium while the client's call waits;
// - each harness's documented hook payload (test/fixtures/hook/) through `sluice hook`: allow,
//   deny, and an ask approved, denied and timed out;
// - the AI SDK, OpenAI Agents SDK and Claude Agent SDK apps (test/fixtures/gateway-app/*.mjs,
//   importing `sluice/client`) against local fake providers: one call approved, one denied.
// The test process plays the person: it finds pending approvals and decides them through the
// checkout's client, or clicks the inbox page.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Connection } from '@temporalio/client';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { SluiceClient } from '../client/client';
import type { PendingApproval } from '../pipeline/types';
import { launchBrowser } from './chromium';
import { type Proc, startProcess, stopProcesses } from './doc-blocks';
import { eventually, poll } from './eventually';
import { type FreshApp, freshApp, installedVersion, packSluice } from './fresh-app';
import { startFakeAnthropic } from './fixtures/anthropic-fake';
import { type FakeOpenAI, startFakeOpenAI } from './fixtures/openai-fake';

// A build, `npm pack`, an install from the registry and real processes: minutes at a load of 16.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 900_000 });

/** The stock inspector CLI, pinned so that a new release cannot change the test under us. */
const INSPECTOR = '@modelcontextprotocol/inspector-cli@1.0.3';
const FIXTURES = path.join(__dirname, 'fixtures');
const APP_FILES = path.join(FIXTURES, 'gateway-app');

let app: FreshApp;
let sluice: SluiceClient;
let connection: Connection | undefined;
let openai: FakeOpenAI | undefined;
let closeBrowser: (() => Promise<void>) | undefined;
const taskQueue = `gateway-package-${process.pid}-${Date.now()}`;
const env = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), SLUICE_TASK_QUEUE: taskQueue });

/** The same version as the checkout's, so the install comes from npm's cache where it can. */
const pinned = (name: string, as = name) => `${as}@${installedVersion(name)}`;

beforeAll(async () => {
  const tarball = await packSluice(inject('runDir'));
  const files: Record<string, string> = {
    'upstream.mjs': fs.readFileSync(path.join(FIXTURES, 'gateway', 'upstream.mjs'), 'utf8'),
    // As docs/gateway.md shows it, with this test's task queue.
    '.mcp.json': JSON.stringify({
      mcpServers: {
        sluice: {
          command: 'npx',
          args: ['sluice', 'gateway', '--config', 'gateway.config.js', '--task-queue', taskQueue],
        },
      },
    }),
    // The project's Claude Code permission rules, which the worker's config reads.
    '.claude/settings.json': JSON.stringify({
      permissions: {
        allow: ['Bash(npm test:*)'],
        deny: ['Bash(rm -rf:*)'],
        ask: ['Bash(git push:*)', 'Bash(touch:*)'],
      },
    }),
  };
  for (const f of fs.readdirSync(APP_FILES)) files[f] = fs.readFileSync(path.join(APP_FILES, f), 'utf8');
  app = await freshApp({
    tarball,
    name: 'gateway-app',
    with: [
      pinned('@temporalio/worker'),
      pinned('@modelcontextprotocol/sdk'),
      INSPECTOR,
      pinned('zod'),
      `ai@${installedVersion('ai-v7')}`,
      pinned('@ai-sdk/openai-compatible'),
      pinned('@openai/agents'),
      pinned('@anthropic-ai/claude-agent-sdk'),
    ],
    files,
  });
  fs.mkdirSync(path.join(app.dir, 'marks'));
  // inspector-cli 1.0.3 reads its own package.json for its client name: it checks whether
  // `../package.json` exists relative to the working folder, then imports it relative to its own
  // build/ folder (build/index.js, callMethod). With no package.json in the parent of the folder it
  // runs in, it looks in node_modules/@modelcontextprotocol/ and exits ("Cannot find module
  // .../node_modules/@modelcontextprotocol/package.json"). The app is the working folder (its
  // `.mcp.json` names files relative to it), so its parent gets one; nothing else reads it.
  fs.writeFileSync(path.join(path.dirname(app.dir), 'package.json'), JSON.stringify({ name: 'apps', private: true }));
  const worker = sluiceProcess('sluice worker', [
    'worker',
    '--config',
    'gateway.config.js',
    '--task-queue',
    taskQueue,
    '--state-dir',
    'state',
  ]);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  sluice = new SluiceClient({ connection, taskQueue });
  openai = await startFakeOpenAI();
  // Its ready line names the tools (`sluice worker: <error>` is a worker that failed).
  await worker.waitFor('the worker to start', /tool\(s\) on task queue/);
});

afterAll(async () => {
  await closeBrowser?.();
  await stopProcesses();
  openai?.close();
  await connection?.close();
  if (app) await fs.promises.rm(path.dirname(app.dir), { recursive: true, force: true });
});

/** The installed `sluice` CLI run in the app (stopped by afterAll if still running). */
function sluiceProcess(label: string, args: string[]): Proc {
  return startProcess(label, process.execPath, [path.join('node_modules', '.bin', 'sluice'), ...args], {
    cwd: app.dir,
    env: env(),
  });
}

/**
 * `sluice gateway --http` on `port` (0: a free one), once it listens, and the headers that carry
 * its bearer token: the default one, which it keeps in the app's .sluice/gateway-token.
 */
async function startGateway(
  port = 0,
  more: string[] = [],
): Promise<{ proc: Proc; url: string; headers: { authorization: string } }> {
  const proc = sluiceProcess('sluice gateway --http', [
    'gateway',
    '--config',
    'gateway.config.js',
    '--task-queue',
    taskQueue,
    '--http',
    '--port',
    String(port),
    ...more,
  ]);
  await proc.waitFor('the gateway to listen', /on http:\/\/\S+\/mcp/);
  const token = fs.readFileSync(path.join(app.dir, '.sluice', 'gateway-token'), 'utf8').trim();
  return {
    proc,
    url: /on (http:\/\/\S+\/mcp)/.exec(proc.output())![1],
    headers: { authorization: `Bearer ${token}` },
  };
}

function upstreamCalls(): { tool: string; args: Record<string, unknown> }[] {
  const file = path.join(app.dir, 'marks', 'calls.log');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const textOf = (r: CallToolResult) => r.content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n');

/** The first pending approval of this task queue that `match` picks, once there is one. */
function pendingWhere(what: string, match: (p: PendingApproval) => boolean): Promise<PendingApproval> {
  return eventually(`the pending approval of ${what}`, async () => (await sluice.pendingApprovals()).find(match), {
    timeoutMs: 240_000,
  });
}

const pendingIn = (sessionId: string) => pendingWhere(`session ${sessionId}`, (p) => p.sessionId === sessionId);

function decide(p: PendingApproval, decision: 'approve' | 'deny', by: string, reason?: string) {
  return sluice.decide({
    approvalId: p.approvalId,
    workflowId: p.workflowId,
    argsDigest: p.argsDigest,
    decision,
    by,
    ...(reason ? { reason } : {}),
  });
}

let sessions = 0;
const newSession = (what: string) => `${what}-${process.pid}-${Date.now()}-${++sessions}`;

/** Runs the inspector's bin in CLI mode in the app; its stdout is the JSON answer. */
async function inspector(args: string[]): Promise<any> {
  const { stdout } = await app.sh('node', [path.join('node_modules', '.bin', 'mcp-inspector-cli'), '--cli', ...args], {
    env: env(),
    timeoutMs: 300_000,
  });
  // The answer is the JSON document the CLI prints (after any notice of its own).
  return JSON.parse(stdout.slice(stdout.indexOf('{')));
}

describe('the stock inspector CLI drives sluice gateway from the packed tarball', () => {
  it("over stdio, from the app's .mcp.json: lists the upstream's tools and calls one through Sluice", async () => {
    expect(path.relative(path.resolve(__dirname, '..'), app.dir).startsWith('..')).toBe(true);
    const listed = await inspector(['--config', '.mcp.json', '--server', 'sluice', '--method', 'tools/list']);
    const names: string[] = listed.tools.map((t: { name: string }) => t.name);
    expect(names.filter((n) => n.startsWith('mcp__up__')).sort()).toEqual(['mcp__up__echo', 'mcp__up__write_note']);
    expect(listed.tools.find((t: { name: string }) => t.name === 'mcp__up__echo').description).toContain(
      'Says the text back',
    );

    const called = await inspector([
      '--config',
      '.mcp.json',
      '--server',
      'sluice',
      '--method',
      'tools/call',
      '--tool-name',
      'mcp__up__echo',
      '--tool-arg',
      'text=from the inspector',
    ]);
    expect(called.isError).toBeFalsy();
    expect(called.content).toEqual([{ type: 'text', text: 'echo: from the inspector' }]);
    // The call ran as a Sluice batch of the gateway's session, by the app's worker, once.
    expect(String(called._meta['sluice/batch'])).toMatch(/^sluice-batch:gateway-/);
    expect(upstreamCalls().filter((c) => c.args.text === 'from the inspector')).toEqual([
      { tool: 'echo', args: { text: 'from the inspector' } },
    ]);
  });

  it('over Streamable HTTP, against sluice gateway --http', async () => {
    const gateway = await startGateway();
    const header = ['--header', `Authorization: ${gateway.headers.authorization}`];
    const listed = await inspector([gateway.url, '--transport', 'http', ...header, '--method', 'tools/list']);
    expect(listed.tools.map((t: { name: string }) => t.name)).toContain('mcp__up__echo');
    const called = await inspector([
      gateway.url,
      '--transport',
      'http',
      ...header,
      '--method',
      'tools/call',
      '--tool-name',
      'mcp__up__echo',
      '--tool-arg',
      'text=over http',
    ]);
    expect(called.content).toEqual([{ type: 'text', text: 'echo: over http' }]);
    expect(upstreamCalls().filter((c) => c.args.text === 'over http')).toHaveLength(1);
    await gateway.proc.stop();
  });
});

describe("the MCP SDK's client through the installed sluice gateway", () => {
  it('the gateway is killed while the call waits for a person and started again: the client resumes the call by itself and its callTool returns the one recorded result, the upstream having run once', async () => {
    const first = await startGateway();
    // What the client sends: its tools/call requests, and its GETs that resume a stream
    // (Last-Event-ID) with the status each was answered with.
    const posted: { method?: string }[] = [];
    const resumed: { lastEventId: string; status: number }[] = [];
    const seen: typeof fetch = async (input, init) => {
      if (init?.method === 'POST' && typeof init.body === 'string') posted.push(JSON.parse(init.body));
      const res = await fetch(input, init);
      const lastEventId = new Headers(init?.headers).get('last-event-id');
      if (init?.method === 'GET' && lastEventId) resumed.push({ lastEventId, status: res.status });
      return res;
    };
    const client = new Client({ name: 'gateway-package-test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(first.url), {
      fetch: seen,
      requestInit: { headers: first.headers },
      // The SDK's default gives up after two attempts (about 2.5 s); a restart takes longer.
      reconnectionOptions: {
        initialReconnectionDelay: 500,
        maxReconnectionDelay: 2_000,
        reconnectionDelayGrowFactor: 1.5,
        maxRetries: 1_000,
      },
    });
    const errors: string[] = [];
    await client.connect(transport);
    client.onerror = (err) => void errors.push(err.message);
    try {
      const params = { name: 'mcp__up__write_note', arguments: { name: 'killed-1', text: 'once' } };
      const call = client.callTool(params, undefined, { timeout: 590_000 });
      // Awaited below; until then a rejection must not count as unhandled.
      call.catch(() => undefined);
      const pending = await pendingWhere('mcp__up__write_note killed-1', (p) =>
        JSON.stringify(p.arguments).includes('killed-1'),
      );
      expect(pending.workflowId).toContain(`gateway-${transport.sessionId}`);

      first.proc.child.kill('SIGKILL');
      await eventually('the client to see its stream end', () => errors.some((e) => /SSE stream disconnected/.test(e)));
      await eventually('the gateway to exit', () => first.proc.exitCode() !== undefined);

      // A new gateway on the same address; the client finds it by itself with the last event id it saw.
      const second = await startGateway(Number(new URL(first.url).port));
      await eventually(
        'the client to resume its stream at the new gateway',
        () => resumed.some((r) => r.status === 200),
        { timeoutMs: 240_000 },
      );
      // The batch still waits; a person approves, and the resumed stream carries its result.
      await decide(pending, 'approve', 'erin');
      const r = (await call) as CallToolResult;
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(textOf(r)).toBe('wrote killed-1');
      expect(r._meta?.['sluice/batch']).toBe(pending.workflowId);
      expect(posted.filter((m) => m.method === 'tools/call')).toHaveLength(1);
      expect(upstreamCalls().filter((c) => c.tool === 'write_note' && c.args.name === 'killed-1')).toHaveLength(1);
      await second.proc.stop();
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it("an ask is approved in the installed inbox in Chromium while the client's call waits", async () => {
    const gateway = await startGateway(0, ['--approval-timeout', '500']);
    const inbox = sluiceProcess('sluice ui', ['ui', '--inbox-port', '0', '--task-queue', taskQueue]);
    await inbox.waitFor('the inbox to listen', /Approval inbox: http:\/\/\S+/);
    const inboxUrl = /Approval inbox: (http:\/\/\S+)/.exec(inbox.output())![1];
    const launched = await launchBrowser();
    closeBrowser = launched.close;
    const browser: BrowserContext = launched.browser;
    const client = new Client({ name: 'gateway-inbox-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: { headers: gateway.headers } }),
    );
    try {
      let settled = false;
      const call = client
        .callTool(
          { name: 'mcp__up__write_note', arguments: { name: 'inbox-note', text: 'approved in the page' } },
          undefined,
          { timeout: 590_000, resetTimeoutOnProgress: true },
        )
        .finally(() => {
          settled = true;
        });
      // Awaited below; until then a rejection must not count as unhandled.
      call.catch(() => undefined);
      const pending = await pendingWhere('mcp__up__write_note inbox-note', (p) =>
        JSON.stringify(p.arguments).includes('inbox-note'),
      );

      const page = await browser.newPage();
      await page.goto(inboxUrl);
      await page.fill('#approver', 'alice');
      const card = page.locator(`article.card[data-approval-id="${pending.approvalId}"]`);
      await card.waitFor({ timeout: 240_000 });
      expect(await card.getAttribute('data-digest')).toBe(pending.argsDigest);
      expect(await card.locator('h3').textContent()).toBe('mcp__up__write_note');
      // Still waiting: nothing has reached the upstream, and the client has no answer.
      expect(upstreamCalls().some((c) => c.args.name === 'inbox-note')).toBe(false);
      expect(settled).toBe(false);

      await card.locator('button.approve').click();
      await poll(() => card.getAttribute('data-state'), { timeoutMs: 240_000 }).toBe('completed');
      expect(await card.locator('.status').textContent()).toBe('approved by alice');
      const r = (await call) as CallToolResult;
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(textOf(r)).toBe('wrote inbox-note');
      expect(upstreamCalls().filter((c) => c.args.name === 'inbox-note')).toEqual([
        { tool: 'write_note', args: { name: 'inbox-note', text: 'approved in the page' } },
      ]);
      await page.close();
    } finally {
      await client.close().catch(() => undefined);
      await gateway.proc.stop();
      await inbox.stop();
    }
  });
});

interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
  json?: any;
}

/** The installed `sluice hook <dialect>` fed `input` on stdin, as the harness runs it. */
function runHook(dialect: string, input: unknown, args: string[] = []): Promise<HookRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        path.join('node_modules', '.bin', 'sluice'),
        'hook',
        dialect,
        '--task-queue',
        taskQueue,
        '--timeout',
        '300',
        ...args,
      ],
      { cwd: app.dir, env: { ...process.env, ...env() }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      let json: unknown;
      try {
        json = stdout.trim() ? JSON.parse(stdout) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    child.stdin.end(JSON.stringify(input));
  });
}

/** A documented payload (test/fixtures/hook/) with a session of its own and this command. */
function payload(file: string, command: string) {
  const doc = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'hook', file), 'utf8'));
  doc.session_id = newSession(file.replace('.json', ''));
  doc.tool_input.command = command;
  if (doc.tool_use_id !== undefined) doc.tool_use_id = `toolu_${sessions}`;
  return doc;
}

/**
 * One harness's five answers, the hooks run at once: an allow rule, a deny rule, and an ask (an
 * ask rule) approved, denied by a person, and timed out (`--approval-timeout 2`). `decide` is the
 * fixture of the asks (PreToolUse cannot carry an approval in Codex: its PermissionRequest does).
 */
async function fiveAnswers(dialect: string, plain: string, ask: string) {
  const allow = runHook(dialect, payload(plain, 'npm test'));
  const deny = runHook(dialect, payload(plain, 'rm -rf build'));
  const toApprove = payload(ask, 'git push origin approved');
  const toDeny = payload(ask, 'git push origin denied');
  const approved = runHook(dialect, toApprove);
  const denied = runHook(dialect, toDeny);
  const timedOut = runHook(dialect, payload(ask, 'git push origin nobody'), ['--approval-timeout', '2']);
  await decide(await pendingIn(toApprove.session_id), 'approve', 'alice');
  await decide(await pendingIn(toDeny.session_id), 'deny', 'bob', 'no pushes today');
  const answers = {
    allow: await allow,
    deny: await deny,
    approved: await approved,
    denied: await denied,
    timedOut: await timedOut,
  };
  for (const [what, r] of Object.entries(answers)) expect(r.code, `${what}: ${r.stderr}`).toBe(0);
  return answers;
}

describe('sluice hook from the packed tarball: the documented payloads of each harness', () => {
  it('Claude Code PreToolUse: allow, deny, ask approved, denied and timed out', async () => {
    const a = await fiveAnswers('claude', 'claude-pre-tool-use.json', 'claude-pre-tool-use.json');
    const decision = (r: HookRun) => r.json?.hookSpecificOutput;
    expect(decision(a.allow)).toEqual({
      hookEventName: 'PreToolUse',
      permissionDecision: 'allow',
      permissionDecisionReason: 'allowed by Sluice policy',
    });
    expect(decision(a.deny)).toMatchObject({ permissionDecision: 'deny' });
    expect(decision(a.deny).permissionDecisionReason).toMatch(/rm -rf/);
    expect(decision(a.approved)).toEqual({
      hookEventName: 'PreToolUse',
      permissionDecision: 'allow',
      permissionDecisionReason: 'approved in Sluice by alice',
    });
    expect(decision(a.denied)).toMatchObject({ permissionDecision: 'deny' });
    expect(decision(a.denied).permissionDecisionReason).toMatch(/no pushes today/);
    expect(decision(a.timedOut)).toMatchObject({ permissionDecision: 'deny' });
    expect(decision(a.timedOut).permissionDecisionReason).toMatch(/Sluice:/);
  });

  it('Codex PreToolUse (allow, deny) and PermissionRequest (ask approved, denied and timed out)', async () => {
    const a = await fiveAnswers('codex', 'codex-pre-tool-use.json', 'codex-permission-request.json');
    // Codex does not support allow in PreToolUse: no objection is an empty stdout.
    expect(a.allow.stdout).toBe('');
    expect(a.deny.json.hookSpecificOutput).toMatchObject({ hookEventName: 'PreToolUse', permissionDecision: 'deny' });
    expect(a.approved.json).toEqual({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
    expect(a.denied.json.hookSpecificOutput.decision.behavior).toBe('deny');
    expect(a.denied.json.hookSpecificOutput.decision.message).toMatch(/no pushes today/);
    expect(a.timedOut.json.hookSpecificOutput.decision.behavior).toBe('deny');
  });

  it('Gemini CLI BeforeTool: allow, deny, ask approved, denied and timed out', async () => {
    const a = await fiveAnswers('gemini', 'gemini-before-tool.json', 'gemini-before-tool.json');
    expect(a.allow.json).toEqual({ decision: 'allow' });
    expect(a.deny.json.decision).toBe('deny');
    expect(a.deny.json.reason).toMatch(/rm -rf/);
    expect(a.approved.json).toEqual({ decision: 'allow' });
    expect(a.denied.json.decision).toBe('deny');
    expect(a.denied.json.reason).toMatch(/no pushes today/);
    expect(a.timedOut.json.decision).toBe('deny');
  });
});

/** An app script (test/fixtures/gateway-app/) run with node in the app; its last stdout line is JSON. */
function appScript(script: string, args: string[]): { proc: Proc; result: Promise<any> } {
  const proc = startProcess(script, process.execPath, [script, ...args], { cwd: app.dir, env: env() });
  const result = proc.succeeds(540_000).then((out) => {
    const lines = out.trim().split('\n');
    return JSON.parse(lines[lines.length - 1]);
  });
  // Awaited by the test; until then a rejection must not count as unhandled.
  result.catch(() => undefined);
  return { proc, result };
}

/** Runs the approving and the denying app at once; the person approves one and denies the other. */
async function approveOneDenyOne(
  script: string,
  approveArgs: (s: string) => string[],
  denyArgs: (s: string) => string[],
) {
  const yes = newSession(`${script}-approve`);
  const no = newSession(`${script}-deny`);
  const approved = appScript(script, approveArgs(yes));
  const denied = appScript(script, denyArgs(no));
  const p1 = await pendingIn(yes);
  const p2 = await pendingIn(no);
  await decide(p1, 'approve', 'carol');
  await decide(p2, 'deny', 'dan', 'keep that file');
  return { approved: await approved.result, denied: await denied.result, asked: [p1, p2] };
}

describe('the agent SDK integrations, imported from the installed sluice/client', () => {
  it('AI SDK 7 needsApproval: the approved call runs once, the denied one never; the model reads why', async () => {
    const r = await approveOneDenyOne(
      'ai-sdk.mjs',
      (s) => [openai!.baseURL, s, 'a.txt'],
      (s) => [openai!.baseURL, s, 'b.txt'],
    );
    expect(r.asked.map((p) => [p.toolName, p.arguments])).toEqual([
      ['delete_file', { path: 'a.txt' }],
      ['delete_file', { path: 'b.txt' }],
    ]);
    expect(r.approved.answer).toEqual([
      expect.objectContaining({
        type: 'tool-approval-response',
        approved: true,
        reason: 'approved in Sluice by carol',
      }),
    ]);
    expect(r.approved.ran).toEqual(['a.txt']);
    expect(r.approved.text).toBe('final: deleted a.txt');
    expect(r.denied.answer[0]).toMatchObject({ approved: false });
    expect(r.denied.ran).toEqual([]);
    expect(r.denied.text).toContain('keep that file');
  });

  it('OpenAI Agents SDK needsApproval, the run state restored across the interruption: approved runs once, denied never', async () => {
    const r = await approveOneDenyOne(
      'openai-agents.mjs',
      (s) => [openai!.baseURL, s, 'c.txt'],
      (s) => [openai!.baseURL, s, 'd.txt'],
    );
    expect(r.approved.verdicts).toEqual([expect.objectContaining({ allowed: true, by: 'carol' })]);
    expect(r.approved.ran).toEqual(['c.txt']);
    expect(r.approved.finalOutput).toBe('final: deleted c.txt');
    expect(r.denied.verdicts[0].allowed).toBe(false);
    expect(r.denied.ran).toEqual([]);
    expect(String(r.denied.finalOutput)).toContain('keep that file');
  });

  it('Claude Agent SDK canUseTool: the approved Bash call runs, the denied one never; the model reads why', async () => {
    const fake = await startFakeAnthropic();
    try {
      const marks = fs.mkdtempSync(path.join(inject('runDir'), 'claude-package-'));
      const home = (what: string) => fs.mkdtempSync(path.join(inject('runDir'), `claude-home-${what}-`));
      const yes = path.join(marks, 'approved');
      const no = path.join(marks, 'denied');
      const r = await approveOneDenyOne(
        'claude-agent-sdk.mjs',
        (s) => [fake.baseURL, s, `touch ${yes}`, home('yes')],
        (s) => [fake.baseURL, s, `touch ${no}`, home('no')],
      );
      expect(r.asked.map((p) => [p.toolName, p.arguments])).toEqual([
        ['Bash', expect.objectContaining({ command: `touch ${yes}` })],
        ['Bash', expect.objectContaining({ command: `touch ${no}` })],
      ]);
      expect(r.approved.subtype).toBe('success');
      expect(fs.existsSync(yes)).toBe(true);
      expect(fs.existsSync(no)).toBe(false);
      expect(String(r.denied.result)).toContain('keep that file');
    } finally {
      fake.close();
    }
  });
});
