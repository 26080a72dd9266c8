// `sluice hook`'s dialects, pure: every documented payload parses (test/fixtures/hook/), every
// answer comes out in the shape its harness reads, and no input or fallback becomes an allow.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  answerBody,
  EVENTS,
  type HarnessDialect,
  HookInputError,
  parseDialect,
  parseHookPayload,
  renderAnswer,
  renderFailure,
} from '../../client/hook/dialects';
import { hookCallKey, hookKeyFile } from '../../client/hook/hook-key';
import { callStep, clockSeq, decisionOf, nextBatchSeq, SEQ_BLOCK } from '../../client/hook/service';
import { canonicalJson } from '../../pipeline/json';
import type { BatchOutput } from '../../pipeline/types';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'hook');
const fixture = (f: string) => fs.readFileSync(path.join(FIXTURES, f), 'utf8');

describe('payloads as documented', () => {
  const cases: [string, HarnessDialect, string, 'decide' | 'record', string | undefined][] = [
    ['claude-pre-tool-use.json', 'claude', 'PreToolUse', 'decide', 'toolu_01ABC123'],
    ['claude-permission-request.json', 'claude', 'PermissionRequest', 'decide', undefined],
    ['claude-post-tool-use.json', 'claude', 'PostToolUse', 'record', 'toolu_01ABC123'],
    ['claude-post-tool-use-failure.json', 'claude', 'PostToolUseFailure', 'record', 'toolu_01ABC123'],
    ['codex-pre-tool-use.json', 'codex', 'PreToolUse', 'decide', 'call_8f3a2c'],
    ['codex-permission-request.json', 'codex', 'PermissionRequest', 'decide', undefined],
    ['codex-post-tool-use.json', 'codex', 'PostToolUse', 'record', 'call_8f3a2c'],
    ['gemini-before-tool.json', 'gemini', 'BeforeTool', 'decide', undefined],
    ['gemini-after-tool.json', 'gemini', 'AfterTool', 'record', undefined],
  ];
  for (const [file, dialect, event, kind, toolUseId] of cases) {
    it(`${file} → ${dialect} ${event}`, () => {
      const req = parseHookPayload(dialect, fixture(file));
      expect(req.event).toBe(event);
      expect(req.kind).toBe(kind);
      expect(req.toolUseId).toBe(toolUseId);
      expect(req.sessionId).toBeTruthy();
      expect(req.toolName).toBeTruthy();
    });
  }

  it('keeps what the tool returned: a response, a failure, Gemini CLI llmContent', () => {
    expect(parseHookPayload('claude', fixture('claude-post-tool-use.json')).toolResponse).toEqual({
      filePath: '/path/to/file.txt',
      success: true,
    });
    expect(parseHookPayload('claude', fixture('claude-post-tool-use-failure.json')).error).toBe(
      'Command exited with non-zero status code 1',
    );
    expect(parseHookPayload('codex', fixture('codex-post-tool-use.json')).toolResponse).toBe(
      'Tests: 12 passed, 12 total',
    );
    const gemini = parseHookPayload('gemini', fixture('gemini-after-tool.json'));
    expect(gemini.error).toBeUndefined();
    expect((gemini.toolResponse as { llmContent: string }).llmContent).toBe('Tests: 12 passed, 12 total');
  });

  it('refuses what is not a hook payload of the dialect, saying what is wrong', () => {
    const bad = (dialect: HarnessDialect, text: string, msg: RegExp) =>
      expect(() => parseHookPayload(dialect, text)).toThrow(msg);
    bad('claude', '', /stdin was empty/);
    bad('claude', '[1,2]', /must be a JSON object/);
    bad('claude', '{"session_id":"s","tool_name":"Bash","tool_input":{}}', /no hook_event_name/);
    bad('claude', fixture('gemini-before-tool.json'), /not "BeforeTool"/);
    bad('gemini', fixture('claude-pre-tool-use.json'), /not "PreToolUse"/);
    bad('codex', fixture('claude-post-tool-use-failure.json'), /not "PostToolUseFailure"/);
    const noInput = JSON.parse(fixture('claude-pre-tool-use.json'));
    noInput.tool_input = 'npm test';
    bad('claude', JSON.stringify(noInput), /tool_input must be a JSON object/);
    const noSession = JSON.parse(fixture('codex-pre-tool-use.json'));
    noSession.session_id = '';
    bad('codex', JSON.stringify(noSession), /no session_id/);
    expect(() => parseDialect('cursor')).toThrow(HookInputError);
    expect(() => parseDialect(undefined)).toThrow(/no hook dialect given/);
  });
});

describe('answers in each harness’s words', () => {
  const allow = { decision: 'allow' as const, reason: 'allowed by Sluice policy' };
  const deny = { decision: 'deny' as const, reason: 'Sluice: no' };
  const ask = { decision: 'ask' as const, reason: 'waiting for approval a1' };

  it('Claude Code PreToolUse: permissionDecision allow / deny / ask with the reason', () => {
    for (const a of [allow, deny, ask])
      expect(answerBody('claude', 'PreToolUse', a)).toEqual({
        hookSpecificOutput: {
          hookEventName: 'PreToolUse',
          permissionDecision: a.decision,
          permissionDecisionReason: a.reason,
        },
      });
  });

  it('PermissionRequest (Claude Code, Codex): behavior allow / deny + message; ask is no answer (the usual prompt)', () => {
    for (const d of ['claude', 'codex'] as const) {
      expect(answerBody(d, 'PermissionRequest', allow)).toEqual({
        hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
      });
      expect(answerBody(d, 'PermissionRequest', deny)).toEqual({
        hookSpecificOutput: {
          hookEventName: 'PermissionRequest',
          decision: { behavior: 'deny', message: 'Sluice: no' },
        },
      });
      expect(answerBody(d, 'PermissionRequest', ask)).toBeUndefined();
    }
  });

  it('Codex PreToolUse: no objection is an empty stdout; an ask becomes a deny (Codex would run it)', () => {
    expect(renderAnswer('codex', 'PreToolUse', allow)).toEqual({ exitCode: 0, stdout: '', stderr: '' });
    expect(answerBody('codex', 'PreToolUse', ask)).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'deny',
        permissionDecisionReason: ask.reason,
      },
    });
  });

  it('Gemini CLI BeforeTool: decision allow, or deny with the reason; an ask becomes a deny', () => {
    expect(answerBody('gemini', 'BeforeTool', allow)).toEqual({ decision: 'allow' });
    expect(answerBody('gemini', 'BeforeTool', deny)).toEqual({ decision: 'deny', reason: 'Sluice: no' });
    expect(answerBody('gemini', 'BeforeTool', ask)).toEqual({ decision: 'deny', reason: ask.reason });
  });

  it('no ask or deny, in any dialect at any decide event, reads as an allow', () => {
    for (const [dialect, { decide }] of Object.entries(EVENTS) as [HarnessDialect, (typeof EVENTS)['claude']][])
      for (const event of decide)
        for (const a of [deny, ask]) {
          const text = renderAnswer(dialect, event, a).stdout;
          expect(text).not.toMatch(/"allow"/);
        }
  });

  it('failures: exit 2 blocks before the tool runs; exit 1 after it (nothing to block)', () => {
    expect(renderFailure('decide', 'bad')).toEqual({ exitCode: 2, stdout: '', stderr: 'sluice hook: bad\n' });
    expect(renderFailure('record', 'bad').exitCode).toBe(1);
  });
});

describe('keys and decisions', () => {
  it('one call, one step: the same tool input in any key order; another session or input, another step', () => {
    const key = Buffer.alloc(32, 7);
    const step = (sessionId: string, command: string, salt?: string, k = key) =>
      callStep({ sessionId, toolName: 'Bash', toolInput: { command, description: 'x' } }, k, salt);
    const a = step('s', 'ls');
    expect(callStep({ sessionId: 's', toolName: 'Bash', toolInput: { description: 'x', command: 'ls' } }, key)).toBe(a);
    expect(step('s2', 'ls')).not.toBe(a);
    expect(step('s', 'ls -a')).not.toBe(a);
    expect(step('s', 'ls', 'result')).not.toBe(a);
    expect(Number.isSafeInteger(a)).toBe(true);
  });

  it('the step is keyed: another key gives other steps, and the unkeyed sha-256 prefix is not it', () => {
    fc.assert(
      fc.property(fc.string(), fc.uint8Array({ minLength: 32, maxLength: 32 }), (command, bytes) => {
        const req = { sessionId: 's', toolName: 'Bash', toolInput: { command } };
        const key = Buffer.from(bytes);
        const other = Buffer.from(bytes.map((b, i) => (i === 0 ? b ^ 1 : b)));
        const unkeyed = Number.parseInt(
          createHash('sha256')
            .update(canonicalJson(['s', 'Bash', { command }]))
            .digest('hex')
            .slice(0, 12),
          16,
        );
        expect(callStep(req, key)).not.toBe(callStep(req, other));
        expect(callStep(req, key)).not.toBe(unkeyed);
      }),
    );
  });

  it('the call key: derived from the worker secret when set, else one random key per config folder, kept 0600', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hook-key-'));
    const env = { XDG_CONFIG_HOME: dir };
    const kept = hookCallKey({ ...env });
    expect(kept.length).toBe(32);
    expect(hookCallKey({ ...env }).equals(kept)).toBe(true);
    expect(fs.statSync(hookKeyFile(env)).mode & 0o077).toBe(0);
    expect(hookCallKey({ XDG_CONFIG_HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'hook-key-')) }).equals(kept)).toBe(
      false,
    );
    const secret = { ...env, SLUICE_DIGEST_KEY: 'a worker secret' };
    const derived = hookCallKey(secret);
    expect(derived.equals(kept)).toBe(false);
    expect(hookCallKey({ ...secret }).equals(derived)).toBe(true);
    expect(derived.toString('utf8')).not.toContain('a worker secret');
  });

  it('seqs grow with the clock, 1,000 per millisecond', () => {
    expect(clockSeq(Date.UTC(2026, 0, 1, 0, 0, 1))).toBe(1_000_000);
    // Whole numbers well into the next century, with room for a batch's events after its start.
    expect(clockSeq(Date.UTC(2100, 0, 1)) + 1e9).toBeLessThan(Number.MAX_SAFE_INTEGER);
  });

  it("each batch's seqs are a block of its own: two in one millisecond, a clock that steps back, a refused claim", () => {
    const t = Date.UTC(2027, 5, 1);
    const a = nextBatchSeq(0, t);
    const b = nextBatchSeq(0, t);
    const c = nextBatchSeq(0, t - 60_000);
    expect(a).toBeGreaterThanOrEqual(clockSeq(t));
    expect(b).toBeGreaterThanOrEqual(a + SEQ_BLOCK);
    expect(c).toBeGreaterThanOrEqual(b + SEQ_BLOCK);
    for (const s of [a, b, c]) expect(s % SEQ_BLOCK).toBe(0);
    // Refused: another batch claimed from seq X, so the claim reports X + 1 as the next free seq.
    // The retry starts past that batch's whole block, not inside it.
    const x = clockSeq(t + 3_600_000);
    const d = nextBatchSeq(x + 1, t);
    expect(d).toBeGreaterThanOrEqual(x + SEQ_BLOCK);
    expect(d % SEQ_BLOCK).toBe(0);
  });

  const out = (result: object, events: object[] = []) =>
    ({ results: [{ callId: 'c1', name: 'Bash', result }], events }) as unknown as BatchOutput;

  it('allow only when the decision-only body ran; who decided from approval/decided', () => {
    expect(decisionOf(out({ content: [], isError: false })).answer.decision).toBe('allow');
    const approved = decisionOf(
      out({ content: [], isError: false }, [{ type: 'approval/decided', data: { callId: 'c1', by: 'alice' } }]),
    );
    expect(approved).toMatchObject({ answer: { decision: 'allow' }, by: 'alice' });
    const expired = decisionOf(
      out({ content: [], isError: true, error: { code: 'DENIED', message: 'not approved in time' } }, [
        { type: 'approval/decided', data: { callId: 'c1', expired: true } },
      ]),
    );
    expect(expired).toMatchObject({ answer: { decision: 'deny' }, by: 'deny timeout' });
    const unknown = decisionOf(out({ content: [], isError: true, error: { code: 'UNKNOWN_TOOL', message: 'x' } }));
    expect(unknown.answer.decision).toBe('deny');
    expect(unknown.answer.reason).toMatch(/harnessTools\(\{ names/);
    expect(decisionOf({ results: [], events: [] } as unknown as BatchOutput).answer.decision).toBe('deny');
  });
});
