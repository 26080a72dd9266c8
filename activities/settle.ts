// Stages 9–12 worker-side: the post-execute waterfall, the outer normalization, the tool's
// finalizeContent, the claim check that fits the result in its bounds, the tools/result
// observers, and the completed card. finalizeContent and the observers run exactly once per
// settle, on frozen objects; an observer's throw is logged and never changes the outcome.
import { Context } from '@temporalio/activity';
import { applyPostVerdict } from '../pipeline/fold';
import { deepFreeze } from '../pipeline/json';
import { errorCandidate, normalizeResult } from '../pipeline/normalize';
import { ErrorCodes } from '../pipeline/errors';
import { type CallRef, genericResultCard, type SettleRequest, type SettleResult } from '../pipeline/stages';
import type { Card } from '../pipeline/types';
import { claimCheck, readFromStore, unstashCandidate } from '../stores/claim-check';
import { handlerOf, type ToolDefinition } from '../define/config';
import { checkToolArgs } from '../define/tool-schema';
import { messageOf, runInOrder, threwMessage } from './extensions';
import { callInfo, checkCard, type StageKit } from './kit';

export function settleStage(kit: StageKit) {
  const { config } = kit;
  return async function settleOne({ ref, candidate, skipPostExecute, contexts }: SettleRequest): Promise<SettleResult> {
    const tool = kit.tool(ref.name);
    const c = kit.collector(ref, 'post-execute');
    const body = await unstashCandidate(kit.store, candidate);
    let current = body;
    let bodyContexts = contexts.body;

    // 9. post-execute, unless the pipeline itself failed
    if (!skipPostExecute) {
      const threw = await runInOrder(
        config.postExecute,
        'post-execute handler',
        async (h, who) => {
          const verdict = await handlerOf(h)({ ...c.ctx, result: deepFreeze(structuredClone(current)) });
          const applied = applyPostVerdict(current, verdict, who);
          current = applied.candidate;
          if (!applied.blocked) return 'next';
          bodyContexts = [];
          return 'stop';
        },
        c,
      );
      if (threw) current = errorCandidate(threwMessage(threw), ErrorCodes.PIPELINE_FAILED);
    }

    // 10. normalization. Bounds apply after finalizeContent, by the claim check: the stored copy
    // is what the model would have seen without them.
    const queued = [...contexts.pre, ...bodyContexts, ...contexts.wrapper, ...c.contexts];
    let result = normalizeResult(current, queued, { maxResultChars: Infinity });

    // 11. finalizeContent, synchronous and content-only
    if (tool?.finalizeContent) {
      try {
        const content = tool.finalizeContent(result.content, { call: callInfo(ref), isError: result.isError });
        if (content && typeof (content as unknown as Promise<unknown>).then === 'function')
          throw new Error('finalizeContent must be synchronous');
        result = normalizeResult({ ...result, content }, result.additionalContexts ?? [], { maxResultChars: Infinity });
      } catch (err) {
        result = normalizeResult(
          errorCandidate(`${tool.name}.finalizeContent failed: ${messageOf(err)}`, ErrorCodes.INVALID_TOOL_OUTPUT),
          result.additionalContexts ?? [],
        );
      }
    }

    // A body result stored aside and shown unchanged is referred to, not stored a second time.
    const stored =
      candidate.stashed && readFromStore(body)
        ? { ref: candidate.stashed, content: body.content, isError: body.isError }
        : undefined;
    result = deepFreeze(await claimCheck(kit.store, ref.idempotencyKey, result, kit.bounds(ref), stored));

    // 12. tools/result: observers of the fixed outcome
    const outcome = result;
    await runInOrder(config.onResult, 'tools/result observer', (o, who) => {
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

    let card: Card = genericResultCard(ref.name, result.isError);
    if (tool?.presentResult) {
      try {
        card = checkCard(tool.presentResult(parsedOr(tool, ref), result)) ?? card;
      } catch {
        // a throwing presentResult gets the generic card
      }
    }
    const changed =
      result.isError !== candidate.isError || JSON.stringify(result.content) !== JSON.stringify(candidate.content);
    return { callId: ref.callId, result, card, events: c.events, ...(changed ? { before: candidate } : {}) };
  };
}

function parsedOr(tool: ToolDefinition, ref: CallRef): unknown {
  const p = checkToolArgs(tool, ref.args);
  return p.ok ? p.value : ref.args;
}
