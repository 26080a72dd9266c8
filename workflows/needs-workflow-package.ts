// The first module sluice/workflow loads: an app that installed Sluice for its client side has no
// @temporalio/workflow, and requiring sluice/workflow there must say what to install in one line
// (MissingPackageError, as sluice/worker does) rather than Node's "Cannot find module" from deep
// inside dist/. It loads in a workflow bundle too, so it requires the package rather than resolving
// a path: in a bundle that is the module the workflow code uses anyway.
import { requireOptional } from '../support/optional';

requireOptional('@temporalio/workflow', 'sluice/workflow (for your own workflows)', () =>
  require('@temporalio/workflow'),
);
