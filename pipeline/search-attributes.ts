// The search attributes a batch sets, by name and type: registered on the dev server at start
// (temporal/dev-server.ts), by `sluice setup` on any other server (temporal/setup.ts), and waited
// for by a client whose first start finds them missing. The typed keys the workflow upserts are
// workflows/definitions.ts's.
export const SEARCH_ATTRIBUTES = {
  SluiceAwaitingApproval: 'Bool',
  SluicePendingApprovals: 'KeywordList',
  SluiceSessionId: 'Keyword',
} as const;
