// Recorded reconcile histories (scripts/record-reconcile-history.ts, under
// test/fixtures/histories/<release>/reconcile-*.json) replay with the current workflow code; a
// change to workflows/reconcile.ts that would break a card still waiting for a person fails here
// (and in `sluice replay test/fixtures/histories`, test/replay.test.ts).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { decode, type LoadedHistory, readHistoryFile } from '../client/history';
import { replayHistories } from '../client/replay';
import { RECONCILE_WORKFLOW, type Reconciliation } from '../pipeline/reconcile';
import type { ApprovalsMemo, RefusalCode } from '../pipeline/types';
import { APPROVALS_MEMO } from '../workflows/definitions';

const HISTORIES = path.join(__dirname, 'fixtures', 'histories');
const ROOT = path.join(__dirname, '..');
const files = fs
  .readdirSync(HISTORIES, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) =>
    fs
      .readdirSync(path.join(HISTORIES, d.name))
      .filter((f) => /^reconcile-.*\.json$/.test(f))
      .map((f) => path.join(HISTORIES, d.name, f)),
  );
const histories = files.map(readHistoryFile);
const cards = histories.filter(
  (h) => h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name === RECONCILE_WORKFLOW,
);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-reconcile-replay-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

type Event = NonNullable<LoadedHistory['history']['events']>[number];
const events = (h: LoadedHistory): Event[] => h.history.events ?? [];
const result = (h: LoadedHistory) =>
  decode(events(h).at(-1)?.workflowExecutionCompletedEventAttributes?.result) as Reconciliation | undefined;
const activities = (h: LoadedHistory) =>
  events(h).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
const count = (h: LoadedHistory, attributes: keyof Event) => events(h).filter((e) => e[attributes]).length;
/** The refusals the card's last memo lists (signals only: an update's refusal is its failure). */
function refusals(h: LoadedHistory): RefusalCode[] {
  const memos = events(h).flatMap((e) => {
    const p = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.[APPROVALS_MEMO];
    return p ? [defaultPayloadConverter.fromPayload(p) as ApprovalsMemo] : [];
  });
  return (memos.at(-1)?.refused ?? []).map((r) => r.code);
}
const failedUpdates = (h: LoadedHistory) =>
  events(h).filter((e) => e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.failure).length;

describe('recorded reconcile histories replay', () => {
  it('the fixtures cover done, not done, run again (lost again, then run), a verified run again and refused signals', () => {
    const byId = new Map(cards.map((h) => [h.workflowId.split(':').at(-1), h]));
    expect([...byId.keys()].sort()).toEqual(['done', 'not-done', 'run-again', 'verified']);
    for (const h of cards) expect(h.workflowId).toMatch(/^sluice-reconcile:sluice-batch:/);
    const done = byId.get('done')!;
    expect(result(done)).toMatchObject({ outcome: 'done', evidence: expect.any(String) });
    expect(refusals(done)).toEqual(['malformed']); // done without evidence, by signal
    const notDone = byId.get('not-done')!;
    expect(result(notDone)).toMatchObject({ outcome: 'not-done' });
    expect(count(notDone, 'workflowExecutionSignaledEventAttributes')).toBe(1);
    const again = byId.get('run-again')!;
    expect(result(again)).toMatchObject({ outcome: 'ran-again', rerun: { isError: false } });
    expect(count(again, 'activityTaskTimedOutEventAttributes')).toBe(1); // the first run again was lost
    expect(failedUpdates(again)).toBe(1); // and its sender told so
    expect(refusals(again)).toEqual(['decided']); // a not-done sent while it ran
    const verified = byId.get('verified')!;
    expect(result(verified)).toMatchObject({ outcome: 'ran-again', rerun: { isError: false } });
    expect(activities(verified)).toEqual(['verifyApprover', 'verifyApprover', 'executeBody']);
    expect(failedUpdates(verified)).toBe(1); // the token outside the tool's groups
    expect(refusals(verified)).toEqual(['malformed']); // a typed name, by signal
    // The batch that lost the calls opened the four cards.
    const batch = histories.find((h) => h.workflowId.startsWith('sluice-batch:'));
    expect(batch && count(batch, 'childWorkflowExecutionStartedEventAttributes')).toBe(4);
  });

  it('every recorded reconcile history replays against the current workflow bundle', async () => {
    const results = await replayHistories(histories, { workflowBundlePath: inject('workflowBundlePath') });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results).toHaveLength(histories.length);
  });

  it('a reconcile workflow that issues a command the recording never had fails replay', async () => {
    const dir = path.join(scratch, 'timer-before-run-again');
    for (const sub of ['workflows', 'pipeline', 'codec'])
      fs.cpSync(path.join(ROOT, sub), path.join(dir, sub), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const file = path.join(dir, 'workflows', 'reconcile.ts');
    const src = fs.readFileSync(file, 'utf8');
    const line = 'const rerun = await runAgain(';
    expect(src, 'the edit needs the run again of workflows/reconcile.ts').toContain(line);
    fs.writeFileSync(
      file,
      `import { sleep } from '@temporalio/workflow';\n${src.replace(line, `await sleep('1 ms');\n      ${line}`)}`,
    );
    const results = await replayHistories(cards, { workflowsPath: path.join(dir, 'workflows', 'index.ts') });
    // Only the cards that ran the body again issued that command.
    expect(Object.fromEntries(results.map((r) => [r.workflowId.split(':').at(-1), r.failure ?? 'ok']))).toEqual({
      done: 'ok',
      'not-done': 'ok',
      'run-again': 'nondeterminism',
      verified: 'nondeterminism',
    });
  }, 180_000);
});
