// Where a workflow's time goes, read from its history: every gap between two consecutive events
// by the pair of event types, and the events and workflow tasks it took. Shared by the benches
// that break a step or a call down this way (bench/session.ts, bench/code-mode.ts).
import { temporal } from '@temporalio/proto';
import type { SluiceClient } from '../client/client';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export const eventType = (e: HistoryEvent) =>
  String(temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? e.eventType)
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase();
export const eventMs = (e: HistoryEvent) => {
  const t = e.eventTime as { seconds?: { toNumber(): number } | number; nanos?: number } | null | undefined;
  const sec = typeof t?.seconds === 'number' ? t.seconds : (t?.seconds?.toNumber() ?? 0);
  return sec * 1000 + (t?.nanos ?? 0) / 1e6;
};

type Events = HistoryEvent[];

/** The events of each of these workflows' histories, fetched once for every table read from them. */
export async function fetchEvents(client: SluiceClient, ids: string[]): Promise<Events[]> {
  const out: Events[] = [];
  for (const id of ids) out.push((await client.temporal.workflow.getHandle(id).fetchHistory()).events ?? []);
  return out;
}

/** Every gap between consecutive events of these histories, by the pair of types, summed, divided by `per`. */
export function gaps(histories: Events[], per: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const history of histories) {
    // In time order: the server writes a long activity's started event when it ends (with the
    // time it started), so in event order a Code Mode body's start comes after its sub-calls.
    const events = [...history].sort((a, b) => eventMs(a) - eventMs(b));
    for (let i = 1; i < events.length; i++) {
      const key = `${eventType(events[i - 1])} → ${eventType(events[i])}`;
      out.set(key, (out.get(key) ?? 0) + (eventMs(events[i]) - eventMs(events[i - 1])) / per);
    }
  }
  return out;
}

/** Events and workflow tasks of these histories divided by `per` (steps, calls), and the tasks' wait and run time. */
export function counts(histories: Events[], per: number): string {
  let events = 0;
  let tasks = 0;
  let wait = 0;
  let run = 0;
  for (const history of histories) {
    events += history.length;
    const at = new Map<string, number>();
    for (const e of history) {
      const type = eventType(e);
      if (type === 'workflow_task_scheduled') at.set('scheduled', eventMs(e));
      else if (type === 'workflow_task_started') {
        tasks++;
        wait += eventMs(e) - (at.get('scheduled') ?? eventMs(e));
        at.set('started', eventMs(e));
      } else if (type === 'workflow_task_completed') run += eventMs(e) - (at.get('started') ?? eventMs(e));
    }
  }
  const f = (n: number) => (n / per).toFixed(1);
  return `${f(events)} events, ${f(tasks)} workflow tasks (waiting ${f(wait)} ms to start, running ${f(run)} ms)`;
}

/** One gap table: its rows largest first, each in ms per `unit` (a step, a call). */
export function printGaps(title: string, unit: string, m: Map<string, number>): void {
  const rows = [...m].filter(([, ms]) => ms >= 0.05).sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((a, [, ms]) => a + ms, 0);
  console.log(`\n${title} (ms per ${unit}, ${total.toFixed(1)} in all):`);
  for (const [k, ms] of rows) console.log(`  ${ms.toFixed(1).padStart(7)}  ${k}`);
}
