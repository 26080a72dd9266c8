// `sluice events <sessionId>`: a session's events, from the workers' store or the server.
import { NotFoundError, UsageError } from '../support/errors';
import { clip } from '../client/render';
import { followSessionEvents, type LiveEvent } from '../client/session-events';
import { isEvent } from '../pipeline/events';
import type { SessionEvent } from '../pipeline/types';
import { defineCommand, type Values } from './command';
import { client, CONNECTION_FLAGS, CONNECTION_OPTIONS, STORE_FLAGS, STORE_OPTIONS, withStores } from './shared';

const EVENTS_FLAGS = {
  json: { type: 'boolean' },
  follow: { type: 'boolean' },
  ...STORE_FLAGS,
  ...CONNECTION_FLAGS,
} as const;

export const eventsCommand = defineCommand({
  name: 'events',
  synopsis: 'events <sessionId>',
  summary: "Print a session's events (--json, --follow)",
  flags: EVENTS_FLAGS,
  help: `Usage: npx sluice events <sessionId> [options]

Prints a session's events, one a line: from the workers' session store, else from the results of
the session's finished batches on the server.

Options:
  --json                  One JSON event a line
  --follow                Go on printing events as the workers write them (and the model's answer
                          as it streams) until the session ends, or Ctrl-C
${STORE_OPTIONS}
${CONNECTION_OPTIONS}`,
  run: ({ values, positionals: [id], out }) => events(values, id, out),
});

async function events(
  v: Values<typeof EVENTS_FLAGS>,
  sessionId: string | undefined,
  out: (s: string) => void,
): Promise<number> {
  if (!sessionId) throw new UsageError('events needs a session id');
  const print = (e: SessionEvent) =>
    out(v.json ? JSON.stringify(e) : `${String(e.seq).padStart(5)} ${e.time} ${e.type.padEnd(22)} ${summarize(e)}`);
  return withStores(v, async (stores) => {
    let list: SessionEvent[];
    if (await stores.hasSession(sessionId)) {
      list = await stores.events(sessionId);
    } else {
      const { sluice, close } = await client(v);
      try {
        list = await sluice.sessionEvents(sessionId);
      } finally {
        await close();
      }
      if (list.length === 0 && !v.follow)
        throw new NotFoundError(
          `no events for session ${sessionId}: none in the session store (${stores.kind}: ${stores.where}) and no finished batch on the server`,
        );
    }
    list.forEach(print);
    const conflicts = await stores.conflicts(sessionId);
    if (!v.json && conflicts.count)
      out(
        `warning: some batch numbered ${conflicts.count} event(s) over seqs this log already held; they are kept in ${conflicts.where} with their batch`,
      );
    if (v.follow) {
      // Live: each event as the workers write it, until the session ends (a batch's session,
      // which records no session/ended: until Ctrl-C).
      if (list.some((e) => e.type === 'session/ended')) return 0;
      const from = list.length ? list[list.length - 1].seq + 1 : 0;
      // The model's answer streams in between, piece by piece (live/delta, live/void, live/dropped):
      // previews of the step that its model/message then records whole.
      for await (const e of followSessionEvents(stores, sessionId, { fromSeq: from, live: true })) {
        if (!('seq' in e)) {
          out(v.json ? JSON.stringify(e) : `${'~'.padStart(5)} ${e.type.padEnd(22 + 25)} ${summarizeLive(e)}`);
          continue;
        }
        print(e);
        if (e.type === 'session/ended') break;
      }
    }
    return 0;
  });
}

function summarizeLive(e: LiveEvent): string {
  const at = `turn ${e.turn} step ${e.step} attempt ${e.attempt}`;
  if (e.type === 'live/delta')
    return `${at} ${e.kind}${e.call ? ` #${e.call.index}${e.call.name ? ` ${clip(e.call.name, 80)}` : ''}` : ''} ${JSON.stringify(clip(e.text, 200))}`;
  return `${at}: ${clip(e.reason, 200)}`;
}

function summarize(e: SessionEvent): string {
  // One line per event: clip() collapses newlines, so no field can forge an event line. Every
  // field goes through it whatever its declared type: a log file can hold anything.
  const f = (v: unknown, n = 200) => clip(String(v), n);
  if (isEvent(e, 'tool/call')) return `${f(e.data.callId)} ${f(e.data.name)} ${clip(String(e.data.arguments), 120)}`;
  if (isEvent(e, 'tool/result'))
    return `${f(e.data.callId)} ${e.data.isError ? 'error' : 'ok'}: ${clip(JSON.stringify(e.data.content), 120)}`;
  if (isEvent(e, 'approval/asked'))
    return `${f(e.data.id)} for ${f(e.data.callId)}${e.data.reason ? `: ${f(e.data.reason)}` : ''}`;
  if (isEvent(e, 'approval/decided')) {
    const d = e.data;
    return `${f(d.id)} ${f(d.outcome)}${d.by ? ` by ${f(d.by)}` : ''}${d.reason ? `: ${f(d.reason)}` : ''}`;
  }
  const d = e.data as Record<string, unknown>;
  if (e.type === 'session/user') return `you: ${f(d.content, 160)}`;
  if (e.type === 'model/message') {
    const calls = Array.isArray(d.toolCalls) ? d.toolCalls.map((c) => f((c as { name?: unknown }).name, 60)) : [];
    return `${d.text ? f(d.text, 160) : ''}${calls.length ? ` [calls ${calls.join(', ')}]` : ''}`;
  }
  if (e.type === 'session/turn-ended')
    return `turn ${f(d.turn)} ${f(d.reason)} after ${f(d.steps)} step(s)${d.error ? `: ${f(d.error)}` : ''}`;
  if (isEvent(e, 'approval/refused')) {
    const d = e.data;
    return `${f(d.id)} ${f(d.decision)}${d.by ? ` by ${f(d.by)}` : ''} refused (${f(d.code)}, via ${f(d.via)}): ${f(d.problem)}`;
  }
  return clip(JSON.stringify(e.data), 160);
}
