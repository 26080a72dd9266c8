// Shared by the fault tests: waiting on the files the fixture stages touch, and checking what
// must hold after every crash: the batch completed, each call has exactly one tool/result, the
// session log has every seq once, no workflow task failed, and side effects ran once.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { temporal } from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';
import type { BatchOutput, SessionEvent } from '../../pipeline/types';
import { readSessionLog } from '../../stores/sink';
import { eventually } from '../eventually';

export const FIXTURE = path.join(__dirname, '..', 'fixtures', 'faults.config.ts');

/** How many times each scenario round runs: SLUICE_FAULT_ROUNDS (default 1, the CI setting). */
export const ROUNDS = Math.max(1, Number(process.env.SLUICE_FAULT_ROUNDS ?? 1));

export function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  return eventually(what, probe, { timeoutMs });
}

export function lines(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Lines of effects.log (or observed.log) per tag. */
export function countByTag(file: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of lines(file)) {
    const tag = l.split(' ')[0];
    m.set(tag, (m.get(tag) ?? 0) + 1);
  }
  return m;
}

export async function sessionHas(
  stateDir: string,
  sessionId: string,
  match: (e: SessionEvent) => boolean,
): Promise<boolean> {
  return (await readSessionLog(stateDir, sessionId)).some(match);
}

export async function historyEventTypes(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType));
}

export interface BatchCheck {
  /** Calls with no tool/result, or more than one. */
  lost: number;
  extraResults: number;
  workflowTaskFailures: number;
  logProblems: string[];
}

/** Everything that must hold for one finished batch, whatever crashed while it ran. */
export async function checkBatch(out: BatchOutput, handle: WorkflowHandle, stateDir: string): Promise<BatchCheck> {
  const results = out.events.filter((e) => e.type === 'tool/result');
  let lost = 0;
  let extraResults = 0;
  for (const r of out.results) {
    const n = results.filter((e) => e.data.callId === r.callId).length;
    if (n === 0) lost++;
    if (n > 1) extraResults += n - 1;
  }
  const types = await historyEventTypes(handle);
  const workflowTaskFailures = types.filter((t) => t === 'EVENT_TYPE_WORKFLOW_TASK_FAILED').length;
  // The session log: every seq of the batch exactly once, in order, the same events as the output.
  const logged = (await readSessionLog(stateDir, out.sessionId)).filter(
    (e) => e.seq >= (out.events[0]?.seq ?? 0) && e.seq < out.nextSeq,
  );
  const logProblems: string[] = [];
  const seqs = logged.map((e) => e.seq);
  if (new Set(seqs).size !== seqs.length) logProblems.push(`duplicate seqs in the session log: ${seqs.join(',')}`);
  if (logged.length !== out.events.length)
    logProblems.push(`session log has ${logged.length} events, the output ${out.events.length}`);
  for (const e of out.events) {
    const l = logged.find((x) => x.seq === e.seq);
    if (!l || l.type !== e.type)
      logProblems.push(`seq ${e.seq}: output has ${e.type}, log has ${l?.type ?? 'nothing'}`);
  }
  return { lost, extraResults, workflowTaskFailures, logProblems };
}

export interface Figures {
  batches: number;
  calls: number;
  kills: number;
  restarts: number;
  lost: number;
  /** Side effects that ran more than once outside the at-least-once window. */
  duplicated: number;
  /** Kills that landed after a body's side effect and before its completion was recorded. */
  windowKills: number;
  /** Side effects repeated by those kills (a body that checks its idempotency key repeats none). */
  windowDuplicates: number;
  /** tools/result observers run again after a kill (at-least-once; they get the idempotency key). */
  observerReruns: number;
}

export function emptyFigures(): Figures {
  return {
    batches: 0,
    calls: 0,
    kills: 0,
    restarts: 0,
    lost: 0,
    duplicated: 0,
    windowKills: 0,
    windowDuplicates: 0,
    observerReruns: 0,
  };
}

export function printFigures(title: string, f: Figures): void {
  const row = Object.entries(f)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  console.log(`FAULT FIGURES ${title}: ${row}`);
}
