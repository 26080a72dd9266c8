// sluice/browser's fold of a step's text (browser/live-text.ts), searched with generated streams:
// whatever attempts failed, whatever runs a lost worker left, voided or not before the next began,
// the page shows the answer once; its record replaces the pieces, and nothing live shows after it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LiveText } from '../../browser/live-text';
import type { LiveEvent } from '../../pipeline/live';
import type { SessionEvent } from '../../pipeline/types';

const piece = fc.string({ minLength: 1, maxLength: 4 });

/** An execution of the step: its run token, and the attempts it made before the last one. */
const execution = fc.record({
  run: fc.stringMatching(/^[0-9a-f]{4,8}$/),
  /** How many pieces each failed attempt streamed, and whether the worker voided it (a retry) or went silent (lost). */
  failed: fc.array(fc.record({ shown: fc.nat(5), voided: fc.boolean() }), { maxLength: 3 }),
});

/**
 * The events of one step as the inbox streams them: runs in turn (a worker lost mid-answer, the
 * step run again from attempt 1 elsewhere), each with its failed attempts, then the last run's
 * last attempt whole. Voids come from the worker or not at all (the follower's own void is optional).
 */
function streamOf(answer: string[], runs: { run: string; failed: { shown: number; voided: boolean }[] }[]) {
  const events: LiveEvent[] = [];
  const at = { turn: 1, step: 1 };
  runs.forEach((r, i) => {
    const last = i === runs.length - 1;
    const attempts = [...r.failed, ...(last ? [{ shown: answer.length, voided: false }] : [])];
    attempts.forEach((a, k) => {
      const attempt = k + 1;
      const shown = answer.slice(0, Math.min(a.shown, answer.length));
      shown.forEach((text, n) =>
        events.push({ type: 'live/delta', ...at, run: r.run, attempt, n, kind: 'text', text }),
      );
      const failed = !(last && k === attempts.length - 1);
      if (failed && a.voided)
        events.push({ type: 'live/void', ...at, run: r.run, attempt, n: shown.length, reason: 'retried' });
    });
  });
  return events;
}

const record = (seq: number, text: string): SessionEvent => ({
  type: 'model/message',
  seq,
  time: new Date(0).toISOString(),
  data: {
    turn: 1,
    step: 1,
    text,
    toolCalls: [],
    usage: {},
    finishReason: 'stop',
    historyEvents: 0,
    historyBytes: 0,
    run: 1,
  },
});

describe('LiveText', () => {
  it('shows the answer once, whatever attempts and runs came before the one that finished', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 6 }),
        fc.uniqueArray(execution, { minLength: 1, maxLength: 3, selector: (e) => e.run }),
        (answer, runs) => {
          const fold = new LiveText();
          for (const e of streamOf(answer, runs)) fold.apply(e);
          const s = fold.get(1, 1);
          expect(s?.text).toBe(answer.join(''));
          expect(s?.streaming).toBe(true);
          expect(s?.recorded).toBe(false);
          // One piece per kind of the attempt that finished: nothing of another attempt or run is left.
          expect(s?.pieces).toHaveLength(1);
        },
      ),
    );
  });

  it('replaces the pieces with the record, and shows no piece that comes after it', () => {
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 6 }), piece, (answer, late) => {
        const fold = new LiveText();
        for (const e of streamOf(answer, [{ run: 'ab', failed: [] }])) fold.apply(e);
        const s = fold.apply(record(3, answer.join('')));
        expect(s).toMatchObject({ text: answer.join(''), streaming: false, recorded: true, pieces: [] });
        // A piece read after the record (a late follower's channel still holds it) changes nothing.
        const after: LiveEvent = {
          type: 'live/delta',
          turn: 1,
          step: 1,
          run: 'cd',
          attempt: 2,
          n: 0,
          kind: 'text',
          text: late,
        };
        expect(fold.apply(after)).toBeUndefined();
        expect(fold.get(1, 1)?.text).toBe(answer.join(''));
      }),
    );
  });

  it('empties a voided attempt at once, and marks a step whose pieces were dropped', () => {
    const fold = new LiveText();
    fold.apply({ type: 'live/delta', turn: 2, step: 1, run: 'ab', attempt: 1, n: 0, kind: 'text', text: 'Hel' });
    expect(fold.get(2, 1)?.text).toBe('Hel');
    const voided = fold.apply({ type: 'live/void', turn: 2, step: 1, run: 'ab', attempt: 1, n: -1, reason: 'lost' });
    expect(voided).toMatchObject({ text: '', voids: 1, pieces: [] });
    const dropped = fold.apply({
      type: 'live/dropped',
      turn: 2,
      step: 1,
      run: 'ab',
      attempt: 2,
      n: -1,
      reason: 'slow',
    });
    expect(dropped?.dropped).toBe(true);
    // Another step is its own.
    expect(fold.get(2, 2)).toBeUndefined();
  });

  it("keeps a tool call's name and its arguments as they form, apart from the text", () => {
    const fold = new LiveText();
    const at = { turn: 1, step: 1, run: 'ab', attempt: 1 } as const;
    fold.apply({ type: 'live/delta', ...at, n: 0, kind: 'text', text: 'Looking.' });
    fold.apply({
      type: 'live/delta',
      ...at,
      n: 1,
      kind: 'tool-call',
      text: '{"q":',
      call: { index: 0, name: 'search' },
    });
    const s = fold.apply({ type: 'live/delta', ...at, n: 2, kind: 'tool-call', text: '"x"}', call: { index: 0 } });
    expect(s?.text).toBe('Looking.');
    expect(s?.pieces.find((p) => p.kind === 'tool-call')).toMatchObject({ callName: 'search', text: '{"q":"x"}' });
  });
});
