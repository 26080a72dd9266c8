// A scripted model on 127.0.0.1 for the real harness CLIs (test/harness-cli-*.test.ts): it speaks
// Anthropic Messages (Claude Code), OpenAI Responses (Codex) and Gemini's streamGenerateContent
// (Gemini CLI), each streamed as the real service streams it, so the real CLI parses it.
//
// The script is in the prompt: `RUN: <command>` asks the harness's shell tool to run <command>;
// several `RUN:` lines run their commands one after another, a tool call each, so one run of a
// harness (seconds of CPU to start) answers for several commands. After the last one the model
// runs it again when its result tells it to (Sluice's reason for an ask the hook gave up on says
// "run the same call again"), or when the prompt says `TIMES: <n>` (a model repeating itself);
// otherwise it ends with `FINISHED:` and the last result.
// `UNESCALATED`: Codex's command stays inside its sandbox (no approval asked).
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { asStream } from '../stream-provider';

/** How many times a conversation may call the tool: a model obeying "run it again" still stops. */
const MAX_CALLS = 6;

export interface FakeModel {
  base: string;
  /** Every request body, for a failing test's message. */
  log: { path: string; body: unknown }[];
  close(): Promise<void>;
}

/** What the model does next: call the shell with `command`, or end with `text`. */
type Turn = { command: string } | { text: string };

/** The script's next turn, from the prompt and the tool results so far. */
export function nextTurn(prompt: string, results: string[]): Turn {
  const commands = [...prompt.matchAll(/RUN: (.+)/g)].map((m) => m[1].trim());
  const command = commands.at(-1);
  if (!command) return { text: 'ok' };
  if (results.length < commands.length - 1) return { command: commands[results.length] };
  const times = Number(/TIMES: (\d+)/.exec(prompt)?.[1] ?? '1');
  const ofLast = results.length - (commands.length - 1);
  const last = results.at(-1);
  if (ofLast === 0) return { command };
  if (ofLast < Math.min(times, MAX_CALLS)) return { command };
  if (last && /run the same call again/i.test(last) && ofLast < MAX_CALLS) return { command };
  return { text: `FINISHED: ${last ?? ''}` };
}

export async function startFakeModel(): Promise<FakeModel> {
  const log: FakeModel['log'] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const url = req.url ?? '';
      let body: any = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        body = {};
      }
      log.push({ path: url, body });
      if (url.includes('count_tokens')) return json(res, { input_tokens: 10 });
      if (req.method === 'GET') return json(res, { data: [], models: [] });
      if (url.includes('/messages')) return anthropic(res, body);
      if (url.endsWith('/responses')) return responses(res, body);
      if (url.endsWith('/chat/completions')) return chat(res, body);
      if (url.includes(':streamGenerateContent') || url.includes(':generateContent'))
        return gemini(res, body, url.includes(':stream'));
      res.writeHead(404).end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

function json(res: http.ServerResponse, o: unknown) {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(o));
}

function sse(res: http.ServerResponse, text: string) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }).end(text);
}

/** A block's or a result's text, whatever its nesting (strings, text blocks, objects). */
function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(textOf).join('\n');
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.text === 'string') return o.text;
    return JSON.stringify(o);
  }
  return '';
}

let ids = 0;
const nextId = (prefix: string) => `${prefix}_${process.pid}_${++ids}`;

function anthropic(res: http.ServerResponse, body: any) {
  const messages: any[] = body.messages ?? [];
  const prompt = messages
    .filter((m) => m.role === 'user')
    .map((m) => textOf(Array.isArray(m.content) ? m.content.filter((b: any) => b.type === 'text') : m.content))
    .join('\n');
  const results = messages.flatMap((m) =>
    Array.isArray(m.content)
      ? m.content.filter((b: any) => b.type === 'tool_result').map((b: any) => textOf(b.content))
      : [],
  );
  const hasBash = (body.tools ?? []).some((t: any) => t.name === 'Bash');
  const turn = hasBash ? nextTurn(prompt, results) : { text: 'ok' };
  const content =
    'command' in turn
      ? [{ type: 'tool_use', id: nextId('toolu'), name: 'Bash', input: { command: turn.command } }]
      : [{ type: 'text', text: turn.text }];
  const payload = {
    id: nextId('msg'),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: 'command' in turn ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  };
  if (body.stream) return sse(res, asStream('/v1/messages', payload));
  return json(res, payload);
}

/**
 * Codex's shell tool and the arguments it takes, from the request's tool list. The command asks
 * to run outside Codex's sandbox (so Codex's approval policy asks about it), unless the prompt
 * says `UNESCALATED`.
 */
function codexShell(tools: any[], escalate: boolean): { name: string; args: (command: string) => object } | undefined {
  for (const t of tools) {
    const props = t.parameters?.properties ?? {};
    if (t.type !== 'function') continue;
    if (['exec_command', 'shell_command', 'shell'].includes(t.name)) {
      // Escalated: outside Codex's sandbox, so its approval policy asks (PermissionRequest).
      if ('cmd' in props)
        return {
          name: t.name,
          args: (c) =>
            escalate ? { cmd: c, sandbox_permissions: 'require_escalated', justification: `run ${c}` } : { cmd: c },
        };
      if (props.command?.type === 'array') return { name: t.name, args: (c) => ({ command: ['bash', '-lc', c] }) };
      return { name: t.name, args: (c) => ({ command: c }) };
    }
  }
  return undefined;
}

function responses(res: http.ServerResponse, body: any) {
  const input: any[] = Array.isArray(body.input) ? body.input : [];
  const prompt = input
    .filter((i) => i.role === 'user')
    .map((i) => textOf(i.content))
    .join('\n');
  const results = input
    .filter((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output')
    .map((i) => textOf(i.output));
  const shell = codexShell(body.tools ?? [], !prompt.includes('UNESCALATED'));
  const turn = shell ? nextTurn(prompt, results) : { text: 'ok' };
  const id = nextId('fc');
  const item =
    'command' in turn && shell
      ? {
          type: 'function_call',
          id,
          call_id: id,
          name: shell.name,
          arguments: JSON.stringify(shell.args(turn.command)),
          status: 'completed',
        }
      : {
          type: 'message',
          id: nextId('msg'),
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'text' in turn ? turn.text : '', annotations: [] }],
        };
  const payload = {
    id: nextId('resp'),
    object: 'response',
    created_at: 1,
    status: 'completed',
    model: body.model,
    output: [item],
    usage: {
      input_tokens: 10,
      output_tokens: 5,
      total_tokens: 15,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    },
  };
  return sse(res, asStream('/responses', payload));
}

/** OpenAI chat completions (OpenCode's custom provider): its `bash` tool, `{command, description}`. */
function chat(res: http.ServerResponse, body: any) {
  const messages: any[] = body.messages ?? [];
  const prompt = messages
    .filter((m) => m.role === 'user')
    // `opencode run` sends a message with blanks in it quoted, as a shell would show it.
    .map((m) => textOf(m.content).replace(/^"([^]*)"$/, '$1'))
    .join('\n');
  const results = messages.filter((m) => m.role === 'tool').map((m) => textOf(m.content));
  const hasBash = (body.tools ?? []).some((t: any) => t.function?.name === 'bash');
  const turn = hasBash ? nextTurn(prompt, results) : { text: 'ok' };
  const id = nextId('call');
  const message =
    'command' in turn
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id,
              type: 'function',
              function: { name: 'bash', arguments: JSON.stringify({ command: turn.command, description: 'run it' }) },
            },
          ],
        }
      : { role: 'assistant', content: turn.text };
  const payload = {
    id: nextId('chatcmpl'),
    object: 'chat.completion',
    created: 1,
    model: body.model,
    choices: [{ index: 0, message, finish_reason: 'command' in turn ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
  if (body.stream) return sse(res, asStream('/chat/completions', payload));
  return json(res, payload);
}

function gemini(res: http.ServerResponse, body: any, stream: boolean) {
  const contents: any[] = body.contents ?? [];
  const parts = (role: string) => contents.filter((c) => c.role === role).flatMap((c) => c.parts ?? []);
  const prompt = parts('user')
    .filter((p: any) => typeof p.text === 'string')
    .map((p: any) => p.text)
    .join('\n');
  const results = contents
    .flatMap((c) => c.parts ?? [])
    .filter((p: any) => p.functionResponse)
    .map((p: any) => textOf(p.functionResponse.response));
  const hasShell = JSON.stringify(body.tools ?? []).includes('run_shell_command');
  const turn = hasShell ? nextTurn(prompt, results) : { text: 'ok' };
  const part =
    'command' in turn
      ? { functionCall: { name: 'run_shell_command', args: { command: turn.command } } }
      : { text: turn.text };
  const payload = {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: body.model ?? 'gemini-2.5-pro',
  };
  if (!stream) return json(res, payload);
  return sse(res, `data: ${JSON.stringify(payload)}\r\n\r\n`);
}
