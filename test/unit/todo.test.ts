// todo_write called directly: validation, the recorded event and the session state.
import { describe, expect, it } from 'vitest';
import { todoWriteTool } from '../../tools';
import { checkToolArgs } from '../../define/tool-schema';
import { call, session } from '../tool-context';

const tools = [todoWriteTool()];

describe('todo_write', () => {
  it('trims items, records todo/write and keeps the list in session state', async () => {
    const s = session();
    const r = await call(
      tools,
      'todo_write',
      {
        todos: [
          { content: '  Write tests ', status: 'completed' },
          { content: 'Fix bug', status: 'in_progress', activeForm: 'Fixing bug' },
          { content: 'Ship', status: 'pending', activeForm: '  ' },
        ],
      },
      s,
    );
    expect(r.isError).toBe(false);
    expect(r.text).toBe('Todo list updated: 1 of 3 completed.\n[x] Write tests\n[~] Fixing bug\n[ ] Ship');
    const todos = [
      { content: 'Write tests', status: 'completed' },
      { content: 'Fix bug', status: 'in_progress', activeForm: 'Fixing bug' },
      { content: 'Ship', status: 'pending' },
    ];
    expect(s.events).toEqual([{ type: 'todo/write', data: { todos } }]);
    expect(s.state.todo).toEqual({ list: todos });
  });

  it('accepts an empty list, which clears it', async () => {
    const s = session();
    expect((await call(tools, 'todo_write', { todos: [] }, s)).text).toBe('Todo list cleared.');
    expect(s.state.todo).toEqual({ list: [] });
  });

  it('rejects empty, duplicate (after trimming) and several in_progress items, recording nothing', async () => {
    const s = session();
    const empty = await call(
      tools,
      'todo_write',
      {
        todos: [
          { content: 'a', status: 'pending' },
          { content: '   ', status: 'pending' },
        ],
      },
      s,
    );
    expect(empty).toMatchObject({ isError: true, code: 'INVALID_ARGS' });
    expect(empty.text).toContain('todos[1] has empty content');
    const dup = await call(
      tools,
      'todo_write',
      {
        todos: [
          { content: 'a', status: 'pending' },
          { content: ' a', status: 'completed' },
        ],
      },
      s,
    );
    expect(dup).toMatchObject({ isError: true, code: 'INVALID_ARGS' });
    expect(dup.text).toContain('todos[1] repeats todos[0]');
    const two = await call(
      tools,
      'todo_write',
      {
        todos: [
          { content: 'a', status: 'in_progress' },
          { content: 'b', status: 'in_progress' },
        ],
      },
      s,
    );
    expect(two).toMatchObject({ isError: true, code: 'INVALID_ARGS' });
    expect(two.text).toContain('at most one may be');
    expect(s.events).toEqual([]);
    expect(s.state).toEqual({});
  });

  it('answers to TodoWrite and refuses unknown fields and statuses in its schema', () => {
    const t = todoWriteTool();
    expect(t.aliases).toEqual(['TodoWrite']);
    expect(checkToolArgs(t, { todos: [{ content: 'a', status: 'done' }] }).ok).toBe(false);
    expect(checkToolArgs(t, { todos: [{ content: 'a', status: 'pending', priority: 'high' }] }).ok).toBe(false);
  });
});
