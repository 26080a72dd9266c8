// sluice/browser: a session in a web page. Start from connectSession: the session's events as
// they are written, the model's text per step (a retried step's shown once), its state, a message
// or an interrupt sent to it, and its pending approvals decided from the page. Built for browsers
// (scripts/build-browser.ts bundles it, free of Node's modules); the inbox's session page is its
// first user. docs/browser.md has a whole page to copy.
export type { EventPayloads, EventType, TypedEvent } from '../pipeline/events';
export { isEvent } from '../pipeline/events';
export type { LiveDelta, LiveDropped, LiveEvent, LiveVoid } from '../pipeline/live';
export type { ApprovalOutcome, ArgumentPin, Card, PendingApproval, SessionEvent } from '../pipeline/types';
export {
  type BrowserClientKey,
  type ClientToolBody,
  type ClientToolContext,
  forgetClientKey,
  openClientKey,
} from './client-tools';
export { LiveText, type StepPiece, type StepText } from './live-text';
export {
  type ApprovalSnapshot,
  type ConnectionState,
  type ConnectOptions,
  connectSession,
  type DecideOptions,
  type DecisionAnswer,
  type SendAnswer,
  type SessionClient,
  type SessionClientEvent,
  type SessionClientEvents,
  type SessionStateAnswer,
} from './session';
