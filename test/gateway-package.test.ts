// `sluice gateway` as a user gets it: the packed tarball installed in a fresh app outside the
// checkout, with the MCP SDK (the gateway's optional peer), the worker runtime and the stock
// `@modelcontextprotocol/inspector-cli` from npm. The app's worker (`sluice worker`) and gateway
// (`sluice gateway`) load the same plain-JavaScript config, in front of an upstream MCP server
// (test/fixtures/gateway/upstream.mjs, copied in; it logs every call it receives). The inspector
// reads the app's `.mcp.json`, written as docs/gateway.md shows it, lists the tools and calls one
// over stdio; then it does the same over Streamable HTTP against `sluice gateway --http`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { type Proc, startProcess, stopProcesses } from './doc-blocks';
import { type FreshApp, freshApp, installedVersion, packSluice } from './fresh-app';

// A build, `npm pack`, an install from the registry and real processes: minutes at a load of 16.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 900_000 });

/** The stock inspector CLI, pinned so that a new release cannot change the test under us. */
const INSPECTOR = '@modelcontextprotocol/inspector-cli@1.0.3';

let app: FreshApp;
let worker: Proc;
const taskQueue = `gateway-package-${process.pid}-${Date.now()}`;
const env = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress') });

const CONFIG = `// The tools of one upstream MCP server, for both the worker and the gateway.
const path = require('node:path');
const { defineConfig } = require('sluice');
const { mcpTools } = require('sluice/tools');

module.exports = async () =>
  defineConfig({
    tools: await mcpTools({
      server: 'up',
      command: process.execPath,
      args: [path.join(__dirname, 'upstream.mjs'), path.join(__dirname, 'marks')],
    }),
  });
`;

function upstreamCalls(): { tool: string; args: Record<string, unknown> }[] {
  const file = path.join(app.dir, 'marks', 'calls.log');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Runs the inspector's bin in CLI mode in the app; its stdout is the JSON answer. */
async function inspector(args: string[]): Promise<any> {
  const { stdout } = await app.sh('node', [path.join('node_modules', '.bin', 'mcp-inspector-cli'), '--cli', ...args], {
    env: env(),
    timeoutMs: 300_000,
  });
  // The answer is the JSON document the CLI prints (after any notice of its own).
  return JSON.parse(stdout.slice(stdout.indexOf('{')));
}

beforeAll(async () => {
  const tarball = await packSluice(inject('runDir'));
  app = await freshApp({
    tarball,
    name: 'gateway-app',
    with: [
      `@temporalio/worker@${installedVersion('@temporalio/worker')}`,
      `@modelcontextprotocol/sdk@${installedVersion('@modelcontextprotocol/sdk')}`,
      INSPECTOR,
    ],
    files: {
      'gateway.config.js': CONFIG,
      'upstream.mjs': fs.readFileSync(path.join(__dirname, 'fixtures', 'gateway', 'upstream.mjs'), 'utf8'),
      // As docs/gateway.md shows it, with this test's task queue.
      '.mcp.json': JSON.stringify({
        mcpServers: {
          sluice: {
            command: 'npx',
            args: ['sluice', 'gateway', '--config', 'gateway.config.js', '--task-queue', taskQueue],
          },
        },
      }),
    },
  });
  fs.mkdirSync(path.join(app.dir, 'marks'));
  // inspector-cli 1.0.3 reads its own package.json for its client name: it checks whether
  // `../package.json` exists relative to the working folder, then imports it relative to its own
  // build/ folder (build/index.js, callMethod). With no package.json in the parent of the folder it
  // runs in, it looks in node_modules/@modelcontextprotocol/ and exits ("Cannot find module
  // .../node_modules/@modelcontextprotocol/package.json"). The app is the working folder (its
  // `.mcp.json` names files relative to it), so its parent gets one; nothing else reads it.
  fs.writeFileSync(path.join(path.dirname(app.dir), 'package.json'), JSON.stringify({ name: 'apps', private: true }));
  worker = startProcess(
    'sluice worker',
    process.execPath,
    [
      path.join('node_modules', '.bin', 'sluice'),
      'worker',
      '--config',
      'gateway.config.js',
      '--task-queue',
      taskQueue,
      '--state-dir',
      'state',
    ],
    { cwd: app.dir, env: env() },
  );
  await worker.waitFor('the worker to start', /sluice worker:/);
});

afterAll(async () => {
  await stopProcesses();
  if (app) await fs.promises.rm(path.dirname(app.dir), { recursive: true, force: true });
});

describe('the stock inspector CLI drives sluice gateway from the packed tarball', () => {
  it("over stdio, from the app's .mcp.json: lists the upstream's tools and calls one through Sluice", async () => {
    expect(path.relative(path.resolve(__dirname, '..'), app.dir).startsWith('..')).toBe(true);
    const listed = await inspector(['--config', '.mcp.json', '--server', 'sluice', '--method', 'tools/list']);
    expect(listed.tools.map((t: { name: string }) => t.name).sort()).toEqual(['mcp__up__echo', 'mcp__up__write_note']);
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
    const gateway = startProcess(
      'sluice gateway --http',
      process.execPath,
      [
        path.join('node_modules', '.bin', 'sluice'),
        'gateway',
        '--config',
        'gateway.config.js',
        '--task-queue',
        taskQueue,
        '--http',
        '--port',
        '0',
      ],
      { cwd: app.dir, env: env() },
    );
    await gateway.waitFor('the gateway to listen', /on http:\/\/\S+\/mcp/);
    const url = /on (http:\/\/\S+\/mcp)/.exec(gateway.output())![1];
    const listed = await inspector([url, '--transport', 'http', '--method', 'tools/list']);
    expect(listed.tools.map((t: { name: string }) => t.name)).toContain('mcp__up__echo');
    const called = await inspector([
      url,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'mcp__up__echo',
      '--tool-arg',
      'text=over http',
    ]);
    expect(called.content).toEqual([{ type: 'text', text: 'echo: over http' }]);
    expect(upstreamCalls().filter((c) => c.args.text === 'over http')).toHaveLength(1);
    await gateway.stop();
  });
});
