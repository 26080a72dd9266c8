// Issue 22 item 2, in one process: two separately loaded copies of Sluice's modules (as a config
// that imports `sluice` from a linked checkout's dist/ while the worker runs another copy). A
// result built with one copy's toolOutput, a ToolFailure or ModelRefusedError thrown from one, is
// recognised by the other; and the execute stage of one copy records the other's toolOutput as
// the result it is, not as INVALID_TOOL_OUTPUT after the body ran.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it, vi } from 'vitest';
import type { BodyResult, CallRef } from '../../pipeline/stages';

type ConfigModule = typeof import('../../define/config');
type ErrorsModule = typeof import('../../tools/errors');
type ModelsModule = typeof import('../../agent/models');

/** A fresh copy of the modules: the registry is cleared, so every class is a new one. */
async function copy() {
  vi.resetModules();
  return {
    config: (await import('../../define/config')) as ConfigModule,
    errors: (await import('../../tools/errors')) as ErrorsModule,
    models: (await import('../../agent/models')) as ModelsModule,
    stages: await import('../../activities/stages'),
    wire: await import('../../codec/stages'),
  };
}

describe('two copies of Sluice in one process', () => {
  it('are two copies: their classes differ', async () => {
    const a = await copy();
    const b = await copy();
    expect(a.config.ToolOutput).not.toBe(b.config.ToolOutput);
    expect(a.errors.ToolFailure).not.toBe(b.errors.ToolFailure);
  });

  it("one copy's toolOutput, ToolFailure and ModelRefusedError are the other's", async () => {
    const a = await copy();
    const b = await copy();
    const out = b.config.toolOutput({ content: [{ type: 'text', text: 'hi' }] });
    expect(a.config.isToolOutput(out)).toBe(true);
    expect(out instanceof a.config.ToolOutput).toBe(true);
    // Look-alikes are not: a plain object with `fields`, a class of the user's own.
    expect(a.config.isToolOutput({ fields: { content: [] } })).toBe(false);
    class Mine {
      fields = { content: [] };
    }
    expect(new Mine() instanceof a.config.ToolOutput).toBe(false);
    // A subclass keeps the ordinary check.
    class Special extends a.config.ToolOutput {}
    expect(out instanceof Special).toBe(false);
    expect(new Special({}) instanceof Special).toBe(true);

    const failed = await a.errors.answering(async () => {
      throw new b.errors.ToolFailure('no such file', 'FS_NOT_FOUND');
    });
    expect(a.config.isToolOutput(failed)).toBe(true);
    expect((failed as InstanceType<ConfigModule['ToolOutput']>).fields.error).toEqual({
      message: 'no such file',
      code: 'FS_NOT_FOUND',
    });
    expect(new b.models.ModelRefusedError('bad key') instanceof a.models.ModelRefusedError).toBe(true);
    expect(new Error('x') instanceof a.models.ModelRefusedError).toBe(false);
  });

  it("the execute stage of one copy records a tool's result built with the other copy", async () => {
    const user = await copy(); // what the config imports
    const worker = await copy(); // what runs the stages
    const tool = user.config.defineTool({
      name: 'report',
      description: 'reports',
      input: { type: 'object', properties: {} },
      execute: () =>
        user.config.toolOutput({ content: [{ type: 'text', text: 'reported' }], value: { ok: true }, meta: { n: 1 } }),
    });
    const acts = worker.stages.createStageActivities({ tools: [tool] });
    const ref: CallRef = {
      workflowId: 'wf',
      sessionId: 's',
      turn: 1,
      step: 1,
      callId: 'c1',
      name: 'report',
      args: {},
      argsDigest: 'digest',
      idempotencyKey: 'wf/c1',
      state: {},
    };
    const env = new MockActivityEnvironment();
    const out: BodyResult = worker.wire.unpackBodyResult(await env.run(acts.executeBody, worker.wire.packCallRef(ref)));
    expect(out.outcome).toBe('ok');
    expect(out.candidate).toMatchObject({
      content: [{ type: 'text', text: 'reported' }],
      value: { ok: true },
      meta: { n: 1 },
      isError: false,
    });
    expect(out.candidate.error).toBeUndefined();
  });

  it('a value that really cannot be recorded reads as "it ran", not as a failure', async () => {
    const w = await copy();
    const tool = w.config.defineTool({
      name: 'weird',
      description: 'returns a class instance',
      input: { type: 'object', properties: {} },
      execute: () => new (class Weird {})(),
    });
    const acts = w.stages.createStageActivities({ tools: [tool] });
    const env = new MockActivityEnvironment();
    const ref = {
      workflowId: 'wf',
      sessionId: 's',
      turn: 1,
      step: 1,
      callId: 'c2',
      name: 'weird',
      args: {},
      argsDigest: 'd',
      idempotencyKey: 'wf/c2',
      state: {},
    } as CallRef;
    const out: BodyResult = w.wire.unpackBodyResult(await env.run(acts.executeBody, w.wire.packCallRef(ref)));
    expect(out.candidate.isError).toBe(false);
    expect(out.candidate.error?.code).toBe('INVALID_TOOL_OUTPUT');
    expect((out.candidate.content[0] as { text: string }).text).toMatch(
      /^weird ran to the end, so its effects happened/,
    );
  });
});
