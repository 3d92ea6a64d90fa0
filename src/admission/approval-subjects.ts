/**
 * How the validating webhooks read what a decision is about. Interfaces, so unit tests pass objects;
 * `kubernetesApprovalSubjects` reads the live objects from the API server, uncached, at decision time.
 */
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../api/meta.ts';
import type { PtahMigration } from '../api/ptah-migration.ts';
import type { PtahMigrationPlan } from '../api/ptah-migration-plan.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';

export interface ApprovalSubjects {
  /** undefined when the object does not exist; throws when it cannot be read. */
  getSchema(namespace: string, name: string): Promise<PtahSchema | undefined>;
  getPlan(namespace: string, name: string): Promise<PtahSchemaPlan | undefined>;
}

/** What the migration approval and run acknowledgment webhooks read; same contract as above. */
export interface MigrationSubjects {
  getMigration(namespace: string, name: string): Promise<PtahMigration | undefined>;
  getMigrationPlan(namespace: string, name: string): Promise<PtahMigrationPlan | undefined>;
}

export function kubernetesApprovalSubjects(config: k8s.KubeConfig): ApprovalSubjects & MigrationSubjects {
  const api = config.makeApiClient(k8s.CustomObjectsApi);
  const get = async <T>(namespace: string, plural: string, name: string): Promise<T | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural,
        name,
      })) as T;
    } catch (error) {
      if (error instanceof k8s.ApiException && error.code === 404) return undefined;
      throw error;
    }
  };
  return {
    getSchema: (namespace, name) => get<PtahSchema>(namespace, 'ptahschemas', name),
    getPlan: (namespace, name) => get<PtahSchemaPlan>(namespace, 'ptahschemaplans', name),
    getMigration: (namespace, name) => get<PtahMigration>(namespace, 'ptahmigrations', name),
    getMigrationPlan: (namespace, name) => get<PtahMigrationPlan>(namespace, 'ptahmigrationplans', name),
  };
}
