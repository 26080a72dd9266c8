// todo_write: the model's plan for the session, replaced whole on each call. The list is
// recorded as a `todo/write` event inside the body (so it stands even if post-execute later
// blocks the result) and kept in session state, so later batches and restarts see it.
import { z } from 'zod';
import type { Json } from '../pipeline/types';
import { defineTool, toolOutput, type ToolDefinition } from '../define/config';
import { answering, ToolErrorCodes, ToolFailure } from './errors';

export const TODO_STATE_NAMESPACE = 'todo';
export const TODO_STATE_KEY = 'list';

const status = z.enum(['pending', 'in_progress', 'completed']);
const input = z.strictObject({
  todos: z
    .array(
      z.strictObject({
        content: z.string().describe('What to do, in the imperative ("Run the tests")'),
        status,
        activeForm: z
          .string()
          .optional()
          .describe('The same in the present continuous, shown while it is in progress ("Running the tests")'),
      }),
    )
    .describe('The complete list; it replaces the previous one'),
});

export interface Todo {
  content: string;
  status: z.infer<typeof status>;
  activeForm?: string;
}

/** The list as it will be recorded, or a failure naming the first item to fix. */
export function validateTodos(todos: readonly Todo[]): Todo[] {
  const seen = new Map<string, number>();
  const list = todos.map((t, i) => {
    const content = t.content.trim();
    if (!content)
      throw new ToolFailure(
        `todos[${i}] has empty content; give every item a short description, or leave it out.`,
        ToolErrorCodes.INVALID_ARGS,
      );
    const first = seen.get(content);
    if (first !== undefined)
      throw new ToolFailure(
        `todos[${i}] repeats todos[${first}] (${JSON.stringify(content)}); each item must be unique. Merge them or word them apart.`,
        ToolErrorCodes.INVALID_ARGS,
      );
    seen.set(content, i);
    const activeForm = t.activeForm?.trim();
    return { content, status: t.status, ...(activeForm ? { activeForm } : {}) };
  });
  const active = list.flatMap((t, i) => (t.status === 'in_progress' ? [i] : []));
  if (active.length > 1) {
    throw new ToolFailure(
      `${active.length} items are in_progress (todos[${active.join('], todos[')}]); at most one may be. Keep one in_progress and set the others to pending or completed.`,
      ToolErrorCodes.INVALID_ARGS,
    );
  }
  return list;
}

const MARK = { completed: '[x]', in_progress: '[~]', pending: '[ ]' } as const;

export function todoWriteTool(): ToolDefinition<z.infer<typeof input>> {
  return defineTool({
    name: 'todo_write',
    aliases: ['TodoWrite'],
    description:
      'Replaces your todo list for this session: the complete list each time, every item unique, at most one in_progress. ' +
      'Use it to plan multi-step work and to show progress; mark an item completed as soon as it is done.',
    input,
    presentCall: (a) => ({ title: 'Update todos', summary: `${a.todos.length} item(s)` }),
    execute: (args, ctx) =>
      answering(async () => {
        const todos = validateTodos(args.todos);
        const recorded = todos as unknown as Json[];
        ctx.emit('todo/write', { todos: recorded });
        ctx.setState(TODO_STATE_NAMESPACE, TODO_STATE_KEY, recorded);
        const done = todos.filter((t) => t.status === 'completed').length;
        const lines = todos.map(
          (t) => `${MARK[t.status]} ${t.status === 'in_progress' && t.activeForm ? t.activeForm : t.content}`,
        );
        const head = todos.length ? `Todo list updated: ${done} of ${todos.length} completed.` : 'Todo list cleared.';
        return toolOutput({
          content: [{ type: 'text', text: [head, ...lines].join('\n') }],
          value: { todos: recorded },
        });
      }),
  });
}
