// The pure pipeline code: lossless snapshots, digests, monotonic folding, normalization.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCallsFile } from '../../cli';
import { batchInputProblem } from '../../pipeline/batch-input';
import { argsDigest, sha256Hex } from '../../pipeline/digest';
import { applyPostVerdict, foldPreDecision, parseGuardAnswer, parsePreDecision } from '../../pipeline/fold';
import { canonicalJson, snapshotArguments, snapshotJson } from '../../pipeline/json';
import { errorCandidate, normalizeResult } from '../../pipeline/normalize';
import type { Candidate } from '../../pipeline/types';
import { readJsonl } from '../../stores/jsonl';
import {
  JsonlSessionLog,
  claimsPath,
  conflictsPath,
  readLastSeq,
  readSessionLog,
  sessionLogPath,
  writersPath,
} from '../../stores/sink';

describe('snapshotJson', () => {
  it('copies plain JSON into frozen objects', () => {
    const src = { a: [1, 'x', null, { b: true }] };
    const snap = snapshotJson(src) as typeof src;
    expect(snap).toEqual(src);
    expect(snap).not.toBe(src);
    expect(Object.isFrozen(snap) && Object.isFrozen(snap.a) && Object.isFrozen(snap.a[3])).toBe(true);
  });

  it.each([
    ['undefined', { a: undefined }, /a is not lossless JSON: a undefined/],
    ['BigInt', { a: 1n }, /bigint/],
    ['NaN', [NaN], /\[0\] is not lossless JSON: NaN/],
    ['Infinity', { x: { y: Infinity } }, /x\.y .*Infinity/],
    ['-0', { z: -0 }, /-0 would become 0/],
    ['a function', { f() {} }, /function/],
    ['a Date', { d: new Date(0) }, /instance of Date/],
    ['a Map', { m: new Map() }, /instance of Map/],
    ['a symbol key', { [Symbol('s')]: 1 }, /symbol key/],
    ['a sparse array', [1, , 3], /holes/],
    ['a getter', Object.defineProperty({}, 'g', { enumerable: true, get: () => 1 }), /getter\/setter/],
  ])('refuses %s, naming where', (_label, value, message) => {
    expect(() => snapshotJson(value)).toThrow(message);
  });

  it('refuses cycles but accepts shared (acyclic) references', () => {
    const shared = { k: 1 };
    expect(snapshotJson({ a: shared, b: shared })).toEqual({ a: { k: 1 }, b: { k: 1 } });
    const cyc: Record<string, unknown> = {};
    cyc.me = cyc;
    expect(() => snapshotJson(cyc)).toThrow(/cycle/);
  });

  it('parses model argument strings into a frozen object, or says what is wrong', () => {
    expect(snapshotArguments('{"path":"a.txt"}')).toEqual({ path: 'a.txt' });
    expect(() => snapshotArguments('{"path":')).toThrow(/arguments is not lossless JSON: not valid JSON/);
    expect(() => snapshotArguments('"just a string"')).toThrow(/must be a JSON object/);
    expect(() => snapshotArguments('null')).toThrow(/must be a JSON object/);
  });
});

describe('digests', () => {
  it('sha256Hex equals node:crypto on ASCII, multi-byte and long input', () => {
    for (const s of ['', 'abc', 'héllo wörld ✓ 😀', 'x'.repeat(1000), 'a'.repeat(55), 'a'.repeat(56), 'a'.repeat(64)]) {
      expect(sha256Hex(s)).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
    }
  });

  it('sha256Hex equals node:crypto over every padding length and mixed text', () => {
    const pieces = ['a', 'é', '✓', '😀', '"', '\n'];
    for (let len = 0; len < 200; len++) {
      const s = Array.from({ length: len }, (_, i) => pieces[(i * 7 + len) % pieces.length]).join('');
      expect(sha256Hex(s)).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
    }
  });

  it('sha256Hex hashes a lone surrogate as its own three bytes, as digests in recorded histories were', () => {
    // Node's encoder would write U+FFFD (ef bf bd) instead; the workflow's digest never did.
    const wtf8 = (bytes: number[]) => createHash('sha256').update(Buffer.from(bytes)).digest('hex');
    expect(sha256Hex('\ud800')).toBe(wtf8([0xed, 0xa0, 0x80]));
    expect(sha256Hex('a\udc00b')).toBe(wtf8([0x61, 0xed, 0xb0, 0x80, 0x62]));
    expect(sha256Hex('\ud83d\ude00\ud83d')).toBe(wtf8([0xf0, 0x9f, 0x98, 0x80, 0xed, 0xa0, 0xbd]));
  });

  it('argsDigest ignores key order but not values', () => {
    expect(argsDigest({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(argsDigest({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(argsDigest({ a: 1 })).not.toBe(argsDigest({ a: 2 }));
    expect(canonicalJson({ b: 1, a: { d: null, c: 'x' } })).toBe('{"a":{"c":"x","d":null},"b":1}');
  });
});

describe('decision folding', () => {
  it('only tightens: allow < ask < deny', () => {
    const deny = { kind: 'deny', reason: 'no' } as const;
    expect(foldPreDecision(deny, { kind: 'allow' })).toBe(deny);
    expect(foldPreDecision(deny, { kind: 'ask' })).toBe(deny);
    expect(foldPreDecision({ kind: 'ask', reason: 'a' }, { kind: 'allow' })).toEqual({ kind: 'ask', reason: 'a' });
    expect(foldPreDecision({ kind: 'ask', reason: 'a' }, { kind: 'ask', reason: 'b' })).toEqual({
      kind: 'ask',
      reason: 'a; b',
    });
    expect(foldPreDecision({ kind: 'allow' }, undefined)).toEqual({ kind: 'allow' });
    expect(foldPreDecision({ kind: 'allow' }, deny)).toBe(deny);
  });

  it('rejects answers that are not decisions, naming the extension', () => {
    expect(() => parsePreDecision({ kind: 'deny' }, 'pre-execute handler x')).toThrow(
      /pre-execute handler x denied without a reason/,
    );
    expect(() => parsePreDecision('yes', 'h')).toThrow(/h returned string yes/);
    expect(parsePreDecision(undefined, 'h')).toBeUndefined();
    expect(parseGuardAnswer('no', 'g')).toBe('no');
    expect(parseGuardAnswer(undefined, 'g')).toBeUndefined();
    expect(() => parseGuardAnswer({ kind: 'allow' }, 'guard g')).toThrow(
      /a guard returns a denial reason string or nothing/,
    );
  });

  it('post-execute: replace content or value, never both; block drops the value', () => {
    const c: Candidate = { content: [{ type: 'text', text: '{"v":1}' }], value: { v: 1 }, isError: false };
    expect(applyPostVerdict(c, { action: 'accept', value: { v: 2 } }, 'p').candidate).toMatchObject({
      value: { v: 2 },
      content: [{ type: 'text', text: '{\n  "v": 2\n}' }],
    });
    expect(
      applyPostVerdict(c, { action: 'accept', content: [{ type: 'text', text: 'hi' }] }, 'p').candidate,
    ).toMatchObject({ value: { v: 1 }, content: [{ type: 'text', text: 'hi' }] });
    expect(() => applyPostVerdict(c, { action: 'accept', value: 1, content: [] }, 'p')).toThrow(/replaced both/);
    const blocked = applyPostVerdict(c, { action: 'block', feedback: 'nope' }, 'p');
    expect(blocked.blocked).toBe(true);
    expect(blocked.candidate.value).toBeUndefined();
    expect(blocked.candidate).toMatchObject({ isError: true, error: { code: 'BLOCKED', message: 'nope' } });
    expect(() => applyPostVerdict(c, { action: 'accept', content: [{ type: 'video' }] }, 'p')).toThrow(/content\[0\]/);
  });
});

describe('normalizeResult', () => {
  it('freezes a lossless result and keeps contexts', () => {
    const r = normalizeResult({ content: [{ type: 'text', text: 'ok' }], isError: false, meta: { n: 1 } }, [
      { role: 'user', content: 'ctx', source: 's' },
    ]);
    expect(r).toEqual({
      content: [{ type: 'text', text: 'ok' }],
      isError: false,
      meta: { n: 1 },
      additionalContexts: [{ role: 'user', content: 'ctx', source: 's' }],
    });
    expect(Object.isFrozen(r) && Object.isFrozen(r.content[0])).toBe(true);
  });

  it('turns an unrecordable candidate into INVALID_TOOL_OUTPUT instead of throwing', () => {
    const r = normalizeResult({ content: [{ type: 'text', text: 'x' }], isError: false, meta: { big: 1n } as never });
    expect(r.error?.code).toBe('INVALID_TOOL_OUTPUT');
    expect(r.isError).toBe(true);
  });

  it('errorCandidate renders `Error: <message>`', () => {
    expect(errorCandidate('boom', 'X')).toEqual({
      content: [{ type: 'text', text: 'Error: boom' }],
      isError: true,
      error: { message: 'boom', code: 'X' },
    });
  });

  it('truncates text and drops images over the bound, with a note', () => {
    const r = normalizeResult(
      {
        content: [
          { type: 'text', text: 'a'.repeat(30) },
          { type: 'image', data: 'b'.repeat(30), mimeType: 'image/png' },
        ],
        isError: false,
      },
      [],
      { maxResultChars: 40 },
    );
    expect(r.content).toHaveLength(2);
    expect(r.content[0]).toEqual({ type: 'text', text: 'a'.repeat(30) });
    expect((r.content[1] as { text: string }).text).toMatch(
      /truncated: showing 30 of 60 characters; the rest is over the result size bound and was dropped\] \[1 image\(s\) left out\]/,
    );
    expect(r.meta).toEqual({ truncated: true, originalChars: 60 });
  });
});

describe('batch input', () => {
  it('names the first problem', () => {
    expect(batchInputProblem(null)).toMatch(/must be an object/);
    expect(batchInputProblem({ sessionId: 's', turn: 1.5, step: 1, calls: [] })).toMatch(/turn must be a whole number/);
    expect(
      batchInputProblem({ sessionId: 's', turn: 1, step: 1, calls: [{ id: 'a', name: 'x', arguments: {} }] }),
    ).toMatch(/raw JSON string/);
    expect(
      batchInputProblem({ sessionId: 's', turn: 1, step: 1, calls: [{ id: 'a', name: 'x', arguments: '{}' }] }),
    ).toBeUndefined();
  });

  it('the CLI reads a batch or a bare array of calls, and explains a broken file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'calls-'));
    const f = (name: string, body: string) => (fs.writeFileSync(path.join(dir, name), body), path.join(dir, name));
    // A bare array names no session: --session does, never the file's name (two folders'
    // calls.json would share one session).
    const bare = f('a.json', '[{"id":"1","name":"echo","arguments":{"text":"x"}}]');
    expect(() => readCallsFile(bare, {})).toThrow(/a\.json names no session: add "sessionId".* or pass --session ID/);
    expect(readCallsFile(bare, { session: 'mine' })).toMatchObject({ sessionId: 'mine', turn: 1, step: 1 });
    expect(readCallsFile(f('b.json', '{"sessionId":"s","turn":3,"step":2,"calls":[]}'), { turn: '4' })).toMatchObject({
      sessionId: 's',
      turn: 4,
      step: 2,
    });
    expect(() => readCallsFile(f('c.json', '{"calls": [}'), {})).toThrow(/is not valid JSON/);
    expect(() => readCallsFile(f('d.json', '{"cals": []}'), {})).toThrow(/has no "calls" array/);
    expect(() => readCallsFile(path.join(dir, 'missing.json'), {})).toThrow(/no such file/);
  });
});

describe('the JSONL session log', () => {
  it('appends each seq once, in order, and survives a torn last line', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const ev = (seq: number) => ({ type: 't', seq, time: 'now', data: {} });
    const sink = new JsonlSessionLog(dir);
    await sink.append('s/1', [ev(0), ev(1)]);
    await sink.append('s/1', [ev(1), ev(2)]); // a retried chunk
    expect((await readSessionLog(dir, 's/1')).map((e) => e.seq)).toEqual([0, 1, 2]);
    fs.appendFileSync(sessionLogPath(dir, 's/1'), '{"type":"t","seq":3,"ti');
    expect(await readLastSeq(sessionLogPath(dir, 's/1'))).toBe(2);
    const fresh = new JsonlSessionLog(dir); // a new worker: reads the tail, not its memory
    await fresh.append('s/1', [ev(2), ev(3)]);
    expect((await readSessionLog(dir, 's/1')).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
  });

  it('reads every whole line of its files, past torn and blank ones, and none of a file that is not there', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const f = path.join(dir, 'x.jsonl');
    // A crash mid-append left a torn line; the next writer started a fresh one after it.
    fs.writeFileSync(f, '{"a":1}\n\n{"a":2,"b\n{"a":3}\n   \n{"a":4}');
    expect(await readJsonl(f)).toEqual([{ a: 1 }, { a: 3 }, { a: 4 }]);
    expect(await readJsonl(path.join(dir, 'missing.jsonl'))).toEqual([]);

    // Torn lines in the claims, writers and conflicts files cost the sink nothing it held.
    const ev = (seq: number, by: string) => ({ type: 't', seq, time: 'now', data: { by } });
    const warnings: string[] = [];
    const sink = new JsonlSessionLog(dir, (m) => warnings.push(m));
    expect(await sink.claim('s', 0, 'batch-a')).toEqual({ ok: true });
    await sink.append('s', [ev(0, 'a'), ev(1, 'a')], 'batch-a');
    for (const file of [claimsPath(dir, 's'), writersPath(dir, 's'), conflictsPath(dir, 's')])
      fs.appendFileSync(file, '{"batch":"batch-');
    // A replay of batch-a's events is still its own; batch-b still cannot claim seqs a holds.
    const again = new JsonlSessionLog(dir, (m) => warnings.push(m));
    await again.append('s', [ev(0, 'a'), ev(1, 'a')], 'batch-a');
    expect(await again.claim('s', 1, 'batch-b')).toMatchObject({ ok: false });
    await again.append('s', [ev(1, 'b')], 'batch-b');
    expect((await readSessionLog(dir, 's')).map((e) => e.data.by)).toEqual(['a', 'a']);
    const kept = (await readJsonl(conflictsPath(dir, 's'))) as { batch: string }[];
    expect(kept.map((c) => c.batch)).toEqual(['batch-b']);
    expect(warnings).toHaveLength(1);
    // The next lines of each file are whole: a new claim, and an unclaimed writer's line.
    expect(await again.claim('s', 2, 'batch-c')).toEqual({ ok: true });
    await new JsonlSessionLog(dir).append('s', [ev(2, 'c')], 'batch-c');
    const batches = async (file: string) =>
      ((await readJsonl(file)) as { batch?: string; wrote?: string }[]).map((l) => l.batch ?? l.wrote);
    expect(await batches(claimsPath(dir, 's'))).toEqual(['batch-a', 'batch-c']);
    expect(await batches(writersPath(dir, 's'))).toEqual(['batch-c']);
    expect((await readSessionLog(dir, 's')).map((e) => e.data.by)).toEqual(['a', 'a', 'c']);
  });

  it('holds nothing for a session once its writes are done, and makes a removed folder again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const ev = (seq: number) => ({ type: 't', seq, time: 'now', data: {} });
    const sink = new JsonlSessionLog(dir);
    for (let i = 0; i < 20; i++) {
      expect(await sink.claim(`s${i}`, 0, `b${i}`)).toEqual({ ok: true });
      await sink.append(`s${i}`, [ev(0), ev(1)], `b${i}`);
    }
    await new Promise((r) => setImmediate(r));
    // The last seq of each (a shortcut, bounded), and no queue: a queue kept per session ever
    // served would double this.
    expect(sink.sessionsHeld).toBe(20);
    // Someone removed the state folder: the next write makes it again rather than failing.
    fs.rmSync(dir, { recursive: true, force: true });
    await sink.append('s0', [ev(2)], 'b0');
    await sink.append('new', [ev(0)]);
    expect((await readSessionLog(dir, 's0')).map((e) => e.seq)).toEqual([2]);
    expect((await readSessionLog(dir, 'new')).map((e) => e.seq)).toEqual([0]);
  });

  it('a chunk that clashes keeps the rest of its events aside with the clash, none lost', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const warnings: string[] = [];
    const ev = (seq: number, by: string) => ({ type: 't', seq, time: 'now', data: { by } });
    const sink = new JsonlSessionLog(dir, (m) => warnings.push(m));
    await sink.append('s', [ev(0, 'a'), ev(1, 'a')], 'batch-a');
    // batch-b numbered its events from 1 again: seq 1 clashes, seq 2 and 3 are past the log's end.
    await sink.append('s', [ev(1, 'b'), ev(2, 'b'), ev(3, 'b')], 'batch-b');
    expect((await readSessionLog(dir, 's')).map((e) => [e.seq, e.data.by])).toEqual([
      [0, 'a'],
      [1, 'a'],
    ]);
    const kept = fs
      .readFileSync(conflictsPath(dir, 's'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(kept.map((c) => [c.batch, c.event.seq])).toEqual([
      ['batch-b', 1],
      ['batch-b', 2],
      ['batch-b', 3],
    ]);
    // The log goes on from its own end for the next writer.
    await sink.append('s', [ev(2, 'a')], 'batch-a');
    expect((await readSessionLog(dir, 's')).map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(warnings.length).toBeGreaterThan(0);
  });

  it("a session's own events again at another workflow time are its repeat; another writer's still conflict", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const warnings: string[] = [];
    const user = (time: string, content = 'say hello') => ({
      type: 'session/user',
      seq: 0,
      time,
      data: { turn: 1, messageId: 's:first', content },
    });
    const message = (seq: number, time: string) => ({ type: 'model/message', seq, time, data: { text: 'hi' } });
    const session = 'sluice-session:s';
    // The first worker records the turn's first event and is lost in the task that ran the local step.
    await new JsonlSessionLog(dir, (m) => warnings.push(m)).append('s', [user('2026-01-01T00:00:00.000Z')], session);
    // The next worker replays that task at another workflow time: the same event, another time.
    const next = new JsonlSessionLog(dir, (m) => warnings.push(m));
    await next.append('s', [user('2026-01-01T00:00:09.000Z'), message(1, '2026-01-01T00:00:09.000Z')], session);
    await next.append('s', [message(2, '2026-01-01T00:00:10.000Z')], session);
    const log = await readSessionLog(dir, 's');
    expect(log.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(log[0].time).toBe('2026-01-01T00:00:00.000Z'); // the first copy stays
    expect(fs.existsSync(conflictsPath(dir, 's'))).toBe(false);
    expect(warnings).toEqual([]);

    // Another writer (a batch under the session's id) with the same event at a seq the session wrote: a conflict.
    await next.append('s', [user('2026-01-01T00:00:11.000Z')], 'batch-b');
    // The session itself with other data at its own seq: a conflict too.
    await next.append('s', [user('2026-01-01T00:00:12.000Z', 'something else')], session);
    expect((await readSessionLog(dir, 's')).map((e) => e.seq)).toEqual([0, 1, 2]);
    const kept = fs
      .readFileSync(conflictsPath(dir, 's'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(kept.map((c) => [c.batch, c.event.seq])).toEqual([
      ['batch-b', 0],
      [session, 0],
    ]);
    expect(warnings).toHaveLength(2);
  });

  it('a batch whose claim the sink checked writes no writers line; a session workflow (no claim) does', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const sink = new JsonlSessionLog(dir, () => undefined);
    const event = (seq: number) => ({ type: 'user/message', seq, time: '2026-01-01T00:00:00.000Z', data: { n: seq } });
    await sink.append('s', [event(0), event(1)], 'sluice-session:s');
    expect(await sink.claim('s', 2, 'batch-a')).toEqual({ ok: true });
    await sink.append('s', [event(2), event(3)], 'batch-a');
    // A batch claimed on another worker (not here) still writes its line: only a shortcut is lost.
    await new JsonlSessionLog(dir, () => undefined).append('s', [event(4)], 'batch-b');
    const lines = fs
      .readFileSync(writersPath(dir, 's'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { wrote: 'sluice-session:s', from: 0, to: 1 },
      { wrote: 'batch-b', from: 4, to: 4 },
    ]);
    // The batch's repeat of its own events is still its own (its claim covers them).
    await new JsonlSessionLog(dir, () => undefined).append(
      's',
      [{ ...event(2), time: '2026-01-01T00:00:05.000Z' }],
      'batch-a',
    );
    expect(fs.existsSync(conflictsPath(dir, 's'))).toBe(false);
    expect((await readSessionLog(dir, 's')).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
  });

  it("a session's model step event again with other history sizes is its repeat; other text is not", async () => {
    // A query that comes while a local model step runs completes the open task early; on replay the
    // step's result lands in another task, so the run's history length and size read there differ.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sink-'));
    const warnings: string[] = [];
    const step = (historyEvents: number, historyBytes: number, text = 'step 1') => ({
      type: 'model/message',
      seq: 0,
      time: '2026-01-01T00:00:00.000Z',
      data: { turn: 1, step: 1, text, toolCalls: [], historyEvents, historyBytes, run: 1 },
    });
    const session = 'sluice-session:s';
    const sink = new JsonlSessionLog(dir, (m) => warnings.push(m));
    await sink.append('s', [step(12, 3_000)], session);
    await new JsonlSessionLog(dir, (m) => warnings.push(m)).append('s', [step(9, 2_400)], session);
    expect((await readSessionLog(dir, 's')).map((e) => e.data.historyEvents)).toEqual([12]); // the first copy stays
    expect(fs.existsSync(conflictsPath(dir, 's'))).toBe(false);
    expect(warnings).toEqual([]);
    // Other text at the same seq is another event, whoever wrote it: kept aside and said.
    await new JsonlSessionLog(dir, (m) => warnings.push(m)).append('s', [step(12, 3_000, 'step 2')], session);
    expect(fs.existsSync(conflictsPath(dir, 's'))).toBe(true);
    expect(warnings).toHaveLength(1);
  });
});
