// A client tool's answer counts only when the session's client key signed it for this batch and
// this call (activities/client-tool.ts signatureProblem): searched over outcomes, other keys,
// other calls and every one-character change of what was signed.
import { createPrivateKey, sign } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { signatureProblem } from '../../activities/client-tool';
import { type ClientKey, createClientKey } from '../../client/client-tools';
import { type ClientAnswer, clientSignedText } from '../../pipeline/client-tools';
import type { CallRef } from '../../pipeline/stages';
import { defineTool } from '../../define/config';

const owner = createClientKey();
const stranger = createClientKey();

function ref(workflowId: string, callId: string): CallRef {
  return { workflowId, callId } as CallRef;
}

function answer(key: ClientKey, workflowId: string, callId: string, outcome: string, keyId = key.binding.keyId) {
  const pk = createPrivateKey({ key: key.privateKey as never, format: 'jwk' });
  const signature = sign(null, Buffer.from(clientSignedText(workflowId, callId, outcome)), pk).toString('base64url');
  return { keyId, outcome, signature } satisfies ClientAnswer;
}

const ids = fc.string({ minLength: 1, maxLength: 40 });

describe('client tool answers', () => {
  it("the session key's signature over this call is accepted, whatever the outcome", () => {
    fc.assert(
      fc.property(ids, ids, fc.string(), (wf, call, outcome) => {
        expect(signatureProblem(ref(wf, call), owner.binding, answer(owner, wf, call, outcome))).toBeUndefined();
      }),
    );
  });

  it('another key is refused, even when the answer claims the session key id', () => {
    fc.assert(
      fc.property(ids, ids, fc.string(), (wf, call, outcome) => {
        const forged = answer(stranger, wf, call, outcome, owner.binding.keyId);
        expect(signatureProblem(ref(wf, call), owner.binding, forged)).toMatch(/signature/);
        const own = answer(stranger, wf, call, outcome);
        expect(signatureProblem(ref(wf, call), owner.binding, own)).toMatch(/not the session's client key/);
      }),
    );
  });

  it('a signature for another call or batch, or over another outcome, is refused', () => {
    fc.assert(
      fc.property(ids, ids, ids, fc.string({ minLength: 1 }), fc.nat(), (wf, call, other, outcome, at) => {
        fc.pre(other !== call && other !== wf);
        const signed = answer(owner, wf, call, outcome);
        expect(signatureProblem(ref(wf, other), owner.binding, signed)).toBeDefined();
        expect(signatureProblem(ref(other, call), owner.binding, signed)).toBeDefined();
        const i = at % outcome.length;
        const changed = `${outcome.slice(0, i)}${outcome[i] === 'x' ? 'y' : 'x'}${outcome.slice(i + 1)}`;
        expect(signatureProblem(ref(wf, call), owner.binding, { ...signed, outcome: changed })).toBeDefined();
      }),
    );
  });

  it('a binding whose key id is not its key is refused, and so is an answer with no signature', () => {
    const signed = answer(owner, 'w', 'c', '{}');
    const lying = { ...owner.binding, publicKey: stranger.binding.publicKey };
    expect(signatureProblem(ref('w', 'c'), lying, signed)).toMatch(/not the session's client key/);
    expect(signatureProblem(ref('w', 'c'), owner.binding, { ...signed, signature: undefined } as never)).toMatch(
      /not a signed answer/,
    );
  });
});

describe('defineTool runsOn', () => {
  const base = { name: 't', description: 'a tool', input: { type: 'object' }, execute: () => 'x' } as const;

  it('takes a client tool, and refuses settings that cannot hold for one', () => {
    expect(defineTool({ ...base, runsOn: 'client', clientTimeoutMs: 1000 }).runsOn).toBe('client');
    expect(() => defineTool({ ...base, runsOn: 'client', localBody: true })).toThrow(/never inside the worker/);
    expect(() => defineTool({ ...base, clientTimeoutMs: 1000 })).toThrow(/add runsOn: 'client'/);
    expect(() => defineTool({ ...base, runsOn: 'client', clientTimeoutMs: 0 })).toThrow(/whole number/);
    expect(() => defineTool({ ...base, runsOn: 'browser' as never })).toThrow(/use 'worker'/);
  });
});
