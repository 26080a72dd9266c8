// ToolFailure: what a tool body throws for an error result the model reads, with no retry (the
// execute stage and the built-in tools' `answering` turn it into that result, tools/errors.ts).
// Apart from the built-in tools, so that `sluice` gives it without loading them.

/** Marks a ToolFailure with a key every copy of Sluice shares (as ToolOutput's, define/config.ts). */
const TOOL_FAILURE_BRAND = Symbol.for('sluice.ToolFailure');

/** A failure a tool body detects and answers with: its error result (toolError in tools/errors.ts). */
export class ToolFailure extends Error {
  readonly [TOOL_FAILURE_BRAND] = true;
  /** `instanceof ToolFailure` holds for a ToolFailure thrown by any copy of Sluice. */
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class asked; a subclass keeps the ordinary check
    if (this !== ToolFailure) return Function.prototype[Symbol.hasInstance].call(this, value);
    return (
      value !== null &&
      typeof value === 'object' &&
      (value as { [TOOL_FAILURE_BRAND]?: unknown })[TOOL_FAILURE_BRAND] === true
    );
  }
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}
