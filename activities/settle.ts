// Stages 9–12 worker-side: the post-execute waterfall, the outer normalization, the tool's
// finalizeContent, the claim check that fits the result in its bounds, the tools/result
// observers, and the completed card. finalizeContent and the observers run exactly once per
// settle, on frozen objects; an observer's throw is logged and never changes the outcome.
import { Context } from '@temporalio/activity';
import { applyPostVerdict } from '../pipeline/fold';
import { deepFreeze } from '../pipeline/json';
import { errorCandidate, normalizeResult } from '../pipeline/normalize';
import { ErrorCodes } from '../pipeline/errors';
import { type CallRef, genericResultCard, type SettleResult } from '../pipeline/stages';
import type { SettleRequest } from '../codec/stages';
import type { Candidate, Card, ToolResult, UserMessage } from '../pipeline/types';
import { claimCheck, readFromStore, unstashCandidate } from '../stores/claim-check';
import { handlerOf, type ToolDefinition } from '../define/config';
import { checkToolArgs } from '../define/tool-schema';
import { messageOf, runInOrder, threwMessage } from './extensions';
import { type Collector, callInfo, checkCard, type StageKit } from './kit';

export function settleStage(kit: StageKit) {
  return async function settleOne({
    ref: sent,
    candidate,
    skipPostExecute,
    contexts,
  }: SettleRequest): Promise<SettleResult> {
    const ref = kit.keyed(sent);
    const tool = kit.tool(ref.name);
    const c = kit.collector(ref, 'post-execute');
    const body = await unstashCandidate(kit.store, candidate);

    // 9. post-execute, unless the pipeline itself failed
    const post = skipPostExecute
      ? { candidate: body, bodyContexts: contexts.body }
      : await postExecute(kit, c, body, contexts.body);

    // 10. normalization. Bounds apply after finalizeContent, by the claim check: the stored copy
    // is what the model would have seen without them.
    const queued = [...contexts.pre, ...post.bodyContexts, ...contexts.wrapper, ...c.contexts];
    const normalized = normalizeResult(post.candidate, queued, { maxResultChars: Infinity });

    // 11. finalizeContent, synchronous and content-only
    const finalized = finalizeContent(tool, ref, normalized);

    // A body result stored aside and shown unchanged is referred to, not stored a second time.
    const stored =
      candidate.stashed && readFromStore(body)
        ? { ref: candidate.stashed, content: body.content, isError: body.isError }
        : undefined;
    const result = deepFreeze(await claimCheck(kit.store, ref.idempotencyKey, finalized, kit.bounds(ref), stored));

    // 12. tools/result: observers of the fixed outcome
    await notifyObservers(kit, ref, result);

    const card = completedCard(tool, ref, result);
    const changed =
      result.isError !== candidate.isError || JSON.stringify(result.content) !== JSON.stringify(candidate.content);
    return { callId: ref.callId, result, card, events: c.events, ...(changed ? { before: candidate } : {}) };
  };
}

/**
 * Stage 9: each post-execute handler sees the result so far, frozen, and may accept, replace or
 * block it. A block also drops the contexts the body added; a throw fails the call.
 */
async function postExecute(
  kit: StageKit,
  c: Collector,
  body: Candidate,
  bodyContexts: UserMessage[],
): Promise<{ candidate: Candidate; bodyContexts: UserMessage[] }> {
  let current = body;
  let kept = bodyContexts;
  const threw = await runInOrder(
    kit.config.postExecute,
    'post-execute handler',
    async (h, who) => {
      const verdict = await handlerOf(h)({ ...c.ctx, result: deepFreeze(structuredClone(current)) });
      const applied = applyPostVerdict(current, verdict, who);
      current = applied.candidate;
      if (!applied.blocked) return 'next';
      kept = [];
      return 'stop';
    },
    c,
  );
  if (threw) current = errorCandidate(threwMessage(threw), ErrorCodes.PIPELINE_FAILED);
  return { candidate: current, bodyContexts: kept };
}

/**
 * Stage 11: the tool's finalizeContent rewrites the content only, synchronously (it runs once per
 * settle, so a promise would be a second, unrecorded step). A throw or a promise is the tool's
 * output being invalid: the call's result says so, keeping the contexts already queued.
 */
function finalizeContent(tool: ToolDefinition | undefined, ref: CallRef, result: ToolResult): ToolResult {
  if (!tool?.finalizeContent) return result;
  try {
    const content = tool.finalizeContent(result.content, { call: callInfo(ref), isError: result.isError });
    if (content && typeof (content as unknown as Promise<unknown>).then === 'function')
      throw new Error('finalizeContent must be synchronous');
    return normalizeResult({ ...result, content }, result.additionalContexts ?? [], { maxResultChars: Infinity });
  } catch (err) {
    return normalizeResult(
      errorCandidate(`${tool.name}.finalizeContent failed: ${messageOf(err)}`, ErrorCodes.INVALID_TOOL_OUTPUT),
      result.additionalContexts ?? [],
    );
  }
}

/** Stage 12: observers see the fixed outcome; one that throws is logged and changes nothing. */
async function notifyObservers(kit: StageKit, ref: CallRef, outcome: ToolResult): Promise<void> {
  await runInOrder(kit.config.onResult, 'tools/result observer', (o, who) => {
    try {
      handlerOf(o)({
        call: callInfo(ref),
        sessionId: ref.sessionId,
        result: outcome,
        idempotencyKey: ref.idempotencyKey,
      });
    } catch (err) {
      Context.current().log.warn(`${who} threw; the outcome is unchanged`, {
        error: messageOf(err),
        callId: ref.callId,
      });
    }
    return 'next';
  });
}

/** The completed card: the tool's presentResult if it draws a valid one, else the generic card. */
function completedCard(tool: ToolDefinition | undefined, ref: CallRef, result: ToolResult): Card {
  const generic = genericResultCard(ref.name, result.isError);
  if (!tool?.presentResult) return generic;
  try {
    return checkCard(tool.presentResult(parsedOr(tool, ref), result)) ?? generic;
  } catch {
    return generic; // a throwing presentResult gets the generic card
  }
}

function parsedOr(tool: ToolDefinition, ref: CallRef): unknown {
  const p = checkToolArgs(tool, ref.args);
  return p.ok ? p.value : ref.args;
}
