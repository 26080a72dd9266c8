// The key of the MAC that names a harness call's batch (service.ts, callStep).
//
// Every `sluice hook` run is a process of its own, and a PermissionRequest must find the batch its
// PreToolUse started, so the key must be the same for every hook of one installation, yet unknown
// to the model whose calls are judged: a model that can compute steps can search for two calls,
// one harmless and one not, on the same 48-bit step. So the key is, in order:
// - derived from SLUICE_DIGEST_KEY, or from the first SLUICE_CODEC_KEYS key, when one is set (the
//   worker's secrets; the same derivation on every host that holds them);
// - else 32 random bytes kept in this user's config folder (`$XDG_CONFIG_HOME/sluice/hook-key`,
//   else `~/.config/sluice/hook-key`, mode 0600), made by the first hook that needs it.
// A key the hook cannot read or keep is a key of this process alone: each call is then a new batch,
// decided afresh (an ask asks again), which loses no decision's safety.
import { createHmac, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_DIGEST_KEY, digestKeyFromEnv } from '../../codec/args-digest';

const KEY_BYTES = 32;

/** Where the random key is kept when the environment holds no secret to derive it from. */
export function hookKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  const config = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(config, 'sluice', 'hook-key');
}

let cached: { env: NodeJS.ProcessEnv; key: Buffer } | undefined;

/** The key of callStep's MAC for this environment (see the file's opening comment). */
export function hookCallKey(env: NodeJS.ProcessEnv = process.env): Buffer {
  if (cached?.env === env) return cached.key;
  const digestKey = digestKeyFromEnv(env);
  const key =
    digestKey !== DEFAULT_DIGEST_KEY
      ? createHmac('sha256', digestKey).update('sluice hook call key v1').digest()
      : keptKey(hookKeyFile(env));
  cached = { env, key };
  return key;
}

/** The key in `file`, made there first if absent: written aside, then linked, so two hooks that race keep one. */
function keptKey(file: string): Buffer {
  try {
    return readKey(file);
  } catch {
    // Absent or unreadable: make one below.
  }
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const aside = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
    fs.writeFileSync(aside, randomBytes(KEY_BYTES).toString('base64'), { mode: 0o600 });
    try {
      fs.linkSync(aside, file);
    } catch {
      // Another hook linked its key first: that one is everybody's.
    } finally {
      fs.rmSync(aside, { force: true });
    }
    return readKey(file);
  } catch {
    return randomBytes(KEY_BYTES);
  }
}

function readKey(file: string): Buffer {
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length < KEY_BYTES) throw new Error(`${file} holds no key of ${KEY_BYTES} bytes`);
  return key;
}
