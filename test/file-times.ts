// A vitest reporter for CI (`--reporter=./test/file-times.ts`): after the run, each test file's
// time, slowest first, and each group's (fast, slow) time from its first file queued to its last
// done, all files', and the whole run's from its start (the global set-up included; the groups
// share the workers and overlap), so a run that grew slower says where. A file's time is its import, its set-up hooks and its tests (the JSON reporter's
// start and end times span its tests alone, which leaves out a beforeAll that builds and installs
// the tarball); its import alone is shown beside it, and summed, since every file pays it.
import * as path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export default class FileTimes implements Reporter {
  private readonly spans = new Map<string, { first: number; last: number; files: number }>();
  private started = Date.now();

  onInit(): void {
    this.started = Date.now();
  }

  onTestModuleQueued(module: TestModule): void {
    const group = module.project.name;
    const span = this.spans.get(group) ?? { first: Date.now(), last: Date.now(), files: 0 };
    span.files++;
    this.spans.set(group, span);
  }

  onTestModuleEnd(module: TestModule): void {
    const span = this.spans.get(module.project.name);
    if (span) span.last = Date.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules.map((m) => {
      const d = m.diagnostic();
      const importMs = d.prepareDuration + d.collectDuration + d.setupDuration;
      const ms = importMs + d.duration;
      return { ms, importMs, group: m.project.name, file: path.relative(process.cwd(), m.moduleId), state: m.state() };
    });
    rows.sort((a, b) => b.ms - a.ms);
    const width = Math.max(0, ...rows.map((r) => r.group.length));
    const lines = ['time per test file (s: import, set-up and tests; then the import alone), slowest first:'];
    for (const r of rows)
      lines.push(
        `  ${(r.ms / 1000).toFixed(1).padStart(7)} ${(r.importMs / 1000).toFixed(1).padStart(6)}  ${r.group.padEnd(width)}  ${r.file}${r.state === 'failed' ? '  (failed)' : ''}`,
      );
    const sum = (ms: number[]) => Math.round(ms.reduce((a, b) => a + b, 0) / 1000);
    lines.push(
      `the files' time summed: ${sum(rows.map((r) => r.ms))} s, of which importing ${sum(rows.map((r) => r.importMs))} s`,
    );
    const groups = [...this.spans].map(
      ([group, s]) => `${group || 'the run'}: ${s.files} files in ${Math.round((s.last - s.first) / 1000)} s`,
    );
    if (groups.length) {
      const spans = [...this.spans.values()];
      const first = Math.min(...spans.map((s) => s.first));
      const last = Math.max(...spans.map((s) => s.last));
      groups.push(`all ${rows.length} files in ${Math.round((last - first) / 1000)} s`);
      lines.push(`time per group, first file queued to last done: ${groups.join('; ')}`);
    }
    lines.push(`the whole run, its set-up included: ${Math.round((Date.now() - this.started) / 1000)} s`);
    console.log(lines.join('\n'));
  }
}
