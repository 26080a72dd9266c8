// `sluice chat`: talk to a durable agent session from a terminal (client/chat.ts runs the talk).
import * as path from 'node:path';
import { LineInput, newChatSessionId, runChat, scriptMessages } from '../client/chat';
import { type SessionRequest, sessionHandle } from '../client/session';
import { chatClientTools } from './chat-client-tools';
import { UsageError } from '../support/errors';
import { readModelScript } from '../agent/adapters/scripted';
import { DEFAULT_STATE_DIR } from '../stores/session-log-path';
import { defineCommand } from './command';
import { client, CONNECTION_FLAGS, CONNECTION_OPTIONS, decider, positiveInt, STORE_FLAGS, withStores } from './shared';

export const chat = defineCommand({
  name: 'chat',
  synopsis: 'chat',
  summary: `Talk to a durable agent session: --script FILE (no key, no network) or
--model provider:model; --resume ID picks a session up after a crash`,
  flags: {
    script: { type: 'string' },
    play: { type: 'boolean' },
    model: { type: 'string' },
    session: { type: 'string' },
    resume: { type: 'string' },
    system: { type: 'string' },
    'max-turns': { type: 'string' },
    'token-budget': { type: 'string' },
    'approval-timeout': { type: 'string' },
    by: { type: 'string' },
    'client-tools': { type: 'string' },
    ...STORE_FLAGS,
    ...CONNECTION_FLAGS,
  },
  help: `Usage: npx sluice chat [--script FILE | --model PROVIDER:MODEL] [options]
       npx sluice chat --resume SESSION [options]

Runs an agent session (the whole loop on Temporal: a worker must run, e.g. \`npx sluice dev\`)
and talks to it here: each line you type is a user message; the model's text, tool cards and
results are shown as the worker records them; approvals are asked y/n. This terminal holds
nothing: kill it (or the worker, or both) and \`npx sluice chat --resume SESSION\` picks the
session up, a running turn watched to its end, an open approval asked again.

  /quit leaves (the session waits for you), /end ends the session.

Options:
  --script FILE           A scripted model: {"turns": [{"user"?, "steps": [{"text"?, "calls"?: [{"id"?,
                          "name", "args"}]}]}]}; step s of turn t answers step s of turn t
  --play                  With --script: send the script's "user" messages instead of reading them
  --model P:M             openai:<model>, openai-responses:<model>, anthropic:<model>, or a model
                          name from the worker's config (keys come from the worker's environment)
  --session ID            Id of a new session (default chat-<date and time>)
  --resume ID             Pick up session ID: show its current turn, answer its open approvals
  --system TEXT           System prompt of a new session
  --max-turns N           End the session after N turns
  --token-budget N        End the session once N tokens (input + output) were used
  --approval-timeout S    Deny an unanswered approval after S seconds (default 600)
  --by NAME               Who approves (default: SLUICE_APPROVER, then USER)
  --client-tools FILE     Run the bodies of FILE's client tools (runsOn: 'client'; FILE is a config
                          module, the worker's own will do) here: this chat is the session's client.
                          Its key is kept in the state folder, for --resume from the same folder
  --state-dir DIR         The worker's state folder, where the session log is (default ${DEFAULT_STATE_DIR})
  --database-url URL      The workers' database instead, where the session log is (default: SLUICE_DATABASE_URL)
${CONNECTION_OPTIONS}

Exit codes: 0 the session ended or you left it (it waits), 1 it could not start or resume, 2 usage.`,
  async run({ values: v, out, stream }) {
    const sources = [v.script, v.model, v.resume].filter((x) => x !== undefined).length;
    if (sources !== 1)
      throw new UsageError(
        'chat needs one of --script FILE (a scripted model: no key, no network), --model PROVIDER:MODEL, or --resume SESSION',
      );
    if (v.play && !v.script) throw new UsageError("--play sends a script's user messages: it needs --script FILE");
    let model: string | undefined;
    if (v.script) {
      const file = path.resolve(v.script);
      try {
        readModelScript(file);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      model = `script:${file}`;
    } else if (v.model) {
      if (!/^[\w.-]+(:.+)?$/.test(v.model))
        throw new UsageError(
          `--model takes provider:model (openai:gpt-4.1, anthropic:claude-sonnet-4-5) or a config model name, not ${JSON.stringify(v.model)}`,
        );
      model = v.model;
    }
    const approvalTimeout = positiveInt(v['approval-timeout'], '--approval-timeout');
    const maxTurns = positiveInt(v['max-turns'], '--max-turns');
    const tokenBudget = positiveInt(v['token-budget'], '--token-budget');
    const request: SessionRequest | undefined = model
      ? {
          sessionId: v.session ?? newChatSessionId(),
          model,
          ...(v.system ? { system: v.system } : {}),
          ...(maxTurns ? { maxTurns } : {}),
          ...(tokenBudget ? { tokenBudget } : {}),
          batch: { approvalTimeoutMs: (approvalTimeout ?? 600) * 1000 },
        }
      : undefined;
    const sessionId = request?.sessionId ?? v.resume!;
    const clientTools = v['client-tools']
      ? await chatClientTools(v['client-tools'], v['state-dir'] ?? DEFAULT_STATE_DIR, sessionId, !!request)
      : undefined;
    if (request && clientTools) request.batch = { ...request.batch, client: clientTools.key.binding };
    const { sluice, close } = await client(v);
    const input = new LineInput(process.stdin);
    const served = await clientTools?.serve(sessionHandle(sluice, sessionId));
    try {
      if (clientTools) out(`Client tools served here: ${clientTools.tools.map((t) => t.name).join(', ')}.`);
      if (request)
        out(
          `Session ${sessionId} (${v.script ? `script ${v.script}` : request.model}). Type a message; /quit leaves it waiting, /end ends it.`,
        );
      await withStores(v, (stores) =>
        runChat({
          client: sluice,
          sessionId,
          ...(request ? { start: request } : {}),
          events: stores,
          eventsWhere: `${stores.kind === 'files' ? 'the state folder' : 'the database'} ${stores.where}`,
          input,
          out,
          ...(stream ? { write: stream } : {}),
          approver: decider(v, 'terminal'),
          ...(v.play && v.script ? { messages: scriptMessages(path.resolve(v.script)) } : {}),
        }),
      );
      return 0;
    } finally {
      await served?.stop();
      input.close();
      await close();
    }
  },
});
