// glob: lists the files (and folders, shown with a trailing `/`) whose paths match a pattern,
// leaving out what .gitignore ignores. With `*` it lists a folder.
import * as path from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import { defineTool, toolOutput, type ToolDefinition } from '../../define/config';
import { answering, ToolErrorCodes, ToolFailure } from '../errors';
import { refusedByReadRule, searchStart, walk } from './walk';
import { resolveInWorkspace, type Workspace } from './workspace';

export interface SearchLimits {
  /** Matches (glob) or output lines (grep) shown before the rest is summarized in a note. */
  maxResults: number;
  /** A walk stops after visiting this many entries. */
  maxEntries: number;
}

export const SEARCH_DEFAULTS: SearchLimits = { maxResults: 200, maxEntries: 100_000 };

const input = z.strictObject({
  pattern: z.string().min(1).describe('A glob relative to path, e.g. "**/*.ts", "src/*", or "*" to list a folder'),
  path: z.string().min(1).optional().describe('The folder to search in (default: the workspace root)'),
});

export function globTool(
  workspace: () => Promise<Workspace>,
  limits: SearchLimits,
): ToolDefinition<z.infer<typeof input>> {
  return defineTool({
    name: 'glob',
    aliases: ['Glob'],
    description:
      'Finds files in the workspace by glob pattern (`*`, `**`, `?`, `[abc]`, `{a,b}`), relative to path (default: the root), ' +
      'and lists matching folders with a trailing `/`; use "*" to list a folder. Files ignored by .gitignore and the .git folder are left out. ' +
      `Paths come back relative to the workspace root, sorted, at most ${limits.maxResults}.`,
    input,
    isConcurrencySafe: () => true,
    presentCall: (a) => ({ title: `Glob ${a.pattern}`, ...(a.path ? { summary: `in ${a.path}` } : {}) }),
    execute: (args, _ctx) =>
      answering(async () => {
        const ws = await workspace();
        const base = await resolveInWorkspace(ws, args.path ?? '.');
        if ((await searchStart(base)) === 'file')
          throw new ToolFailure(
            `${base.rel} is a file; glob's path must be a folder. Use read to see the file.`,
            ToolErrorCodes.FS_NOT_A_FILE,
          );
        const { pattern, fromRoot } = relativePattern(args.pattern, ws);
        const matches = picomatch(pattern, { dot: true });
        const found: string[] = [];
        // Files a permission rule keeps from being read are not listed either (their names can
        // say as much as their contents: `secrets/prod-db-password-hunter2.txt`).
        const skippedByRule = new Map<string, number>();
        const w = walk(ws, base, limits.maxEntries);
        for await (const e of w.entries) {
          const under = fromRoot || base.rel === '.' ? e.rel : e.rel.slice(base.rel.length + 1);
          if (!matches(under)) continue;
          const rule = refusedByReadRule(ws, e);
          if (rule) skippedByRule.set(rule, (skippedByRule.get(rule) ?? 0) + 1);
          else found.push(e.isDir ? `${e.rel}/` : e.rel);
        }
        const ruleNotes = [...skippedByRule].map(
          ([rule, n]) => `[${n} match(es) not listed: the permission rule ${rule} covers reading them.]`,
        );
        if (found.length === 0 && !w.stoppedEarly) {
          return toolOutput({
            content: [
              {
                type: 'text',
                text: [`No files match ${JSON.stringify(args.pattern)} under ${base.rel}.`, ...ruleNotes].join('\n'),
              },
            ],
            meta: { matches: 0 },
          });
        }
        const shown = found.slice(0, limits.maxResults);
        const notes: string[] = [...ruleNotes];
        if (found.length > shown.length)
          notes.push(`[${found.length - shown.length} more matches not shown; narrow the pattern or the path.]`);
        if (w.stoppedEarly)
          notes.push(
            `[The search stopped after ${limits.maxEntries} entries, so matches may be missing; narrow the path.]`,
          );
        return toolOutput({
          content: [{ type: 'text', text: [...shown, ...notes].join('\n') }],
          meta: { matches: found.length, truncated: notes.length > ruleNotes.length },
        });
      }),
  });
}

/** Patterns are relative to path; an absolute one is accepted when it lies inside the root, and is then relative to the root. */
function relativePattern(pattern: string, ws: Workspace): { pattern: string; fromRoot: boolean } {
  if (pattern.split('/').includes('..'))
    throw new ToolFailure(
      `the pattern ${JSON.stringify(pattern)} contains '..'; patterns are relative to path, which must be inside the workspace.`,
      ToolErrorCodes.FS_OUTSIDE_WORKSPACE,
    );
  if (!path.isAbsolute(pattern)) return { pattern, fromRoot: false };
  for (const base of [ws.root, ws.realRoot])
    if (pattern.startsWith(`${base}/`)) return { pattern: pattern.slice(base.length + 1), fromRoot: true };
  throw new ToolFailure(
    `the pattern ${JSON.stringify(pattern)} is an absolute path outside the workspace root ${ws.root}. Give a pattern relative to path.`,
    ToolErrorCodes.FS_OUTSIDE_WORKSPACE,
  );
}
