// A batch's workflow id: made from its session id, turn and step, and read back into them. One
// module holds the format both ways, so the body's input can leave out what the id says
// (pipeline/stages.ts packCallRef) and a changed format cannot be read with the old one.

/** The workflow id of a session's batch at a turn and step: resubmitting it attaches to the same batch. */
export function batchWorkflowId(sessionId: string, turn: number, step: number): string {
  return `sluice-batch:${sessionId}:${turn}:${step}`;
}

/**
 * The session id, turn and step a batch's workflow id names; undefined for an id of another shape.
 * The turn and step are the id's last two parts, so a session id may hold the separator.
 */
export function batchOfWorkflowId(workflowId: string): { sessionId: string; turn: number; step: number } | undefined {
  const m = /^sluice-batch:(.+):(0|[1-9]\d{0,14}):(0|[1-9]\d{0,14})$/.exec(workflowId);
  return m ? { sessionId: m[1], turn: Number(m[2]), step: Number(m[3]) } : undefined;
}
