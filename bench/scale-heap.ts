// Where a long session's worker memory goes (issue 29's "worker RSS flat within 50 MiB"): the
// set-up of bench/scale.ts (one session, one echo call a step, the worker and the client in this
// process), measured inside the model step every N steps, when the step's batch is done and the
// session waits on the model: a full GC, then this process's RSS (anonymous and file-backed),
// the main thread's heap, and the heap of Temporal's workflow thread(s) (where the session and
// batch workflows run, a V8 isolate of their own that process.memoryUsage() does not count), and
// the SDK's count of cached workflows. At the chosen steps it writes V8 heap snapshots of both.
//
// Run: `BENCH_FAST_QUEUE=1 npx tsx --expose-gc bench/scale-heap.ts [steps=1300] [every=100] [snapshotSteps=300,1300]`
// (snapshotSteps `-` for none; a snapshot leaves the RSS 100-200 MiB higher, so read RSS from a run
// without). Snapshots go to a temporary folder printed at the end (tens of MiB each: keep them out
// of the repository). Compare two: `npx tsx bench/scale-heap.ts --compare a b` prints node counts
// and sizes by type:name (for objects the constructor), biggest growth first.
// `--sample` measures as bench/scale.ts does instead (RSS every 2 s, no forced GC);
// `--sample-log` also reads the whole session log each time, as scale.ts's sampler did before it
// read only the lines appended since.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import type { MessagePort } from 'node:worker_threads';
import { startSession } from '../client/session';
import { readSessionLog, sessionLogPath } from '../stores/sink';
import { FAST_QUEUE, startSessionBench } from './session-bench';

const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
const say = (m: string) => console.log(`[scale-heap ${new Date().toISOString().slice(11, 19)}] ${m}`);

interface ThreadStats {
  usedHeap: number;
  totalHeap: number;
  external: number;
  nativeContexts: number;
  detachedContexts: number;
}

/**
 * Temporal's workflow threads, each with a port to ask it for a GC and its heap. The SDK creates
 * them with `new worker_threads.Worker(file)` when the worker is created, so the constructor is
 * wrapped before that: the thread first listens on a port of its own (the SDK's messages use
 * parentPort, untouched), then loads the SDK's file.
 */
function watchWorkflowThreads(): MessagePort[] {
  const wt = require('node:worker_threads') as typeof import('node:worker_threads');
  const Original = wt.Worker;
  const ports: MessagePort[] = [];
  const probe = `
const { workerData } = require('node:worker_threads');
const v8 = require('node:v8');
workerData.port.on('message', (m) => {
  if (m.gc) { global.gc?.(); global.gc?.(); }
  const snapshot = m.snapshot ? v8.writeHeapSnapshot(m.snapshot) : undefined;
  const h = v8.getHeapStatistics();
  workerData.port.postMessage({ usedHeap: h.used_heap_size, totalHeap: h.total_heap_size, external: h.external_memory,
    nativeContexts: h.number_of_native_contexts, detachedContexts: h.number_of_detached_contexts, snapshot });
});
workerData.port.unref();
require(workerData.file);
`;
  wt.Worker = class extends Original {
    constructor(file: string | URL, options?: import('node:worker_threads').WorkerOptions) {
      if (options?.eval || options?.workerData !== undefined) {
        super(file, options);
        return;
      }
      const { port1, port2 } = new wt.MessageChannel();
      super(probe, { ...options, eval: true, workerData: { file: String(file), port: port2 }, transferList: [port2] });
      ports.push(port1);
    }
  } as typeof Original;
  return ports;
}

function askThread(port: MessagePort, m: { gc?: boolean; snapshot?: string }): Promise<ThreadStats> {
  return new Promise((resolve) => {
    port.once('message', resolve);
    port.postMessage(m);
  });
}

/** RssAnon and RssFile of this process, kB (Linux); the heap is in RssAnon, mapped code in RssFile. */
function rssParts(): { anon?: number; file?: number } {
  try {
    const status = fs.readFileSync('/proc/self/status', 'utf8');
    const kb = (k: string) => Number(status.match(new RegExp(`${k}:\\s+(\\d+)`))?.[1]) * 1024 || undefined;
    return { anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return {};
  }
}

async function run(steps: number, every: number, snapshotSteps: number[], sample: false | 'plain' | 'log') {
  const gc = global.gc;
  if (!gc && !sample)
    throw new Error(
      'run with --expose-gc (npx tsx --expose-gc bench/scale-heap.ts), so a full GC comes before each measurement',
    );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-scale-heap-'));
  const ports = watchWorkflowThreads();
  const measured = new Set<number>();
  const rows: Record<string, number | string>[] = [];
  let worker: Awaited<ReturnType<typeof startSessionBench>>['worker'] | undefined;
  const measure = async (step: number) => {
    const snap = snapshotSteps.includes(step);
    gc?.();
    gc?.();
    const threads: ThreadStats[] = [];
    for (const [i, port] of ports.entries())
      threads.push(
        await askThread(port, {
          gc: true,
          ...(snap ? { snapshot: path.join(dir, `workflow${i}-${step}.heapsnapshot`) } : {}),
        }),
      );
    const m = process.memoryUsage();
    const h = v8.getHeapStatistics();
    const parts = rssParts();
    const row = {
      step,
      rss: mib(m.rss),
      rssAnon: parts.anon ? mib(parts.anon) : '-',
      rssFile: parts.file ? mib(parts.file) : '-',
      heapUsed: mib(m.heapUsed),
      heapTotal: mib(m.heapTotal),
      external: mib(m.external),
      arrayBuffers: mib(m.arrayBuffers),
      mainContexts: h.number_of_native_contexts,
      wfHeapUsed: mib(threads.reduce((n, t) => n + t.usedHeap, 0)),
      wfHeapTotal: mib(threads.reduce((n, t) => n + t.totalHeap, 0)),
      wfExternal: mib(threads.reduce((n, t) => n + t.external, 0)),
      wfContexts: threads.map((t) => `${t.nativeContexts}/${t.detachedContexts}`).join(' '),
      cached: worker?.getStatus().numCachedWorkflows ?? '-',
    };
    rows.push(row);
    say(
      Object.entries(row)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    );
    if (snap)
      say(`heap snapshot of the main thread: ${v8.writeHeapSnapshot(path.join(dir, `main-${step}.heapsnapshot`))}`);
  };

  let step = 0;
  const sessionId = `scale-heap-${Date.now().toString(36)}`;
  const bench = await startSessionBench('scale-heap', {
    async beforeStep(req) {
      step = Math.max(step, req.step);
      if (sample) return;
      // A retried model step comes again with the same step: measured once.
      if ((req.step % every === 0 || snapshotSteps.includes(req.step)) && !measured.has(req.step)) {
        measured.add(req.step);
        await measure(req.step);
      }
    },
  });
  worker = bench.worker;
  say(
    sample
      ? `${steps} steps, sampled every 2 s with no forced GC${sample === 'log' ? ', reading the session log each time as bench/scale.ts does' : ''}`
      : `${steps} steps, measured every ${every}, snapshots at ${snapshotSteps.join(', ') || 'none'}; ${ports.length} workflow thread(s); transfer queue ${FAST_QUEUE ? 'fast' : 'default'}`,
  );
  // --sample: RSS as bench/scale.ts sees it (no GC forced), against the step the model last saw.
  let sampling = !!sample;
  const sampler = (async () => {
    while (sampling) {
      if (sample === 'log') await readSessionLog(bench.stateDir, sessionId);
      const m = process.memoryUsage();
      rows.push({ step, rss: mib(m.rss), heapUsed: mib(m.heapUsed), heapTotal: mib(m.heapTotal) });
      await new Promise((r) => setTimeout(r, 2_000));
    }
  })();
  try {
    const s = await startSession(bench.client, {
      sessionId,
      model: 'bench',
      endWhenIdle: true,
      maxStepsPerTurn: steps + 5,
      continueAsNewAfterEvents: 1_000,
    });
    await s.post(String(steps), { id: 'go' });
    const out = await s.result();
    if (out.lastTurn?.text !== 'done') throw new Error(`the session ended with ${JSON.stringify(out.lastTurn)}`);
    say(`the session log holds ${mib(fs.statSync(sessionLogPath(bench.stateDir, sessionId)).size)} MiB`);
  } finally {
    sampling = false;
    await sampler;
    await bench.close();
  }
  console.log(table(sample ? rows.filter((_, i) => i % 10 === 0) : rows));
  // Growth per 100 steps from step 300 on (after the early peak): the least-squares slope.
  const late = rows.filter((r) => Number(r.step) >= 300);
  const per100 = (k: string) => Math.round(slope(late.map((r) => [Number(r.step), Number(r[k])])) * 100 * 100) / 100;
  const keys = sample ? ['rss', 'heapUsed', 'heapTotal'] : ['rss', 'heapUsed', 'wfHeapUsed', 'external'];
  if (late.length > 1)
    say(
      `steps ${late[0].step}-${late[late.length - 1].step}, MiB per 100 steps: ${keys.map((k) => `${k} ${per100(k)}`).join(', ')}; rss ${Math.min(...late.map((r) => Number(r.rss)))}-${Math.max(...late.map((r) => Number(r.rss)))} MiB`,
    );
  if (snapshotSteps.length) say(`heap snapshots in ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}

function slope(xy: number[][]): number {
  const n = xy.length;
  const mx = xy.reduce((a, [x]) => a + x, 0) / n;
  const my = xy.reduce((a, [, y]) => a + y, 0) / n;
  const sxy = xy.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const sxx = xy.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx ? sxy / sxx : 0;
}

function table(rows: Record<string, number | string>[]): string {
  const keys = Object.keys(rows[0] ?? {});
  return [keys, keys.map(() => '---'), ...rows.map((r) => keys.map((k) => String(r[k])))]
    .map((cells) => `| ${cells.join(' | ')} |`)
    .join('\n');
}

interface Census {
  count: Map<string, number>;
  size: Map<string, number>;
}

/** Nodes of a .heapsnapshot counted by type:name (for objects the name is the constructor). */
function census(file: string): Census {
  const snap = JSON.parse(fs.readFileSync(file, 'utf8'));
  const fields: string[] = snap.snapshot.meta.node_fields;
  const types: string[] = snap.snapshot.meta.node_types[0];
  const [T, N, S] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const out: Census = { count: new Map(), size: new Map() };
  const nodes: number[] = snap.nodes;
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = types[nodes[i + T]];
    // Strings and numbers are named by their value: one bucket per type.
    const name = ['string', 'number', 'concatenated string', 'sliced string'].includes(type)
      ? ''
      : String(snap.strings[nodes[i + N]]).slice(0, 80);
    const key = `${type}:${name}`;
    out.count.set(key, (out.count.get(key) ?? 0) + 1);
    out.size.set(key, (out.size.get(key) ?? 0) + nodes[i + S]);
  }
  return out;
}

function compare(a: string, b: string) {
  const [x, y] = [census(a), census(b)];
  const total = (c: Census) => [...c.size.values()].reduce((n, s) => n + s, 0);
  console.log(`${path.basename(a)}: ${mib(total(x))} MiB; ${path.basename(b)}: ${mib(total(y))} MiB`);
  const keys = new Set([...x.count.keys(), ...y.count.keys()]);
  const diffs = [...keys].map((k) => ({
    k,
    count: (y.count.get(k) ?? 0) - (x.count.get(k) ?? 0),
    size: (y.size.get(k) ?? 0) - (x.size.get(k) ?? 0),
    countB: y.count.get(k) ?? 0,
  }));
  console.log('| type:name | count growth | count after | bytes growth |\n|---|---|---|---|');
  for (const d of diffs.sort((p, q) => q.size - p.size).slice(0, 30))
    console.log(`| ${d.k} | ${d.count} | ${d.countB} | ${d.size} |`);
}

const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (flags.includes('--compare')) compare(args[0], args[1]);
else
  run(
    Number(args[0] ?? 1_300),
    Number(args[1] ?? 100),
    args[2] === '-' || flags.some((f) => f.startsWith('--sample'))
      ? []
      : (args[2] ?? '300,1300').split(',').map(Number),
    flags.includes('--sample-log') ? 'log' : flags.includes('--sample') ? 'plain' : false,
  ).catch((err) => {
    console.error(err);
    process.exit(1);
  });
