// Other sessions' data through the tools (issue 10, item 9), in the README's default layout: the
// worker started in the workspace, so its state folder `.sluice` (every session's log, stored
// results, the dev server's database) sits inside the root the tools work in. A model in one
// session tries every tool to read another session's log; none may show it.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bashTool, fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';
import { sessionLogPath } from '../stores/sink';
import { DEFAULT_STATE_DIR } from '../worker/worker';
import { batch, startHarness, text, type Harness } from './harness';

const root = path.join(fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-state-'))), 'ws');
fs.mkdirSync(path.join(root, 'src'), { recursive: true });
fs.writeFileSync(path.join(root, 'src', 'main.ts'), 'export const x = 1;\n');
/** `npx sluice worker` run in the workspace: the default state folder, relative to it. */
const stateDir = path.join(root, DEFAULT_STATE_DIR);
const SECRET = 'PIN-OF-SESSION-A-7731';

const lookup = defineTool({
  name: 'lookup_pin',
  description: 'Returns a PIN (a stand-in for any secret a session sees).',
  input: z.object({}),
  execute: () => SECRET,
});
// The fallback (no sandbox) under its own name, beside the sandboxed bash.
const plainBash = { ...bashTool({ root, approval: 'auto', sandbox: 'none' }), name: 'bash_plain', aliases: [] };

let h: Harness;
let logOfA: string;
beforeAll(async () => {
  h = await startHarness(
    'state-attacks',
    defineConfig({
      tools: [
        ...fsTools({ root }),
        bashTool({ root, approval: 'auto', sandbox: 'bubblewrap' }),
        plainBash,
        lookup,
        codeModeTool(),
      ],
    }),
    { stateDir },
  );
  // Session A sees a secret; its log, in the workspace's .sluice, holds it.
  const a = await h.client.runBatch(batch([{ name: 'lookup_pin' }]));
  logOfA = sessionLogPath(stateDir, a.sessionId);
  expect(fs.readFileSync(logOfA, 'utf8')).toContain(SECRET);
  expect(path.relative(root, logOfA).startsWith(`.sluice${path.sep}sessions`)).toBe(true);
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(path.dirname(root), { recursive: true, force: true });
});

const protectedError = { isError: true, error: { code: 'FS_PROTECTED_PATH' } };

describe("another session's log in the default layout (issue 10, item 9)", () => {
  it('is refused to read, write and edit, by relative, absolute, dotted and linked path', async () => {
    const rel = path.relative(root, logOfA);
    // A link the model could make with bash (ln -s names nothing the sandbox refuses).
    const made = await h.client.runBatch(batch([{ name: 'bash', args: { command: 'ln -s .sluice st && echo made' } }]));
    expect(text(made.results[0].result)).toContain('made');
    const linked = path.join('st', path.relative(stateDir, logOfA));
    const b = await h.client.runBatch(
      batch([
        { name: 'read', args: { file_path: rel } },
        { name: 'read', args: { file_path: logOfA } },
        { name: 'read', args: { file_path: `src/../${rel}` } },
        { name: 'read', args: { file_path: linked } },
        { name: 'write', args: { file_path: rel, content: 'forged\n' } },
        { name: 'edit', args: { file_path: linked, old_string: SECRET, new_string: 'x' } },
      ]),
    );
    expect(b.results).toHaveLength(6);
    for (const [i, r] of b.results.entries()) {
      // `..` is refused before anything looks at where it leads.
      if (i === 2) expect(r.result).toMatchObject({ isError: true, error: { code: 'FS_OUTSIDE_WORKSPACE' } });
      else expect(r.result).toMatchObject(protectedError);
      expect(text(r.result)).not.toContain(SECRET);
    }
    expect(fs.readFileSync(logOfA, 'utf8')).toContain(SECRET);
  });

  it('is left out of glob and grep, and refused when asked for by folder', async () => {
    const b = await h.client.runBatch(
      batch([
        { name: 'glob', args: { pattern: '**/*.jsonl' } },
        { name: 'glob', args: { pattern: '**/*', path: '.sluice' } },
        { name: 'grep', args: { pattern: 'PIN-OF-SESSION', output_mode: 'content' } },
        { name: 'grep', args: { pattern: 'PIN-OF-SESSION', output_mode: 'files_with_matches', glob: '**/*.jsonl' } },
        { name: 'grep', args: { pattern: 'PIN-OF-SESSION', path: '.sluice/sessions' } },
      ]),
    );
    expect(text(b.results[0].result)).not.toContain('sessions');
    expect(b.results[1].result).toMatchObject(protectedError);
    expect(text(b.results[2].result)).toMatch(/^No matches/);
    expect(text(b.results[3].result)).toMatch(/^No (matches|files)/);
    expect(b.results[4].result).toMatchObject(protectedError);
    for (const r of b.results) expect(text(r.result)).not.toContain(SECRET);
  });

  it('is refused to a Code Mode program too', async () => {
    const rel = path.relative(root, logOfA);
    const program = `try { return await tools.read({ file_path: ${JSON.stringify(rel)} }); } catch (e) { return 'refused: ' + e.message; }`;
    const out = await h.client.runBatch(
      batch([{ name: 'run_code', args: { code: program, description: 'read a log' } }]),
    );
    const shown = text(out.results[0].result);
    expect(shown).toMatch(/refused: .*(Sluice|\.sluice)/);
    expect(shown).not.toContain(SECRET);
  });

  it("is hidden from bash's sandbox, whatever the command tries", async () => {
    const command = [
      'cat .sluice/sessions/*.jsonl',
      'cat st/sessions/*',
      'grep -rs PIN-OF-SESSION . ..',
      'find . -name "*.jsonl" -exec cat {} +',
      'ls -A .sluice',
      'echo done',
    ].join('; ');
    const out = await h.client.runBatch(batch([{ name: 'bash', args: { command } }]));
    const shown = text(out.results[0].result);
    expect(shown).toContain('done');
    expect(out.results[0].result.meta).toMatchObject({ sandbox: 'bubblewrap' });
    expect(shown).not.toContain(SECRET);
  });

  it('without a sandbox, refuses a command that names the state folder', async () => {
    const out = await h.client.runBatch(
      batch([
        { name: 'bash_plain', args: { command: `cat ${path.relative(root, logOfA)}` } },
        { name: 'bash_plain', args: { command: `grep -r PIN-OF-SESSION ${stateDir}` } },
      ]),
    );
    for (const r of out.results) {
      expect(r.result).toMatchObject(protectedError);
      expect(text(r.result)).toContain('bash runs without a sandbox here');
    }
  });
});
