// A hostile model against Code Mode, on the real server: call ids shaped like sub-call ids, and
// sub-calls too large for one Temporal payload. Each test attacks the way the security review did.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { argsDigest } from '../pipeline/digest';
import type { BatchOutput } from '../pipeline/types';
import { bashTool, fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { codeCallUpdate } from '../workflows/definitions';
import { batch, startHarness, text, type Harness } from './harness';
import { pendingApproval } from './eventually';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-code-attacks-'));
fs.writeFileSync(path.join(root, 'notes.txt'), 'harmless\n');

const config = defineConfig({
  tools: [
    ...fsTools({ root }),
    bashTool({ root }),
    codeModeTool({ limits: { cpuMs: 2_000 } }),
    defineTool({
      name: 'big',
      description: 'returns 1.5 MB of text',
      input: z.object({}),
      execute: () => 'z'.repeat(1_500_000),
    }),
  ],
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness('code-attacks', config);
});
afterAll(() => h?.close());

const ofType = (out: BatchOutput, type: string) => out.events.filter((e) => e.type === type);

describe('call ids shaped like sub-call ids', () => {
  it("cannot lend a harmless call's pre-computed check to a program's bash sub-call", async () => {
    const marker = path.join(root, 'pwned');
    // The program's sub-calls get the ids P:code:0 and P:code:1, and the model names its own calls
    // so: the first sub-call's check used to look ahead at the calls after the model's P:code:0 and
    // leave the harmless glob's verdict for P:code:1, which the program's bash then picked up.
    const program = `await tools.glob({ pattern: '*.txt' });\nreturn await tools.bash({ command: 'touch ${marker}' });`;
    const handle = await h.client.startBatch(
      batch([
        { id: 'P', name: 'run_code', args: { code: program, description: 'list, then touch a file' } },
        { id: 'P:code:0', name: 'glob', args: { pattern: '*.txt' } },
        { id: 'P:code:1', name: 'glob', args: { pattern: '*.txt' } },
      ]),
    );
    // The bash sub-call goes to approval, as bash always does; the person says no.
    const pending = await pendingApproval(h.client, handle.workflowId);
    expect(pending).toMatchObject({ toolName: 'bash', callId: 'P:code:1' });
    await h.client.deny(pending.approvalId, { workflowId: handle.workflowId, by: 'test' });
    const out = await handle.result();
    expect(fs.existsSync(marker)).toBe(false);

    const asked = ofType(out, 'approval/asked');
    expect(asked).toHaveLength(1);
    expect(asked[0].data).toMatchObject({ toolName: 'bash', callId: 'P:code:1', parentCallId: 'P' });
    expect(ofType(out, 'approval/decided')[0].data.outcome).toBe('rejected');
    const [, sub] = ofType(out, 'tool/code-dispatch');
    expect(sub.data).toMatchObject({ subCallId: 'P:code:1', name: 'bash', isError: true });
    expect((sub.data.error as { code: string }).code).toBe('DENIED');

    // The model's calls with reserved ids were refused one by one, with the reason; nothing ran.
    for (const r of out.results.slice(1)) {
      expect(r.result.error?.code).toBe('INVALID_ARGS');
      expect(r.result.error?.message).toContain('reserved for the tool calls of run_code programs');
    }
    expect(out.results[0].result.error?.code).toBe('CODE_RUN_FAILED');
    expect(text(out.results[0].result)).toContain('the call was rejected by test');
  });

  it('still runs a batch whose ids merely contain "code"', async () => {
    const out = await h.client.runBatch(
      batch([
        { id: 'code:1', name: 'glob', args: { pattern: '*.txt' } },
        { id: 'x:code:1a', name: 'glob', args: { pattern: '*.txt' } },
      ]),
    );
    expect(out.results.map((r) => r.result.isError)).toEqual([false, false]);
  });
});

describe('large sub-calls', () => {
  it('1.5 MB of arguments is a catchable error with nothing dispatched; the write before it keeps its result', async () => {
    const program = [
      "const first = await tools.write({ file_path: 'kept.txt', content: 'kept' });",
      'let refused = "";',
      "try { await tools.write({ file_path: 'huge.txt', content: 'y'.repeat(1_500_000) }); }",
      'catch (e) { refused = e.message; }',
      'return { first, refused };',
    ].join('\n');
    const out = await h.client.runBatch(
      batch([{ name: 'run_code', args: { code: program, description: 'write, then write too much' } }]),
    );
    const r = out.results[0].result;
    expect(r.isError, text(r)).toBe(false);
    const shown = JSON.parse(text(r).replace(/^Result:\n/, ''));
    expect(shown.first).toMatch(/kept\.txt/);
    expect(shown.refused).toMatch(/over the 262144-character limit for one call, so the call was not made/);
    expect(fs.readFileSync(path.join(root, 'kept.txt'), 'utf8')).toBe('kept');
    expect(fs.existsSync(path.join(root, 'huge.txt'))).toBe(false);
    expect(
      ofType(out, 'tool/code-dispatch-start').map((e) => JSON.parse(e.data.arguments as string).file_path),
    ).toEqual(['kept.txt']);
  });

  it('a forged 1.5 MB sub-call update is refused before it reaches history; the batch completes', async () => {
    const program = "try { await tools.bash({ command: 'true' }); } catch (e) { return 'denied'; }";
    const handle = await h.client.startBatch(
      batch([{ id: 'P', name: 'run_code', args: { code: program, description: 'asks' } }]),
    );
    const pending = await pendingApproval(h.client, handle.workflowId);
    const args = { content: 'y'.repeat(1_500_000) };
    const forged = await handle
      .executeUpdate(codeCallUpdate, {
        args: [
          {
            token: `${handle.workflowId}/P`,
            parentCallId: 'P',
            index: 1,
            name: 'write',
            arguments: JSON.stringify(args),
            argsDigest: argsDigest(args),
          },
        ],
      })
      .then(
        () => undefined,
        (e) => e,
      );
    expect(forged).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((forged as WorkflowUpdateFailedError).cause?.message)).toMatch(/over the 262144-character limit/);
    // The program's own ask is still open and still decides the program.
    expect((await h.client.batchState(handle.workflowId)).pending.map((p) => p.approvalId)).toEqual([
      pending.approvalId,
    ]);
    await h.client.deny(pending.approvalId, { workflowId: handle.workflowId, by: 'test' });
    const out = await handle.result();
    expect(text(out.results[0].result)).toBe('Result:\ndenied');
    const history = JSON.stringify(await handle.fetchHistory());
    expect(history.length).toBeLessThan(500_000);
  });

  it('three 1.5 MB sub-call results reach the program cut to the batch budget; the batch completes', async () => {
    const program = [
      'const sizes = [];',
      'for (let i = 0; i < 3; i++) sizes.push(String(await tools.big({})).length);',
      'return sizes;',
    ].join('\n');
    const out = await h.client.runBatch(
      batch([{ name: 'run_code', args: { code: program, description: 'big results' } }]),
    );
    const r = out.results[0].result;
    expect(r.isError, text(r)).toBe(false);
    const sizes = JSON.parse(text(r).replace(/^Result:\n/, '')) as number[];
    expect(sizes).toHaveLength(3);
    for (const n of sizes) expect(n).toBeLessThan(600_000);
    expect(JSON.stringify(out).length).toBeLessThan(2 * 1024 * 1024);
  });
});
