// `npx tsx bench/gateway.ts`: what `sluice gateway` and `sluice hook serve` add to an allowed call
// (issue 25's figures; docs/performance.md, "Gateway and hook serve overhead"). Not a test: it
// prints figures and writes them to bench/results/gateway-<stamp>.txt. One run, one process:
//
//   (a) an MCP tools/call of the upstream's `echo` (test/fixtures/gateway/upstream.mjs):
//       upstream direct   the MCP SDK client on the upstream server itself (stdio)
//       runBatch          client.runBatch of the same one-call batch (`mcp__up__echo`)
//       gateway           the MCP SDK client on `sluice gateway` (stdio), which runs it as that batch
//   (b) a Claude Code PreToolUse payload for an allowed Bash call:
//       hook serve        POST /claude to `sluice hook serve`
//       runBatch          client.runBatch of the same one-call batch (`Bash`, the payload's tool_input)
//
// One dev server, one worker process whose config holds both (mcpTools of the upstream and
// harnessTools()). Every sample is a new call (its own arguments, so no batch is reused and no
// cache answers it); the forms take turns within each round so a change in load weighs on all
// alike. The load average (`uptime`) is recorded at the start and the end.
//
// Settings (env): BENCH_GATEWAY_CALLS samples per form (default 20), BENCH_ADDRESS a Temporal
// server to use instead of starting one, BENCH_OUT the results file name (without .txt).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SluiceClient } from '../client/client';
import { connectClient } from '../temporal/connection';
import { freePort, startDevServer } from '../temporal/dev-server';
import { postHook, startBenchWorker, waitForOutput } from './child';
import { percentile, round } from './stats';

const ROOT = path.join(__dirname, '..');
const BIN = path.join(ROOT, 'bin', 'sluice.js');
const UPSTREAM = path.join(ROOT, 'test', 'fixtures', 'gateway', 'upstream.mjs');
const CALLS = Number(process.env.BENCH_GATEWAY_CALLS ?? 20);
const WARM = 3;
const FIXTURE = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'hook', 'claude-pre-tool-use.json'), 'utf8'),
);

const lines: string[] = [];
function log(line: string) {
  lines.push(line);
  console.log(line);
}
const uptime = () => {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')} (os.loadavg; no uptime)`;
  }
};

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-gateway-bench-'));
  log(`[bench] gateway and hook serve overhead, allowed calls, warm worker; ${CALLS} samples per form`);
  log(`[bench] start: ${uptime()}`);
  const server = process.env.BENCH_ADDRESS
    ? undefined
    : await startDevServer({
        stateDir: path.join(ROOT, '.sluice'),
        port: await freePort(),
        headless: true,
        dbFile: path.join(dir, 'temporal.db'),
        log: () => undefined,
      });
  const address = process.env.BENCH_ADDRESS ?? server!.address;
  const taskQueue = `gateway-bench-${process.pid}`;
  const configFile = path.join(dir, 'gateway-bench.config.ts');
  const imp = (p: string) => JSON.stringify(path.join(ROOT, p));
  fs.writeFileSync(
    configFile,
    [
      `import { defineConfig } from ${imp('define/config')};`,
      `import { mcpTools } from ${imp('tools/mcp')};`,
      `import { harnessTools } from ${imp('hooks')};`,
      'export default async () => defineConfig({ tools: [',
      `  ...(await mcpTools({ server: 'up', command: process.execPath, args: [${JSON.stringify(UPSTREAM)}, ${JSON.stringify(dir)}] })),`,
      '  ...harnessTools(),',
      ']});',
      '',
    ].join('\n'),
  );
  const children: ChildProcess[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const worker = await startBenchWorker({ root: ROOT, configFile, taskQueue, address, stateDir: dir });
    children.push(worker);

    // The three MCP paths' clients, and the in-process Sluice client for runBatch.
    const direct = new Client({ name: 'gateway-bench-direct', version: '1' });
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [UPSTREAM, dir] }));
    closers.push(() => direct.close());
    const gateway = new Client({ name: 'gateway-bench', version: '1' });
    let gatewayStderr = '';
    const gt = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'gateway', '--config', configFile, '--task-queue', taskQueue, '--address', address],
      stderr: 'pipe',
    });
    gt.stderr?.on('data', (d: Buffer) => (gatewayStderr += d.toString()));
    await gateway.connect(gt).catch((err) => {
      throw new Error(`sluice gateway did not start: ${err}\n${gatewayStderr}`);
    });
    closers.push(() => gateway.close());
    const { connection } = await connectClient({ address });
    closers.push(() => connection.close());
    const sluice = new SluiceClient({ connection, taskQueue });

    const port = await freePort();
    const serve = spawn(
      process.execPath,
      [BIN, 'hook', 'serve', '--port', String(port), '--address', address, '--task-queue', taskQueue],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(serve);
    await waitForOutput(serve, 'serving http hooks', 120_000);

    let n = 0;
    const stamp = `${process.pid}-${Date.now()}`;
    const echoText = (r: unknown) =>
      (r as { content: { type: string; text?: string }[] }).content.map((b) => b.text ?? '').join('');
    const bashInput = (k: number) => ({ ...FIXTURE.tool_input, command: `npm test -- --shard ${k}` });
    const forms: Record<string, () => Promise<void>> = {
      'a: upstream direct': async () => {
        const text = `direct ${++n}`;
        const r = await direct.callTool({ name: 'echo', arguments: { text } });
        expect(echoText(r), `echo: ${text}`, 'upstream direct');
      },
      'a: runBatch (mcp__up__echo)': async () => {
        const text = `batch ${++n}`;
        const out = await sluice.runBatch({
          sessionId: `gwbench-echo-${stamp}-${n}`,
          turn: 0,
          step: 0,
          calls: [{ id: 'c0', name: 'mcp__up__echo', arguments: { text } }],
        });
        expect(echoText(out.results[0].result), `echo: ${text}`, 'runBatch');
      },
      'a: sluice gateway (stdio)': async () => {
        const text = `gateway ${++n}`;
        const r = (await gateway.callTool({ name: 'mcp__up__echo', arguments: { text } })) as CallToolResult;
        if (r.isError) throw new Error(`the gateway refused the call: ${echoText(r)}`);
        expect(echoText(r), `echo: ${text}`, 'gateway');
      },
      'b: sluice hook serve (POST /claude)': async () => {
        const k = ++n;
        const body = JSON.stringify({
          ...FIXTURE,
          session_id: `gwbench-hook-${stamp}`,
          tool_use_id: `toolu_gwbench_${k}`,
          tool_input: bashInput(k),
        });
        const doc = JSON.parse(await postHook(port, body));
        if (doc.hookSpecificOutput?.permissionDecision !== 'allow')
          throw new Error(`hook serve: expected an allow, got ${JSON.stringify(doc)}`);
      },
      'b: runBatch (Bash, same one-call batch)': async () => {
        const k = ++n;
        const out = await sluice.runBatch({
          sessionId: `gwbench-bash-${stamp}-${k}`,
          turn: 0,
          step: 0,
          calls: [{ id: `toolu_gwbench_${k}`, name: 'Bash', arguments: bashInput(k) }],
        });
        if (out.results[0]?.result.isError)
          throw new Error(`runBatch of Bash was not allowed: ${JSON.stringify(out.results[0])}`);
      },
    };
    const names = Object.keys(forms);
    for (let i = 0; i < WARM; i++) for (const name of names) await forms[name]();
    const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
    for (let i = 0; i < CALLS; i++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(i + j) % names.length];
        const t = performance.now();
        await forms[name]();
        samples[name].push(performance.now() - t);
      }
    }
    const p = (name: string, q: number) =>
      percentile(
        [...samples[name]].sort((x, y) => x - y),
        q,
      );
    for (const name of names)
      log(
        `[bench] ${name}: p50 ${round(p(name, 50), 1)} ms, p95 ${round(p(name, 95), 1)} ms, min ${round(Math.min(...samples[name]), 1)} ms`,
      );
    const gw = p('a: sluice gateway (stdio)', 50);
    const rb = p('a: runBatch (mcp__up__echo)', 50);
    const up = p('a: upstream direct', 50);
    const hs = p('b: sluice hook serve (POST /claude)', 50);
    const hb = p('b: runBatch (Bash, same one-call batch)', 50);
    log(
      `[bench] a: gateway / upstream direct ${round(gw / up, 1)}x (${signed(gw - up)} ms p50); gateway / runBatch ${round(gw / rb, 2)}x (${signed(gw - rb)} ms p50; target +10 ms)`,
    );
    log(`[bench] b: hook serve / runBatch ${round(hs / hb, 2)}x (${signed(hs - hb)} ms p50; target p50 150 ms)`);
    log(`[bench] end: ${uptime()}`);
    const out = path.join(
      __dirname,
      'results',
      `${process.env.BENCH_OUT ?? `gateway-${new Date().toISOString().slice(0, 10)}`}.txt`,
    );
    fs.writeFileSync(out, `${lines.join('\n')}\n`);
    console.log(`[bench] written to ${path.relative(ROOT, out)}`);
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    // The worker drains before it exits, and cannot once the server is gone: wait for the
    // children first, and kill any that has not exited in 15 s.
    await Promise.all(children.map((c) => stop(c, 15_000)));
    await server?.stop();
  }
}

const signed = (ms: number) => `${ms < 0 ? '' : '+'}${round(ms, 1)}`;

function stop(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function expect(actual: string, wanted: string, form: string) {
  if (actual !== wanted) throw new Error(`${form}: expected "${wanted}", got "${actual}"`);
}

main().then(
  // Stdio clients' pipes may keep the loop alive after their processes are gone.
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
