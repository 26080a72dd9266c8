// Recorded batches replay their calls in the order the code that recorded them did, not only
// without a determinism failure. Core compares a command's type and id on replay, not its input:
// two bodies of one tool swapped in the command stream would each take the other's recorded
// result and replay "fine", and a microtask more or less on one call's way (a stage's result at
// hand or waited for, stage-runner.ts) can move its commands and events before or after another
// call's. So every recorded batch is replayed here with the session-event sink (called on replay
// too) collecting the events the workflow records:
//   - in the order the workflow code of the recording replayed them (fixtures/replay-order.json,
//     one line per event: its type and call id). A replay need not interleave admission and commit
//     as the recorded run did (a local activity's result can come in another activation on
//     replay), but it is deterministic, so the line order changes only when the code's does;
//   - each with the data the recorded output holds for it (each call its own result).
// The fastpath-* histories (scripts/record-fastpath-history.ts) are batches whose quick stages go
// both ways in one workflow. A history added to fixtures/histories gets its line order by running
// this file with SLUICE_REPLAY_ORDER=write on the code that recorded it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { decode, readHistoryFile } from '../client/history';
import { type BatchOutputWire, expandBatchOutput } from '../codec/output';
import type { SessionEvent } from '../pipeline/types';
import { sessionEventSinks } from '../worker/workflow-sinks';

const FIXTURES = path.join(__dirname, 'fixtures', 'histories');
const ORDER_FILE = path.join(__dirname, 'fixtures', 'replay-order.json');
const WRITE = process.env.SLUICE_REPLAY_ORDER === 'write';
const orders: Record<string, string[]> = JSON.parse(fs.readFileSync(ORDER_FILE, 'utf8'));

/** Every recorded batch (toolBatch) history, as `<release>/<file>`. */
function batchHistories(): string[] {
  return fs
    .readdirSync(FIXTURES)
    .flatMap((release) => fs.readdirSync(path.join(FIXTURES, release)).map((f) => `${release}/${f}`))
    .filter(
      (name) =>
        name.endsWith('.json') &&
        readHistoryFile(path.join(FIXTURES, name)).history.events?.[0]?.workflowExecutionStartedEventAttributes
          ?.workflowType?.name === 'toolBatch',
    );
}

/** One line per event: what it is and which call (or sub-call, or ask) it belongs to. */
function lineOf(e: SessionEvent): string {
  const d = e.data as Record<string, unknown>;
  return `${e.type} ${d.callId ?? d.subCallId ?? d.id ?? ''}`.trim();
}

/**
 * The events as the recorded output holds them, whatever their place: without their seq and their
 * time (the workflow time of the activation that recorded them, which a replay may place elsewhere,
 * as above), keys sorted.
 */
const withoutPlace = (events: SessionEvent[]) =>
  events.map(({ seq: _seq, time: _time, ...rest }) => canonical(rest)).sort();

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The events the recorded output holds, and the events the replay hands the sink. */
async function recordedAndReplayed(name: string): Promise<{ recorded: SessionEvent[]; replayed: SessionEvent[] }> {
  const { history, workflowId } = readHistoryFile(path.join(FIXTURES, name));
  const completed = history.events?.find((e) => e.workflowExecutionCompletedEventAttributes);
  expect(completed, `${name} records a completed batch`).toBeDefined();
  const wire = decode(completed!.workflowExecutionCompletedEventAttributes!.result) as BatchOutputWire;
  const replayed: SessionEvent[] = [];
  await Worker.runReplayHistory(
    {
      workflowBundle: { codePath: inject('workflowBundlePath') },
      sinks: sessionEventSinks({ append: async (_session, events) => void replayed.push(...events) }),
    },
    history,
    workflowId,
  );
  return { recorded: expandBatchOutput(wire).events, replayed };
}

describe('recorded batches replay in the order they were recorded', () => {
  const names = batchHistories();

  it('every recorded batch has its line order, and the fastpath histories are among them', () => {
    expect(names).toEqual(
      expect.arrayContaining(['unreleased/fastpath-batch.json', 'unreleased/fastpath-settle-here.json']),
    );
    if (!WRITE) expect(Object.keys(orders).sort()).toEqual([...names].sort());
  });

  for (const name of names)
    it(`${name}: the same events, each call its own, in the order its recording's code replayed them`, async () => {
      const { recorded, replayed } = await recordedAndReplayed(name);
      expect(recorded.length).toBeGreaterThan(0);
      expect(withoutPlace(replayed)).toEqual(withoutPlace(recorded));
      expect(replayed.map((e) => e.seq)).toEqual(replayed.map((_, i) => i));
      if (WRITE) {
        const now: Record<string, string[]> = JSON.parse(fs.readFileSync(ORDER_FILE, 'utf8'));
        now[name] = replayed.map(lineOf);
        fs.writeFileSync(ORDER_FILE, `${JSON.stringify(now, null, 2)}\n`);
      } else expect(replayed.map(lineOf)).toEqual(orders[name]);
    }, 120_000);
});
