// `sluice hook <claude|codex|gemini|opencode>`: a harness's tool hook answered with a Sluice decision. It
// speaks its harness's protocol on stdin, stdout and the exit code, and reads its own options
// (client/hook/command.ts). bin/sluice.js loads only that module for it, not this CLI.
import { HOOK_HELP, hookMain } from '../client/hook/command';
import type { RawCommand } from './command';

export const hook: RawCommand = {
  name: 'hook',
  synopsis: 'hook <claude|codex|gemini|opencode>',
  summary: `Answer a harness's tool hook (stdin → stdout) with a Sluice decision;
\`hook serve\` for Claude Code http hooks, \`hook install opencode\` for OpenCode's plugin (docs/gateway.md)`,
  help: HOOK_HELP,
  raw: (argv) => hookMain(argv),
};
