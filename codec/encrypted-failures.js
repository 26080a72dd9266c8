// Loaded by path (Temporal's DataConverter.failureConverterPath), by the worker, the client and
// the workflow bundler alike, so it is plain JavaScript: failure messages and stack traces travel
// in an encoded payload, which the payload codec encrypts (see payload.ts).
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
