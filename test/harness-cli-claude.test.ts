// Claude Code (`claude -p`) in front of Sluice, end to end (test/harness-cli/suite.ts says how).
import { describe, expect, it } from 'vitest';
import {
  approvalFor,
  decided,
  decidedBySluice,
  fakeModel,
  harness,
  project,
  runs,
  shown,
  useHarnessClis,
} from './harness-cli/suite';
import { eventually } from './eventually';

useHarnessClis('harness-cli-claude');

describe.concurrent('each harness CLI decided by Sluice', () => {
  decidedBySluice('claude');

  it('Claude Code -p: an ask the hook gives up on is refused; the model, told to run it again, gets the approval', async () => {
    const p = project('claude-headless');
    // A short hook time: the hook answers `ask` (fail closed) while the approval still waits, and
    // `claude -p` refuses the call at once; the reason tells the model to run the same call again.
    const hookS = 15;
    const running = harness('claude', p, 'RUN: ./mark asked-headless', hookS);
    const pending = await approvalFor('asked-headless');
    await eventually('the model to read the refusal', () =>
      fakeModel().log.some((l) => JSON.stringify(l.body).includes(`sluice approve ${pending.approvalId}`)),
    );
    // The person decides after the asking hook's time is over: attached to by the call asked
    // again, or applied to it as a late decision, it reaches the repeated call either way.
    const after = Date.parse(pending.askedAt) + (hookS + 1) * 1000;
    await eventually('the asking hook to be past its time', () => Date.now() > after);
    await decided('approve', pending);
    const r = await running;
    expect(runs(p, 'asked-headless'), shown(r)).toBe(1);
  });
});
