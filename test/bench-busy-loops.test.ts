// The contention section's busy loops (bench/contention.ts) run beside everything else on a shared
// machine: they must end when the bench stops them, and also when the bench dies without stopping
// them (killed outright), never spin on as orphans. Each check waits for the processes to be gone.
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { startBusyLoops } from '../bench/contention';

/** Whether a process still runs: a zombie waiting to be reaped no longer spins. */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function gone(pids: number[]): Promise<void> {
  while (pids.some(running)) await new Promise((r) => setTimeout(r, 50));
}

describe('bench busy loops', () => {
  it('spin until stopped, then are gone', async () => {
    const loops = await startBusyLoops(2);
    expect(loops.pids).toHaveLength(2);
    expect(loops.pids.every(running)).toBe(true);
    await loops.stop();
    expect(loops.pids.some(running)).toBe(false);
  }, 60_000);

  it('end when the bench that started them is killed without stopping them', async () => {
    // A bench process that starts one loop, reports its pid, and waits to be killed.
    const dir = fs.mkdtempSync(path.join(inject('runDir'), 'busy-'));
    const script = path.join(dir, 'bench.js');
    fs.writeFileSync(
      script,
      `require(${JSON.stringify(path.join(__dirname, '..', 'bench', 'contention.ts'))})
        .startBusyLoops(1).then((l) => process.send(l.pids));
      setInterval(() => {}, 1000);\n`,
    );
    const bench = fork(script, [], { execArgv: ['--require', 'tsx/cjs'], stdio: 'inherit' });
    const pids = await new Promise<number[]>((resolve, reject) => {
      bench.once('message', (m) => resolve(m as number[]));
      bench.once('exit', (code) => reject(new Error(`the bench process exited (${code}) before it started a loop`)));
    });
    expect(pids).toHaveLength(1);
    expect(running(pids[0])).toBe(true);
    bench.kill('SIGKILL');
    await gone(pids);
    expect(running(pids[0])).toBe(false);
  }, 120_000);
});
