// The hops a batch takes through the server and the worker's schedulers, read from its history
// (issue 49): each workflow task, activity task and local activity is a turn that waits for a
// core when the machine is busy, so a system that takes more of them loses more rounds under
// contention. Per batch: how many of each kind, and the time each kind spent waiting to start
// (scheduled → started) and running, summed over the batch (hops that overlap are each counted).
// Pure: used on fetched histories by bench/run.ts and bench/contention.ts.
import type { temporal } from '@temporalio/proto';
import { eventMs, eventType } from './history-gaps';
import { round } from './stats';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Per batch, averaged over the histories read. */
export interface HopFigures {
  /** Histories the averages are over. */
  histories: number;
  workflowTasks: number;
  /** Workflow task scheduled → started, summed over the batch's tasks (its schedule-to-start). */
  workflowTaskWaitMs: number;
  /** Workflow task started → completed, summed. */
  workflowTaskRunMs: number;
  activityTasks: number;
  /** Activity task scheduled → started, summed (the server writes an eager activity's start too). */
  activityWaitMs: number;
  /** Activity task started → completed, summed. */
  activityRunMs: number;
  /** Local activities (markers): they go through the worker's own scheduler, not the server. */
  localActivities: number;
  /**
   * From the start of the workflow task a local activity ran in to its completion (the marker's
   * complete_time), summed: the history has no schedule or start event for one, and this bound
   * holds the activity's wait for the worker's scheduler. It is part of that task's run time.
   */
  localActivityMs: number;
  timers: number;
  signals: number;
  updates: number;
  childWorkflows: number;
  /** Workflow tasks, activity tasks and local activities: the turns a batch waits for. */
  hops: number;
  /** The history's first event → its last: the batch as the server saw it. */
  batchMs: number;
}

type Counts = Omit<HopFigures, 'histories'>;

const ZERO: Counts = {
  workflowTasks: 0,
  workflowTaskWaitMs: 0,
  workflowTaskRunMs: 0,
  activityTasks: 0,
  activityWaitMs: 0,
  activityRunMs: 0,
  localActivities: 0,
  localActivityMs: 0,
  timers: 0,
  signals: 0,
  updates: 0,
  childWorkflows: 0,
  hops: 0,
  batchMs: 0,
};

/** The hops of one history. */
export function historyHops(events: HistoryEvent[]): Counts {
  const out = { ...ZERO };
  const at = new Map<string, number>(); // scheduled and started events by id, their time
  const eventId = (e: HistoryEvent) => String(e.eventId ?? '');
  let taskStarted = 0;
  for (const e of events) {
    const type = eventType(e);
    const ms = eventMs(e);
    at.set(eventId(e), ms);
    if (type === 'workflow_task_started') {
      out.workflowTasks++;
      taskStarted = ms;
      out.workflowTaskWaitMs += since(at, e.workflowTaskStartedEventAttributes?.scheduledEventId, ms);
    } else if (type === 'workflow_task_completed')
      out.workflowTaskRunMs += since(at, e.workflowTaskCompletedEventAttributes?.startedEventId, ms);
    else if (type === 'activity_task_started') {
      out.activityTasks++;
      out.activityWaitMs += since(at, e.activityTaskStartedEventAttributes?.scheduledEventId, ms);
    } else if (type === 'activity_task_completed')
      out.activityRunMs += since(at, e.activityTaskCompletedEventAttributes?.startedEventId, ms);
    else if (type === 'marker_recorded') {
      const local = localActivityMs(e, taskStarted);
      if (local !== undefined) {
        out.localActivities++;
        out.localActivityMs += local;
      }
    } else if (type === 'timer_started') out.timers++;
    else if (type === 'workflow_execution_signaled') out.signals++;
    else if (type === 'workflow_execution_update_accepted') out.updates++;
    else if (type === 'start_child_workflow_execution_initiated') out.childWorkflows++;
  }
  out.hops = out.workflowTasks + out.activityTasks + out.localActivities;
  if (events.length) out.batchMs = eventMs(events[events.length - 1]) - eventMs(events[0]);
  return out;
}

/** The average per batch over these histories, rounded for a result file. */
export function hopsPerBatch(histories: HistoryEvent[][]): HopFigures {
  const sum = { ...ZERO };
  for (const h of histories) {
    const one = historyHops(h);
    for (const k of Object.keys(sum) as (keyof Counts)[]) sum[k] += one[k];
  }
  const n = Math.max(1, histories.length);
  const avg = Object.fromEntries(Object.entries(sum).map(([k, v]) => [k, round(v / n, 1)])) as Counts;
  return { histories: histories.length, ...avg };
}

function since(at: Map<string, number>, id: { toString(): string } | number | null | undefined, ms: number): number {
  const from = id === null || id === undefined ? undefined : at.get(String(id));
  return from === undefined ? 0 : Math.max(0, ms - from);
}

/**
 * A local activity's marker carries when it completed (the SDK's core writes it into the marker's
 * `data` payload as JSON, worker clock: the same machine's as the server's here); undefined for
 * any other marker. Its `original_schedule_time` is not read: recorded histories show it after
 * the completion.
 */
function localActivityMs(e: HistoryEvent, taskStarted: number): number | undefined {
  const attrs = e.markerRecordedEventAttributes;
  if (attrs?.markerName !== 'core_local_activity') return undefined;
  const payload = attrs.details?.data?.payloads?.[0];
  if (!payload?.data) return 0;
  try {
    const data = JSON.parse(Buffer.from(payload.data).toString('utf8')) as { complete_time?: Stamp };
    const done = stampMs(data.complete_time);
    return done !== undefined && taskStarted > 0 ? Math.max(0, done - taskStarted) : 0;
  } catch {
    return 0;
  }
}

type Stamp = { seconds?: number | string; nanos?: number } | null | undefined;

function stampMs(t: Stamp): number | undefined {
  if (!t) return undefined;
  const ms = Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
  return Number.isFinite(ms) ? ms : undefined;
}
