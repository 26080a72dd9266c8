// One model step of a session: store the messages that are new since the last step, load the
// transcript, ask the model through its adapter, store its answer. Only the head reference and
// the new messages cross history; the transcript itself lives in the result store.
import { randomBytes } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureTypes } from '../pipeline/errors';
import { AttemptPublisher } from '../agent/live';
import type { LiveWriter } from '../pipeline/live';
import { ModelRefusedError } from '../agent/models';
import { resolveModel } from '../agent/resolve';
import { TranscriptStore } from '../agent/transcript-store';
import {
  type AgentMessage,
  type AssistantMessage,
  boundStepCalls,
  type ModelActivities,
  type ModelStepInput,
  type ModelStepOutput,
  type ToolSpec,
} from '../pipeline/session';
import type { ResultStore } from '../stores/claim-check';
import { type SluiceConfig, toolSchemas } from '../define/config';

/** The failure type of a model step that cannot succeed on retry; the session ends the turn with it. */
const MODEL_REFUSED = FailureTypes.MODEL_REFUSED;

export function createModelActivities(
  config: SluiceConfig,
  deps: { resultStore: ResultStore; live?: LiveWriter },
): ModelActivities {
  const transcripts = new TranscriptStore(config.resultStore ?? deps.resultStore);
  let specs: ToolSpec[] | undefined;
  const toolSpecs = (names?: string[]): ToolSpec[] => {
    specs ??= toolSchemas(config).map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema }));
    return names ? specs.filter((s) => names.includes(s.name)) : specs;
  };

  return {
    async modelStep(input: ModelStepInput): Promise<ModelStepOutput> {
      let adapter: ReturnType<typeof resolveModel>;
      try {
        adapter = resolveModel(input.model, config.models);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, MODEL_REFUSED);
      }
      const head = await transcripts.append(input.head, input.append);
      const stored = await transcripts.load(head);
      const messages: AgentMessage[] = input.system ? [{ role: 'system', content: input.system }, ...stored] : stored;
      // The answer streams to live followers while the provider sends it; what is recorded is the
      // whole reply below, once. A failed attempt's pieces are voided, so no follower shows them twice.
      const attempt = Context.current().info.attempt;
      // This execution's own token, on each piece: a local step whose worker is lost runs again on
      // the next worker from attempt 1, and followers void the lost run's pieces when another
      // run's come. Picked here, not in the workflow: a replay must not give the new run the old one's.
      const run = randomBytes(6).toString('hex');
      const live = deps.live
        ? new AttemptPublisher(deps.live, input.sessionId, { turn: input.turn, step: input.step, attempt, run })
        : undefined;
      await deps.live?.startStep?.(input.sessionId, input.turn, input.step).catch(() => undefined);
      try {
        const reply = await adapter.step({
          sessionId: input.sessionId,
          turn: input.turn,
          step: input.step,
          messages,
          tools: toolSpecs(input.tools),
          signal: Context.current().cancellationSignal,
          ...(live ? { onDelta: live.delta } : {}),
        });
        // Within a batch's limits before anything keeps them (the transcript, this step's result in
        // history, the session's carry): the session's intake gives an oversized call INVALID_ARGS.
        const assistant: AssistantMessage = {
          role: 'assistant',
          text: reply.text ?? '',
          toolCalls: boundStepCalls(reply.calls.map((c) => ({ id: c.id ?? '', name: c.name, arguments: c.arguments }))),
        };
        const next = (await transcripts.append(head, [assistant])) as string;
        await live?.end();
        return {
          head: next,
          assistant,
          usage: reply.usage,
          finishReason: reply.finishReason,
          ...(input.historyFull !== undefined ? { historyFull: input.historyFull } : {}),
        };
      } catch (err) {
        await live?.void(voidReason(err));
        if (err instanceof ModelRefusedError) throw ApplicationFailure.nonRetryable(err.message, MODEL_REFUSED);
        throw err;
      }
    },
  };
}

/** Why an attempt's live pieces are void, for a follower: the error's first line. */
function voidReason(err: unknown): string {
  const message = String((err as Error)?.message ?? err).split('\n')[0];
  const cancelled = (err as Error)?.name === 'AbortError' || Context.current().cancellationSignal.aborted;
  return cancelled ? `the step was cancelled (${message})` : message;
}
