// Claude Code Read deny rules hold for the search tools (issue 22 item 9): with `Read(./.env)` and
// `Read(./secrets/**)` denied, grep over `.` or over `secrets/` printed `.env` and
// `secrets/api.key`, and glob listed them, although read refused them. The rules are wired as the
// README does (fsTools + permissionRules' preExecute, nothing else); through a real worker,
// directly and from a Code Mode program.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { permissionRules } from '../hooks';
import type { BatchOutput } from '../pipeline/types';
import { fsTools } from '../tools';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig } from '../define/config';
import { batch, startHarness, text, type Harness } from './harness';

let ws: string;
let h: Harness;

beforeAll(async () => {
  ws = fs.mkdtempSync(path.join(inject('runDir'), 'read-deny-ws-'));
  fs.mkdirSync(path.join(ws, '.claude'));
  fs.mkdirSync(path.join(ws, 'secrets', 'deeper'), { recursive: true });
  fs.mkdirSync(path.join(ws, 'src'));
  fs.writeFileSync(path.join(ws, '.env'), 'TOKEN=planted-env-value\n');
  fs.writeFileSync(path.join(ws, 'secrets', 'api.key'), 'planted-api-key\n');
  fs.writeFileSync(path.join(ws, 'secrets', 'deeper', 'db.pem'), 'planted-pem\n');
  fs.writeFileSync(path.join(ws, 'src', 'app.ts'), 'const planted = "ordinary source";\n');
  fs.writeFileSync(
    path.join(ws, '.claude', 'settings.json'),
    JSON.stringify({ permissions: { deny: ['Read(./.env)', 'Read(./secrets/**)'] } }),
  );
  const rules = permissionRules({ workspace: ws });
  h = await startHarness(
    'read-deny-search',
    defineConfig({
      tools: [...fsTools({ root: ws }), codeModeTool()],
      preExecute: [...rules.preExecute],
    }),
  );
});
afterAll(() => h?.close());

const byId = (out: BatchOutput) => Object.fromEntries(out.results.map((r) => [r.callId, text(r.result)]));

describe('Read deny rules and the search tools', () => {
  it('grep and glob over the root or the denied folder show none of the denied files, and say so', async () => {
    const code = `
      const g = await tools.grep({ pattern: 'planted', output_mode: 'content' });
      const l = await tools.glob({ pattern: '**/*' });
      return JSON.stringify([g, l]);`;
    const out = await h.client.runBatch(
      batch([
        { id: 'grep-root', name: 'grep', args: { pattern: 'planted', path: '.', output_mode: 'content' } },
        { id: 'grep-files', name: 'Grep', args: { pattern: 'planted' } },
        { id: 'grep-folder', name: 'grep', args: { pattern: '.', path: 'secrets', output_mode: 'content' } },
        { id: 'grep-count', name: 'grep', args: { pattern: 'planted', output_mode: 'count', glob: '*.{key,pem}' } },
        { id: 'glob-root', name: 'glob', args: { pattern: '**/*' } },
        { id: 'glob-folder', name: 'Glob', args: { pattern: '*', path: 'secrets' } },
        { id: 'glob-dot', name: 'glob', args: { pattern: '.*' } },
        { id: 'P', name: 'run_code', args: { code, description: 'search everything' } },
      ]),
    );
    const r = byId(out);
    for (const [id, t] of Object.entries(r)) {
      expect(t, id).not.toContain('planted-env-value');
      expect(t, id).not.toContain('planted-api-key');
      expect(t, id).not.toContain('planted-pem');
      expect(t, id).not.toMatch(/api\.key|db\.pem/);
      // `.env` only inside a rule's text, never as a listed or matched name.
      expect(t, id).not.toMatch(/(^|\n|\\n|")\.env($|\n|\\n|:|")/);
    }
    // What no rule covers is still found, and each skip is said with the rule that caused it.
    expect(r['grep-root']).toContain('src/app.ts:1:const planted = "ordinary source";');
    expect(r['grep-root']).toContain('the permission rule "Read(./.env)" in .claude/settings.json');
    expect(r['grep-root']).toContain('"Read(./secrets/**)"');
    expect(r['grep-files']).toContain('src/app.ts');
    expect(r['grep-folder']).toMatch(
      /\[2 file\(s\) were not searched: the permission rule "Read\(\.\/secrets\/\*\*\)"/,
    );
    expect(r['grep-count']).toContain('not searched');
    expect(r['glob-root']).toContain('src/app.ts');
    // The folder itself is not covered by `secrets/**`; everything under it is.
    expect(r['glob-root'].split('\n')).toContain('secrets/');
    expect(r['glob-root']).not.toContain('deeper');
    expect(r['glob-root']).toContain('not listed: the permission rule "Read(./secrets/**)"');
    expect(r['glob-folder']).toContain('not listed');
    expect(r['glob-dot']).toContain('"Read(./.env)"');
    expect(r.P).toContain('src/app.ts');
    expect(r.P).toContain('not searched');
  });

  it('read still refuses the files by name (the pre-execute rule), and grep pointed at one finds nothing in it', async () => {
    const out = await h.client.runBatch(
      batch(
        [
          { id: 'read', name: 'read', args: { file_path: 'secrets/api.key' } },
          {
            id: 'grep-file',
            name: 'grep',
            args: { pattern: 'planted', path: 'secrets/deeper/db.pem', output_mode: 'content' },
          },
        ],
        { options: { approvalChannel: false } },
      ),
    );
    const r = byId(out);
    expect(r.read).toContain('"Read(./secrets/**)"');
    expect(r['grep-file']).not.toContain('planted-pem');
  });
});
