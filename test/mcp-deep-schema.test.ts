// A hostile MCP server must not stop the worker: its tool `deep` has an input schema nested 2,000
// levels (70 KB), which overflowed the stack of a recursive schema walk outside the per-tool
// guard ("sluice worker: Maximum call stack size exceeded", naming neither server nor tool). Now
// that tool is left out with a warning naming both, and its good neighbour `echo` serves: through
// mcpSource, through a real `sluice worker` process (with and without `protect: false`), and
// through `sluice gateway`, which lists the same config's tools.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { SluiceClient } from '../client/client';
import { mcpSource } from '../tools/mcp';
import { eventually } from './eventually';
import { batch, type Harness, startHarness, text } from './harness';
import { defineConfig } from '../define/config';

vi.setConfig({ testTimeout: 240_000 });

const ROOT = path.join(__dirname, '..');
const SERVER = path.join(__dirname, 'fixtures', 'mcp', 'deep-schema-server.mjs');
const CONFIG = path.join(__dirname, 'fixtures', 'mcp-deep.config.ts');
const LEFT_OUT =
  /mcpTools\(hostile\): deep was left out: tool mcp__hostile__deep: its JSON Schema nests .* more than 256 levels deep/;

// The in-process worker of this file serves nothing of its own: it gives the run's client a connection.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('mcp-deep', defineConfig({ tools: [] }));
});
afterAll(async () => {
  await h?.close();
});

describe('an MCP tool whose input schema is 2,000 levels deep', () => {
  for (const protect of [undefined, false] as const) {
    it(`is left out with a warning, and the good tool is listed (protect: ${protect ?? 'default'})`, async () => {
      const source = mcpSource({
        server: 'hostile',
        command: process.execPath,
        args: [SERVER],
        ...(protect === false ? { protect } : {}),
      });
      try {
        const tools = await source.tools();
        expect(tools.map((t) => t.name)).toEqual(['mcp__hostile__echo']);
        expect(source.warnings).toHaveLength(1);
        expect(`mcpTools(hostile): ${source.warnings[0]}`).toMatch(LEFT_OUT);
      } finally {
        await source.close();
      }
    });
  }

  for (const protect of ['on', 'off']) {
    it(`a sluice worker process starts, warns naming server and tool, and runs the good tool (protect ${protect})`, async () => {
      const taskQueue = `mcp-deep-${protect}-${process.pid}-${Date.now()}`;
      const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'mcp-deep-'));
      const worker = spawn(
        process.execPath,
        [
          path.join(ROOT, 'bin', 'sluice'),
          'worker',
          '--config',
          CONFIG,
          '--task-queue',
          taskQueue,
          '--address',
          inject('temporalAddress'),
          '--state-dir',
          stateDir,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MCP_DEEP_PROTECT: protect } },
      );
      const out = collect(worker);
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      try {
        await eventually(
          'the worker to start or stop',
          () => out().includes('sluice worker:') || worker.exitCode !== null,
          {
            timeoutMs: 180_000,
          },
        );
        expect(out()).toMatch(/sluice worker: .*\b1 tool\(s\) on task queue/);
        expect(out()).toMatch(LEFT_OUT);
        expect(out()).not.toContain('Maximum call stack');
        const client = new SluiceClient({ connection: h.connection, taskQueue });
        const result = await client.runBatch(
          batch([
            { id: 'e', name: 'mcp__hostile__echo', args: { text: 'past the deep one' } },
            { id: 'd', name: 'mcp__hostile__deep', args: {} },
          ]),
        );
        expect(text(result.results[0].result)).toBe('echo: past the deep one');
        expect(result.results[1].result.error?.code).toBe('UNKNOWN_TOOL');
      } finally {
        if (worker.exitCode === null) worker.kill('SIGTERM');
        await exited;
      }
    });
  }

  it('sluice gateway with the same config lists the good tool only', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        path.join(ROOT, 'bin', 'sluice'),
        'gateway',
        '--config',
        CONFIG,
        '--task-queue',
        `mcp-deep-gateway-${process.pid}`,
        '--address',
        inject('temporalAddress'),
      ],
      env: process.env as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'mcp-deep-test', version: '1' });
    await client.connect(transport);
    try {
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name)).toEqual(['mcp__hostile__echo']);
      expect(stderr).toMatch(LEFT_OUT);
    } finally {
      await client.close();
    }
  });
});

function collect(child: ChildProcess): () => string {
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  return () => out;
}
