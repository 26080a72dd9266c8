// `sluice hook install opencode`: puts Sluice in OpenCode's path. OpenCode has no command hooks;
// its plugins (a .js or .ts file in .opencode/plugin/, or ~/.config/opencode/plugin/ for every
// project) get `tool.execute.before` before any tool runs, and a plugin that throws there stops the
// call: OpenCode runs nothing and hands the error's message to the model as the tool's result.
// The plugin written here sends each call to `sluice hook opencode` (command.ts, the same process
// the other harnesses run) and throws unless the answer is allow. docs/gateway.md has the steps.
//
// Fail closed: a deny, an ask nobody decided in time, a hook that exits otherwise than 0, prints
// no answer, or cannot be started at all each throw. Only `{"decision":"allow"}` lets a call run.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The file's name in a plugin folder. */
const PLUGIN_FILE = 'sluice.js';
/** The line that tells Sluice's plugin from a file of the same name written by someone else. */
export const PLUGIN_MARK = 'sluice-opencode-plugin v1';
/** How long an ask may wait for a person by default: OpenCode itself waits for a plugin without end. */
export const DEFAULT_OPENCODE_TIMEOUT_S = 600;

interface PluginOptions {
  /** `sluice hook opencode` and its options, as argv: the program first. */
  command: string[];
  /** The hook's `--timeout` in seconds: the plugin kills a hook that runs 30 s past it. */
  timeoutS: number;
}

/** The plugin's source: plain JavaScript with no imports but node's, as OpenCode's Bun loads it. */
function opencodePluginSource(o: PluginOptions): string {
  return `// Sluice decides every OpenCode tool call before it runs (${PLUGIN_MARK}).
// Written by \`sluice hook install opencode\`: run it again rather than editing this file.
// Each call goes to \`sluice hook opencode\`; only its allow lets the call run. A deny, an ask
// nobody decided in time, or a hook that fails throws here, and OpenCode then runs nothing and
// shows the model why.
import { spawn } from 'node:child_process';

const COMMAND = ${JSON.stringify(o.command)};
const WAIT_MS = ${(o.timeoutS + 30) * 1000};

function hook(payload) {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timer;
    let done = false;
    const finish = (code, extra) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ code, stdout, stderr: extra ?? stderr });
    };
    let child;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      return finish(-1, \`could not start \${COMMAND[0]}: \${err.message}\`);
    }
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(-1, \`sluice hook did not answer within \${WAIT_MS / 1000}s\`);
    }, WAIT_MS);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (err) => finish(-1, \`could not start \${COMMAND[0]}: \${err.message}\`));
    child.on('close', (code) => finish(code));
    child.stdin.on('error', () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

function call(event, input, args, directory) {
  return {
    hook_event_name: event,
    session_id: input.sessionID,
    tool_name: input.tool,
    tool_use_id: input.callID,
    tool_input: args && typeof args === 'object' ? args : {},
    cwd: directory,
  };
}

export const Sluice = async ({ directory }) => ({
  'tool.execute.before': async (input, output) => {
    const r = await hook(call('tool.execute.before', input, output.args, directory));
    let answer;
    try {
      answer = r.code === 0 ? JSON.parse(r.stdout) : undefined;
    } catch {
      answer = undefined;
    }
    if (answer && answer.decision === 'allow') return;
    const why = answer && typeof answer.reason === 'string' ? answer.reason : r.stderr.trim().replace(/^sluice hook: /, '');
    throw new Error(why || \`sluice hook exited \${r.code} without an answer: not allowed\`);
  },
  'tool.execute.after': async (input, output) => {
    const response = { output: output && typeof output.output === 'string' ? output.output : '' };
    if (output && output.metadata && typeof output.metadata.exit === 'number') response.exit = output.metadata.exit;
    const r = await hook({ ...call('tool.execute.after', input, input.args, directory), tool_response: response });
    if (r.code !== 0) console.error(r.stderr.trim() || \`sluice hook exited \${r.code}: the result was not recorded\`);
  },
});
`;
}

/** bin/sluice.js of this copy of Sluice, from the source folder or from dist/. */
export function sluiceBin(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const bin = path.join(dir, 'bin', 'sluice.js');
    if (fs.existsSync(bin)) return bin;
    if (path.dirname(dir) === dir) throw new Error(`bin/sluice.js was not found above ${from}`);
  }
}

/** Where the plugin goes: the project's .opencode/plugin/, or the person's own for every project. */
export function pluginPath(where: { project: string } | { global: true; home?: string }): string {
  if ('project' in where) return path.join(path.resolve(where.project), '.opencode', 'plugin', PLUGIN_FILE);
  const config = process.env.XDG_CONFIG_HOME || path.join(where.home ?? os.homedir(), '.config');
  return path.join(config, 'opencode', 'plugin', PLUGIN_FILE);
}

/**
 * Writes the plugin to `file` (its folder made if need be). A file of that name that is not
 * Sluice's is left alone: the error says where and what to do.
 */
export function writePlugin(file: string, o: PluginOptions): void {
  if (fs.existsSync(file) && !fs.readFileSync(file, 'utf8').includes(PLUGIN_MARK))
    throw new Error(
      `${file} exists and is not Sluice's plugin: move it aside (OpenCode loads every file in that folder), then run this again`,
    );
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, opencodePluginSource(o));
}
