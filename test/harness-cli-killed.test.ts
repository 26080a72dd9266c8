// Every real harness CLI waiting on an approval while the worker is killed (test/harness-cli/suite.ts
// says how the CLIs run): the four at once, against one worker.
import { describe, expect, it } from 'vitest';
import {
  approvalFor,
  CLIS,
  decided,
  harness,
  killWorker,
  project,
  runs,
  shown,
  startWorker,
  useHarnessClis,
} from './harness-cli/suite';

useHarnessClis('harness-cli-killed', { ownProcess: true });

describe('the worker is killed while approvals wait', () => {
  it('every harness: the hook keeps waiting, a new worker takes over, the approval arrives and the command runs once', async () => {
    const projects = Object.fromEntries(CLIS.map((cli) => [cli, project(`${cli}-killed`)]));
    const running = CLIS.map((cli) => harness(cli, projects[cli], `RUN: ./mark asked-killed-${cli}`));
    const pending = await Promise.all(CLIS.map((cli) => approvalFor(`asked-killed-${cli}`)));
    await killWorker('SIGKILL');
    await startWorker();
    for (const p of pending) await decided('approve', p);
    const ran = await Promise.all(running);
    CLIS.forEach((cli, i) => expect(runs(projects[cli], `asked-killed-${cli}`), shown(ran[i])).toBe(1));
  });
});
