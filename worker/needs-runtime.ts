// The first module sluice/worker loads: an app that installed Sluice for its client side has no
// @temporalio/worker, and requiring sluice/worker there must say what to install in one line
// (MissingPackageError, as every optional part does) rather than Node's "Cannot find module" from
// deep inside dist/.
import { requireOptional } from '../support/optional';

requireOptional('@temporalio/worker', 'sluice/worker (hosting Sluice)', () => require.resolve('@temporalio/worker'));
