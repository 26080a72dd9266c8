// Gemini CLI (`gemini -p`) in front of Sluice, end to end (test/harness-cli/suite.ts says how).
import { describe, expect, it } from 'vitest';
import {
  approvalFor,
  decided,
  decidedBySluice,
  harness,
  project,
  runs,
  shown,
  useHarnessClis,
} from './harness-cli/suite';

useHarnessClis('harness-cli-gemini');

describe.concurrent('each harness CLI decided by Sluice', () => {
  decidedBySluice('gemini');

  it('Gemini CLI: the identical call again after an approved one ran is asked afresh (its AfterTool was recorded)', async () => {
    const p = project('gemini-twice');
    // The model makes the same call twice in a row; Gemini CLI sends no tool_use_id.
    const running = harness('gemini', p, 'RUN: ./mark asked-twice\nTIMES: 2');
    const first = await approvalFor('asked-twice');
    await decided('approve', first);
    const second = await approvalFor('asked-twice', [first.approvalId]);
    expect(runs(p, 'asked-twice')).toBe(1);
    await decided('deny', second, ['--reason', 'once is enough']);
    const r = await running;
    expect(runs(p, 'asked-twice'), shown(r)).toBe(1);
    expect(r.stdout, shown(r)).toContain('once is enough');
  });
});
