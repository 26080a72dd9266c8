// A call's reference: what every worker-side stage receives about the call (pipeline/stages.ts).
import { workflowInfo } from '@temporalio/workflow';
import { argsDigest } from '../pipeline/digest';
import { snapshotArguments } from '../pipeline/json';
import type { CallRef } from '../pipeline/stages';
import type { BatchInput, JsonObject, SessionState, ToolCall } from '../pipeline/types';
import type { Lineage } from './admission';
import { recordFor } from './session-facts';

export function callRef(
  input: BatchInput,
  state: SessionState,
  call: ToolCall,
  args: JsonObject,
  lineage: Lineage,
): CallRef {
  const { workflowId } = workflowInfo();
  const record = recordFor(input, call, lineage.rootCallId);
  return {
    workflowId,
    sessionId: input.sessionId,
    turn: input.turn,
    step: input.step,
    callId: call.id,
    name: call.name,
    args,
    argsDigest: argsDigest(args),
    idempotencyKey: `${workflowId}/${call.id}`,
    state,
    ...lineage,
    // The calls before it, in flight too: what its policy's session facts fold.
    ...(record ? { record } : {}),
    ...(input.factsScope !== undefined ? { factsScope: input.factsScope } : {}),
  };
}

/** A batch call's reference as a preflight run ahead sees it; undefined when its arguments do not snapshot. */
export function refAhead(input: BatchInput, state: SessionState, call: ToolCall): CallRef | undefined {
  try {
    return callRef(input, state, call, snapshotArguments(call.arguments), {});
  } catch {
    return undefined;
  }
}
