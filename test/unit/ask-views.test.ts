// The ask is declared once (pipeline/types.ts) and every view is derived from it: the type checks
// below fail to compile if a view stops carrying the asker's terms (AskTerms) as they are, and the
// properties check that the views built at run time (pipeline/ask.ts) carry any terms whole, keep
// the `approval/asked` shape 1.0 recorded, and leave no field present as undefined.
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type ASK_TERMS,
  type ApprovalNotice,
  type AskedEvent,
  askedEventOf,
  askTermsOf,
  definedFields,
  noticeOf,
} from '../../pipeline/ask';
import { auditHistories } from '../../client/audit';
import { readHistoryFile } from '../../client/history';
import { type EventPayloads, isEvent } from '../../pipeline/events';
import type { Gate } from '../../pipeline/stages';
import type { AskTerms, PendingApproval, PreDecision } from '../../pipeline/types';
import type { AskOptions } from '../../workflows/approvals';

type Terms<T extends AskTerms> = Pick<T, keyof AskTerms>;
type HandlerAsk = Extract<PreDecision, { kind: 'ask' }>;
type GateAsk = Extract<Gate, { kind: 'ask' }>;

describe('the views of an ask', () => {
  it('every view carries the terms as AskTerms declares them (checked by the compiler)', () => {
    expectTypeOf<Terms<HandlerAsk>>().toEqualTypeOf<AskTerms>();
    expectTypeOf<Terms<GateAsk>>().toEqualTypeOf<AskTerms>();
    expectTypeOf<AskOptions['terms']>().toEqualTypeOf<AskTerms>();
    expectTypeOf<Terms<PendingApproval>>().toEqualTypeOf<AskTerms>();
    expectTypeOf<Terms<AskedEvent>>().toEqualTypeOf<AskTerms>();
    expectTypeOf<EventPayloads['approval/asked']>().toEqualTypeOf<AskedEvent>();
    expectTypeOf<Terms<ApprovalNotice>>().toEqualTypeOf<AskTerms>();
    // A gate's ask is its terms and its own fields, nothing else: what is not its own is a term.
    expectTypeOf<Omit<GateAsk, 'kind' | 'approvers' | 'guardsInBody'>>().toEqualTypeOf<AskTerms>();
    expectTypeOf<(typeof ASK_TERMS)[number]>().toEqualTypeOf<keyof AskTerms>();
  });

  const binding = fc.record(
    {
      digest: fc.string({ minLength: 1 }),
      decision: fc.constantFrom('allow' as const, 'ask' as const, 'deny' as const, 'none' as const),
      rule: fc.record({ source: fc.string(), file: fc.string(), line: fc.nat(), text: fc.string() }),
    },
    { requiredKeys: ['digest', 'decision'] },
  );
  const terms: fc.Arbitrary<AskTerms> = fc.record(
    { reason: fc.string({ minLength: 1 }), policy: binding },
    { requiredKeys: [] },
  );
  const ask = (t: AskTerms, extra: Partial<PendingApproval> = {}): PendingApproval => ({
    approvalId: 'a-1',
    workflowId: 'sluice-batch:s:1:1',
    sessionId: 's',
    turn: 1,
    step: 1,
    callId: 'c1',
    toolName: 'deploy',
    card: { title: 'Deploy prod' },
    arguments: { env: 'prod' },
    argsDigest: `hmac-sha256:${'0'.repeat(64)}`,
    askedAt: '2026-12-05T10:00:00.000Z',
    expiresAt: '2026-12-05T10:10:00.000Z',
    ...t,
    ...extra,
  });

  it('any terms go whole from a gate to the pending ask, its event and its notice', () => {
    fc.assert(
      fc.property(terms, (t) => {
        const gate: GateAsk = { kind: 'ask', ...t, approvers: { quorum: 2 }, guardsInBody: true };
        expect(askTermsOf(gate)).toEqual(t);
        const p = ask(askTermsOf(gate));
        expect(askTermsOf(askedEventOf(p))).toEqual(t);
        expect(askTermsOf(noticeOf(p, { kind: 'asked', at: p.askedAt }))).toEqual(t);
      }),
    );
  });

  it('the approval/asked event has the fields 1.0 recorded, and no field present as undefined', () => {
    const full = ask(
      { reason: 'r', policy: { digest: 'd', decision: 'ask' } },
      {
        parentCallId: 'run',
        assignee: 'ops',
        identityRequired: true,
        approverGroups: ['sre'],
        quorum: { needed: 2, rejectBy: 'first', approvals: [], rejections: [] },
      },
    );
    const recorded1_0 = ['id', 'toolName', 'callId', 'reason', 'card', 'argsDigest', 'expiresAt', 'parentCallId'];
    expect(Object.keys(askedEventOf(full)).sort()).toEqual([...recorded1_0, 'quorum', 'policy'].sort());
    expect(askedEventOf(full).quorum).toBe(2);
    const bare = askedEventOf(ask({}));
    expect(Object.keys(bare).sort()).toEqual(recorded1_0.filter((k) => k !== 'reason' && k !== 'parentCallId').sort());
    expect(Object.values(bare)).not.toContain(undefined);
  });

  it('a notice names the ask, its card title and what happened; nothing it does not have', () => {
    const n = noticeOf(ask({ reason: 'why' }, { assignee: 'ops' }), {
      kind: 'escalated',
      from: undefined,
      by: 'lead',
      at: 'now',
    });
    expect(n).toEqual({
      kind: 'escalated',
      approvalId: 'a-1',
      workflowId: 'sluice-batch:s:1:1',
      sessionId: 's',
      callId: 'c1',
      toolName: 'deploy',
      argsDigest: `hmac-sha256:${'0'.repeat(64)}`,
      expiresAt: '2026-12-05T10:10:00.000Z',
      assignee: 'ops',
      reason: 'why',
      title: 'Deploy prod',
      by: 'lead',
      at: 'now',
    });
    expect('from' in n).toBe(false);
  });

  it('definedFields drops exactly the undefined fields', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.oneof(fc.constant(undefined), fc.jsonValue())), (o) => {
        const kept = definedFields(o);
        expect(Object.keys(kept)).toEqual(Object.keys(o).filter((k) => o[k] !== undefined));
        for (const k of Object.keys(kept)) expect(kept[k]).toBe(o[k]);
      }),
    );
  });

  it("1.0.0 histories' approval/asked events are what askedEventOf records for the same ask, and audit reads them", () => {
    const dir = path.join(__dirname, '..', 'fixtures', 'histories', '1.0.0');
    let seen = 0;
    for (const file of fs.readdirSync(dir)) {
      const audit = auditHistories([readHistoryFile(path.join(dir, file))]);
      for (const e of audit.events) {
        if (!isEvent(e, 'approval/asked')) continue;
        const { id, quorum, ...rest } = e.data;
        const tally = quorum
          ? { needed: quorum, rejectBy: 'first' as const, approvals: [], rejections: [] }
          : undefined;
        expect(askedEventOf(ask({}, { ...rest, approvalId: id, quorum: tally }))).toEqual(e.data);
        const call = audit.batches.flatMap((b) => b.calls).find((c) => c.callId === e.data.callId);
        expect(call?.approval).toMatchObject({ id, argsDigest: e.data.argsDigest, expiresAt: e.data.expiresAt });
        seen++;
      }
    }
    // The mixed batch's email and the quorum batch's two calls, at least.
    expect(seen).toBeGreaterThanOrEqual(3);
  });
});
