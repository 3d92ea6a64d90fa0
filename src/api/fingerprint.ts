/**
 * Fingerprints and the names derived from them. A fingerprint is the SHA-256 of the canonical JSON of a
 * record whose every member is a named binding; changing any binding gives another fingerprint, so a
 * changed input produces a different plan rather than a changed one.
 */
import { canonicalDigest, type Sha256Digest } from './digest.ts';
import {
  MIGRATION_PLAN_CONTRACT_VERSION,
  type MigrationPlanBinding,
  type PlannedMigration,
} from './ptah-migration-plan.ts';
import { PLAN_CONTRACT_VERSION, type PlanBinding } from './ptah-schema-plan.ts';
import type { RealmRef } from './ptah-realm.ts';
import { policy as policyNode, type Engine, type PolicySpec } from './ptah-schema.ts';
import { withDefaults } from './schema-dsl.ts';
import { canonicalTableName } from '../protocol/table-name.ts';

export class FingerprintError extends Error {
  override readonly name = 'FingerprintError';
}

/** The fingerprint an approval names. Refuses any contract version but the one this release writes. */
export function schemaPlanFingerprint(binding: PlanBinding): Sha256Digest {
  if (binding.contractVersion !== PLAN_CONTRACT_VERSION) {
    throw new FingerprintError(
      `plan contract version ${binding.contractVersion} is not supported; this release uses ${PLAN_CONTRACT_VERSION}`,
    );
  }
  if (
    binding.sourceType === 'ConfigMap' &&
    (binding.configMapUID === undefined || binding.configMapUID === '')
  ) {
    throw new FingerprintError('a plan from a ConfigMap source must bind the ConfigMap UID');
  }
  if (
    binding.sourceType === 'OCI' &&
    (binding.verificationPolicyUID === undefined || binding.verificationPolicyDigest === undefined)
  ) {
    throw new FingerprintError('a plan from an OCI source must bind the verification policy UID and digest');
  }
  if (binding.sourceType === 'Git' && binding.sourceDigest === undefined) {
    throw new FingerprintError('a plan from a Git source must bind the digest of its repository and path');
  }
  return canonicalDigest({ ...binding });
}

/**
 * The digest of the ordered sequence: each file's version, version key, checksum, checkpoint flag and
 * transaction mode, in run order. The description is left out: it names the file for a person and changes
 * nothing Ptah executes or compares.
 */
export function migrationSequenceDigest(migrations: readonly PlannedMigration[]): Sha256Digest {
  return canonicalDigest(
    migrations.map((m) => ({
      version: m.version,
      versionKey: m.versionKey,
      checksum: m.checksum,
      checkpoint: m.checkpoint,
      transactionMode: m.transactionMode,
    })),
  );
}

/**
 * The fingerprint a migration approval names: the execution and target identity the schema plan binds,
 * and instead of observed and desired state, the sequence, the history it was selected against, the version
 * that history stood at and the policy's transaction mode (unset a value of its own).
 */
export function migrationPlanFingerprint(
  binding: MigrationPlanBinding,
  migrations: readonly PlannedMigration[],
): Sha256Digest {
  if (binding.contractVersion !== MIGRATION_PLAN_CONTRACT_VERSION) {
    throw new FingerprintError(
      `migration plan contract version ${binding.contractVersion} is not supported; this release uses ${MIGRATION_PLAN_CONTRACT_VERSION}`,
    );
  }
  if (
    binding.sourceType === 'ConfigMap' &&
    (binding.configMapUID === undefined || binding.configMapUID === '')
  ) {
    throw new FingerprintError('a migration plan from a ConfigMap source must bind the ConfigMap UID');
  }
  if (
    binding.sourceType === 'OCI' &&
    (binding.verificationPolicyUID === undefined || binding.verificationPolicyDigest === undefined)
  ) {
    throw new FingerprintError(
      'a migration plan from an OCI source must bind the verification policy UID and digest',
    );
  }
  if (binding.sourceType === 'Git' && binding.sourceDigest === undefined) {
    throw new FingerprintError(
      'a migration plan from a Git source must bind the digest of its repository and path',
    );
  }
  if (migrations.length === 0) throw new FingerprintError('a migration plan needs at least one migration');
  return canonicalDigest({ ...binding, sequenceDigest: migrationSequenceDigest(migrations) });
}

/** `ptah-mplan-<24 hex>` from the fingerprint: the same bindings always name the same plan. */
export function migrationPlanName(fingerprint: Sha256Digest): string {
  return `ptah-mplan-${hexOf(fingerprint).slice(0, 24)}`;
}

/**
 * The policy as it affects a plan: defaults applied, sets sorted and deduplicated, protected tables in their
 * canonical spelling (src/protocol/table-name.ts, the rule the engine matches by: unquoted parts fold to
 * lower case, quoted parts keep case), so two spellings share a fingerprint exactly when they protect the
 * same tables.
 */
export function normalisePolicy(policy: Partial<PolicySpec> | undefined): PolicySpec {
  const p = withDefaults(policyNode, policy ?? {});
  const set = (xs: readonly string[] | undefined) => (xs === undefined ? [] : [...new Set(xs)].sort());
  return {
    apply: p.apply,
    allowDestructive: p.allowDestructive,
    protectedTables: set(p.protectedTables?.map(canonicalTableName)),
    exclude: set(p.exclude),
  };
}

export function policyFingerprint(policy: Partial<PolicySpec> | undefined): Sha256Digest {
  const p = normalisePolicy(policy);
  return canonicalDigest({
    apply: p.apply,
    allowDestructive: p.allowDestructive,
    protectedTables: p.protectedTables ?? [],
    exclude: p.exclude ?? [],
  });
}

/**
 * The database realm: resources in one namespace naming one coordination key on one engine. The plaintext
 * key never leaves spec; the digest names the realm's Lease.
 */
export function coordinationDigest(input: {
  readonly engine: Engine;
  readonly namespace: string;
  readonly coordinationKey: string;
}): Sha256Digest {
  return canonicalDigest({
    contractVersion: 1,
    engine: input.engine,
    namespace: input.namespace,
    coordinationKey: input.coordinationKey,
  });
}

/**
 * A realm an admin granted (PtahRealm): one engine and the realm's name, and no namespace, so resources in
 * every namespace the realm lists share one digest and one Lease. Its field set differs from the key form's,
 * so a realm's digest can never equal a coordination key's.
 */
export function grantedRealmDigest(input: { readonly engine: Engine; readonly realm: string }): Sha256Digest {
  return canonicalDigest({ contractVersion: 1, engine: input.engine, realm: input.realm });
}

/** The coordination digest of the realm a resource names, in whichever form it names it. */
export function realmDigestOf(engine: Engine, namespace: string, ref: RealmRef): Sha256Digest {
  return ref.kind === 'PtahRealm'
    ? grantedRealmDigest({ engine, realm: ref.name })
    : coordinationDigest({ engine, namespace, coordinationKey: ref.coordinationKey });
}

/** Realm Lease name: lowercase base32 of the digest bytes fits a DNS label with room to spare. */
export function realmLeaseName(digest: Sha256Digest): string {
  return `ptah-t-${base32(Buffer.from(hexOf(digest), 'hex'))}`;
}

/**
 * `ptah-plan-<24 hex>` from the fingerprint: the same bindings always name the same plan. A plan retired for
 * good (a chunk failed its read-back) is never published again under its name: `publication` counts those
 * retirements of the same fingerprint, so the next publication is a new object with new chunks.
 */
export function planName(fingerprint: Sha256Digest, publication = 0): string {
  const named = publication === 0 ? fingerprint : canonicalDigest({ fingerprint, publication });
  return `ptah-plan-${hexOf(named).slice(0, 24)}`;
}

export function hexOf(digest: Sha256Digest): string {
  return digest.slice('sha256:'.length);
}

function base32(bytes: Uint8Array): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}
