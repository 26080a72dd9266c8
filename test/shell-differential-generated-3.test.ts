// Part 3 of 3 of the Bash judgment's differential test's seeded generated cases
// (test/shell-differential-suite.ts says what a case checks; the parts run on workers of their own).
import { generatedCases } from './shell-differential-suite';

generatedCases(2);
