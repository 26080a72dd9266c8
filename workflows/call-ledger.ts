// The call ledger: what the batch has recorded and is running, call by call. Each call's
// tool/call (or a sub-call's tool/code-dispatch-start) is recorded here exactly once, and its
// outcome event; the ledger knows which bodies run (a run_code program may call tools only then)
// and holds a sub-call's contexts for its run_code call. The pipeline and the approval stage
// share it instead of calling back into each other.
import type { OutcomeFields, SubCallFields } from '../pipeline/events';
import type { BatchInput, Card, ToolCall, ToolResult, UserMessage } from '../pipeline/types';
import type { Admission, Lineage } from './admission';
import type { EventLog } from './event-log';

export class CallLedger {
  /** The batch's own calls whose tool/call is recorded (an ask raised ahead records it early). */
  private readonly started = new Set<ToolCall>();
  private readonly executing = new Set<string>();
  /** Sub-calls' contexts, held for their run_code call's result instead of injected at the sub-call. */
  private readonly deferred = new Map<string, UserMessage[]>();

  constructor(
    private readonly input: BatchInput,
    private readonly events: EventLog,
  ) {}

  /** 1. tool/call (a sub-call's tool/code-dispatch-start), once per batch call. */
  recordStart(call: ToolCall, lineage: Lineage): void {
    if (lineage.parentCallId) this.events.record('tool/code-dispatch-start', codeDispatchFields(call, lineage));
    else if (this.started.has(call)) return;
    else {
      this.started.add(call);
      this.events.record('tool/call', {
        turn: this.input.turn,
        step: this.input.step,
        callId: call.id,
        name: call.name,
        arguments: call.arguments,
        ...(call.argumentsChars !== undefined ? { argumentsChars: call.argumentsChars } : {}),
      });
    }
  }

  /** Whether the batch call's tool/call is recorded. */
  hasStarted(call: ToolCall): boolean {
    return this.started.has(call);
  }

  /** 13. The single model-facing outcome; a sub-call's belongs to its program, not the model. */
  recordOutcome(adm: Admission, result: ToolResult, card: Card): void {
    const outcome: OutcomeFields = {
      content: result.content,
      isError: result.isError,
      ...(result.error ? { error: result.error } : {}),
      ...(result.meta ? { meta: result.meta } : {}),
      card,
    };
    if (adm.lineage.parentCallId)
      this.events.record('tool/code-dispatch', { ...codeDispatchFields(adm.call, adm.lineage), ...outcome });
    else
      this.events.record('tool/result', {
        turn: this.input.turn,
        step: this.input.step,
        callId: adm.call.id,
        name: adm.call.name,
        ...outcome,
      });
  }

  bodyStarted(callId: string): void {
    this.executing.add(callId);
  }

  bodyEnded(callId: string): void {
    this.executing.delete(callId);
  }

  /** True while the call's body activity runs (a run_code program can call tools only then). */
  isExecuting(callId: string): boolean {
    return this.executing.has(callId);
  }

  /** Why a sub-call's program is gone, once its run_code call's body stopped running. */
  parentEnded(parentCallId: string): string | undefined {
    return this.executing.has(parentCallId) ? undefined : `the program of ${parentCallId} ended`;
  }

  /** Holds a sub-call's contexts for its run_code call: they follow that call's result, after the batch. */
  deferContexts(parentCallId: string, contexts: UserMessage[]): void {
    if (contexts.length) this.deferred.set(parentCallId, [...(this.deferred.get(parentCallId) ?? []), ...contexts]);
  }

  takeDeferred(callId: string): UserMessage[] {
    const held = this.deferred.get(callId) ?? [];
    this.deferred.delete(callId);
    return held;
  }
}

function codeDispatchFields(call: ToolCall, lineage: Lineage): SubCallFields {
  return {
    rootCallId: lineage.rootCallId ?? lineage.parentCallId!,
    parentCallId: lineage.parentCallId!,
    subCallId: call.id,
    name: call.name,
    arguments: call.arguments,
  };
}
