/**
 * vmigrationrunacknowledgment: validating admission for PtahMigrationRunAcknowledgment. On CREATE it reads
 * the PtahMigration from the API server and refuses an acknowledgment that does not name, by name and UID,
 * a migration whose status records an unresolved run with exactly the operation id given, or whose
 * acknowledgedBy was not stamped from this request. On UPDATE it refuses any change to the spec: an
 * acknowledgment settles one run, once, as one person.
 */
import { UNRESOLVED_RUN_ANNOTATION } from '../api/ptah-migration.ts';
import type { PtahMigrationRunAcknowledgment } from '../api/ptah-migration-approval.ts';
import type { MigrationSubjects } from './approval-subjects.ts';
import {
  boundFieldsUnchanged,
  createdDecision,
  isRef,
  isRefusal,
  readSubjects,
  resourceProblem,
} from './decision-checks.ts';
import { DECISIONS } from './decisions.ts';
import { allowed, denied, type AdmissionDecision, type AdmissionRequest } from './review.ts';

const DECISION = DECISIONS.PtahMigrationRunAcknowledgment;

export function validateRunAcknowledgment(subjects: MigrationSubjects) {
  return async (request: AdmissionRequest): Promise<AdmissionDecision> => {
    if (request.operation === 'UPDATE') return boundFieldsUnchanged(DECISION, request) ?? allowed();
    if (request.operation !== 'CREATE') return allowed();
    const created = createdDecision<PtahMigrationRunAcknowledgment['spec']>(
      DECISION,
      request,
      (s) => isRef(s['migrationRef']) && typeof s['operationId'] === 'string',
      'migrationRef (name and uid) and operationId',
    );
    if (isRefusal(created)) return created;
    const { spec, namespace } = created;

    const migration = await readSubjects('migration', () =>
      subjects.getMigration(namespace, spec.migrationRef.name),
    );
    if (isRefusal(migration)) return migration;
    const wrongMigration = resourceProblem(
      DECISION,
      'PtahMigration',
      spec.migrationRef,
      migration,
      'acknowledge its unresolved run by its current UID',
    );
    if (wrongMigration !== undefined || migration === undefined) return denied(wrongMigration ?? '');
    const name = migration.metadata.name;
    const unresolved = migration.status?.unresolvedRun;
    if (unresolved === undefined)
      return denied(
        migration.metadata.annotations?.[UNRESOLVED_RUN_ANNOTATION] !== undefined
          ? `PtahMigration ${name} records no unresolved run in its status, but its ${UNRESOLVED_RUN_ANNOTATION} annotation holds one (status was dropped, by a restore perhaps): the manager brings it back into status at its next pass; acknowledge it then`
          : `PtahMigration ${name} records no unresolved run: there is nothing to acknowledge`,
      );
    if (unresolved.operationId !== spec.operationId)
      return denied(
        `the acknowledgment names operation ${spec.operationId}, but the unresolved run of PtahMigration ${name} is operation ${unresolved.operationId} (${unresolved.outcome}, Job ${unresolved.jobName}); acknowledge that one`,
      );
    return allowed();
  };
}
