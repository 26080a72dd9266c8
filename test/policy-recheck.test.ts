// A policy cannot change under a waiting approval (issue 26 item 5), on the real dev server: a
// worker reading one `.claude/settings.json` asks for four calls; it is killed; the file is
// edited; a new worker (same task queue, a new process that replays the batches) takes the
// decisions. Each approved call is judged again under the new file: now denied → denied with the
// change named; now allowed → runs, and the record says so; the same rule still asks → runs; another
// rule asks now → denied. `sluice audit` shows the re-check; the approval's reason named the digest.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../cli';
import type { BatchOutput } from '../pipeline/types';
import { eventually } from './eventually';
import { batch, type ChildWorker, type Harness, spawnWorker, startHarness, text } from './harness';

const CONFIG = path.join(__dirname, 'fixtures', 'policy.config.ts');
let h: Harness;
let ws: string;
let worker: ChildWorker | undefined;

const settings = (permissions: object) =>
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions }, null, 2));

beforeAll(async () => {
  h = await startHarness('policy-recheck', { tools: [] }, { autoStart: false });
  ws = fs.realpathSync(fs.mkdtempSync(path.join(inject('runDir'), 'policy-recheck-')));
  fs.mkdirSync(path.join(ws, '.claude'));
  settings({ ask: ['Bash(touch a.txt)', 'Bash(touch b.txt)', 'Bash(touch c.txt)', 'Bash(touch d.txt)'] });
});
afterAll(async () => {
  await worker?.kill();
  await h?.close();
});

const start = async () => {
  worker = spawnWorker(CONFIG, h.taskQueue, h.stateDir, { SLUICE_TEST_POLICY_WS: ws });
  await worker.ready;
};

describe('an approval waiting while the policy changes', () => {
  // Two worker starts and four batches: minutes at load 16, not the default minute.
  it('is judged again under the new policy by the worker that runs the call', { timeout: 600_000 }, async () => {
    await start();
    const names = ['a', 'b', 'c', 'd'];
    const handles = await Promise.all(
      names.map((n) =>
        h.client.startBatch(
          batch([{ id: n, name: 'bash', args: { command: `touch ${n}.txt` } }], {
            options: { approvalTimeoutMs: 600_000 },
          }),
        ),
      ),
    );
    const asked = await Promise.all(
      handles.map((hd) =>
        eventually(`the ask of ${hd.workflowId}`, async () => (await h.client.batchState(hd.workflowId)).pending[0], {
          timeoutMs: 120_000,
        }),
      ),
    );
    // The approver sees which rule asked, and the digest of the policy the approval is bound to.
    for (const [i, p] of asked.entries())
      expect(p.reason).toMatch(
        new RegExp(
          `asked by \\.claude/settings\\.json: \`Bash\\(touch ${names[i]}\\.txt\\)\` \\(policy sha256:[0-9a-f]{12}\\)`,
        ),
      );

    // The policy is a field of the pending approval (issue 26): digest, the files it is over and
    // the rule that asked, in the query, in the memo (read with no worker) and in `sluice approvals`.
    const digest = asked[0].policy?.digest;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const [i, p] of asked.entries())
      expect(p.policy).toEqual({
        digest,
        decision: 'ask',
        rule: { source: 'claude', file: '.claude/settings.json', line: 4 + i, text: `Bash(touch ${names[i]}.txt)` },
        files: [{ source: 'claude', file: '.claude/settings.json', digest: expect.stringMatching(/^sha256:/) }],
      });
    // The listing finds batches through visibility, which lags on a busy server: polled.
    for (const p of asked) {
      const listed = await eventually(
        `${p.approvalId} in the listing`,
        async () =>
          (await h.client.approvals.list({ taskQueue: h.taskQueue })).find((m) => m.approvalId === p.approvalId),
        { timeoutMs: 120_000 },
      );
      expect(listed.policy).toEqual(p.policy);
    }
    const listing: string[] = [];
    await main(['approvals', '--address', inject('temporalAddress'), '--task-queue', h.taskQueue], (l) =>
      listing.push(l),
    );
    expect(listing.join('\n')).toContain(
      `│ policy: asked by .claude/settings.json:4 \`Bash(touch a.txt)\`; policy ${digest!.slice(0, 19)} over .claude/settings.json`,
    );

    // A new deployment with a changed policy file.
    await worker!.kill('SIGKILL');
    settings({
      deny: ['Bash(touch a.txt)'],
      allow: ['Bash(touch b.txt)'],
      ask: ['Bash(touch c.txt)', 'Bash(touch d.txt:*)'],
    });
    await start();
    for (const p of asked) await h.client.approve(p.approvalId, { by: 'reviewer', workflowId: p.workflowId });
    const outs: BatchOutput[] = await Promise.all(handles.map((hd) => hd.result()));
    const [a, b, c, d] = outs.map((o) => o.results[0].result);
    const rechecked = outs.map((o) => o.events.find((e) => e.type === 'policy/rechecked')?.data);
    for (const o of outs)
      expect(o.events.find((e) => e.type === 'approval/asked')?.data.policy).toMatchObject({ digest });

    expect(a.error?.code).toBe('DENIED');
    expect(text(a)).toMatch(/the policy changed while this call waited for approval \(sha256:\w{12} → sha256:\w{12}\)/);
    expect(text(a)).toContain('it is now denied by .claude/settings.json: `Bash(touch a.txt)`');
    expect(fs.existsSync(path.join(ws, 'a.txt'))).toBe(false);
    expect(rechecked[0]).toMatchObject({ outcome: 'denied', callId: 'a' });

    expect(b.isError).toBe(false);
    expect(fs.existsSync(path.join(ws, 'b.txt'))).toBe(true);
    expect(rechecked[1]).toMatchObject({ outcome: 'allowed', now: { decision: 'allow' } });

    expect(c.isError).toBe(false);
    expect(fs.existsSync(path.join(ws, 'c.txt'))).toBe(true);
    expect(rechecked[2]).toMatchObject({ outcome: 'same-rule' });

    expect(d.error?.code).toBe('DENIED');
    expect(text(d)).toContain('it is now asked by .claude/settings.json: `Bash(touch d.txt:*)`');
    expect(fs.existsSync(path.join(ws, 'd.txt'))).toBe(false);
    expect(rechecked[3]).toMatchObject({ outcome: 'other-rule' });

    // The digests differ, and the audit shows the re-check.
    const was = (rechecked[0]!.askedUnder as { digest: string }).digest;
    expect((rechecked[0]!.now as { digest: string }).digest).not.toBe(was);
    const audit: string[] = [];
    await main(['audit', handles[0].workflowId, '--address', inject('temporalAddress')], (s) => audit.push(s));
    expect(audit.join('\n')).toContain('policy re-checked after the approval: denied');
    await worker!.kill('SIGTERM');
  });
});
