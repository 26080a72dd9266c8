// Records test/fixtures/policy-replay/histories/: transfers.json, one batch of three concurrent
// 2,000 transfers and a note; and session-transfers-<n>.json, the batches of a session started
// with sessionFacts, one 2,000 transfer a turn for three turns (the third denied by what the
// session carried from the first two). Each is judged by the enforced Cedar policy (test/fixtures/policy-replay/
// enforced: at most 5,000 an hour, so the third is denied) with the candidate (candidate/: at most
// 3,000 an hour) in shadow beside it, so the history holds both the enforced decisions and the
// shadow's would-be ones. test/policy-replay.test.ts replays it under the candidate (`sluice
// policy replay`) and diffs its shadow verdicts (`sluice policy diff`). Record again when what a
// batch records of a policy decision changes:
//
//   npx tsx scripts/record-policy-replay-histories.ts
//
// With `scope`, it records only scope-histories/scope-transfers-<n>.json: three batches of one
// 2,000 transfer each under one facts scope (`factsScope`), each its own batch with no session, the
// facts read from the worker's fact store (the third denied by the first two):
//
//   npx tsx scripts/record-policy-replay-histories.ts scope
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import { scriptedModel } from '../agent/adapters/scripted';
import { historyToJson } from '../client/history';
import { startSession } from '../client/session';
import { defineConfig, defineTool } from '../define/config';
import { policyRules } from '../hooks/policy';
import { shadowPolicy } from '../hooks/policy-shadow';
import { shellParserReady } from '../hooks/shell';
import { batchWorkflowId } from '../pipeline/batch-id';
import type { SluiceClient } from '../client/client';
import { transferTool } from '../test/fixtures/transfer-tool';
import { withRecordingWorker, writeFixture } from './recording';

export const POLICY_REPLAY = path.join(__dirname, '..', 'test', 'fixtures', 'policy-replay');
export const TRANSFERS_FIXTURE = path.join(POLICY_REPLAY, 'histories', 'transfers.json');

async function main() {
  Runtime.install({ logger: new DefaultLogger(process.env.SLUICE_VERBOSE ? 'WARN' : 'ERROR') });
  await shellParserReady();
  const enforced = policyRules({ workspace: path.join(POLICY_REPLAY, 'enforced') });
  const candidate = policyRules({ workspace: path.join(POLICY_REPLAY, 'candidate') });
  const config = defineConfig({
    tools: [
      transferTool(),
      defineTool({
        name: 'note',
        description: 'keeps a note',
        input: z.object({ text: z.string() }),
        execute: async ({ text }) => `noted: ${text}`,
      }),
    ],
    preExecute: [shadowPolicy({ enforced, candidate }), ...enforced.preExecute],
    models: {
      transfers: scriptedModel(async (req) =>
        req.step === 1
          ? { calls: [{ id: `x${req.turn}`, name: 'transfer', args: { amount: 2000, to: `acct-${req.turn}` } }] }
          : { text: 'done' },
      ),
    },
  });
  await withRecordingWorker(config, async ({ client }) => {
    if (process.argv[2] === 'scope') return recordScope(client);
    const workflowId = batchWorkflowId('fixture-policy-replay', 1, 1);
    const out = await client.runBatch({
      sessionId: 'fixture-policy-replay',
      turn: 1,
      step: 1,
      calls: [
        ...[1, 2, 3].map((i) => ({
          id: `t${i}`,
          name: 'transfer',
          arguments: JSON.stringify({ amount: 2000, to: `acct-${i}` }),
        })),
        { id: 'n1', name: 'note', arguments: JSON.stringify({ text: 'paid the suppliers' }) },
      ],
      options: { approvalChannel: false },
      // The batch is the session's whole record (nothing before it): said, so its facts are read.
      reach: 'session',
    });
    const denied = out.results.filter((r) => r.result.isError).map((r) => r.callId);
    if (denied.join() !== 't3') throw new Error(`expected only t3 denied, got ${denied.join() || 'none'}`);
    const history = await client.temporal.workflow.getHandle(workflowId).fetchHistory();
    writeFixture(TRANSFERS_FIXTURE, JSON.parse(historyToJson(history)), { tmp: true });
    await recordSession(client);
  });
}

/** Three turns of one transfer each in a session that carries its calls: the batches' histories. */
async function recordSession(client: SluiceClient): Promise<void> {
  const sessionId = 'fixture-policy-replay-session';
  const session = await startSession(client, { sessionId, model: 'transfers', sessionFacts: true });
  for (let turn = 1; turn <= 3; turn++) await session.send(`transfer ${turn}`, { id: `m${turn}` });
  await session.cancel();
  await session.result().catch(() => undefined);
  for (let turn = 1; turn <= 3; turn++) {
    const history = await client.temporal.workflow.getHandle(batchWorkflowId(sessionId, turn, 1)).fetchHistory();
    writeFixture(
      path.join(POLICY_REPLAY, 'histories', `session-transfers-${turn}.json`),
      JSON.parse(historyToJson(history)),
      {
        tmp: true,
      },
    );
  }
}

/** Three batches of one facts scope, one transfer each: nothing carries the calls but the fact store. */
async function recordScope(client: SluiceClient): Promise<void> {
  for (let n = 1; n <= 3; n++) {
    // A session each, as a plain runBatch caller's: the scope is all they share.
    const sessionId = `fixture-policy-replay-scope-${n}`;
    const out = await client.runBatch({
      sessionId,
      turn: 1,
      step: 1,
      calls: [{ id: `s${n}`, name: 'transfer', arguments: JSON.stringify({ amount: 2000, to: `acct-${n}` }) }],
      options: { approvalChannel: false },
      factsScope: 'user:fixture',
    });
    if (out.results[0].result.isError !== (n === 3)) throw new Error(`transfer s${n}: ${JSON.stringify(out.results)}`);
    const history = await client.temporal.workflow.getHandle(batchWorkflowId(sessionId, 1, 1)).fetchHistory();
    writeFixture(
      path.join(POLICY_REPLAY, 'scope-histories', `scope-transfers-${n}.json`),
      JSON.parse(historyToJson(history)),
      {
        tmp: true,
      },
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
