// Codex (`codex exec`) in front of Sluice, end to end (test/harness-cli/suite.ts says how).
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decidedBySluice,
  harness,
  project,
  runs,
  shown,
  sluice,
  useHarnessClis,
  WAITING_HOOK_S,
} from './harness-cli/suite';

useHarnessClis('harness-cli-codex');

describe.concurrent('each harness CLI decided by Sluice', () => {
  decidedBySluice('codex');
});

describe('a harness that will not run the hook', () => {
  it("Codex: a project's .codex/hooks.json, project untrusted and hooks unreviewed, is skipped silently; `sluice hook doctor codex` says so", async () => {
    const p = project('codex-untrusted');
    const r = await harness('codex', p, 'RUN: ./mark denied-untrusted\nUNESCALATED', WAITING_HOOK_S, {
      untrustedProjectHooks: true,
    });
    // The policy denies it, yet it ran: Codex never called the hook (which fails closed).
    expect(runs(p, 'denied-untrusted'), shown(r)).toBe(1);
    const doctor = await sluice(['hook', 'doctor', 'codex', '--project', p], {
      HOME: path.join(p, '.home-codex'),
      CODEX_HOME: path.join(p, '.home-codex', 'codex'),
    });
    expect(doctor.code, shown(doctor)).toBe(1);
    expect(doctor.stdout).toMatch(/FAIL .*not trusted/);
    expect(doctor.stdout).toMatch(/will NOT run/);
  });
});
