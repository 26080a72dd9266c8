// Records test/fixtures/histories/<release>/fastpath-*.json (release: `unreleased` unless
// --release says otherwise): batches whose calls take both ways through the quick stages in one
// workflow, so their commands interleave as the fast path makes them. In fastpath-batch.json some
// calls find their preflight at hand (run ahead with an earlier call) and others wait for one (after
// a barrier, a state patch, and a run_code program's sub-calls, which never take one), and the
// settles of calls whose bodies ended together are taken along with the first (at hand) while
// the others wait for their own. In fastpath-settle-here.json nothing worker-side runs at settle,
// so most calls settle in the workflow (at hand) and one over the result bound waits for the
// worker's settle. test/replay.test.ts (through `sluice replay test/fixtures/histories`) and
// test/replay-order.test.ts replay them against the current workflow code, the latter comparing
// each call's events and their order with what the recording's code replayed (after a recording,
// its order is written by running that test with SLUICE_REPLAY_ORDER=write).
//
//   npx tsx scripts/record-fastpath-history.ts [--release NAME] [--force]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import type { BatchRequest } from '../client/client';
import { historyToJson } from '../client/history';
import { defineConfig, defineTool, type SluiceConfig } from '../define/config';
import { codeModeTool } from '../tools/code-mode';
import { freshFixtureFile, releaseArg, withRecordingWorker, writeFixture } from './recording';
import { echoTool, readFileTool } from '../test/fixtures/quick-tools';

const files = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-fastpath-'));
fs.writeFileSync(path.join(files, 'a.txt'), '1');
fs.writeFileSync(path.join(files, 'b.txt'), '2');

const tools = [
  echoTool,
  defineTool({
    name: 'mark',
    description: 'Marks the session state with its call id.',
    input: z.object({}),
    isConcurrencySafe: () => true,
    execute: (_args, ctx) => (ctx.setState('marks', ctx.call.id, true), 'marked'),
  }),
  defineTool({
    name: 'write_note',
    description: 'Runs alone: nothing runs beside it.',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => `wrote ${text}`,
  }),
  readFileTool(files),
  codeModeTool({ limits: { cpuMs: 1_000 }, heartbeatTimeoutMs: 3_000 }),
];

/** Pre-execute and post-execute hooks, both quick: local preflight and settle groups. */
const withHooks: SluiceConfig = defineConfig({
  tools,
  preExecute: [(ctx) => (ctx.call.args.text === 'secret' ? { kind: 'deny', reason: 'no secrets' } : undefined)],
  postExecute: [
    (ctx) =>
      ctx.call.args.text === 'shout' ? { action: 'accept', content: [{ type: 'text', text: 'SHOUT' }] } : undefined,
  ],
});

/** No settle hooks and a small result bound: calls settle in the workflow, but one over the bound. */
const settleHere: SluiceConfig = defineConfig({ tools, maxResultChars: 400 });

const SUM =
  "const [a, b] = await Promise.all([tools.read_file({ path: 'a.txt' }), tools.read_file({ path: 'b.txt' })]);\nreturn Number(a) + Number(b);";

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

const batches: { file: string; config: SluiceConfig; request: BatchRequest }[] = [
  {
    file: 'fastpath-batch.json',
    config: withHooks,
    request: {
      sessionId: 'fixture-fastpath',
      turn: 1,
      step: 1,
      calls: [
        call('a', 'echo', { text: 'a' }),
        call('b', 'echo', { text: 'shout' }),
        call('mark', 'mark', {}),
        call('c', 'echo', { text: 'secret' }),
        call('d', 'echo', { text: 'd' }),
        call('note', 'write_note', { text: 'n' }),
        call('e', 'echo', { text: 'e' }),
        call('sum', 'run_code', { code: SUM, description: 'sum' }),
        call('f', 'echo', { text: 'shout' }),
        call('g', 'echo', { text: 'g' }),
      ],
    },
  },
  {
    file: 'fastpath-settle-here.json',
    config: settleHere,
    request: {
      sessionId: 'fixture-fastpath-here',
      turn: 1,
      step: 1,
      calls: [
        call('a', 'echo', { text: 'a' }),
        call('big', 'echo', { text: 'x'.repeat(600) }),
        call('mark', 'mark', {}),
        call('b', 'echo', { text: 'b' }),
        call('sum', 'run_code', { code: SUM, description: 'sum' }),
        call('c', 'echo', { text: 'c' }),
      ],
    },
  },
];

async function main(argv: string[]) {
  const release = releaseArg(argv);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  for (const b of batches) {
    const file = freshFixtureFile(release, b.file, argv);
    await withRecordingWorker(b.config, async ({ client }) => {
      const handle = await client.startBatch(b.request);
      await handle.result();
      writeFixture(file, JSON.parse(historyToJson(await handle.fetchHistory())), { tmp: true });
    });
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    () => (fs.rmSync(files, { recursive: true, force: true }), process.exit(0)),
    (err) => {
      console.error(`record-fastpath-history failed: ${err.message ?? err}`);
      process.exit(1);
    },
  );
}
