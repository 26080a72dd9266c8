// A session step's batch is first started and awaited by a local activity, inside the session's
// workflow task (workflows/session-turn.ts batchHere; with model steps as activities). A worker killed while that activity waits
// leaves no record of it: the next workflow task runs it again, and it must attach to the batch
// already started (the batch's workflow id is fixed), never fail on the taken id, start a second
// batch, or lose the batch's output. The body kills its own worker, so the kill falls while the
// batch runs, whichever of the step's waits (local, then the activity) holds it then; each path
// must end the same way. With local model steps the batch goes straight to the activity, and a
// worker lost there is taken up by another once its heartbeat times out: the same outcome.
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSession } from '../client/session';
import { FileResultStore } from '../stores/claim-check';
import { batchWorkflowId } from '../workflows/definitions';
import { eventually } from './eventually';
import { killableWorker } from './harness';

const CONFIG = path.join(__dirname, 'fixtures', 'batch-here.config.ts');
const k = killableWorker('session-batch-here', CONFIG);
const { lines, start: startWorker } = k;

describe('a step whose worker dies while its batch runs', () => {
  for (const local of [false, true])
    it(`attaches to the batch it started and hands its output to the model once (model step ${local ? 'local' : 'an activity'})`, async () => {
      await startWorker();
      const s = await startSession(k.h.client, {
        sessionId: `here-${local ? 'local' : 'activity'}-${process.pid}-${Date.now()}`,
        model: 'scripted',
        modelCall: { heartbeatTimeoutMs: 2_000, initialIntervalMs: 200, ...(local ? { local: true } : {}) },
      });
      const mine = (l: string) => l.includes(s.sessionId);
      const turn = s.send('go', { id: 'm0' });
      // The body's first run writes its marker, then kills the worker.
      await eventually('the body killed its worker', () => lines('started.log').filter(mine).length >= 1);
      await k.kill();
      await startWorker();

      const outcome = await turn;
      expect([outcome.reason, outcome.steps, outcome.text]).toEqual(['done', 2, 'Said.']);
      // One batch, run to its end: the body ran again there and completed once.
      const batch = await k.h.client.temporal.workflow.getHandle(batchWorkflowId(s.sessionId, 1, 1)).describe();
      expect(batch.status.name).toBe('COMPLETED');
      expect(lines('started.log').filter(mine)).toHaveLength(2);
      expect(lines('bodies.log').filter(mine)).toHaveLength(1);
      // The model's second step saw the body's answer, once.
      const transcript = await s.transcript(new FileResultStore(path.join(k.h.stateDir, 'results')));
      const tool = transcript.filter((m) => m.role === 'tool');
      expect(tool).toHaveLength(1);
      expect(JSON.stringify(tool[0])).toContain('said hello');
      await s.cancel();
      await k.kill();
    }, 120_000);
});
