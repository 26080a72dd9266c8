// The code blocks of the docs, taken from the markdown itself, and the processes a test starts
// from them in a fresh app. Shared by the tests that run the README's and getting-started's blocks.
//
// The convention the docs follow (docs/getting-started.md, "The examples in these pages run"):
// every fence names its language; `ts`, `js` and `sh` blocks are run; `text` blocks (output,
// diagrams, usage listings) are not code; a code block that cannot run here carries
// `<!-- not run: why -->` on the line before its fence.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { eventually, within } from './eventually';
import { REPO } from './fresh-app';

export interface DocBlock {
  /** The doc's path in the repository, e.g. `docs/getting-started.md`. */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The `## ` (or `# `) heading the block is under. */
  heading: string;
  lang: string;
  code: string;
  /** The reason given by `<!-- not run: … -->`, if the block carries one. */
  notRun?: string;
  /** `worker.ts` for a block whose first line is `// worker.ts…`: the file the doc names. */
  file?: string;
}

export const RUN_LANGS = ['ts', 'js', 'sh'];
const NOT_RUN = /^<!--\s*not run:(.*)-->$/;

/** Every fenced block of a doc, with its heading, language and tag. */
export function docBlocks(doc: string): DocBlock[] {
  const lines = fs.readFileSync(path.join(REPO, doc), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^#{1,2} /.test(line)) heading = line.replace(/^#+ /, '');
    const open = line.match(/^```(\S*)\s*$/);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    if (i >= lines.length) throw new Error(`${doc}:${start + 1}: a code fence that is never closed`);
    let before = start - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    const tag = before >= 0 ? lines[before].trim().match(NOT_RUN) : null;
    const code = `${body.join('\n')}\n`;
    const named = body[0]?.match(/^\/\/ ([\w.-]+\.(?:ts|js|mjs|cjs))\b/);
    blocks.push({
      doc,
      line: start + 1,
      heading,
      lang: open[1],
      code,
      ...(tag ? { notRun: tag[1].trim() } : {}),
      ...(named ? { file: named[1] } : {}),
    });
  }
  return blocks;
}

/** Where a block is, for messages: `README.md:97 (Use Sluice in your project)`. */
export const where = (b: DocBlock) => `${b.doc}:${b.line} (${b.heading})`;

export interface Proc {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  /** The exit code once it has exited, else undefined. */
  exitCode(): number | null | undefined;
  /** Waits until the output matches (fails at once, with the output, if the process exits first). */
  waitFor(what: string, pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Waits for the process to exit by itself; fails with its output unless the code is 0. */
  succeeds(timeoutMs?: number): Promise<string>;
  /** SIGTERM, then waits for it to exit (SIGKILL after 30 s). */
  stop(): Promise<void>;
}

const started = new Set<Proc>();

/** A process in a fresh app, its output kept for the test's messages. */
export function startProcess(
  label: string,
  cmd: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined> },
): Proc {
  const child = spawn(cmd, args, { cwd: options.cwd, env: { ...process.env, ...options.env } as NodeJS.ProcessEnv });
  const chunks: string[] = [];
  let code: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (c) => {
      code = c;
      resolve();
    }),
  );
  for (const s of [child.stdout, child.stderr]) s?.on('data', (d) => chunks.push(String(d)));
  const output = () => chunks.join('');
  const proc: Proc = {
    child,
    output,
    exitCode: () => code,
    async waitFor(what, pattern, timeoutMs = 240_000) {
      await eventually(
        `${label}: ${what}`,
        () => {
          if (code !== undefined) throw new Error(`${label} exited (${code}) first:\n${output()}`);
          return pattern.test(output());
        },
        { timeoutMs, intervalMs: 250 },
      );
    },
    async succeeds(timeoutMs = 240_000) {
      try {
        await within(`${label} to finish`, timeoutMs, exited);
      } catch (late) {
        await proc.stop();
        throw new Error(`${(late as Error).message} (it hangs):\n${output()}`);
      }
      if (code !== 0) throw new Error(`${label} exited with ${code}:\n${output()}`);
      started.delete(proc);
      return output();
    },
    async stop() {
      if (code === undefined) {
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(kill);
      }
      started.delete(proc);
    },
  };
  started.add(proc);
  return proc;
}

/** Stops every process started here that is still running (for afterAll). */
export async function stopProcesses(): Promise<void> {
  await Promise.all([...started].map((p) => p.stop()));
}
