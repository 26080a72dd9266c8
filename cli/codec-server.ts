// `sluice codec-server`: decrypts payloads for the Temporal Web UI (client/codec-server.ts).
import { runCodecServer } from '../client/codec-server';
import { defineCommand } from './command';

export const codecServer = defineCommand({
  name: 'codec-server',
  synopsis: 'codec-server',
  summary: 'Decrypt payloads for the Temporal Web UI (--port, --ui-origin; needs SLUICE_CODEC_KEYS)',
  flags: { port: { type: 'string' }, 'ui-origin': { type: 'string', multiple: true } },
  help: `Usage: npx sluice codec-server [options]

A codec server for the Temporal Web UI: it decrypts the payloads Sluice encrypts, with the keys
of SLUICE_CODEC_KEYS, for the browser origins named.

Options:
  --port N                Port to listen on
  --ui-origin URL         A Web UI origin allowed to call it (repeat for more)`,
  run: ({ values: v, out }) => runCodecServer({ port: v.port, origins: v['ui-origin'] }, out),
});
