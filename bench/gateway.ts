// `npx tsx bench/gateway.ts`: what `sluice gateway` and `sluice hook serve` add to an allowed call
// (issue 25's figures; docs/performance.md, "Gateway and hook serve overhead"). Not a test: it
// prints figures and writes them to bench/results/gateway-<stamp>.txt. One run, one process:
//
//   (a) an MCP tools/call of the upstream's `echo` (test/fixtures/gateway/upstream.mjs):
//       upstream direct   the MCP SDK client on the upstream server itself (stdio)
//       runBatch          client.runBatch of the same one-call batch (`mcp__up__echo`)
//       gateway           the MCP SDK client on `sluice gateway` (stdio), which runs it as that batch
//     and, to say where the gateway's time over runBatch goes, the gateway's path piece by piece:
//       own block         startInOwnBlock + the result, in-process, every call in one session and
//                         step from gatewayStep, as the gateway runs it (no MCP)
//       in-process        gatewayServer (the gateway's MCP server) and the SDK client linked in
//                         memory, in this process (the MCP layer, no stdio, no second process)
//       process, timed    the same server in a process of its own on stdio
//                         (bench/gateway-child.ts), reporting its timestamps per call
//     For the forms on this process's Sluice client and the timed process, each call is split at
//     its timestamps into before (the request to the handler's startBatch), start (Temporal starts
//     the batch), run (the worker's part and the result's long poll) and after (the answer back).
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
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SluiceClient } from '../client/client';
import { gatewayServer, gatewayStep } from '../servers/gateway';
import { startInOwnBlock } from '../client/hook/service';
import type { ToolSchema } from '../define/config';
import { connectClient } from '../temporal/connection';
import { freePort } from '../temporal/dev-server';
import { benchServer, postHook, startBenchWorker, waitForOutput } from './child';
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
  const server = await benchServer(ROOT, dir);
  const { address } = server;
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
    // Timestamps along the path of the in-process forms (runBatch, own block, the in-process
    // gateway), taken on this client: when startBatch is called, when Temporal has started the
    // batch, when its result is back. With the sample's start and end they split each call into
    // before (the MCP request to the handler), start, run (the worker's part and the result's
    // long poll) and after (the answer back to the caller).
    let stamps: { called?: number; started?: number; result?: number } = {};
    const startBatch = sluice.startBatch.bind(sluice);
    sluice.startBatch = async (request) => {
      stamps.called = performance.now();
      const handle = await startBatch(request);
      stamps.started = performance.now();
      const result = handle.result;
      handle.result = async () => {
        const out = await result();
        stamps.result = performance.now();
        return out;
      };
      return handle;
    };
    // The gateway's own MCP server in this process, on the same Sluice client as runBatch.
    // Its tools as the gateway process lists them (loading the config here would start another upstream).
    const tools = (await gateway.listTools()).tools.map((t) => ({
      name: t.name,
      description: t.description ?? '',
      inputSchema: t.inputSchema as ToolSchema['inputSchema'],
    }));
    const inProcessSession = `gwbench-inproc-${process.pid}`;
    const inProcess = new Client({ name: 'gateway-bench-in-process', version: '1' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await gatewayServer({ tools, sluice }, () => inProcessSession).connect(serverSide);
    await inProcess.connect(clientSide);
    closers.push(() => inProcess.close());
    // The same server in a process of its own on stdio, which reports its timestamps per call
    // (bench/gateway-child.ts): where the time of a separate gateway process goes.
    const toolsFile = path.join(dir, 'tools.json');
    fs.writeFileSync(toolsFile, JSON.stringify(tools));
    const timedTransport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        path.join(__dirname, 'gateway-child.ts'),
        address,
        taskQueue,
        toolsFile,
        `gwbench-child-${process.pid}`,
      ],
      cwd: ROOT,
      stderr: 'pipe',
    });
    const childTimings: { called: number; started: number; result: number }[] = [];
    let childErr = '';
    timedTransport.stderr?.on('data', (d: Buffer) => {
      childErr += d.toString();
      for (const m of d.toString().matchAll(/^timing (\{.*\})$/gm)) childTimings.push(JSON.parse(m[1]));
    });
    const timedGateway = new Client({ name: 'gateway-bench-timed', version: '1' });
    await timedGateway.connect(timedTransport).catch((err) => {
      throw new Error(`bench/gateway-child.ts did not start: ${err}\n${childErr}`);
    });
    closers.push(() => timedGateway.close());

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
    const segments: Record<string, Record<'before' | 'start' | 'run' | 'after', number[]>> = {};
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
      'a: own block, one session (no MCP)': async () => {
        const text = `own ${++n}`;
        const args = { text };
        const { value: out } = await startInOwnBlock(
          sluice,
          {
            sessionId: `gwbench-own-${stamp}`,
            turn: 0,
            step: gatewayStep(n, 'mcp__up__echo', args),
            calls: [{ id: `mcp-${n}`, name: 'mcp__up__echo', arguments: JSON.stringify(args) }],
          },
          (h) => h.result(),
        );
        expect(echoText(out.results[0].result), `echo: ${text}`, 'own block');
      },
      'a: gateway in-process (MCP in memory)': async () => {
        const text = `in-process ${++n}`;
        const r = (await inProcess.callTool({ name: 'mcp__up__echo', arguments: { text } })) as CallToolResult;
        if (r.isError) throw new Error(`the in-process gateway refused the call: ${echoText(r)}`);
        expect(echoText(r), `echo: ${text}`, 'gateway in-process');
      },
      'a: gateway process, timed (stdio)': async () => {
        const text = `timed ${++n}`;
        const seen = childTimings.length;
        const sent = performance.timeOrigin + performance.now();
        const r = (await timedGateway.callTool({ name: 'mcp__up__echo', arguments: { text } })) as CallToolResult;
        const back = performance.timeOrigin + performance.now();
        expect(echoText(r), `echo: ${text}`, 'timed gateway');
        // Its timing line was written before the answer; its pipe may be read a moment later.
        while (childTimings.length === seen) await new Promise((resolve) => setTimeout(resolve, 1));
        const { called, started, result } = childTimings[seen];
        const seg = (segments['a: gateway process, timed (stdio)'] ??= { before: [], start: [], run: [], after: [] });
        seg.before.push(called - sent);
        seg.start.push(started - called);
        seg.run.push(result - started);
        seg.after.push(back - result);
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
    for (const k of Object.keys(segments)) delete segments[k];
    const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
    for (let i = 0; i < CALLS; i++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(i + j) % names.length];
        stamps = {};
        const t = performance.now();
        await forms[name]();
        const end = performance.now();
        samples[name].push(end - t);
        const { called, started, result } = stamps;
        if (called !== undefined && started !== undefined && result !== undefined) {
          const seg = (segments[name] ??= { before: [], start: [], run: [], after: [] });
          seg.before.push(called - t);
          seg.start.push(started - called);
          seg.run.push(result - started);
          seg.after.push(end - result);
        }
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
    const median = (xs: number[]) =>
      percentile(
        [...xs].sort((x, y) => x - y),
        50,
      );
    for (const [name, seg] of Object.entries(segments))
      log(
        `[bench] ${name}, p50 of each part: before ${round(median(seg.before), 1)} ms, start ${round(median(seg.start), 1)} ms, run ${round(median(seg.run), 1)} ms, after ${round(median(seg.after), 1)} ms`,
      );
    const own = p('a: own block, one session (no MCP)', 50);
    const inproc = p('a: gateway in-process (MCP in memory)', 50);
    log(
      `[bench] a: where the gateway's ${signed(gw - rb)} ms p50 over runBatch goes: one session, own block ${signed(own - rb)} ms; the MCP layer in-process ${signed(inproc - own)} ms; stdio and the gateway process ${signed(gw - inproc)} ms`,
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
    await server.stop();
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
