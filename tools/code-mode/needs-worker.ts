// The first module sluice/code-mode loads: Code Mode's tool runs in a worker, as an activity, so it
// needs the worker runtime (@temporalio/activity, which @temporalio/worker brings at its own
// version). Without it, requiring sluice/code-mode says what to install in one line
// (MissingPackageError) rather than Node's "Cannot find module" from deep inside dist/.
import { MissingPackageError } from '../../support/optional';

try {
  require.resolve('@temporalio/activity');
} catch {
  throw new MissingPackageError(['@temporalio/worker'], 'sluice/code-mode (Code Mode runs in a worker)');
}
