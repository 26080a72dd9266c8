// `sluice gateway`: an MCP server whose tool calls run as Sluice batches (client/gateway.ts). Its
// stdout is the protocol's (stdio), so it prints nothing else there, and it reads its own options.
import { GATEWAY_HELP, gatewayMain } from '../client/gateway';
import type { RawCommand } from './command';

export const gateway: RawCommand = {
  name: 'gateway',
  synopsis: 'gateway',
  summary: 'An MCP server (stdio, or --http) whose tool calls run as Sluice batches',
  help: GATEWAY_HELP,
  raw: (argv) => gatewayMain(argv),
};
