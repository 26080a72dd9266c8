// Recorded agent-session histories (scripts/record-session-history.ts, one per release under
// test/fixtures/histories/<release>/) replay with the current workflow code; a change to
// workflows/session.ts that would break a running session fails here.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { readHistoryFile } from '../client/history';
import { replayHistories } from '../client/replay';

const HISTORIES = path.join(__dirname, 'fixtures', 'histories');
const ROOT = path.join(__dirname, '..');
const fixtures = fs
  .readdirSync(HISTORIES, { withFileTypes: true })
  .filter((d) => d.isDirectory() && fs.existsSync(path.join(HISTORIES, d.name, 'agent-session.json')))
  .map((d) => path.join(HISTORIES, d.name, 'agent-session.json'));
/** Sessions whose step batches the session's activity started (workflows/compat.ts sessionBatchActivity). */
const byActivity = fs
  .readdirSync(HISTORIES, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) =>
    fs
      .readdirSync(path.join(HISTORIES, d.name))
      .filter((f) => /^agent-session.*batch-activity\.json$/.test(f))
      .map((f) => path.join(HISTORIES, d.name, f)),
  );
/** Sessions whose first batch waited on a person past the batch activity's wait, and those batches. */
const PARKED = ['session-batch-parked.json', 'session-batch-parked-local.json'].map((f) =>
  path.join(HISTORIES, 'unreleased', f),
);
/** A local activity's marker of the session's batch activity (worker/session-batch.ts). */
function batchActivityMarker(e: object): boolean {
  const marker = (e as { markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, unknown> } })
    .markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return false;
  const data = (marker.details?.data as { payloads?: { data?: Uint8Array | string }[] } | undefined)?.payloads?.[0]
    ?.data;
  const text = typeof data === 'string' ? Buffer.from(data, 'base64').toString() : Buffer.from(data ?? []).toString();
  return text.includes('"activity_type":"sluiceSessionBatch"');
}
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-session-replay-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('recorded agent sessions replay', () => {
  it('at least one release recorded a session', () => {
    expect(fixtures.length).toBeGreaterThan(0);
  });

  it('every recorded session replays against the current workflow bundle', async () => {
    const histories = fixtures.map(readHistoryFile);
    for (const h of histories) {
      expect(h.workflowId).toBe('sluice-session:fixture-session');
      // the fixture covers what a change could break: model steps, a child batch, an update,
      // a signal, and continue-as-new
      const has = (attributes: string) => h.history.events!.some((e) => (e as Record<string, unknown>)[attributes]);
      for (const a of [
        'activityTaskCompletedEventAttributes',
        'childWorkflowExecutionCompletedEventAttributes',
        'workflowExecutionUpdateCompletedEventAttributes',
        'workflowExecutionSignaledEventAttributes',
        'workflowExecutionContinuedAsNewEventAttributes',
      ])
        expect(has(a), a).toBe(true);
    }
    const results = await replayHistories(histories, { workflowBundlePath: inject('workflowBundlePath') });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results).toHaveLength(fixtures.length);
  });

  it('recorded sessions whose batches an activity started (model step an activity, and local) replay', async () => {
    expect(byActivity.length).toBeGreaterThanOrEqual(2);
    const histories = byActivity.map(readHistoryFile);
    for (const h of histories) {
      const events = h.history.events as Record<string, { activityType?: { name?: string } } | undefined>[];
      const has = (attributes: string) => events.some((e) => e[attributes]);
      // The batch went through the activity (with model steps as activities, run locally first:
      // its marker), never a child start; the run reached continue-as-new.
      expect(
        events.some(
          (e) =>
            batchActivityMarker(e) ||
            e.activityTaskScheduledEventAttributes?.activityType?.name === 'sluiceSessionBatch',
        ),
      ).toBe(true);
      expect(has('startChildWorkflowExecutionInitiatedEventAttributes')).toBe(false);
      expect(has('workflowExecutionContinuedAsNewEventAttributes')).toBe(true);
    }
    const results = await replayHistories(histories, { workflowBundlePath: inject('workflowBundlePath') });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results).toHaveLength(byActivity.length);
  });

  it('recorded sessions whose step waited on its batch with no activity (a watch child) replay, and their batches', async () => {
    const sessions = PARKED.map(readHistoryFile);
    for (const h of sessions) {
      const events = h.history.events as Record<
        string,
        { activityType?: { name?: string }; workflowType?: { name?: string } } | undefined
      >[];
      // The batch activity ran again after the watch ended, and the run reached continue-as-new.
      const watches = events.filter(
        (e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name === 'sluiceSessionBatchWatch',
      );
      const looks = events.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'sluiceSessionBatch',
      );
      expect(watches).toHaveLength(1);
      expect(looks.length).toBeGreaterThanOrEqual(2);
      expect(events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes)).toBe(true);
    }
    const batches = PARKED.map((f) =>
      readHistoryFile(
        path.join(__dirname, 'fixtures', 'session-parked-batches', `${path.basename(f, '.json')}-batch.json`),
      ),
    );
    for (const h of batches) {
      const events = h.history.events as Record<string, { signalName?: string } | undefined>[];
      // Asked by the watch, it signalled the watch at its end.
      expect(
        events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'sluice.batch.endWanted'),
      ).toBe(true);
      expect(
        events.some(
          (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'sluice.session.batchEnded',
        ),
      ).toBe(true);
    }
    const results = await replayHistories([...sessions, ...batches], {
      workflowBundlePath: inject('workflowBundlePath'),
    });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results).toHaveLength(4);
  });

  it('a session workflow that issues a command the recording never had fails replay', async () => {
    const dir = path.join(scratch, 'timer-before-model-step');
    for (const sub of ['workflows', 'pipeline', 'codec'])
      fs.cpSync(path.join(ROOT, sub), path.join(dir, sub), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const file = path.join(dir, 'workflows', 'session-turn.ts');
    const src = fs.readFileSync(file, 'utf8');
    const line = 'control.modelScope = new CancellationScope();';
    expect(src, 'the edit needs the model step of workflows/session-turn.ts').toContain(line);
    fs.writeFileSync(
      file,
      `import { sleep } from '@temporalio/workflow';\n${src.replace(line, `await sleep('1 ms');\n      ${line}`)}`,
    );
    const results = await replayHistories(fixtures.map(readHistoryFile), {
      workflowsPath: path.join(dir, 'workflows', 'index.ts'),
    });
    expect(results.map((r) => r.failure)).toEqual(fixtures.map(() => 'nondeterminism'));
  }, 120_000);
});
