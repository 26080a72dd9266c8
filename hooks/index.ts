// Command hooks in the Claude Code and Codex dialects, as Sluice extensions:
//   PreToolUse → one pre-execute handler; PostToolUse (and Claude Code's PostToolUseFailure) → one
//   post-execute handler. Each runs every matching hook in parallel inside the stage's activity,
//   records hook/invoked + hook/result for each, and merges their answers, most restrictive first.
//
//   const hooks = commandHooks({ workspace: '/path/to/project' });
//   defineConfig({ tools, preExecute: [...hooks.preExecute], postExecute: [...hooks.postExecute] });
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCodes } from '../pipeline/errors';
import type { Candidate, JsonObject } from '../pipeline/types';
import type { Named, PostExecuteHandler, PreExecuteHandler, StageContext } from '../define/config';
import { hookInput, interpretRun, type HookVerdict } from './dialects';
import { matchesAny } from './matcher';
import { mergePost, mergePre } from './merge';
import { hookEnv, type HookEnvOptions } from './env';
import { changedScripts, fileDigest, scriptsOf, type PinnedScript } from './pin';
import { runHookCommand, type HookRun } from './run';
import {
  BEFORE_EVENTS,
  loadHooks,
  type CommandHook,
  type Dialect,
  type HookSource,
  type LoadedSource,
} from './settings';
import { hookFacingCall } from './tool-names';

export type { HookVerdict } from './dialects';
export type { CommandHook, Dialect, HookEvent, HookSource, LoadedSource } from './settings';
export type { HookEnvOptions } from './env';
export type { PinnedScript } from './pin';
export { HARNESS_RESULT_TOOL, harnessTools, type HarnessToolsOptions } from './harness-tools';

export interface CommandHooksOptions {
  /** The project the hooks belong to: their working directory and CLAUDE_PROJECT_DIR. */
  workspace: string;
  /**
   * Settings files to read (relative to the workspace). Default: `.claude/settings.json`,
   * `.claude/settings.local.json` and `.codex/hooks.json`, each skipped when missing.
   */
  sources?: (string | HookSource)[];
  /** What hooks get as `transcript_path`, e.g. the session's JSONL log; null when not given. */
  transcriptPath?: (sessionId: string) => string;
  /**
   * The `tool_name` hooks see for a Sluice tool, by its Sluice name, when the default is wrong
   * (default: the Claude Code built-in its name or an alias spells, in any case; else its name).
   */
  toolNames?: Record<string, string>;
  /**
   * The hooks' environment: only PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, TZ and
   * TMPDIR pass from the worker, plus CLAUDE_PROJECT_DIR / GEMINI_PROJECT_DIR. `pass` names more
   * variables to pass through, `set` sets some. Never the codec keys or API keys by default.
   */
  env?: HookEnvOptions;
}

export interface CommandHooks {
  preExecute: Named<PreExecuteHandler>[];
  postExecute: Named<PostExecuteHandler>[];
  /** Every hook that was loaded, in file order. */
  hooks: readonly CommandHook[];
  /** The settings files read at start, with the digest of what was read; log them at startup. */
  sources: readonly LoadedSource[];
  /** The script files hook commands name, with their digest at start: a changed one is not run. */
  scripts: readonly PinnedScript[];
  /** What the settings held that Sluice does not run; worth logging at startup. */
  warnings: readonly string[];
}

/** Results of calls that never reached their tool: no post hook runs for them, as in Claude Code. */
const NEVER_RAN = new Set<string>([
  ErrorCodes.DENIED,
  ErrorCodes.UNKNOWN_TOOL,
  ErrorCodes.INVALID_ARGS,
  ErrorCodes.ABORTED_BEFORE_DISPATCH,
]);
const SUMMARY_CHARS = 500;

export function commandHooks(opts: CommandHooksOptions): CommandHooks {
  const workspace = path.resolve(opts.workspace);
  if (!fs.statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(
      `commandHooks: workspace ${workspace} is not a directory; pass the project folder the hooks belong to`,
    );
  }
  const { hooks, sources, warnings } = loadHooks(workspace, opts.sources);
  const r: HookRunner = {
    opts,
    workspace,
    env: hookEnv(workspace, opts.env),
    scriptsOfHook: new Map(hooks.map((hk) => [hk, scriptsOf(hk.command, workspace)])),
  };
  const preHooks = hooks.filter((h) => BEFORE_EVENTS.includes(h.event));
  const postHooks = hooks.filter((h) => !BEFORE_EVENTS.includes(h.event));

  const pre: PreExecuteHandler = async (ctx) => {
    const selected = select(r, preHooks, ctx, () => true);
    if (!selected.length) return undefined;
    return mergePre(await runPoint(r, ctx, 'pre-execute', selected));
  };

  const post: PostExecuteHandler = async (ctx) => {
    const result = ctx.result;
    if (result.isError && NEVER_RAN.has(result.error?.code ?? '')) return undefined;
    // Claude Code splits success (PostToolUse) from failure (PostToolUseFailure); Codex has one event.
    const wanted = (h: CommandHook) =>
      h.dialect === 'claude' ? h.event === (result.isError ? 'PostToolUseFailure' : 'PostToolUse') : true;
    const selected = select(r, postHooks, ctx, wanted);
    if (!selected.length) return undefined;
    return mergePost(await runPoint(r, ctx, 'post-execute', selected, result));
  };

  // A command hook may run for up to its timeout: its stage must be a regular activity.
  return {
    preExecute: preHooks.length ? [{ name: 'command hooks (PreToolUse)', handler: pre, longRunning: true }] : [],
    postExecute: postHooks.length ? [{ name: 'command hooks (PostToolUse)', handler: post, longRunning: true }] : [],
    hooks,
    sources,
    scripts: [...new Map([...r.scriptsOfHook.values()].flat().map((sc) => [sc.path, sc])).values()],
    warnings,
  };
}

/** What running the hooks needs, read once at start. */
interface HookRunner {
  opts: CommandHooksOptions;
  workspace: string;
  env: NodeJS.ProcessEnv;
  /** The script files each hook's command names, pinned at start. */
  scriptsOfHook: Map<CommandHook, PinnedScript[]>;
}

type Point = 'pre-execute' | 'post-execute';

interface HookOutcome {
  hook: CommandHook;
  run: HookRun;
  verdict: HookVerdict;
  /** Not run: a script it names changed since the worker started. */
  refused: boolean;
}

/** A path as the events show it: relative to the workspace when inside it. */
function labelOf(workspace: string, file: string): string {
  const rel = path.relative(workspace, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : file;
}

/** The selected hooks of one point: each recorded as invoked, all run at once, each result recorded in config order. */
async function runPoint(
  r: HookRunner,
  ctx: StageContext,
  point: Point,
  selected: CommandHook[],
  result?: Readonly<Candidate>,
): Promise<HookVerdict[]> {
  for (const hook of selected) recordInvoked(r, ctx, point, hook);
  const runs = await Promise.all(selected.map((hook) => runHook(r, ctx, point, hook, result)));
  // Recorded and applied in config order, whatever order the processes finished in.
  for (const outcome of runs) recordResult(ctx, point, outcome);
  return runs.map((o) => o.verdict);
}

function recordInvoked(r: HookRunner, ctx: StageContext, point: Point, hook: CommandHook): void {
  const scripts = r.scriptsOfHook.get(hook)!;
  ctx.emit('hook/invoked', {
    turn: ctx.turn,
    point,
    dialect: hook.dialect,
    handlerId: hook.id,
    ...(hook.matcher !== undefined ? { matcher: hook.matcher } : {}),
    event: hook.event,
    callId: ctx.call.id,
    command: clip(hook.command),
    settings: hook.source.label,
    settingsDigest: hook.source.digest,
    ...(scripts.length
      ? { scripts: scripts.map((sc) => ({ path: labelOf(r.workspace, sc.path), digest: sc.digest })) }
      : {}),
  });
}

/** One hook's command, fed the call in its dialect; refused unrun when a script it names changed. */
async function runHook(
  r: HookRunner,
  ctx: StageContext,
  point: Point,
  hook: CommandHook,
  result?: Readonly<Candidate>,
): Promise<HookOutcome> {
  const facing = facingOf(r, ctx, hook.dialect);
  const stdin = hookInput({
    dialect: hook.dialect,
    event: hook.event,
    sessionId: ctx.sessionId,
    turn: ctx.turn,
    cwd: r.workspace,
    toolName: facing.toolName,
    toolInput: facing.toolInput,
    toolUseId: ctx.call.id,
    ...(r.opts.transcriptPath ? { transcriptPath: r.opts.transcriptPath(ctx.sessionId) } : {}),
    ...(result ? { result } : {}),
  });
  const changed = changedScripts(r.scriptsOfHook.get(hook)!);
  if (changed.length) return refusedHook(r, point, hook, changed);
  const run = await runHookCommand(hook.command, {
    cwd: r.workspace,
    env: r.env,
    stdin: JSON.stringify(stdin),
    timeoutMs: hook.timeoutSec * 1000,
  });
  const verdict = interpretRun(run, hook);
  if (fileDigest(hook.source.path) !== hook.source.digest) {
    verdict.warnings.push(
      `${hook.source.label} changed since the worker started; the worker keeps running the hooks it read at start (${hook.source.digest}); restart it to load the new settings`,
    );
  }
  return { hook, run, verdict, refused: false };
}

/** A hook whose code changed at run time cannot gate calls: it denies (or blocks) unrun, saying which script changed. */
function refusedHook(
  r: HookRunner,
  point: Point,
  hook: CommandHook,
  changed: ReturnType<typeof changedScripts>,
): HookOutcome {
  const what = changed.map((c) => `${labelOf(r.workspace, c.path)} (${c.pinned} at start, ${c.now} now)`).join(', ');
  const reason = `the ${hook.event} hook ${hook.id} was not run: its script ${what} changed since the worker started. A hook whose code changed at run time cannot gate calls; restore the file or restart the worker to load it`;
  const verdict: HookVerdict = { decision: point === 'pre-execute' ? 'deny' : 'block', reason, warnings: [] };
  const refused: HookRun = {
    exitCode: null,
    signal: null,
    stdout: '',
    stderr: '',
    durationMs: 0,
    timedOut: false,
  };
  return { hook, run: refused, verdict, refused: true };
}

/** hook/result for one hook, and the context it adds. */
function recordResult(ctx: StageContext, point: Point, { hook, run, verdict, refused }: HookOutcome): void {
  const stderr = run.stderr.trim();
  const data: JsonObject = {
    turn: ctx.turn,
    point,
    handlerId: hook.id,
    event: hook.event,
    callId: ctx.call.id,
    decision: verdict.decision,
    durationMs: run.durationMs,
  };
  if (refused) data.refused = 'script-changed';
  if (run.exitCode !== null) data.exitCode = run.exitCode;
  if (run.signal) data.signal = run.signal;
  if (run.timedOut) data.timedOut = true;
  if (stderr) data.stderrSummary = clip(stderr);
  if (verdict.reason) data.reason = clip(verdict.reason);
  if (verdict.error) data.error = verdict.error;
  if (verdict.warnings.length) data.warnings = verdict.warnings;
  if (verdict.systemMessage) data.systemMessage = clip(verdict.systemMessage);
  if (verdict.context) data.additionalContext = clip(verdict.context);
  ctx.emit('hook/result', data);
  if (verdict.context) ctx.addContext(verdict.context);
}

function facingOf(r: HookRunner, ctx: StageContext, dialect: Dialect) {
  return hookFacingCall(dialect, ctx.call.name, ctx.tool, ctx.call.args, ctx.tool && r.opts.toolNames?.[ctx.tool.name]);
}

/**
 * The hooks whose matcher selects any name the call goes by: the name its dialect's agent would
 * send, the name the model used, the tool's own name and its aliases. Claude Code runs an
 * identical command once per event.
 */
function select(
  r: HookRunner,
  hooks: CommandHook[],
  ctx: StageContext,
  wanted: (h: CommandHook) => boolean,
): CommandHook[] {
  const seen = new Set<string>();
  return hooks.filter((h) => {
    if (!wanted(h) || !matchesAny(h.compiled, facingOf(r, ctx, h.dialect).matchNames)) return false;
    if (h.dialect !== 'claude') return true;
    const key = `${h.event}\0${h.command}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function clip(text: string): string {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
}

export { permissionRules } from './permissions';
export type { PermissionRules, PermissionRulesOptions, PermissionVerdict } from './permissions';
export type { PermissionRule, RuleKind } from './permission-rules';
export { policyRules, readPolicyTests } from './policy';
export type { PolicyCheckReport, PolicyExplanation, PolicyRules, PolicyRulesOptions, PolicyTest } from './policy';
export { codexRules } from './codex-rules';
export { geminiPolicy } from './gemini-policy';
export { openCodePermissions } from './opencode-permissions';
export { cedarPolicy, SLUICE_CEDAR_SCHEMA } from './cedar-policy';
export { dogwoodPolicy, type DogwoodPolicyOptions, type DogwoodScope } from './dogwood-policy';
export { shadowPolicy, type RecordedVerdict } from './policy-shadow';
export type { CedarPolicyOptions } from './cedar-policy';
export { PolicyFileError } from './policy-types';
export type { PolicyCall, PolicyDecision, PolicyFile, PolicyFormat, PolicyRuleRef, PolicySource } from './policy-types';
