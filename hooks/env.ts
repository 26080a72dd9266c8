// The environment a hook runs with: an explicit allowlist, never the worker's own environment.
// The worker holds the codec keys (SLUICE_CODEC_KEYS), model API keys and database URLs; a hook
// is a script from the project folder, and printing its environment must not reveal them.
import * as path from 'node:path';

/** Passed through from the worker when set: what a shell script needs to find its tools. */
const DEFAULT_HOOK_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TERM', 'TZ', 'TMPDIR'];

export interface HookEnvOptions {
  /** More variable names to pass through from the worker's environment (exact names). */
  pass?: string[];
  /** Variables to set for every hook (after the allowlist, before the project variables). */
  set?: Record<string, string>;
}

export function hookEnv(
  workspace: string,
  opts: HookEnvOptions = {},
  from: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of [...DEFAULT_HOOK_ENV, ...(opts.pass ?? [])]) if (from[name] !== undefined) env[name] = from[name];
  // LC_* only: locale settings, which scripts that print non-ASCII reasons need.
  for (const [name, value] of Object.entries(from))
    if (name.startsWith('LC_') && value !== undefined) env[name] = value;
  if (!env.PATH) env.PATH = ['/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter);
  Object.assign(env, opts.set ?? {});
  // What Claude Code, Codex and Gemini CLI tell their hooks about the project.
  env.CLAUDE_PROJECT_DIR = workspace;
  env.GEMINI_PROJECT_DIR = workspace;
  return env;
}
