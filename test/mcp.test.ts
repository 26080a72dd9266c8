// MCP servers as tool sources, against real servers: @modelcontextprotocol/server-filesystem and
// server-everything from npm over stdio, and a Streamable HTTP server built on the SDK that this
// test starts, kills and restarts (test/fixtures/mcp/http-server.mjs).
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inject } from 'vitest';
import type { BatchOutput } from '../pipeline/types';
import { SluiceClient } from '../client/client';
import { codeModeTool } from '../tools/code-mode';
import { mcpSource, type McpSource } from '../tools/mcp';
import { defineConfig, defineTool, type ToolDefinition } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';
import { eventually, pendingApproval } from './eventually';

const ROOT = path.join(__dirname, '..');
const bin = (pkg: string) => path.join(ROOT, 'node_modules', '@modelcontextprotocol', pkg, 'dist', 'index.js');
const HTTP_SERVER = path.join(__dirname, 'fixtures', 'mcp', 'http-server.mjs');

let ws: string;
let marks: string;
let h: Harness;
let fsSource: McpSource;
let everything: McpSource;
let web: McpSource;
let httpChild: ChildProcess;
let httpPort = 0;
let tools: ToolDefinition[];

async function startHttp(port: number): Promise<number> {
  httpChild = spawn(process.execPath, [HTTP_SERVER, String(port), marks], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    httpChild.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    httpChild.on('exit', (code) => reject(new Error(`the test MCP server exited with ${code}`)));
  });
}
function killHttp(): Promise<void> {
  return new Promise((resolve) => {
    httpChild.removeAllListeners('exit');
    httpChild.once('exit', () => resolve());
    httpChild.kill('SIGKILL');
  });
}
const waitFor = (check: () => boolean, what: string) => eventually(what, check);
const marked = (name: string) => fs.existsSync(path.join(marks, name));

/**
 * Holds a batch until the test says the killed server is listening again: a call after it meets
 * the restarted server, however long the restart takes. Without it, the next call ran as soon as
 * the call in flight failed, and at load 20-30 the new server process took longer to listen than
 * a read-only call's three attempts waited ("cannot connect to MCP server web"; reproduced by delaying
 * the restart 6 s).
 * Not concurrency-safe, so the calls after it wait for it.
 */
const restarted = defineTool({
  name: 'server_restarted',
  description: 'waits for the restarted test MCP server',
  input: z.object({ mark: z.string() }),
  approval: 'auto',
  execute: async ({ mark }) => {
    await eventually(`the server restarted (${mark})`, async () => marked(mark), { timeoutMs: 120_000 });
    return 'restarted';
  },
});

beforeAll(async () => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'mcp-ws-')));
  marks = fs.mkdtempSync(path.join(inject('runDir'), 'mcp-marks-'));
  fs.writeFileSync(path.join(ws, 'hello.txt'), 'hello from the workspace\n');
  fs.mkdirSync(path.join(ws, 'docs'));
  httpPort = await startHttp(0);
  fsSource = mcpSource({ server: 'fs', command: process.execPath, args: [bin('server-filesystem'), ws] });
  everything = mcpSource({
    server: 'everything',
    command: process.execPath,
    args: [bin('server-everything'), 'stdio'],
  });
  web = mcpSource({ server: 'web', url: `http://127.0.0.1:${httpPort}/mcp` });
  tools = [...(await fsSource.tools()), ...(await everything.tools()), ...(await web.tools())];
  h = await startHarness('mcp', defineConfig({ tools: [...tools, codeModeTool(), restarted] }));
});
afterAll(async () => {
  await h?.close();
  await Promise.all([fsSource?.close(), everything?.close(), web?.close()]);
  if (httpChild && httpChild.exitCode === null) await killHttp();
});

const byId = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, r.result]));
const tool = (name: string) => tools.find((t) => t.name === name)!;

describe('mcpTools: discovery', () => {
  it('prefixes names by server and takes defaults from the annotations', () => {
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'mcp__fs__list_directory',
        'mcp__fs__read_text_file',
        'mcp__fs__write_file',
        'mcp__everything__get-tiny-image',
        'mcp__web__slow',
      ]),
    );
    // read-only: concurrency-safe, no approval, retried
    expect(tool('mcp__fs__read_text_file')).toMatchObject({
      approval: 'auto',
      retry: { maximumAttempts: 3 },
      atMostOnce: false,
    });
    expect(tool('mcp__fs__read_text_file').isConcurrencySafe!({})).toBe(true);
    // destructive: asks; idempotent: retried
    expect(tool('mcp__fs__write_file')).toMatchObject({
      approval: 'ask',
      retry: { maximumAttempts: 3 },
      atMostOnce: false,
    });
    expect(tool('mcp__fs__write_file').isConcurrencySafe!({})).toBe(false);
    // not destructive, not idempotent: runs without approval, never run twice (a lost call is an unknown outcome)
    expect(tool('mcp__web__slow')).toMatchObject({
      approval: 'auto',
      retry: { maximumAttempts: 1 },
      atMostOnce: true,
    });
    // the server's JSON Schema, as it is
    expect((tool('mcp__fs__read_text_file').input as { properties: object }).properties).toHaveProperty('path');
  });

  it('overrides per tool win over the annotations', async () => {
    const s = mcpSource({
      server: 'fs2',
      command: process.execPath,
      args: [bin('server-filesystem'), ws],
      tools: { write_file: { approval: 'auto', retry: { maximumAttempts: 1 } }, read_text_file: { enabled: false } },
    });
    try {
      const listed = await s.tools();
      expect(listed.find((t) => t.name === 'mcp__fs2__write_file')).toMatchObject({
        approval: 'auto',
        retry: { maximumAttempts: 1 },
      });
      expect(listed.some((t) => t.name === 'mcp__fs2__read_text_file')).toBe(false);
    } finally {
      await s.close();
    }
  });
});

describe('a batch of MCP calls', () => {
  it('lists, reads, writes after approval, meets a refusal, returns an image, a structured value and links', async () => {
    const handle = await h.client.startBatch(
      batch(
        [
          { id: 'list', name: 'mcp__fs__list_directory', args: { path: ws } },
          { id: 'read', name: 'mcp__fs__read_text_file', args: { path: path.join(ws, 'hello.txt') } },
          {
            id: 'write',
            name: 'mcp__fs__write_file',
            args: { path: path.join(ws, 'docs', 'new.md'), content: '# new' },
          },
          { id: 'outside', name: 'mcp__fs__read_text_file', args: { path: '/etc/hostname' } },
          { id: 'quota', name: 'mcp__web__refuse', args: {} },
          { id: 'image', name: 'mcp__everything__get-tiny-image', args: {} },
          { id: 'weather', name: 'mcp__web__weather', args: { city: 'Lisbon' } },
          { id: 'links', name: 'mcp__everything__get-resource-links', args: { count: 2 } },
          {
            id: 'embedded',
            name: 'mcp__everything__get-resource-reference',
            args: { resourceType: 'Text', resourceId: 1 },
          },
        ],
        { options: { approvalTimeoutMs: 60_000 } },
      ),
    );
    const pending = [await pendingApproval(h.client, handle.workflowId)];
    expect(pending.map((p) => p.callId)).toEqual(['write']);
    expect(fs.existsSync(path.join(ws, 'docs', 'new.md'))).toBe(false);
    await h.client.approve(pending[0].approvalId, { workflowId: handle.workflowId, by: 'test' });
    const out = await handle.result();
    const r = byId(out);

    expect(text(r.list)).toContain('hello.txt');
    expect(text(r.list)).toContain('docs');
    expect(text(r.read)).toContain('hello from the workspace');
    expect(r.write.isError).toBe(false);
    expect(fs.readFileSync(path.join(ws, 'docs', 'new.md'), 'utf8')).toBe('# new');
    expect(r.outside.isError).toBe(true);
    expect(r.outside.error?.code).toBe('MCP_TOOL_ERROR');
    expect(text(r.outside)).toMatch(/outside allowed directories|Access denied/i);
    expect(r.quota.error).toMatchObject({ code: 'MCP_TOOL_ERROR', message: 'the server refuses: quota exceeded' });
    expect(r.image.content.find((b) => b.type === 'image')).toMatchObject({ mimeType: 'image/png' });
    expect(JSON.parse(text(r.weather))).toEqual({ city: 'Lisbon', celsius: 16 });
    expect(text(r.links)).toContain('[resource link: demo://resource/dynamic/');
    expect(r.links.meta).toMatchObject({
      mcp: { server: 'everything', resources: [{ kind: 'link' }, { kind: 'link' }] },
    });
    expect(text(r.embedded)).toContain('[resource demo://resource/dynamic/text/1 (text/plain)]');
    expect(out.events.filter((e) => e.type === 'approval/asked').map((e) => e.data.callId)).toEqual(['write']);
  });

  it('a Code Mode program calls MCP tools', async () => {
    const code = `
      const w = await tools.mcp__web__weather({ city: 'Oslo' });
      const t = await tools.mcp__fs__read_text_file({ path: ${JSON.stringify(path.join(ws, 'hello.txt'))} });
      const s = await tools['mcp__everything__get-structured-content']({ location: 'Chicago' });
      let refused = '';
      try { await tools.mcp__web__refuse({}); } catch (e) { refused = e.message; }
      return { w, t, s, refused };`;
    const out = await h.client.runBatch(
      batch([{ id: 'P', name: 'run_code', args: { code, description: 'weather and a file' } }]),
    );
    const body = text(out.results[0].result);
    expect(body).toContain('"celsius": 14');
    expect(body).toContain('hello from the workspace');
    expect(body).toContain('"conditions": "Light rain / drizzle"');
    expect(body).toContain('the server refuses: quota exceeded');
  });
});

describe('connections', () => {
  it('one connection per server, reused; a killed stdio server is started again on the next call', async () => {
    const before = everything.connection.connects;
    const pid = everything.connection.pid!;
    const first = await h.client.runBatch(batch([{ id: 'a', name: 'mcp__everything__get-sum', args: { a: 1, b: 2 } }]));
    expect(text(first.results[0].result)).toContain('3');
    expect(everything.connection.connects).toBe(before);
    expect(everything.connection.pid).toBe(pid);

    process.kill(pid, 'SIGKILL');
    await waitFor(() => everything.connection.pid === null, 'the dropped connection to be noticed');
    const again = await h.client.runBatch(batch([{ id: 'b', name: 'mcp__everything__get-sum', args: { a: 2, b: 2 } }]));
    expect(text(again.results[0].result)).toContain('4');
    expect(everything.connection.connects).toBe(before + 1);
    expect(everything.connection.pid).not.toBe(pid);
  });

  it('a server killed mid-batch and restarted: the call in flight fails, the next reconnects', async () => {
    const handle = await h.client.startBatch(
      batch([
        { id: 'slow', name: 'mcp__web__slow', args: { ms: 20_000, tag: 'killed' } },
        { id: 'gate', name: 'server_restarted', args: { mark: 'restarted-killed' } },
        { id: 'after', name: 'mcp__web__weather', args: { city: 'Rome' } },
      ]),
    );
    await waitFor(() => marked('started-killed'), 'the slow call to start');
    await killHttp();
    await startHttp(httpPort);
    fs.writeFileSync(path.join(marks, 'restarted-killed'), '');
    const r = byId(await handle.result());
    expect(r.slow.isError).toBe(true);
    expect(text(r.slow)).toMatch(/connection to MCP server web was lost during the call|fetch failed|terminated/);
    expect(marked('finished-killed')).toBe(false);
    expect(JSON.parse(text(r.after))).toEqual({ city: 'Rome', celsius: 14 });
  });

  it("the batch's cancel aborts the MCP call on the server", async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'c', name: 'mcp__web__slow', args: { ms: 30_000, tag: 'cancel' } }]),
    );
    await waitFor(() => marked('started-cancel'), 'the slow call to start');
    await handle.cancel();
    const out = await handle.result();
    expect(out.results[0].result.error?.code).toBe('ABORTED');
    await waitFor(() => marked('aborted-cancel'), 'the server to see the cancellation');
    expect(marked('finished-cancel')).toBe(false);
  });
});

describe('npx sluice worker with a config that discovers MCP tools at start', () => {
  it('lists the tools when the worker starts and runs a batch with them', async () => {
    const taskQueue = `mcp-cli-${process.pid}-${Date.now()}`;
    const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'mcp-cli-'));
    const worker = spawn(
      process.execPath,
      [
        path.join(ROOT, 'bin', 'sluice'),
        'worker',
        '--config',
        path.join(__dirname, 'fixtures', 'mcp.config.ts'),
        '--task-queue',
        taskQueue,
        '--address',
        inject('temporalAddress'),
        '--state-dir',
        stateDir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    worker.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    worker.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    try {
      // npx starts the worker, which starts the MCP servers through npx: slow on a loaded machine.
      await eventually('the worker to start', () => out.includes('sluice worker:') || worker.exitCode !== null, {
        timeoutMs: 120_000,
      });
      expect(out).toContain('sluice worker:');
      const client = new SluiceClient({ connection: h.connection, taskQueue });
      const result = await client.runBatch(
        batch([{ id: 'e', name: 'mcp__everything__echo', args: { message: 'through the CLI worker' } }]),
      );
      expect(text(result.results[0].result)).toContain('through the CLI worker');
    } finally {
      if (worker.exitCode === null) worker.kill('SIGTERM');
      await exited;
    }
  }, 240_000);
});
