// A scripted model: no key, no network, the same answer for the same (turn, step) on every
// attempt, so a session replays and resumes exactly. `npm start`, `sluice chat --script` and the
// tests use it.
import * as fs from 'node:fs';
import { contentText } from '../../pipeline/session';
import { type ModelAdapter, type ModelReply, ModelRefusedError, type ModelRequest } from '../models';

export interface ScriptStep {
  text?: string;
  calls?: { id?: string; name: string; args?: unknown }[];
}

/** `{turns: [{user?, steps: [{text?, calls?: [{id?, name, args?}]}]}]}`: step s of turn t answers step s of turn t. */
export interface ModelScript {
  turns: { user?: string; steps: ScriptStep[] }[];
}

export function scriptedModel(
  answer: (req: ModelRequest) => ScriptStep | Promise<ScriptStep>,
  id = 'script:inline',
): ModelAdapter {
  return {
    id,
    async step(req: ModelRequest): Promise<ModelReply> {
      const s = await answer(req);
      const calls = (s.calls ?? []).map((c, i) => ({
        id: c.id ?? `t${req.turn}s${req.step}c${i + 1}`,
        name: c.name,
        arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {}),
      }));
      const input = req.messages.reduce(
        (n, m) => n + (m.role === 'assistant' ? m.text.length : contentText(m.content).length),
        0,
      );
      const text = s.text ?? '';
      // Streamed word by word, as a provider would, so live followers see a scripted step too.
      for (const piece of text.match(/\s*\S+\s*/g) ?? []) req.onDelta?.({ kind: 'text', text: piece });
      return {
        text,
        calls,
        // A stand-in count (four characters a token), the same on every attempt.
        usage: {
          inputTokens: Math.ceil(input / 4),
          outputTokens: Math.ceil((text.length + JSON.stringify(calls).length) / 4),
        },
        finishReason: calls.length ? 'tool-calls' : 'stop',
      };
    },
  };
}

export function readModelScript(file: string): ModelScript {
  let script: ModelScript;
  try {
    script = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ModelRefusedError(
      `the model script ${file} is not readable JSON (${(err as NodeJS.ErrnoException).code ?? 'parse error'})`,
    );
  }
  if (!script || !Array.isArray(script.turns))
    throw new ModelRefusedError(`the model script ${file} must be {"turns": [{"user"?, "steps": [...]}]}`);
  return script;
}

/** A script file: read on each step, so an edited script takes effect for the steps still to come. */
export function scriptFileModel(file: string): ModelAdapter {
  return scriptedModel((req) => {
    const steps = readModelScript(file).turns[req.turn - 1]?.steps ?? [];
    return steps[req.step - 1] ?? { text: '(the script has nothing more for this turn)' };
  }, `script:${file}`);
}
