// A batch's worker is lost mid-batch and the next one replays it: the session-event sink is called
// again (callDuringReplay) with every event so far, and a replay need not number them as the lost
// run did (a local activity's result can come in another activation on replay, test/replay-order.test.ts).
// Around the place where the lost run stopped writing, an event the log already holds can come
// again under a seq past the log's end, and one the log lacks under a seq it holds. Here the real
// JSONL sink holds what the recorded run wrote up to each such place, the recorded fastpath batch
// is replayed into it, and every reader of the log (the store's events, which the session page,
// `sluice events` and `sluice audit` read, the log read whole, and a follower) shows each event of
// the batch exactly once, in seqs that only grow.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { decode, readHistoryFile } from '../client/history';
import { followSessionEvents } from '../client/session-events';
import { type BatchOutputWire, expandBatchOutput } from '../codec/output';
import type { SessionEvent } from '../pipeline/types';
import { JsonlSessionLog, readSessionLog } from '../stores/sink';
import { fileStores } from '../stores/stores';
import { sessionEventSinks } from '../worker/workflow-sinks';
import type { EventSink } from '../stores/sink';

const FIXTURE = path.join(__dirname, 'fixtures', 'histories', 'unreleased', 'fastpath-batch.json');
const { history, workflowId } = readHistoryFile(FIXTURE);

/** An event without its place (seq) and its workflow time, which a replay may both move. */
const identity = ({ seq: _seq, time: _time, ...rest }: SessionEvent) => JSON.stringify(rest);

function replayInto(sink: EventSink): Promise<void> {
  return Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') }, sinks: sessionEventSinks(sink) },
    history,
    workflowId,
  );
}

/** The batch's output, as its recording completed it. */
function recordedOutput() {
  const completed = history.events?.find((e) => e.workflowExecutionCompletedEventAttributes);
  return expandBatchOutput(decode(completed!.workflowExecutionCompletedEventAttributes!.result) as BatchOutputWire);
}

/** Each reader's view of the session's log. */
async function readers(stateDir: string, sessionId: string): Promise<Record<string, SessionEvent[]>> {
  const logged = await readSessionLog(stateDir, sessionId);
  const last = Math.max(...logged.map((e) => e.seq));
  const followed: SessionEvent[] = [];
  const stop = new AbortController();
  for await (const e of followSessionEvents(stateDir, sessionId, { signal: stop.signal })) {
    followed.push(e);
    if (e.seq === last) stop.abort();
  }
  return { log: logged, store: await fileStores(stateDir).events(sessionId), follow: followed };
}

describe('a batch replayed into a log its lost run wrote part of', () => {
  it('every reader shows each event once, wherever the lost run stopped writing', async () => {
    const { sessionId, events: recorded } = recordedOutput();
    const replayed: SessionEvent[] = [];
    await replayInto({ append: async (_s, events) => void replayed.push(...events) });
    const want = recorded.map(identity).sort();
    expect(replayed.map(identity).sort()).toEqual(want);
    // The places where the lost run's writes and the replay's disagree on which events came first:
    // the replay renumbers an event across the log's end. The fixture has at least one.
    const cuts = recorded
      .map((_, k) => k)
      .filter((k) => {
        const head = (list: SessionEvent[]) =>
          list
            .filter((e) => e.seq < recorded[0].seq + k)
            .map(identity)
            .sort();
        return JSON.stringify(head(recorded)) !== JSON.stringify(head(replayed));
      });
    expect(cuts.length).toBeGreaterThan(0);

    for (const k of cuts) {
      const stateDir = fs.mkdtempSync(path.join(inject('runDir'), 'replay-sink-'));
      const warnings: string[] = [];
      const sink = new JsonlSessionLog(stateDir, (m) => warnings.push(m));
      expect(await sink.claim(sessionId, recorded[0].seq, workflowId)).toEqual({ ok: true });
      await sink.append(sessionId, recorded.slice(0, k), workflowId);
      await replayInto(sink);
      for (const [reader, events] of Object.entries(await readers(stateDir, sessionId))) {
        expect(events.map(identity).sort(), `${reader}, the lost run stopped after ${k} events`).toEqual(want);
        const seqs = events.map((e) => e.seq);
        expect(seqs, `${reader}: seqs only grow`).toEqual([...new Set(seqs)].sort((a, b) => a - b));
      }
      expect(warnings).toEqual([]);
    }
  }, 300_000);
});
