// What the stages of every call of one batch share: made once by batch.ts (openBatch) and handed
// to the call pipeline and the approval stage as one object, as openai-agents-js hands its tools
// one `deps`, instead of the same parts passed one by one down each constructor.
import type { InlineBudget } from '../pipeline/budget';
import type { ClientWait } from '../pipeline/client-tools';
import type { BatchInput, GrantUse, SessionState } from '../pipeline/types';
import type { CallTracker } from './admission';
import type { Approvals } from './approvals';
import type { CallLedger } from './call-ledger';
import type { EventLog } from './event-log';
import type { StageRunner } from './stage-runner';

export interface BatchContext {
  readonly input: BatchInput;
  /** The session events the batch records, seq-numbered. */
  readonly events: EventLog;
  /** Asking a person (stage 5). */
  readonly approvals: Approvals;
  /** The session state the batch started with, as its bodies patch it. */
  readonly state: SessionState;
  /** Where each call stands, for the state query. */
  readonly tracker: CallTracker;
  /** Whether the batch was asked to cancel. */
  readonly isCancelled: () => boolean;
  /** Each call's share of the batch's Temporal budget. */
  readonly budget: InlineBudget;
  /** Where the quick stages run. */
  readonly runner: StageRunner;
  /** What the batch recorded and runs, per call. */
  readonly ledger: CallLedger;
  /** The calls a session grant allowed, shown in the state and the memo. */
  readonly grantUses: GrantUse[];
  /** The calls waiting for the user's device, listed in the batch's memo while they wait. */
  readonly clientWaits: ClientWait[];
}
