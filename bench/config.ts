// The bench's Sluice config: a trivial concurrency-safe tool with no hooks, so what is measured is
// the pipeline's own cost; the same tool behind an approval, for the approval path; and Code Mode.
import { z } from 'zod';
import { codeModeTool } from '../tools/code-mode';
import { defineConfig, defineTool } from '../define/config';

const input = z.object({ text: z.string() });

/** The body every system runs: Sluice as a tool, bare Temporal as an activity, and in-process. */
export function echoBody({ text }: { text: string }): string {
  return text;
}

export const echo = defineTool({
  name: 'echo',
  description: 'Returns its text.',
  input,
  isConcurrencySafe: () => true,
  execute: (args) => echoBody(args),
});

export const approvedEcho = defineTool({
  name: 'approved_echo',
  description: 'Returns its text, once a person approves.',
  input,
  isConcurrencySafe: () => true,
  approval: 'ask',
  execute: (args) => echoBody(args),
});

/** For Code Mode: calls that run one at a time, as a program's sub-calls do, so the two compare. */
export const serialEcho = defineTool({
  name: 'serial_echo',
  description: 'Returns its text; one call at a time.',
  input,
  execute: (args) => echoBody(args),
});

/** The same body, declared safe to run as a local activity (docs/tools.md, "Local bodies"). */
export const localEcho = defineTool({
  name: 'local_echo',
  description: 'Returns its text; runs as a local activity.',
  input,
  isConcurrencySafe: () => true,
  localBody: true,
  execute: (args) => echoBody(args),
});

export default defineConfig({ tools: [echo, approvedEcho, serialEcho, localEcho, codeModeTool()] });
