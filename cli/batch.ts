// `sluice batch <calls.json>`: run a batch and print its outcome.
import * as fs from 'node:fs';
import { WorkflowFailedError } from '@temporalio/client';
import type { BatchRequest, SluiceClient } from '../client/client';
import { BatchFailedError, UsageError } from '../support/errors';
import { renderResultCard } from '../client/render';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../pipeline/json';
import type { BatchOutput } from '../pipeline/types';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { batchWorkflowId } from '../workflows/definitions';
import { defineCommand } from './command';
import { client, CONNECTION_FLAGS, CONNECTION_OPTIONS, STORE_FLAGS, withStores } from './shared';

export const batch = defineCommand({
  name: 'batch',
  synopsis: 'batch <calls.json>',
  summary: 'Run a batch and print its outcome (--json for machines)',
  flags: {
    session: { type: 'string' },
    turn: { type: 'string' },
    step: { type: 'string' },
    'start-seq': { type: 'string' },
    ...STORE_FLAGS,
    json: { type: 'boolean' },
    ...CONNECTION_FLAGS,
  },
  help: `Usage: npx sluice batch <calls.json> [options]

Runs a batch and prints its outcome. The file holds {"sessionId", "turn", "step", "calls": [...]}
or just the calls array.

Options:
  --session ID            Session id (default: the file's sessionId; one of the two is needed)
  --turn N, --step N      Turn and step of the batch (default: the file's, then 1)
  --start-seq N           First event seq of the batch (default: the file's startSeq, then the
                          session's next seq from its log in --state-dir, then from the server)
  --state-dir DIR         Where the session logs are (default ${DEFAULT_STATE_DIR})
  --database-url URL      The session logs in PostgreSQL instead (default: SLUICE_DATABASE_URL)
  --json                  Print the BatchOutput as JSON
${CONNECTION_OPTIONS}

Exit codes:
  0  the batch completed and every call succeeded
  1  the batch could not run or failed (connection, server, seq conflict, output too large)
  2  usage: a missing or malformed calls file, an unknown option
  3  the batch completed and at least one call's result is an error (denied, failed, invalid)`,
  async run({ values: v, positionals: [file], out }) {
    const request = readCallsFile(file, v);
    const { sluice, close } = await client(v);
    try {
      const own = batchWorkflowId(request.sessionId, request.turn, request.step);
      if (request.startSeq === undefined) request.startSeq = await continuedSeq(v, sluice, request.sessionId, own);
      const handle = await sluice.startBatch(request);
      if (!v.json)
        out(`batch ${handle.workflowId} running (${request.calls.length} call(s)); waiting for its result ...`);
      let output: BatchOutput;
      try {
        output = await handle.result();
      } catch (err) {
        // The batch's own words (a seq conflict, an output too large), not Temporal's wrapper.
        if (err instanceof WorkflowFailedError && err.cause) throw new BatchFailedError(handle.workflowId, err.cause);
        throw err;
      }
      if (v.json) out(JSON.stringify(output, null, 2));
      else printOutput(output, out);
      return output.results.some((r) => r.result.isError) ? 3 : 0;
    } finally {
      await close();
    }
  },
});

/** Reads a calls file: a whole batch {sessionId, turn, step, calls}, or just an array of calls. */
export function readCallsFile(
  file: string | undefined,
  v: { session?: string; turn?: string; step?: string; 'start-seq'?: string },
): BatchRequest {
  if (!file) throw new UsageError('batch needs a calls file: npx sluice batch calls.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UsageError(
      `${file} is not valid JSON (${(err as Error).message}). Expected {"sessionId": "...", "turn": 1, "step": 1, "calls": [{"id": "...", "name": "...", "arguments": {...}}]} or just the calls array.`,
    );
  }
  const base = (Array.isArray(data) ? { calls: data } : data) as Partial<BatchRequest>;
  if (!base || typeof base !== 'object' || !Array.isArray(base.calls)) {
    throw new UsageError(
      `${file} has no "calls" array. Expected {"sessionId", "turn", "step", "calls": [{"id", "name", "arguments"}]} or just the calls array.`,
    );
  }
  refuseDeepArguments(file, base.calls);
  // The session is named, never guessed from the file name: two folders' calls.json would
  // otherwise share one session, and a renamed file would start a new one.
  const sessionId = v.session ?? base.sessionId;
  if (sessionId === undefined)
    throw new UsageError(
      `${file} names no session: add "sessionId": "..." to the file (then it holds {"sessionId", "turn", "step", "calls"}) or pass --session ID. A batch's events are numbered in its session, so Sluice does not make one up.`,
    );
  return {
    ...base,
    sessionId,
    turn: v.turn !== undefined ? Number(v.turn) : (base.turn ?? 1),
    step: v.step !== undefined ? Number(v.step) : (base.step ?? 1),
    ...(v['start-seq'] !== undefined ? { startSeq: Number(v['start-seq']) } : {}),
  } as BatchRequest;
}

/**
 * Arguments nested deeper than the client accepts (MAX_JSON_DEPTH) are refused here, naming the
 * call: given as JSON objects they would overflow the stack that turns them into the call's raw
 * string, a bare "Maximum call stack size exceeded" that says nothing of the file.
 */
function refuseDeepArguments(file: string, calls: unknown[]): void {
  calls.forEach((c, i) => {
    const args = (c as { arguments?: unknown } | null)?.arguments;
    if (args === null || typeof args !== 'object' || !nestsDeeperThan(args, MAX_JSON_DEPTH)) return;
    const { id, name } = c as { id?: unknown; name?: unknown };
    throw new UsageError(
      `${file}: calls[${i}] (id ${JSON.stringify(id)}, tool ${JSON.stringify(name)}) has arguments that nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep, the most Sluice accepts (a model's call like it gets INVALID_ARGS); send flatter arguments`,
    );
  });
}

/**
 * A batch with no start seq continues its session: after the last event of the session log and of
 * the session's completed batches on the server. Another batch of the session still running would
 * number its events over this one's, so that is refused. The same (session, turn, step) is this
 * very batch: submitting it again attaches to it, running or finished (its own start seq stands;
 * the one computed here is not used).
 */
async function continuedSeq(
  v: { 'state-dir'?: string },
  sluice: SluiceClient,
  sessionId: string,
  own: string,
): Promise<number> {
  const server = await sluice.sessionSeq(sessionId);
  const others = server.running.filter((id) => id !== own);
  if (others.length)
    throw new UsageError(
      `session ${sessionId} has another batch still running (${others.join(', ')}); this batch (${own}) now would claim the same event seqs. Wait for it to finish, or give this batch its own range with --start-seq N.`,
    );
  const logged = await withStores(v, (stores) => stores.lastSeq(sessionId));
  return Math.max(server.nextSeq, logged + 1);
}

export function printOutput(output: BatchOutput, out: (s: string) => void): void {
  for (const r of output.results) out(renderResultCard(r.name, r.callId, r.result));
  for (const m of output.messages) if (m.role === 'user') out(`+ context (${m.source ?? 'user'}): ${m.content}`);
  out(
    `next seq ${output.nextSeq}${output.concludesTurn ? '; the turn concludes' : ''}${output.cancelled ? '; the batch was cancelled' : ''}`,
  );
}
