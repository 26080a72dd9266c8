// Sessions in a new user's first hour, on the real dev server: the README's events loop ends at
// the turn's end (`until: 'turn'`); read from a folder that is not the worker's state folder, it
// fails naming where it looked instead of yielding nothing forever; a worker without the model's
// key fails the step on its first attempt, naming the variable and that it is the worker's.
import { temporal } from '@temporalio/proto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NotFoundError } from '../support/errors';
import { startSession } from '../client/session';
import type { SessionEvent } from '../pipeline/types';
import { startClockSession } from './clock-session';
import type { Harness } from './harness';

let h: Harness;
let script: string;
const saved = { ...process.env };
const sid = (name: string) => `${name}-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  // The worker runs in this process: its environment is this one, without the providers' keys.
  for (const k of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']) delete process.env[k];
  ({ h, script } = await startClockSession('session-first-hour', 'Again noon.'));
});

afterAll(async () => {
  process.env = saved;
  await h?.close();
});

describe('session.events', () => {
  it("until: 'turn' ends after the turn's end, with every event of the turn in order", async () => {
    const session = await startSession(h.client, { sessionId: sid('until'), model: `script:${script}` });
    const turn = await session.send('What time is it in Oslo?', { id: 'msg-1' });
    expect(turn.reason).toBe('done');
    const seen: SessionEvent[] = [];
    for await (const e of session.events({ source: h.stateDir, until: 'turn' })) seen.push(e);
    expect(seen.at(-1)?.type).toBe('session/turn-ended');
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i));
    expect(seen.map((e) => e.type)).toEqual(
      expect.arrayContaining(['session/user', 'model/message', 'tool/call', 'tool/result']),
    );
    // The next turn's events are read from where the first ended.
    await session.send('And now?', { id: 'msg-2' });
    const next: SessionEvent[] = [];
    for await (const e of session.events({ source: h.stateDir, fromSeq: seen.length, until: 'turn' })) next.push(e);
    expect(next[0].seq).toBe(seen.length);
    expect(next.at(-1)?.type).toBe('session/turn-ended');
    await session.cancel();
  });

  it("read from a folder that is not the worker's, it fails naming the place it looked", async () => {
    const session = await startSession(h.client, { sessionId: sid('elsewhere'), model: `script:${script}` });
    await session.send('What time is it in Oslo?', { id: 'msg-1' });
    const elsewhere = fs.mkdtempSync(path.join(inject('runDir'), 'not-the-workers-'));
    const seen: SessionEvent[] = [];
    const err = await (async () => {
      for await (const e of session.events({ source: elsewhere, missingLogMs: 1_000 })) seen.push(e);
    })().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(seen).toEqual([]);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err?.message).toContain(path.join(elsewhere, 'sessions'));
    expect(err?.message).toContain("worker's state folder");
    expect(err?.message).toContain('source');
    await session.cancel();
  });

  it('for a session that does not exist, it says so', async () => {
    const session = (await import('../client/session')).sessionHandle(h.client, sid('nobody'));
    const err = await (async () => {
      for await (const _ of session.events({ source: h.stateDir })) break;
    })().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err?.message).toContain('no session');
  });
});

describe('a worker without the model provider key', () => {
  for (const [model, variable] of [
    ['openai:gpt-4.1', 'OPENAI_API_KEY'],
    ['anthropic:claude-sonnet-4-5', 'ANTHROPIC_API_KEY'],
  ] as const)
    it(`${model}: the step fails on its first attempt, naming ${variable} and the worker`, async () => {
      const session = await startSession(h.client, { sessionId: sid('nokey'), model });
      const turn = await session.send('hello', { id: 'msg-1' });
      expect(turn.reason).toBe('model-error');
      expect(turn.error).toContain(`${variable} is not set in the worker's environment`);
      // Not retried: one attempt of the model step in the session's history.
      const history = await session.workflow.fetchHistory();
      const started = (history.events ?? []).filter(
        (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
      );
      expect(started.length).toBeGreaterThan(0);
      expect(started.every((e) => e.activityTaskStartedEventAttributes?.attempt === 1)).toBe(true);
      const failed = (history.events ?? []).filter(
        (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
      );
      expect(failed).toHaveLength(1);
      expect(failed[0].activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.nonRetryable).toBe(true);
      await session.cancel();
    });
});
