// Seals an approver's JWT for the workers: a compact JWE (ECDH-ES, A256GCM) to the workers'
// public seal key, binding it to one approval and its digest. Only a worker can open it, and a
// copy read from history is good for nothing else.
import { CompactEncrypt, type JWK, importJWK } from 'jose';
import type { SealedIdentity } from '../pipeline/identity';

/**
 * The workers' public seal key: a JSON Web Key (RFC 7517), an EC key for ECDH-ES. Declared here
 * rather than as jose's JWK so a CommonJS app's declarations never import the ESM-only jose.
 */
export interface SealKey {
  kty?: string;
  crv?: string;
  x?: string;
  y?: string;
  kid?: string;
  alg?: string;
  use?: string;
  [param: string]: unknown;
}

export async function sealIdentity(
  token: string,
  forDecision: { approvalId: string; argsDigest: string },
  sealPublicKey: SealKey,
): Promise<string> {
  const key = await importJWK(sealPublicKey as JWK, 'ECDH-ES');
  const body: SealedIdentity = { token, approvalId: forDecision.approvalId, argsDigest: forDecision.argsDigest };
  return new CompactEncrypt(new TextEncoder().encode(JSON.stringify(body)))
    .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM' })
    .encrypt(key);
}

/** The workers' public seal key from SLUICE_SEAL_KEY (a JWK as JSON), or undefined. */
export function sealKeyFromEnv(env: NodeJS.ProcessEnv = process.env): SealKey | undefined {
  const raw = env.SLUICE_SEAL_KEY;
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as SealKey;
  } catch {
    throw new Error("SLUICE_SEAL_KEY must be the workers' public seal key as a JWK in JSON");
  }
}
