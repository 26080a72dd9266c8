// A verified approver's identity token, sealed to the workers' public key and bound to the
// approval (or reconcile card) and the arguments' digest before it is sent: only the sealed form
// leaves the client.
import type { Client } from '@temporalio/client';
import type { ReconcileDecision } from '../../pipeline/reconcile';
import type { ApprovalDecision } from '../../pipeline/types';
import { SluiceError } from '../../support/errors';
import { type SealKey, sealIdentity, sealKeyFromEnv } from '../identity';
import { readBatch } from './listing';

/**
 * The approver's identity token, sealed to the workers' key (`key`, else SLUICE_SEAL_KEY) and bound
 * to the approval and the digest shown, into `payload.signedIdentity`; nothing without a token.
 */
export async function sealInto(
  payload: ApprovalDecision,
  token: string | undefined,
  key: SealKey | undefined,
): Promise<void> {
  if (!token) return;
  const sealKey = key ?? sealKeyFromEnv();
  if (!sealKey)
    throw new SluiceError(
      "a signed identity is sealed to the workers' public key before it is sent: set SLUICE_SEAL_KEY (the JWK the workers' operator publishes) or pass sealKey",
    );
  if (!payload.argsDigest)
    throw new SluiceError(
      `a signed identity is bound to the arguments shown: pass the argsDigest of approval ${payload.approvalId} (--digest)`,
    );
  payload.signedIdentity = await sealIdentity(
    token,
    { approvalId: payload.approvalId, argsDigest: payload.argsDigest },
    sealKey,
  );
}

/**
 * A verified approver's token, sealed to the reconcile card and the call's digest (as for an
 * approval) into `payload.signedIdentity`; nothing without a token.
 */
export async function sealReconcileIdentity(
  temporal: Client,
  workflowId: string,
  payload: ReconcileDecision,
  identityToken: string | undefined,
  sealKey: SealKey | undefined,
): Promise<void> {
  if (!identityToken) return;
  const card = (await readBatch(temporal, workflowId)).pending.find((p) => p.approvalId === payload.reconcileId);
  const key = sealKey ?? sealKeyFromEnv();
  if (!card) throw new SluiceError(`no unknown outcome ${payload.reconcileId} is waiting in ${workflowId}`);
  if (!key)
    throw new SluiceError(
      "a signed identity is sealed to the workers' public key before it is sent: set SLUICE_SEAL_KEY or pass sealKey",
    );
  payload.signedIdentity = await sealIdentity(
    identityToken,
    { approvalId: payload.reconcileId, argsDigest: card.argsDigest },
    key,
  );
}
