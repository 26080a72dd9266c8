// OpenCode (`opencode run`) in front of Sluice, end to end (test/harness-cli/suite.ts says how).
import { describe } from 'vitest';
import { decidedBySluice, useHarnessClis } from './harness-cli/suite';

useHarnessClis('harness-cli-opencode');

describe.concurrent('each harness CLI decided by Sluice', () => {
  decidedBySluice('opencode');
});
