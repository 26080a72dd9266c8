// `sluice hook doctor <claude|codex|gemini|opencode>`: reads a harness's settings and trust state and says
// plainly whether it will run the `sluice hook` lines, so a person does not believe Sluice guards a
// harness that silently ignores them (docs/gateway.md, "Will the harness run the hook?").
//
// It reads files only; it cannot see what a harness decides at run time. What it cannot check it
// says so: Codex keeps a hash of each reviewed hook that only Codex can compare.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import type { HarnessDialect } from './dialects';
import { PLUGIN_MARK } from './opencode-plugin';

export interface DoctorOptions {
  /** The project the harness runs in (default: the working folder). */
  project: string;
  /** The person's home folder (default: os.homedir()). */
  home: string;
  /** Codex's state folder (default: CODEX_HOME, then ~/.codex). */
  codexHome?: string;
  /** OpenCode's config folder (default: XDG_CONFIG_HOME/opencode, then ~/.config/opencode). */
  opencodeConfig?: string;
  /** The environment OpenCode will run in (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

/** One finding: `fail` means the hook will not run (or not for the deciding events). */
interface Finding {
  level: 'ok' | 'warn' | 'fail';
  text: string;
}

type Settings = { file: string; doc: Record<string, unknown> };

/** The findings for `dialect`; the hook runs as far as files can tell when none is `fail`. */
export function doctor(dialect: HarnessDialect, o: DoctorOptions): Finding[] {
  if (dialect === 'claude') return claudeFindings(o);
  if (dialect === 'codex') return codexFindings(o);
  if (dialect === 'opencode') return opencodeFindings(o);
  return geminiFindings(o);
}

/** The findings as the command prints them, and its exit code (1 when any is `fail`). */
export function renderFindings(dialect: HarnessDialect, findings: Finding[]): { text: string; exitCode: number } {
  const mark = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };
  const failed = findings.some((f) => f.level === 'fail');
  const verdict = failed
    ? `The ${NAMES[dialect]} hook will NOT run as set up: Sluice does not guard this harness until the FAIL lines are fixed.`
    : `As far as its files show, ${NAMES[dialect]} runs \`sluice hook ${dialect}\` before its tool calls.`;
  // OpenCode's plugin is the only way in; a run with --pure skips it, which no file shows.
  const pure =
    dialect === 'opencode' && !failed
      ? '\nA run with `opencode --pure` (or OPENCODE_PURE=1) loads no plugin: Sluice does not see its calls.'
      : '';
  return {
    text: `${findings.map((f) => `${mark[f.level]}  ${f.text}`).join('\n')}\n\n${verdict}${pure}\n`,
    exitCode: failed ? 1 : 0,
  };
}

const NAMES: Record<HarnessDialect, string> = {
  claude: 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini CLI',
  opencode: 'OpenCode',
};

function readJson(file: string): Settings | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    return doc && typeof doc === 'object' ? { file, doc } : undefined;
  } catch {
    return { file, doc: { __unreadable: true } };
  }
}

/** The events of `hooks` whose handlers run `sluice hook <dialect>` (or post to its http form). */
function sluiceEvents(s: Settings, dialect: HarnessDialect): string[] {
  const hooks = s.doc.hooks;
  if (!hooks || typeof hooks !== 'object') return [];
  const runsSluice = (h: Record<string, unknown>) =>
    (typeof h.command === 'string' &&
      new RegExp(`sluice(\\.js)?"?\\s+hook\\s+${dialect}\\b|https?://\\S+/${dialect}\\b`).test(h.command)) ||
    (typeof h.url === 'string' && h.url.endsWith(`/${dialect}`));
  return Object.entries(hooks as Record<string, unknown>)
    .filter(
      ([, groups]) =>
        Array.isArray(groups) &&
        groups.some((g) => Array.isArray(g?.hooks) && g.hooks.some((h: Record<string, unknown>) => runsSluice(h))),
    )
    .map(([event]) => event);
}

/** Where the hook lines are, and whether the deciding and recording events are all there. */
function hookLines(files: Settings[], dialect: HarnessDialect, decide: string[], record: string[]): Finding[] {
  const out: Finding[] = [];
  for (const s of files) {
    if (s.doc.__unreadable) out.push({ level: 'warn', text: `${s.file} is not valid JSON: the harness ignores it` });
  }
  const found = new Map<string, string[]>();
  for (const s of files) for (const e of sluiceEvents(s, dialect)) found.set(e, [...(found.get(e) ?? []), s.file]);
  for (const e of decide)
    out.push(
      found.has(e)
        ? { level: 'ok', text: `${e} runs sluice hook ${dialect} (${found.get(e)!.join(', ')})` }
        : e === decide[0]
          ? {
              level: 'fail',
              text: `no ${e} hook runs \`sluice hook ${dialect}\`: tool calls are not decided by Sluice`,
            }
          : {
              level: 'warn',
              text: `no ${e} hook runs \`sluice hook ${dialect}\`: the harness's own prompt answers it`,
            },
    );
  for (const e of record)
    if (!found.has(e))
      out.push({
        level: 'warn',
        text: `no ${e} hook: results are not recorded, and an identical call within 30 s of an approved one shares its decision`,
      });
  return out;
}

function claudeFindings(o: DoctorOptions): Finding[] {
  const user = readJson(path.join(o.home, '.claude', 'settings.json'));
  const project = [
    readJson(path.join(o.project, '.claude', 'settings.json')),
    readJson(path.join(o.project, '.claude', 'settings.local.json')),
  ].filter((s): s is Settings => !!s);
  const managed = readJson('/etc/claude-code/managed-settings.json');
  const all = [managed, user, ...project].filter((s): s is Settings => !!s);
  const out = hookLines(all, 'claude', ['PreToolUse', 'PermissionRequest'], ['PostToolUse', 'PostToolUseFailure']);
  for (const s of all)
    if (s.doc.disableAllHooks === true)
      out.push({ level: 'fail', text: `${s.file} sets disableAllHooks: Claude Code runs no hooks at all` });
  if (managed?.doc.allowManagedHooksOnly === true && !sluiceEvents(managed, 'claude').includes('PreToolUse'))
    out.push({ level: 'fail', text: `${managed.file} sets allowManagedHooksOnly: only its own hooks run` });
  if (project.some((s) => sluiceEvents(s, 'claude').length)) {
    const state = readJson(path.join(o.home, '.claude.json'));
    const projects = (state?.doc.projects ?? {}) as Record<string, { hasTrustDialogAccepted?: boolean }>;
    const trusted = projects[path.resolve(o.project)]?.hasTrustDialogAccepted === true;
    out.push(
      trusted
        ? { level: 'ok', text: `the project ${o.project} is trusted (~/.claude.json)` }
        : {
            level: 'warn',
            text: `the project ${o.project} has not been trusted in ~/.claude.json: interactive Claude Code asks first, and runs the project's hooks only once you accept (claude -p does not ask)`,
          },
    );
  }
  return out;
}

function readToml(file: string): Record<string, unknown> | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    return parseToml(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function codexFindings(o: DoctorOptions): Finding[] {
  const home = o.codexHome ?? path.join(o.home, '.codex');
  const user = readJson(path.join(home, 'hooks.json'));
  const project = readJson(path.join(o.project, '.codex', 'hooks.json'));
  const files = [user, project].filter((s): s is Settings => !!s);
  const out = hookLines(files, 'codex', ['PreToolUse', 'PermissionRequest'], ['PostToolUse']);
  const config = readToml(path.join(home, 'config.toml'));
  if (project && sluiceEvents(project, 'codex').length) {
    const projects = (config?.projects ?? {}) as Record<string, { trust_level?: string }>;
    const trusted = projects[path.resolve(o.project)]?.trust_level === 'trusted';
    out.push(
      trusted
        ? { level: 'ok', text: `the project ${o.project} is trusted (${path.join(home, 'config.toml')})` }
        : {
            level: 'fail',
            text: `the project ${o.project} is not trusted in ${path.join(home, 'config.toml')}: Codex loads no .codex/hooks.json of an untrusted project (trust it when Codex asks, or set [projects."${path.resolve(o.project)}"] trust_level = "trusted")`,
          },
    );
  }
  if (files.some((s) => sluiceEvents(s, 'codex').length)) {
    const reviewed = Object.keys(((config?.hooks as Record<string, unknown>)?.state ?? {}) as object).length;
    out.push({
      level: 'warn',
      text: `Codex runs a hook only after a person reviewed it (/hooks in codex, "Trust all and continue"), or with --dangerously-bypass-hook-trust; it keeps a hash per reviewed hook (${reviewed} in config.toml), which Sluice cannot compare with the current file. If codex says "Hooks need review", run /hooks`,
    });
  }
  return out;
}

function geminiFindings(o: DoctorOptions): Finding[] {
  const user = readJson(path.join(o.home, '.gemini', 'settings.json'));
  const project = readJson(path.join(o.project, '.gemini', 'settings.json'));
  const system = readJson('/etc/gemini-cli/settings.json');
  const all = [system, user, project].filter((s): s is Settings => !!s);
  const out = hookLines(all, 'gemini', ['BeforeTool'], ['AfterTool']);
  for (const s of all) {
    const cfg = s.doc.hooksConfig as { enabled?: unknown } | undefined;
    if (cfg?.enabled === false)
      out.push({ level: 'fail', text: `${s.file} sets hooksConfig.enabled false: Gemini CLI runs no hooks` });
  }
  if (project && sluiceEvents(project, 'gemini').length) {
    const folders = readJson(path.join(o.home, '.gemini', 'trustedFolders.json'))?.doc ?? {};
    const abs = path.resolve(o.project);
    const trusted = Object.entries(folders).some(
      ([dir, how]) =>
        (how === 'TRUST_FOLDER' && dir === abs) ||
        (how === 'TRUST_PARENT' && (abs === path.dirname(dir) || abs.startsWith(`${path.dirname(dir)}${path.sep}`))),
    );
    out.push(
      trusted || process.env.GEMINI_CLI_TRUST_WORKSPACE === 'true'
        ? { level: 'ok', text: `the folder ${o.project} is trusted` }
        : {
            level: 'fail',
            text: `the folder ${o.project} is not in ~/.gemini/trustedFolders.json: Gemini CLI ignores the project's .gemini/settings.json (hooks too) in an untrusted folder; trust it in gemini (/permissions), or put the hooks in ~/.gemini/settings.json`,
          },
    );
  }
  return out;
}

/** Defaults for the command line: this folder and this person's home. */
export function doctorDefaults(project?: string, home?: string): DoctorOptions {
  return {
    project: path.resolve(project ?? process.cwd()),
    home: home ?? os.homedir(),
    ...(process.env.CODEX_HOME ? { codexHome: process.env.CODEX_HOME } : {}),
  };
}

/**
 * OpenCode runs every .js / .ts file in a plugin folder (the project's .opencode/plugin(s)/, the
 * person's ~/.config/opencode/plugin(s)/): Sluice's is the one `sluice hook install opencode`
 * wrote, found by its mark, and it is only as good as the node and bin/sluice.js it names.
 */
function opencodeFindings(o: DoctorOptions): Finding[] {
  const env = o.env ?? process.env;
  const config = o.opencodeConfig ?? path.join(env.XDG_CONFIG_HOME || path.join(o.home, '.config'), 'opencode');
  const projectDirs = ['plugin', 'plugins'].map((d) => path.join(o.project, '.opencode', d));
  const userDirs = ['plugin', 'plugins'].map((d) => path.join(config, d));
  const noProject = !!env.OPENCODE_DISABLE_PROJECT_CONFIG && env.OPENCODE_DISABLE_PROJECT_CONFIG !== '0';
  const out: Finding[] = [];
  const found: string[] = [];
  for (const dir of [...projectDirs, ...userDirs]) {
    const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /\.(js|ts|mjs)$/.test(f)) : [];
    for (const f of files) {
      const file = path.join(dir, f);
      const text = fs.readFileSync(file, 'utf8');
      if (!text.includes(PLUGIN_MARK)) continue;
      if (noProject && projectDirs.includes(dir)) {
        out.push({
          level: 'fail',
          text: `${file} is in the project, and OPENCODE_DISABLE_PROJECT_CONFIG is set: OpenCode does not load it`,
        });
        continue;
      }
      found.push(file);
      out.push(...pluginCommand(file, text));
    }
  }
  if (!found.length && !out.length)
    out.push({
      level: 'fail',
      text: `no Sluice plugin in ${[...projectDirs, ...userDirs].join(', ')}: OpenCode's tool calls are not decided by Sluice; run \`npx sluice hook install opencode\` in the project (or with --global)`,
    });
  if (env.OPENCODE_PURE && env.OPENCODE_PURE !== '0')
    out.push({ level: 'fail', text: "OPENCODE_PURE is set: OpenCode loads no plugin, Sluice's neither" });
  return out;
}

/** Whether the plugin's command (node, bin/sluice.js) is still where it was written. */
function pluginCommand(file: string, text: string): Finding[] {
  let command: unknown;
  try {
    command = JSON.parse(/^const COMMAND = (.*);$/m.exec(text)?.[1] ?? 'null');
  } catch {
    command = null;
  }
  if (!Array.isArray(command) || command.length < 2)
    return [
      { level: 'fail', text: `${file} has no command Sluice can read: run \`npx sluice hook install opencode\` again` },
    ];
  const missing = (command.slice(0, 2) as string[]).filter((p) => !fs.existsSync(p));
  if (missing.length)
    return [
      {
        level: 'fail',
        text: `${file} runs ${missing.join(' and ')}, which is not there (moved, or another node): every tool call is refused; run \`npx sluice hook install opencode\` again`,
      },
    ];
  return [{ level: 'ok', text: `tool.execute.before runs sluice hook opencode (${file})` }];
}
