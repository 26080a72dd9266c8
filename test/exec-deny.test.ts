// A person's yes does not run a denied program: through a real worker, a command the judgment
// cannot see into (a script in the workspace) asks under `Bash(bash:*)`, a person approves it, it
// runs in bash's sandbox, and the `touch` inside it, denied by `Bash(touch:*)`, does not run; the
// tool result says which rule stopped it. The forms one by one are test/unit/exec-deny.test.ts.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineConfig } from '../define/config';
import { permissionRules } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { bashTool } from '../tools';
import { eventually } from './eventually';
import { batch, type Harness, startHarness, text } from './harness';

let ws: string;
let h: Harness;

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(inject('runDir'), 'exec-deny-'));
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.writeFileSync(
    path.join(ws, '.claude', 'settings.json'),
    JSON.stringify({ permissions: { deny: ['Bash(touch:*)'], ask: ['Bash(bash:*)'] } }),
  );
  // What the model wrote earlier, or what a repository holds: the judgment sees only `bash job.sh`.
  // (Its stderr joins stdout, so the order of the output is the order of the lines.)
  fs.writeFileSync(path.join(ws, 'job.sh'), 'exec 2>&1\necho before\ntouch D\necho after\n');
  const rules = permissionRules({ workspace: ws });
  h = await startHarness(
    'exec-deny',
    defineConfig({
      tools: [bashTool({ root: ws, sandbox: 'bubblewrap', approval: rules.approval('Bash') })],
      preExecute: rules.preExecute,
    }),
  );
});
afterAll(() => h?.close());

describe('a denied program inside an approved command', () => {
  it('does not run: the person approved the command, not the program a deny rule names', async () => {
    const handle = await h.client.startBatch(
      batch([{ id: 'job', name: 'bash', args: { command: 'bash job.sh' } }], {
        options: { approvalTimeoutMs: 120_000 },
      }),
    );
    const [p] = await eventually('the ask for bash job.sh', async () => {
      const { pending } = await h.client.batchState(handle.workflowId);
      return pending.length > 0 && pending;
    });
    expect(p.callId).toBe('job');
    await h.client.approve(p.approvalId, { by: 'alice', argsDigest: p.argsDigest });
    const out: BatchOutput = await handle.result();
    const result = out.results[0].result;
    expect(out.events.find((e) => e.type === 'approval/decided')?.data).toMatchObject({ outcome: 'allowed-once' });
    expect(text(result)).toBe(
      'before\nsluice: touch is denied by "Bash(touch:*)" (.claude/settings.json), so it did not run\nafter\n[exit code: 0]',
    );
    expect(result.meta).toMatchObject({ sandbox: 'bubblewrap' });
    expect(fs.existsSync(path.join(ws, 'D'))).toBe(false);
  });
});
