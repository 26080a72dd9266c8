// Message converters for people who keep their own agent loop.
export * from './openai';
export * from './anthropic';
export * from './ai-sdk';
export {
  intakeCalls,
  mergeToolMessages,
  type CallIntake,
  type AgentMessage,
  type ToolMessage,
} from '../../pipeline/session';
