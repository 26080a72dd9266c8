// A hostile model against Code Mode, on the real server: call ids shaped like sub-call ids, and
// sub-calls too large for one Temporal payload. Each test attacks the way the security review did.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchOutput } from '../pipeline/types';
import { bashTool, fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig } from '../worker/config';
import { batch, startHarness, text, type Harness } from './harness';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-code-attacks-'));
fs.writeFileSync(path.join(root, 'notes.txt'), 'harmless\n');

const config = defineConfig({
  tools: [...fsTools({ root }), bashTool({ root }), codeModeTool({ limits: { cpuMs: 2_000 } })],
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
    const out = await h.client.runBatch(
      batch(
        [
          { id: 'P', name: 'run_code', args: { code: program, description: 'list, then touch a file' } },
          { id: 'P:code:0', name: 'glob', args: { pattern: '*.txt' } },
          { id: 'P:code:1', name: 'glob', args: { pattern: '*.txt' } },
        ],
        { options: { approvalTimeoutMs: 1_500 } },
      ),
    );
    expect(fs.existsSync(marker)).toBe(false);

    // The bash sub-call went to approval, as bash always does, and nobody approved it.
    const asked = ofType(out, 'approval/asked');
    expect(asked).toHaveLength(1);
    expect(asked[0].data).toMatchObject({ toolName: 'bash', callId: 'P:code:1', parentCallId: 'P' });
    expect(ofType(out, 'approval/decided')[0].data.outcome).toBe('unavailable');
    const [, sub] = ofType(out, 'tool/code-dispatch');
    expect(sub.data).toMatchObject({ subCallId: 'P:code:1', name: 'bash', isError: true });
    expect((sub.data.error as { code: string }).code).toBe('DENIED');

    // The model's calls with reserved ids were refused one by one, with the reason; nothing ran.
    for (const r of out.results.slice(1)) {
      expect(r.result.error?.code).toBe('INVALID_ARGS');
      expect(r.result.error?.message).toContain('reserved for the tool calls of run_code programs');
    }
    expect(out.results[0].result.error?.code).toBe('CODE_RUN_FAILED');
    expect(text(out.results[0].result)).toContain('approval was required but not given');
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
