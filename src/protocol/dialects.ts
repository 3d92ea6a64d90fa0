/**
 * The dialects the schema engine ships. The manager may not import the engine, so support is decided from
 * this list, and a unit test holds it equal to the engine's registry (src/engine/schema-engine.ts): a
 * dialect is supported exactly when the engine can plan for it.
 */
export type DialectName = 'postgres' | 'mysql';

export const SCHEMA_ENGINE_DIALECTS: readonly DialectName[] = ['postgres', 'mysql'];

export function schemaEngineShips(dialect: DialectName): boolean {
  return SCHEMA_ENGINE_DIALECTS.includes(dialect);
}
