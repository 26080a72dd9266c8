// The worker's half of a client tool (`runsOn: 'client'`): the body ran on the session's client,
// and what it answered comes back here before the workflow records it. The task queue the client
// polls is no identity (anyone with access to the namespace may poll it), so an answer counts only
// when the key the session recorded at its start signed it, for this batch and this call. Then
// the outcome is treated as a worker-side body's: checked, stored aside when large, its contexts
// and events recorded under the tool's name.
import { createPublicKey, verify } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { type PackedBodyResult, type PackedCallRef, packBodyResult, unpackCallRef } from '../codec/stages';
import { BODY_INLINE_BYTES } from '../pipeline/budget';
import {
  type ClientAnswer,
  type ClientBinding,
  type ClientOutcome,
  clientKeyId,
  clientSignedText,
} from '../pipeline/client-tools';
import { ErrorCodes } from '../pipeline/errors';
import { errorCandidate } from '../pipeline/normalize';
import type { CallRef } from '../pipeline/stages';
import { stashCandidate } from '../stores/claim-check';
import { checkCandidate } from './execute';
import { messageOf } from './extensions';
import type { StageKit } from './kit';

interface AcceptClientBodyRequest {
  ref: PackedCallRef;
  binding: ClientBinding;
  answer: ClientAnswer;
}

export interface ClientBodyActivities {
  /** Checks a client's answer against the session's key and makes it the call's body result. */
  acceptClientBody(req: AcceptClientBodyRequest): Promise<PackedBodyResult | string>;
}

export function clientBodyActivities(kit: StageKit): ClientBodyActivities {
  return {
    async acceptClientBody({ ref: packed, binding, answer }) {
      const activity = Context.current();
      const ref = kit.keyed(unpackCallRef(packed, activity.info.workflowExecution?.workflowId ?? ''));
      const problem = signatureProblem(ref, binding, answer);
      if (problem) return refused(ref, problem);
      let outcome: ClientOutcome;
      try {
        outcome = JSON.parse(answer.outcome) as ClientOutcome;
      } catch (err) {
        return refused(ref, `its outcome is not JSON (${messageOf(err)})`);
      }
      return accepted(kit, ref, outcome);
    },
  };
}

/** Why the answer is not the session client's, or undefined when its signature holds. */
export function signatureProblem(ref: CallRef, binding: ClientBinding, answer: ClientAnswer): string | undefined {
  if (typeof answer?.outcome !== 'string' || typeof answer.signature !== 'string')
    return 'it is not a signed answer (outcome and signature are missing)';
  if (answer.keyId !== binding.keyId || clientKeyId(binding.publicKey.x) !== binding.keyId)
    return `it was signed by key ${String(answer.keyId).slice(0, 40)}, not the session's client key ${binding.keyId}`;
  try {
    const key = createPublicKey({ key: binding.publicKey, format: 'jwk' });
    const text = clientSignedText(ref.workflowId, ref.callId, answer.outcome);
    if (verify(null, Buffer.from(text), key, Buffer.from(answer.signature, 'base64url'))) return undefined;
  } catch (err) {
    return `its signature could not be checked (${messageOf(err)})`;
  }
  return "its signature is not the session client key's over this call's result";
}

/** The call ends with the refusal: what came back is not recorded as the body's result. */
function refused(ref: CallRef, why: string): PackedBodyResult | string {
  const message = `${ref.name}'s result was refused: ${why}. Only the session's own client may run its client tools; the body's outcome is not known. Tell the user; do not assume it ran.`;
  return packBodyResult({
    outcome: 'ok',
    candidate: errorCandidate(message, ErrorCodes.CLIENT_UNVERIFIED),
    bodyContexts: [],
    wrapperContexts: [],
    events: [{ type: 'client/refused', data: { callId: ref.callId, name: ref.name, reason: why } }],
  });
}

async function accepted(kit: StageKit, ref: CallRef, outcome: ClientOutcome): Promise<PackedBodyResult | string> {
  const side = kit.collector(ref, `client tool:${ref.name}`);
  let candidate;
  try {
    candidate = checkCandidate(outcome?.candidate, `client tool ${ref.name}`);
    for (const text of outcome.contexts ?? []) side.ctx.addContext(String(text));
    for (const e of outcome.events ?? []) side.ctx.emit(String(e?.type), e?.data ?? {});
  } catch (err) {
    candidate = errorCandidate(
      `${ref.name} ran on the session's client, but what it returned cannot be recorded: ${messageOf(err)}. Do not call it again to redo the work.`,
      ErrorCodes.INVALID_TOOL_OUTPUT,
    );
  }
  return packBodyResult({
    outcome: 'ok',
    candidate: await stashCandidate(
      kit.store,
      ref.idempotencyKey,
      candidate,
      Math.min(ref.inlineBytes ?? BODY_INLINE_BYTES, BODY_INLINE_BYTES),
    ),
    bodyContexts: side.contexts,
    wrapperContexts: [],
    events: side.events,
  });
}
