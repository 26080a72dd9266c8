// The one wait of the foreground commands (gateways, `sluice ui`, `sluice hook --port`): it ends on
// the first SIGTERM or SIGINT or on another promise, and leaves no signal listener behind, so a
// second signal while the command closes down ends the process instead of being swallowed.
// Signals are emitted on `process` (what a delivered signal does), not sent to this process.
import { describe, expect, it } from 'vitest';
import { untilStopSignal } from '../../support/stop-signal';

const listeners = () => ({ term: process.listenerCount('SIGTERM'), int: process.listenerCount('SIGINT') });

describe('untilStopSignal', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`resolves on ${signal} and takes both of its listeners off`, async () => {
      const before = listeners();
      const stopped = untilStopSignal();
      expect(listeners()).toEqual({ term: before.term + 1, int: before.int + 1 });
      process.emit(signal);
      await stopped;
      expect(listeners()).toEqual(before);
    });
  }

  it('resolves when another promise settles first, even by rejecting, and takes its listeners off', async () => {
    const before = listeners();
    let end!: (err: Error) => void;
    const stdinEnded = new Promise<void>((_, reject) => {
      end = reject;
    });
    const stopped = untilStopSignal(new Promise<void>(() => undefined), stdinEnded);
    end(new Error('stdin closed'));
    await stopped;
    expect(listeners()).toEqual(before);
  });
});
