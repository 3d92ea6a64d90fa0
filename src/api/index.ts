/** The operator's API layer: resource types, schemas, canonical JSON, digests and fingerprints. */
export * from './canonical-json.ts';
export * from './conditions.ts';
export * from './core.ts';
export * from './digest.ts';
export * from './duration.ts';
export * from './fingerprint.ts';
export * from './meta.ts';
export * from './ptah-migration.ts';
export * from './ptah-migration-approval.ts';
export * from './ptah-migration-plan.ts';
export * from './ptah-realm.ts';
export * from './ptah-schema.ts';
export * from './ptah-schema-approval.ts';
export * from './ptah-schema-plan.ts';
export * from './ptah-schema-plan-chunk.ts';
export * from './read-request.ts';
export * from './reasons.ts';
export { validate, withDefaults, type Infer, type ValidationResult } from './schema-dsl.ts';
