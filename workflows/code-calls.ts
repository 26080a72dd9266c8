// Code Mode, workflow side: each `await tools.<name>(args)` of a run_code program arrives as an
// update and runs through the same pipeline as a model's call (pre-execute, approval, guards, the
// retried body, post-execute), in this batch's history. The outcome of every sub-call is kept per
// index, so a program re-run after a crash gets its earlier sub-calls' outcomes instead of running
// them again, and a re-run that asks for something else at an index is refused as non-deterministic.
import { setHandler, workflowInfo } from '@temporalio/workflow';
import { jsonStringBytes, MAX_ARGUMENT_CHARS } from '../pipeline/budget';
import {
  MAX_SUBCALL_ARGUMENT_BYTES_PER_BATCH,
  MAX_SUBCALLS_PER_BATCH,
  MAX_SUBCALLS_PER_PROGRAM,
  nonDeterminism,
  programOutcome,
  RUN_CODE,
  subCallId,
  type CodeCallOutcome,
  type CodeCallRequest,
} from '../pipeline/code-mode';
import { argsDigest } from '../pipeline/digest';
import { snapshotArguments } from '../pipeline/json';
import { errorCandidate } from '../pipeline/normalize';
import { ErrorCodes } from '../pipeline/errors';
import type { BatchInput } from '../pipeline/types';
import type { CallPipeline } from './call-pipeline';
import { codeCallUpdate } from './definitions';
import { LeanScope } from './lean-scope';

interface SubCallRecord {
  name: string;
  argsDigest: string;
  outcome: Promise<CodeCallOutcome>;
}

export class CodeCalls {
  /** Per run_code call, its sub-calls by index. */
  private readonly records = new Map<string, SubCallRecord[]>();
  private total = 0;
  /** Argument bytes (as JSON text) of every sub-call taken so far: each is recorded twice in the batch output. */
  private argumentBytes = 0;

  constructor(
    private readonly input: BatchInput,
    private readonly pipeline: CallPipeline,
    private readonly isCancelled: () => boolean,
    private readonly onSubCall: (subCallId: string, name: string, parentCallId: string) => void,
  ) {
    setHandler(codeCallUpdate, (req) => this.run(req), {
      validator: (req) => {
        const problem = this.problemWith(req);
        if (problem) throw new Error(problem);
      },
    });
  }

  /** Why a sub-call request cannot be taken, in words for whoever wrote the program; undefined if it can. */
  private problemWith(req: unknown): string | undefined {
    const r = req as Partial<CodeCallRequest> | null;
    if (
      !r ||
      typeof r !== 'object' ||
      typeof r.parentCallId !== 'string' ||
      typeof r.name !== 'string' ||
      typeof r.arguments !== 'string' ||
      typeof r.argsDigest !== 'string' ||
      !Number.isInteger(r.index) ||
      (r.index as number) < 0
    ) {
      return 'malformed Code Mode sub-call: send {token, parentCallId, index, name, arguments, argsDigest}';
    }
    const parent = this.input.calls.find((c) => c.id === r.parentCallId);
    if (!parent || parent.name !== RUN_CODE)
      return `this batch has no ${RUN_CODE} call ${JSON.stringify(r.parentCallId)}`;
    if (r.token !== `${workflowInfo().workflowId}/${r.parentCallId}`)
      return `the sub-call does not carry the token of ${RUN_CODE} call ${r.parentCallId}`;
    if (!this.pipeline.isExecuting(r.parentCallId))
      return `${RUN_CODE} call ${r.parentCallId} is not running any more; its program cannot call tools now`;
    if (r.name === RUN_CODE) return `a program cannot call ${RUN_CODE} itself; call the other tools directly`;
    // Checked before anything parses them: an update this large must not reach history.
    if (r.arguments.length > MAX_ARGUMENT_CHARS)
      return `sub-call arguments are ${r.arguments.length} characters, over the ${MAX_ARGUMENT_CHARS}-character limit for one call; nothing was run`;
    let digest: string;
    try {
      digest = argsDigest(snapshotArguments(r.arguments));
    } catch (err) {
      return `sub-call arguments are not a lossless JSON object: ${(err as Error).message}`;
    }
    if (digest !== r.argsDigest) return `sub-call arguments do not match their digest ${r.argsDigest}`;

    const seen = this.records.get(r.parentCallId) ?? [];
    const index = r.index as number;
    if (index < seen.length) return nonDeterminism(r as CodeCallRequest, seen[index]);
    if (index > seen.length)
      return `sub-call #${index} of ${r.parentCallId} arrived before sub-call #${seen.length}; sub-calls run one at a time, in order`;
    if (index >= MAX_SUBCALLS_PER_PROGRAM)
      return `a program may make at most ${MAX_SUBCALLS_PER_PROGRAM} tool calls; split the work across several run_code calls`;
    if (this.total >= MAX_SUBCALLS_PER_BATCH)
      return `this batch already ran ${MAX_SUBCALLS_PER_BATCH} sub-calls, the most one batch may hold; continue in the next turn`;
    const bytes = jsonStringBytes(r.arguments);
    if (this.argumentBytes + bytes > MAX_SUBCALL_ARGUMENT_BYTES_PER_BATCH)
      return `the sub-calls of this batch already sent ${this.argumentBytes} bytes of arguments; with ${bytes} more they would pass the ${MAX_SUBCALL_ARGUMENT_BYTES_PER_BATCH}-byte allowance that keeps the batch output within Temporal's payload limit. Nothing was run; continue in the next turn or send smaller arguments.`;
    return undefined;
  }

  private run(req: CodeCallRequest): Promise<CodeCallOutcome> {
    const seen = this.records.get(req.parentCallId) ?? [];
    this.records.set(req.parentCallId, seen);
    if (req.index < seen.length) return seen[req.index].outcome;
    // Like the batch's own calls, a sub-call always runs to its recorded end: a batch cancel reaches
    // it as the pipeline's cancel flag (approval cancelled, no dispatch, running body aborted).
    const record: SubCallRecord = {
      name: req.name,
      argsDigest: req.argsDigest,
      outcome: LeanScope.nonCancellable(() => this.execute(req)),
    };
    seen.push(record);
    this.total++;
    this.argumentBytes += jsonStringBytes(req.arguments);
    return record.outcome;
  }

  private async execute(req: CodeCallRequest): Promise<CodeCallOutcome> {
    const id = subCallId(req.parentCallId, req.index);
    this.onSubCall(id, req.name, req.parentCallId);
    const call = { id, name: req.name, arguments: req.arguments };
    // Every run_code call is a top-level call (a program cannot call run_code), so it is the root.
    const lineage = { parentCallId: req.parentCallId, rootCallId: req.parentCallId };
    const adm = this.isCancelled()
      ? this.pipeline.abortUnstarted(call, lineage)
      : await this.pipeline.admit(call, lineage);
    if (adm.verdict.kind === 'run' && !this.pipeline.isExecuting(req.parentCallId)) {
      // The program stopped (it failed for good, or timed out) while this sub-call waited: nobody
      // would see its result, so its body must not run.
      adm.verdict = {
        kind: 'settle',
        candidate: errorCandidate(
          `${RUN_CODE} call ${req.parentCallId} ended before this sub-call was dispatched; it did not run`,
          ErrorCodes.ABORTED_BEFORE_DISPATCH,
        ),
        skipPostExecute: false,
      };
    }
    const settlement = await (adm.verdict.kind === 'run' ? this.pipeline.runBody(adm) : this.pipeline.skipBody(adm));
    const result = await this.pipeline.settle(adm, settlement);
    this.pipeline.deferContexts(req.parentCallId, result.additionalContexts ?? []);
    const outcome = {
      ...programOutcome(id, result, settlement.candidate.value),
      name: req.name,
      argsDigest: req.argsDigest,
    };
    // A cancelled batch starts nothing new: the program is told to stop, not to carry on.
    return this.isCancelled() ? { ...outcome, batchCancelled: true } : outcome;
  }
}
