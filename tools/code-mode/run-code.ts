// `run_code`: the model sends one program that calls many tools. The program runs in a QuickJS
// sandbox inside this tool's body activity; each `await tools.<name>(args)` goes to the batch
// workflow as an update and runs through the full pipeline there. The workflow remembers every
// sub-call's outcome by index, so when a crash makes Temporal run this body again, the program
// replays (its randomness and clock are fixed) and its finished sub-calls are not run twice.
import { Context } from '@temporalio/activity';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { z } from 'zod';
import {
  CODE_CALL_UPDATE,
  type CodeCallOutcome,
  type CodeCallRequest,
  codeCallUpdateId,
  nonDeterminism,
  RUN_CODE,
} from '../../pipeline/code-mode';
import { argsDigest } from '../../pipeline/digest';
import { ErrorCodes } from '../../pipeline/errors';
import { ToolErrorCodes } from '../errors';
import type { ToolApproval, ContentBlock, Json } from '../../pipeline/types';
import { defineTool, toolOutput, type ToolDefinition } from '../../define/config';
import { runProgram, type ProgramOutcome, type SandboxLimits } from './sandbox';
import { executeUpdate } from '../../temporal/update';

export interface CodeModeOptions {
  /** Sandbox limits; see DEFAULT_LIMITS in sandbox.ts. */
  limits?: Partial<SandboxLimits>;
  /** The whole run of one program, approvals inside it included. Default 60 minutes. */
  timeoutMs?: number;
  /** A dead worker is noticed (and the program re-run elsewhere) after this long. Default 30 s. */
  heartbeatTimeoutMs?: number;
  /** Whether running a program at all needs a person's approval; its sub-calls are judged on their own. */
  approval?: ToolApproval;
  approvalTimeoutMs?: number;
}

const MAX_CODE_CHARS = 100_000;

const DESCRIPTION = [
  'Runs a JavaScript program that calls the other tools, for work that needs many tool calls or computation between them.',
  'The code is the body of an async function: call a tool with `await tools.<name>(args)` (args as you would pass to the tool itself);',
  "it resolves to the tool's structured value, or its text, and rejects with the error message when the call fails or is denied (catch it if you want to go on).",
  'Tool calls run one at a time, each with the same checks and approvals as a direct call.',
  '`return` a JSON value to report it; console.log output is returned too.',
  'There is no file system, network, require/import or timers; Math.random is seeded and Date is fixed during a run.',
].join(' ');

export function codeModeTool(options: CodeModeOptions = {}): ToolDefinition {
  return defineTool({
    name: RUN_CODE,
    description: DESCRIPTION,
    input: z.object({
      code: z
        .string()
        .min(
          1,
          'code must be the body of an async JavaScript function, e.g. "const t = await tools.read({ path: \'a.txt\' }); return t.length"',
        )
        .max(
          MAX_CODE_CHARS,
          `code must be at most ${MAX_CODE_CHARS} characters; split the work across several run_code calls`,
        ),
      description: z
        .string()
        .trim()
        .min(1, 'description must say in a few words what the program does (approvers and the session log show it)'),
    }),
    timeoutMs: options.timeoutMs ?? 60 * 60_000,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? 30_000,
    // A retry re-runs the program; its finished sub-calls answer from the workflow's record.
    retry: { maximumAttempts: 5, initialIntervalMs: 1_000 },
    ...(options.approval ? { approval: options.approval } : {}),
    ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
    presentCall: ({ code, description }) => ({
      title: `${RUN_CODE}: ${description}`,
      summary: description,
      fields: { code },
    }),
    async execute({ code }, ctx) {
      const activity = Context.current();
      const batch = activity.client.workflow.getHandle(ctx.workflowId);
      const outcome = await runProgram({
        code,
        toolNames: ctx.toolNames.filter((n) => n !== RUN_CODE),
        seed: ctx.idempotencyKey,
        now: activity.info.scheduledTimestampMs,
        limits: options.limits,
        signal: ctx.signal,
        async callTool({ index, name, args, taken }) {
          const request: CodeCallRequest = {
            token: ctx.idempotencyKey,
            parentCallId: ctx.call.id,
            index,
            name,
            arguments: JSON.stringify(args),
            argsDigest: argsDigest(args),
          };
          try {
            const out = await executeUpdate<CodeCallOutcome, [CodeCallRequest]>(batch, CODE_CALL_UPDATE, {
              args: [request],
              updateId: codeCallUpdateId(request),
              // The program's end waits for this: the workflow takes an unawaited call before it
              // hears that the program ended, and so settles it, every time.
              onTaken: taken,
            });
            const changed = nonDeterminism(request, out);
            if (changed) return { fatal: changed };
            if (out.batchCancelled) return { fatal: 'the batch was cancelled', kind: 'cancelled' };
            return out.isError ? { ok: false, message: out.message } : { ok: true, value: out.value };
          } catch (err) {
            // Refused by the workflow (non-determinism, limits, the call no longer running): the run
            // ends. Anything else (the server unreachable) fails this attempt, and a retry resumes.
            if (err instanceof WorkflowUpdateFailedError)
              return { fatal: (err.cause as Error | undefined)?.message ?? err.message };
            throw err;
          }
        },
      });
      // Stopped by this activity's own cancellation (the batch's cancel, or a worker shutting down):
      // the throw lets Temporal decide, so a shutdown re-runs the program on another worker.
      if (outcome.kind === 'cancelled' && ctx.signal.aborted) throw new Error(outcome.error);
      return render(outcome);
    },
  });
}

function render(outcome: ProgramOutcome) {
  const logs = outcome.logs.length ? `Logs:\n${outcome.logs.join('\n')}` : '';
  const meta = { subCalls: outcome.calls, cpuMs: outcome.cpuMs, wallMs: outcome.wallMs };
  if (outcome.kind === 'cancelled') {
    // The batch was cancelled while a sub-call ran: the same error the workflow gives a cancelled body.
    const message = `${RUN_CODE} was aborted because the batch was cancelled`;
    return toolOutput({
      content: [{ type: 'text', text: [`Error: ${message}`, logs].filter(Boolean).join('\n\n') }],
      isError: true,
      error: { message, code: ErrorCodes.ABORTED },
      meta,
    });
  }
  if (!outcome.ok) {
    const message = `the program failed: ${outcome.error}`;
    const content: ContentBlock[] = [
      {
        type: 'text',
        text: [`Error: ${message}`, logs && `${logs}\n(logs before it stopped)`].filter(Boolean).join('\n\n'),
      },
    ];
    return toolOutput({ content, isError: true, error: { message, code: ToolErrorCodes.CODE_RUN_FAILED }, meta });
  }
  const shown =
    outcome.result === undefined
      ? 'The program returned no result.'
      : `Result:\n${typeof outcome.result === 'string' ? outcome.result : JSON.stringify(outcome.result, null, 2)}`;
  const value: { logs: Json; result?: Json } = {
    logs: outcome.logs,
    ...(outcome.result !== undefined ? { result: outcome.result } : {}),
  };
  return toolOutput({ content: [{ type: 'text', text: [logs, shown].filter(Boolean).join('\n\n') }], value, meta });
}
