// A user's tool body throws `ToolFailure` (exported by `sluice`, documented in docs/tools.md): the
// execute stage answers with that error result at once, where any other throw fails the activity
// so Temporal retries the body.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { createStageActivities } from '../../activities/stages';
import { defineTool, ToolFailure } from '../../index';
import type { BodyResult, CallRef } from '../../pipeline/stages';
import { packCallRef, unpackBodyResult } from '../../codec/stages';

const ref = (name: string): CallRef => ({
  workflowId: 'wf',
  sessionId: 's',
  turn: 1,
  step: 1,
  callId: `c-${name}`,
  name,
  args: {},
  argsDigest: 'digest',
  idempotencyKey: `wf/c-${name}`,
  state: {},
});

describe('a ToolFailure thrown by a tool body', () => {
  it('is the call’s error result with its code, from the one run of the body', async () => {
    let runs = 0;
    const tool = defineTool({
      name: 'lookup',
      description: 'looks a customer up',
      input: { type: 'object', properties: {} },
      execute: () => {
        runs++;
        throw new ToolFailure('no customer 42; list them with list_customers', 'CUSTOMER_NOT_FOUND');
      },
    });
    const acts = createStageActivities({ tools: [tool] });
    const out: BodyResult = unpackBodyResult(
      await new MockActivityEnvironment().run(acts.executeBody, packCallRef(ref('lookup'))),
    );
    expect(runs).toBe(1);
    expect(out.outcome).toBe('ok');
    expect(out.candidate.isError).toBe(true);
    expect(out.candidate.error).toEqual({
      message: 'no customer 42; list them with list_customers',
      code: 'CUSTOMER_NOT_FOUND',
    });
    expect(out.candidate.content).toEqual([
      { type: 'text', text: 'Error: no customer 42; list them with list_customers' },
    ]);
  });

  it('without a code (plain JavaScript) reads as TOOL_FAILED', async () => {
    const tool = defineTool({
      name: 'js_lookup',
      description: 'looks up',
      input: { type: 'object', properties: {} },
      execute: () => {
        throw new (ToolFailure as unknown as new (m: string) => Error)('not there');
      },
    });
    const acts = createStageActivities({ tools: [tool] });
    const out: BodyResult = unpackBodyResult(
      await new MockActivityEnvironment().run(acts.executeBody, packCallRef(ref('js_lookup'))),
    );
    expect(out.candidate.error).toEqual({ message: 'not there', code: 'TOOL_FAILED' });
  });

  it('any other throw still fails the activity, for Temporal to retry', async () => {
    const tool = defineTool({
      name: 'flaky',
      description: 'fails',
      input: { type: 'object', properties: {} },
      execute: () => {
        throw new Error('connection reset');
      },
    });
    const acts = createStageActivities({ tools: [tool] });
    await expect(new MockActivityEnvironment().run(acts.executeBody, packCallRef(ref('flaky')))).rejects.toThrow(
      /flaky failed: connection reset/,
    );
  });
});
