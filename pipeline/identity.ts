// Verified approvers: a decision may carry a signed identity (a JWT from the approver's identity
// provider). The token never travels in clear: the client seals it, together with the approval
// id and digest it is for, to the workers' public key (a compact JWE), and a worker activity opens
// and verifies it. History keeps the ciphertext and the verified claims, never the token. Pure
// types: the sealing is in client/identity.ts, the verification in activities/identity.ts.

/** What a worker verified: recorded with the decision, and `subject` is who decided. */
export interface VerifiedApprover {
  subject: string;
  groups: string[];
  issuer?: string;
}

export interface VerifyApproverRequest {
  /** The sealed identity (compact JWE) the decision carried. */
  sealed: string;
  approvalId: string;
  argsDigest: string;
  /** At least one of these groups, when non-empty. */
  groups: string[];
  /** And at least one group of each of these lists, when given (several sources named groups). */
  groupSets?: string[][];
  toolName: string;
}

export type VerifyApproverResult =
  | ({ ok: true } & VerifiedApprover)
  | { ok: false; code: 'unverified' | 'wrong-group' | 'token-used'; problem: string; subject?: string };

/** The plaintext a client seals: the token and what it is for, so a sealed copy cannot be reused. */
export interface SealedIdentity {
  token: string;
  approvalId: string;
  argsDigest: string;
}

export interface IdentityActivities {
  verifyApprover(req: VerifyApproverRequest): Promise<VerifyApproverResult>;
}
