// The Bash forms of issue 22's item 1 through a real worker on the dev server, as a model would
// send them: directly in a batch and as run_code sub-calls (the same judgment for both). Each case
// asserts the recorded outcome (denied by a rule, asked, or run unasked) and that a stopped command
// did not run: its file was not made, or the file it would remove is still there. The judgment
// alone, on the same table, is test/unit/shell-rules.test.ts.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { permissionRules } from '../hooks';
import type { BatchOutput, ToolResult } from '../pipeline/types';
import { bashTool } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig } from '../define/config';
import { batch, type Harness, startHarness, text } from './harness';
import { type Outcome, RULES, SHELL_CASES, type ShellCase } from './shell-cases';

const cases = SHELL_CASES.filter((c) => !c.judgeOnly);
let ws: string;
let h: Harness;

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(inject('runDir'), 'shell-rules-'));
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.writeFileSync(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions: RULES }));
  const rules = permissionRules({ workspace: ws });
  h = await startHarness(
    'shell-rules',
    defineConfig({
      tools: [bashTool({ root: ws, approval: rules.approval('Bash') }), codeModeTool()],
      preExecute: rules.preExecute,
    }),
  );
});
afterAll(() => h?.close());

/** The case's command with F named for this run, and victims made beforehand. */
function prepare(run: string): { commands: string[]; file: (i: number) => string } {
  const file = (i: number) => path.join(ws, `${run}-${i}.txt`);
  const commands = cases.map((c, i) => {
    if (c.victim) fs.writeFileSync(file(i), 'keep me');
    return c.command.replaceAll('F', `${run}-${i}.txt`);
  });
  return { commands, file };
}

function outcomeOf(out: BatchOutput, callId: string, result: ToolResult | undefined): Outcome | 'ran-denied?' {
  const matched = out.events.find((e) => e.type === 'permission/matched' && e.data.callId === callId);
  const asked = out.events.some((e) => e.type === 'approval/asked' && e.data.callId === callId);
  if (matched?.data.decision === 'deny') return asked ? 'ran-denied?' : 'deny';
  if (asked) return 'ask';
  return result?.error?.code === 'DENIED' ? 'ran-denied?' : 'allow';
}

function checkEffects(c: ShellCase, file: string): void {
  if (c.expect === 'allow') return;
  // Stopped: the file it would make is not there; the file it would remove still is.
  expect(fs.existsSync(file), `${c.name}: ${file}`).toBe(!!c.victim);
}

describe('the Bash forms through a real worker', () => {
  it('directly, as batch calls: denied, asked or allowed, and stopped commands do not run', async () => {
    const { commands, file } = prepare('batch');
    const out = await h.client.runBatch(
      batch(
        commands.map((command, i) => ({ id: `c${i}`, name: 'bash', args: { command } })),
        { options: { approvalChannel: false } },
      ),
    );
    const byId = new Map(out.results.map((r) => [r.callId, r.result]));
    const got = cases.map((c, i) => `${c.name}: ${outcomeOf(out, `c${i}`, byId.get(`c${i}`))}`);
    expect(got).toEqual(cases.map((c) => `${c.name}: ${c.expect}`));
    cases.forEach((c, i) => {
      checkEffects(c, file(i));
      const r = byId.get(`c${i}`)!;
      if (c.expect === 'deny')
        expect(text(r)).toMatch(
          /the permission rule "Bash\((touch|curl):\*\)" in \.claude\/settings\.json denies this call/,
        );
      if (c.expect === 'allow') expect(r.isError, `${c.name}: ${text(r)}`).toBe(false);
    });
  });

  it('from run_code: every sub-call goes through the same judgment', async () => {
    const { commands, file } = prepare('code');
    const code = `
      const said = [];
      for (const command of ${JSON.stringify(commands)}) {
        try { await tools.bash({ command }); said.push('ran'); } catch (e) { said.push(e.message); }
      }
      return said;`;
    const out = await h.client.runBatch(
      batch([{ id: 'P', name: 'run_code', args: { code, description: 'the shell forms' } }], {
        options: { approvalChannel: false },
      }),
    );
    const program = out.results[0].result;
    expect(program.isError, text(program)).toBe(false);
    const said = JSON.parse(text(program).slice(text(program).indexOf('['))) as string[];
    const got = cases.map((c, i) => `${c.name}: ${outcomeOf(out, `P:code:${i}`, undefined)}`);
    expect(got).toEqual(cases.map((c) => `${c.name}: ${c.expect}`));
    cases.forEach((c, i) => {
      checkEffects(c, file(i));
      if (c.expect === 'deny') expect(said[i]).toMatch(/the permission rule "Bash\((touch|curl):\*\)"/);
      if (c.expect === 'allow') expect(said[i]).toBe('ran');
      if (c.expect === 'ask') expect(said[i]).not.toBe('ran');
    });
  });
});
