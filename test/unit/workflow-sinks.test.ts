// The worker side of session event delivery: chunks of one session reach the EventSink one at a
// time in the order the workflow handed them over, and a failing write is tried again.
import type { WorkflowInfo } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../pipeline/types';
import { sessionEventSinks } from '../../worker/workflow-sinks';
import { eventually } from '../eventually';

const info = {} as WorkflowInfo;
const events = (...seqs: number[]): SessionEvent[] =>
  seqs.map((seq) => ({ type: 'test', seq, time: '2026-01-01T00:00:00.000Z', data: {} }));

describe('session event sinks', () => {
  it('writes the chunks of a session one at a time, in the order handed over', async () => {
    const written: number[][] = [];
    let writing = 0;
    let overlapped = false;
    const sinks = sessionEventSinks({
      async append(_sessionId, chunk) {
        overlapped ||= writing > 0;
        writing++;
        // The first chunk is the slowest: a sink that raced would finish it last.
        await new Promise((r) => setTimeout(r, chunk[0].seq === 0 ? 30 : 1));
        written.push(chunk.map((e) => e.seq));
        writing--;
      },
    });
    const append = sinks.sessionEvents.append.fn;
    const batch = (workflowId: string) => ({ workflowId }) as WorkflowInfo;
    await Promise.all([
      append(batch('a'), 's', events(0, 1)),
      append(batch('b'), 's', events(2)),
      append(batch('a'), 's', events(3, 4)),
    ]);
    expect(written).toEqual([[0, 1], [2], [3, 4]]);
    expect(overlapped).toBe(false);
    expect(sinks.sessionEvents.append.callDuringReplay).toBe(true);
  });

  it("joins one batch's events handed over together into one write, in order, and each call waits for it", async () => {
    const written: number[][] = [];
    const sinks = sessionEventSinks({
      async append(_sessionId, chunk) {
        await new Promise((r) => setTimeout(r, 5));
        written.push(chunk.map((e) => e.seq));
      },
    });
    const append = sinks.sessionEvents.append.fn;
    const a = { workflowId: 'a' } as WorkflowInfo;
    const done: number[] = [];
    // As the worker calls a task's sinks: all at once, one event each.
    await Promise.all(
      [0, 1, 2].map(async (seq) => {
        await append(a, 's', events(seq));
        done.push(seq);
      }),
    );
    // A later task's events go in a write of their own.
    await append(a, 's', events(3));
    expect(written).toEqual([[0, 1, 2], [3]]);
    expect(done).toEqual([0, 1, 2]);
  });

  it('tries a failing write again, and the chunk gets through', async () => {
    let attempts = 0;
    const written: number[] = [];
    const sinks = sessionEventSinks({
      async append(_sessionId, chunk) {
        if (++attempts < 3) throw new Error('disk busy');
        written.push(...chunk.map((e) => e.seq));
      },
    });
    await sinks.sessionEvents.append.fn(info, 's', events(7));
    expect(attempts).toBe(3);
    expect(written).toEqual([7]);
  });

  it('never holds a task on a sink that fails for good: later chunks do not wait, and all arrive in order once it heals', async () => {
    let broken = true;
    let attempts = 0;
    const written: number[] = [];
    const sinks = sessionEventSinks(
      {
        async append(_sessionId, chunk) {
          attempts++;
          if (broken) throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
          written.push(...chunk.map((e) => e.seq));
        },
      },
      { backgroundDelaysMs: [20] },
    );
    const append = sinks.sessionEvents.append.fn;
    await append(info, 's', events(0, 1));
    // A permanent error is not retried inside the task; once a session is held, nothing is tried there.
    expect(attempts).toBe(1);
    await append(info, 's', events(2));
    await append(info, 's', events(3));
    expect(written).toEqual([]);
    broken = false;
    await eventually('the held events written in the background', () => written.length >= 4);
    expect(written).toEqual([0, 1, 2, 3]);
    // Healed: the next chunk is written in its own task again.
    await append(info, 's', events(4));
    expect(written).toEqual([0, 1, 2, 3, 4]);
  });

  it('keeps other sessions apart from a failing one', async () => {
    const written: string[] = [];
    const sinks = sessionEventSinks(
      {
        async append(sessionId) {
          if (sessionId === 'bad') throw Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' });
          written.push(sessionId);
        },
      },
      { backgroundDelaysMs: [60_000] },
    );
    await sinks.sessionEvents.append.fn(info, 'bad', events(0));
    await sinks.sessionEvents.append.fn(info, 'good', events(0));
    expect(written).toEqual(['good']);
  });
});
