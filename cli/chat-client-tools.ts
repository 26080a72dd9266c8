// `sluice chat --client-tools FILE`: this terminal is the session's client. The file is a config
// module (the worker's own will do); the chat serves the bodies of its `runsOn: 'client'` tools
// here, with a key it makes when it starts the session and keeps in the state folder, so that
// `sluice chat --resume` from the same folder serves them again after a crash.
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type ClientKey,
  type ClientToolServer,
  createClientKey,
  loadClientKey,
  saveClientKey,
  serveClientTools,
} from '../client/client-tools';
import type { SessionHandle } from '../client/session';
import { dataConverterFromEnv } from '../codec/payload';
import type { ToolDefinition } from '../define/config';
import { UsageError } from '../support/errors';
import { loadConfig } from '../worker/load-config';

interface ChatClientTools {
  key: ClientKey;
  tools: ToolDefinition[];
  serve(session: SessionHandle): Promise<ClientToolServer>;
}

/** Where a session's client key is kept: `<state folder>/client-keys/<session>.json`, readable by this user only. */
function clientKeyFile(stateDir: string, sessionId: string): string {
  return path.join(stateDir, 'client-keys', `${encodeURIComponent(sessionId)}.json`);
}

/**
 * The client tools of `file`, and the session's key: a new one for a session this chat starts
 * (saved before the session starts), the saved one for a session it resumes or attaches to.
 */
export async function chatClientTools(
  file: string,
  stateDir: string,
  sessionId: string,
  starting: boolean,
): Promise<ChatClientTools> {
  let tools: ToolDefinition[];
  try {
    tools = (await loadConfig(file)).tools.filter((t) => t.runsOn === 'client');
  } catch (err) {
    throw new UsageError(`--client-tools ${file}: ${(err as Error).message}`);
  }
  if (!tools.length)
    throw new UsageError(
      `--client-tools ${file} defines no client tools: mark the tools whose bodies run here with runsOn: 'client'`,
    );
  const keyFile = clientKeyFile(stateDir, sessionId);
  let key: ClientKey;
  // A session this chat "starts" may run already (it is attached to): its saved key stays.
  if (starting && !fs.existsSync(keyFile)) {
    key = createClientKey();
    saveClientKey(keyFile, key);
  } else {
    try {
      key = loadClientKey(keyFile);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const dataConverter = dataConverterFromEnv();
  return {
    key,
    tools,
    serve: (session) => serveClientTools(session, { tools, key, ...(dataConverter ? { dataConverter } : {}) }),
  };
}
