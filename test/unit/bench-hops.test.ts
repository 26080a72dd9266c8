// The bench's hop count (bench/hops.ts): over generated histories of workflow tasks, activities,
// local activities, timers and signals with known times, it counts each kind and sums each wait
// and run as written; and it reads a recorded Sluice history's local activity.
import { temporal } from '@temporalio/proto';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { historyHops, hopsPerBatch } from '../../bench/hops';

const T = temporal.api.enums.v1.EventType;
type Event = temporal.api.history.v1.IHistoryEvent;

/** A hop as the generator makes it: its kind, and ms waiting and running. */
type Hop =
  | { kind: 'workflowTask'; wait: number; run: number; local: number[] }
  | { kind: 'activity'; wait: number; run: number }
  | { kind: 'timer' | 'signal' };

const ms = fc.integer({ min: 0, max: 5000 });
const hop: fc.Arbitrary<Hop> = fc.oneof(
  fc.record({
    kind: fc.constant('workflowTask' as const),
    wait: ms,
    run: ms,
    local: fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant('activity' as const), wait: ms, run: ms }),
  fc.record({ kind: fc.constantFrom('timer' as const, 'signal' as const) }),
);

/** The events of these hops one after another from t = 1000 s, as the server would write them. */
function historyOf(hops: Hop[]): Event[] {
  const events: Event[] = [];
  let now = 1_000_000;
  // fromObject, as a client reading JSON would: ids and seconds become the Longs the server sends.
  const add = (eventType: temporal.api.enums.v1.EventType, attrs: Record<string, unknown> = {}) => {
    const eventId = events.length + 1;
    const eventTime = { seconds: Math.floor(now / 1000), nanos: (now % 1000) * 1e6 };
    events.push(temporal.api.history.v1.HistoryEvent.fromObject({ eventId, eventType, eventTime, ...attrs }));
    return eventId;
  };
  add(T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  for (const h of hops) {
    if (h.kind === 'workflowTask') {
      const scheduledEventId = add(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
      now += h.wait;
      const started = now;
      const startedEventId = add(T.EVENT_TYPE_WORKFLOW_TASK_STARTED, {
        workflowTaskStartedEventAttributes: { scheduledEventId },
      });
      now += h.run;
      add(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, { workflowTaskCompletedEventAttributes: { startedEventId } });
      for (const l of h.local)
        add(T.EVENT_TYPE_MARKER_RECORDED, { markerRecordedEventAttributes: marker(started + l) });
    } else if (h.kind === 'activity') {
      const scheduledEventId = add(T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
      now += h.wait;
      const startedEventId = add(T.EVENT_TYPE_ACTIVITY_TASK_STARTED, {
        activityTaskStartedEventAttributes: { scheduledEventId },
      });
      now += h.run;
      add(T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, { activityTaskCompletedEventAttributes: { startedEventId } });
    } else if (h.kind === 'timer') add(T.EVENT_TYPE_TIMER_STARTED);
    else add(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
    now += 1;
  }
  return events;
}

/** A local activity's marker, completed at `doneMs`, as the SDK's core writes it. */
function marker(doneMs: number) {
  const data = {
    activity_type: 'x',
    complete_time: { seconds: Math.floor(doneMs / 1000), nanos: (doneMs % 1000) * 1e6 },
  };
  return {
    markerName: 'core_local_activity',
    details: { data: { payloads: [{ metadata: {}, data: Buffer.from(JSON.stringify(data)) }] } },
  };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('bench hops', () => {
  it('counts every kind of hop and sums its waits and runs as the history wrote them', () => {
    fc.assert(
      fc.property(fc.array(hop, { maxLength: 30 }), (hops) => {
        const got = historyHops(historyOf(hops));
        const tasks = hops.filter((h) => h.kind === 'workflowTask');
        const acts = hops.filter((h) => h.kind === 'activity');
        const locals = tasks.flatMap((t) => t.local);
        expect(got.workflowTasks).toBe(tasks.length);
        expect(got.workflowTaskWaitMs).toBeCloseTo(sum(tasks.map((t) => t.wait)), 3);
        expect(got.workflowTaskRunMs).toBeCloseTo(sum(tasks.map((t) => t.run)), 3);
        expect(got.activityTasks).toBe(acts.length);
        expect(got.activityWaitMs).toBeCloseTo(sum(acts.map((a) => a.wait)), 3);
        expect(got.activityRunMs).toBeCloseTo(sum(acts.map((a) => a.run)), 3);
        expect(got.localActivities).toBe(locals.length);
        expect(got.localActivityMs).toBeCloseTo(sum(locals), 3);
        expect(got.timers).toBe(hops.filter((h) => h.kind === 'timer').length);
        expect(got.signals).toBe(hops.filter((h) => h.kind === 'signal').length);
        expect(got.hops).toBe(tasks.length + acts.length + locals.length);
      }),
    );
  });

  it('averages per batch over the histories it is given', () => {
    const one = historyOf([{ kind: 'activity', wait: 10, run: 20 }]);
    const three = historyOf([
      { kind: 'activity', wait: 30, run: 0 },
      { kind: 'activity', wait: 0, run: 0 },
      { kind: 'activity', wait: 0, run: 0 },
    ]);
    expect(hopsPerBatch([one, three])).toMatchObject({ histories: 2, activityTasks: 2, activityWaitMs: 20 });
    expect(hopsPerBatch([])).toMatchObject({ histories: 0, hops: 0 });
  });

  it("reads a recorded batch's claim-and-preflight local activity, and no other marker as one", () => {
    const file = path.join(__dirname, '..', 'fixtures', 'histories', 'unreleased', 'mixed-batch.json');
    const history = historyFromJSON(JSON.parse(fs.readFileSync(file, 'utf8')));
    const events = history.events ?? [];
    const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    const got = historyHops(events);
    expect(markers.length).toBeGreaterThan(0);
    expect(events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')).toBe(true);
    expect(got.localActivities).toBe(markers.length);
    expect(got.localActivityMs).toBeGreaterThan(0);
    expect(got.workflowTasks).toBe(events.filter((e) => e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_STARTED).length);
  });
});
