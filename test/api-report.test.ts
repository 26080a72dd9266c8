// The public surface as reviewed: docs/api-report.md is what scripts/api-report.ts generates now
// (a change to any entry's exports shows as a diff of that file); no value is exported from two
// entries unless one re-exports the other by design (the list below says why); and every name the
// docs import from a sluice entry, or list in the README's table of entries, is exported there.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { collect, type ExportRow, REPORT, render } from '../scripts/api-report';

const repo = path.resolve(__dirname, '..');

/** Files whose values more than one entry gives, and why that is by design. */
const SHARED_BY_DESIGN: Record<string, string> = {
  'support/errors.ts': 'the errors: sluice and sluice/client both give them (client/common-exports.ts)',
  'pipeline/errors.ts': 'the error codes: as the errors',
  'support/optional.ts': 'MissingPackageError: as the errors',
  'workflows/definitions.ts':
    'the batch workflow’s name, ids, signals and queries: a client signals what a workflow defines',
  'pipeline/batch-id.ts': 'batchWorkflowId: as workflows/definitions.ts, which gives it from here',
  'workflows/session-definitions.ts': 'the session workflow’s ids, signals and queries: as the batch’s',
  'codec/output.ts': 'expandBatchOutput: a client and a parent workflow both read a batch’s output',
  'temporal/setup.ts': 'ensureSearchAttributes: sluice/worker re-exports it, a worker registers them before it polls',
  'pipeline/events.ts': 'isEvent: sluice/client and sluice/browser both narrow the events they read with it',
  'temporal/connection.ts':
    'two different functions: sluice/client’s connect is a client Connection, sluice/worker’s a NativeConnection',
};

let rows: ExportRow[] = [];
beforeAll(() => {
  rows = collect();
}, 300_000);

const has = (entry: string, name: string) => rows.find((r) => r.entry === entry && r.name === name);

describe('the API report', () => {
  it('docs/api-report.md is up to date (npx tsx scripts/api-report.ts rewrites it)', () => {
    expect(render(rows)).toBe(fs.readFileSync(REPORT, 'utf8'));
  });

  it('no value is exported from two entries unless by design', () => {
    const entriesOf = new Map<string, Set<string>>();
    for (const r of rows.filter((r) => r.kind === 'value')) {
      const key = `${r.name} (${r.from})`;
      entriesOf.set(key, (entriesOf.get(key) ?? new Set()).add(r.entry));
    }
    const shared = [...entriesOf].filter(([, e]) => e.size > 1).map(([k]) => k);
    const unexplained = shared.filter((k) => !SHARED_BY_DESIGN[k.replace(/^.* \((.*)\)$/, '$1')]);
    expect(unexplained).toEqual([]);
  });

  it('the root entry names no optional package (adapters and converters live in sluice/agent)', () => {
    const root = rows.filter((r) => r.entry === 'sluice');
    expect(root.filter((r) => r.kind === 'value' && r.from.startsWith('agent/'))).toEqual([]);
    expect(has('sluice/agent', 'openAIChatModel')?.kind).toBe('value');
  });
});

describe('names the docs show', () => {
  const docs = ['README.md', 'SECURITY.md', ...fs.readdirSync(path.join(repo, 'docs')).map((f) => `docs/${f}`)].filter(
    (f) => f.endsWith('.md') && f !== 'docs/api-report.md',
  );

  it('every name imported from a sluice entry in README.md, SECURITY.md and docs/ exists there', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const file of docs) {
      const text = fs.readFileSync(path.join(repo, file), 'utf8');
      for (const m of text.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s*from\s*'(sluice(?:\/[a-z-]+)?)'/g)) {
        for (const raw of m[2].split(',')) {
          const name = raw
            .trim()
            .replace(/^type\s+/, '')
            .replace(/\s+as\s+\w+$/, '');
          if (!name) continue;
          seen++;
          if (!has(m[3], name)) missing.push(`${file}: ${name} from '${m[3]}'`);
        }
      }
    }
    expect(seen).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });

  it("the README's table of entries: each name exists in its entry, and a type is written `type X`", () => {
    const readme = fs.readFileSync(path.join(repo, 'README.md'), 'utf8');
    const problems: string[] = [];
    let seen = 0;
    for (const m of readme.matchAll(/^\| `(sluice(?:\/[a-z-]+)?)` \| (.*?) \|/gm)) {
      for (const n of m[2].matchAll(/`(type )?([A-Za-z_$][\w$]*)`/g)) {
        const r = has(m[1], n[2]);
        seen++;
        if (!r) problems.push(`${n[2]} is not exported from ${m[1]}`);
        else if (r.kind === 'type' && !n[1]) problems.push(`${n[2]} (${m[1]}) is a type: write \`type ${n[2]}\``);
        else if (r.kind === 'value' && n[1]) problems.push(`${n[2]} (${m[1]}) is a value, not a type`);
      }
    }
    expect(seen).toBeGreaterThan(10);
    expect(problems).toEqual([]);
  });

  it('names the docs say an entry gives: sealIdentity, SluiceTelemetry, BASH_ENV_ALLOWLIST', () => {
    expect(has('sluice/client', 'sealIdentity')?.kind).toBe('value');
    expect(has('sluice/worker', 'SluiceTelemetry')?.kind).toBe('value');
    expect(has('sluice/tools', 'BASH_ENV_ALLOWLIST')?.kind).toBe('value');
    expect(has('sluice/workflow', 'ToolBatchWorkflow')?.kind).toBe('type');
  });
});
