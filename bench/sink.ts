// The JSONL session log's cost per session against the floor of appending the same lines, in one
// process: `npx tsx bench/sink.ts [sessions] [rounds]`. Each session is what a one-call batch
// asks of the sink: a seq claim, then two appends of its events. The floor appends the same event
// lines with `fs.appendFile` and nothing else (no claim, no seq check, no torn-line check). The
// two alternate, round by round, each in a fresh folder, so the page cache and the machine's load
// fall on both alike. Prints CPU (user + system) and wall time per session, and their ratios.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SessionEvent } from '../pipeline/types';
import { JsonlSessionLog, sessionLogPath } from '../stores/sink';

const sessions = Number(process.argv[2] ?? 1500);
const rounds = Number(process.argv[3] ?? 3);

const event = (seq: number, type: string): SessionEvent => ({
  type,
  seq,
  time: new Date(0).toISOString(),
  data: { callId: `c${seq}`, name: 'echo', args: { n: seq }, text: 'x'.repeat(120) },
});
const first = [event(0, 'tool/call'), event(1, 'approval/decided')];
const second = [event(2, 'tool/result')];

async function sluice(dir: string): Promise<void> {
  const sink = new JsonlSessionLog(dir, () => undefined);
  for (let i = 0; i < sessions; i++) {
    const batch = `b${i}`;
    await sink.claim(`s${i}`, 0, batch);
    await sink.append(`s${i}`, first, batch);
    await sink.append(`s${i}`, second, batch);
  }
}

async function floor(dir: string): Promise<void> {
  fs.mkdirSync(path.dirname(sessionLogPath(dir, 's0')), { recursive: true });
  const lines = (events: SessionEvent[]) => events.map((e) => `${JSON.stringify(e)}\n`).join('');
  for (let i = 0; i < sessions; i++) {
    const file = sessionLogPath(dir, `s${i}`);
    await fs.promises.appendFile(file, lines(first));
    await fs.promises.appendFile(file, lines(second));
  }
}

async function measure(run: (dir: string) => Promise<void>): Promise<{ cpu: number; wall: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-sink-bench-'));
  try {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await run(dir);
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { cpu: (c.user + c.system) / 1000 / sessions, wall: wall / sessions };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await measure(sluice); // warm up both before measuring
  await measure(floor);
  const f2 = (x: number) => x.toFixed(2);
  console.log(`${sessions} new sessions a round, a claim and two appends each; ms per session`);
  console.log('round  sink CPU  floor CPU  ratio  sink wall  floor wall  ratio');
  for (let r = 1; r <= rounds; r++) {
    const s = await measure(sluice);
    const b = await measure(floor);
    console.log(
      `${String(r).padStart(5)}  ${f2(s.cpu).padStart(8)}  ${f2(b.cpu).padStart(9)}  ${f2(s.cpu / b.cpu).padStart(5)}  ${f2(s.wall).padStart(9)}  ${f2(b.wall).padStart(10)}  ${f2(s.wall / b.wall).padStart(5)}`,
    );
  }
  console.log(`load average ${os.loadavg()[0].toFixed(1)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
