// SLUICE_WORKER_HEAP=compact: `sluice worker` sets V8's --optimize-for-size before Worker.create,
// and the workflow threads started after it must get it (Node does not take the flag in
// NODE_OPTIONS, so this is the only way a user of the CLI has to it). The threads' young generation
// is where it shows at once: V8 keeps it small instead of growing it to 16 MiB a semi-space.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { workerHeap } from '../worker/heap';

const root = path.resolve(__dirname, '..');

/** The young generation of a thread started after the heap was (or was not) made compact, in KiB. */
async function threadNewSpaceKiB(compact: boolean): Promise<number> {
  const probe = `
    const { Worker } = require('node:worker_threads');
    if (${compact}) require(${JSON.stringify(path.join(root, 'worker', 'heap.ts'))}).useCompactHeap();
    const churn = \`
      const v8 = require('node:v8');
      let kept;
      for (let r = 0; r < 200; r++) { kept = []; for (let i = 0; i < 2000; i++) kept.push({ s: 'x'.repeat(100) + r + i }); }
      const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
      require('node:worker_threads').parentPort.postMessage(Math.round(space.space_size / 1024));
    \`;
    new Worker(churn, { eval: true }).once('message', (kib) => console.log(kib));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--require', 'tsx/cjs', '-e', probe], { cwd: root });
  return Number(stdout.trim());
}

describe('SLUICE_WORKER_HEAP', () => {
  it('is "default" unless set to "compact"; anything else says what it takes', () => {
    expect(workerHeap({})).toBe('default');
    expect(workerHeap({ SLUICE_WORKER_HEAP: ' ' })).toBe('default');
    expect(workerHeap({ SLUICE_WORKER_HEAP: 'default' })).toBe('default');
    expect(workerHeap({ SLUICE_WORKER_HEAP: 'compact' })).toBe('compact');
    expect(() => workerHeap({ SLUICE_WORKER_HEAP: 'small' })).toThrow(/"compact".*or "default", not "small"/);
  });

  it('compact: a thread started after it keeps a young generation a fraction of the default size', async () => {
    const [normal, compact] = await Promise.all([threadNewSpaceKiB(false), threadNewSpaceKiB(true)]);
    expect(normal).toBeGreaterThan(0);
    expect(compact).toBeGreaterThan(0);
    expect(compact).toBeLessThanOrEqual(normal / 4);
  });
});
