// The setup file of the files that share a process (vitest.config.mts, `shared`): the next file
// runs in the same process with the same modules loaded, so each file must leave behind nothing
// that changes another's outcome.
// - The environment: a file's helpers set what its run needs (a fake provider's address, the
//   folder a fixture config reads) while it runs; it is put back after each file, as the file
//   found it. (A codec key left set by one file made another's in-process CLI hang.)
// - The exec deny rules, which every bash sandbox of the process holds once any file registered
//   them: a file that registers any fails here, named by its own run in any order, rather than
//   making another file's commands fail now and then.
import { afterAll, expect } from 'vitest';
import { execDenyRules } from '../tools/exec-deny';

const env = { ...process.env };
const denyRules = execDenyRules().length;

afterAll(() => {
  for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
  Object.assign(process.env, env);
  expect(
    execDenyRules().length,
    'a file that shares its process registered exec deny rules for the whole process: list it in ISOLATED (vitest.config.mts)',
  ).toBe(denyRules);
});
