/**
 * vmigrationapproval: validating admission for PtahMigrationApproval. On CREATE it reads the current
 * PtahMigration and PtahMigrationPlan from the API server and refuses an approval that does not name
 * exactly the plan the migration waits on (migration name and UID, plan name and UID, fingerprint), one the
 * migration's own state would never apply (apply Never, an unresolved run, Blocked, a transaction mode
 * edited since the plan), or one whose approver was not stamped from this request. On UPDATE it refuses any
 * change to what the approval binds. The manager checks all of this again before an Apply.
 */
import type { PtahMigration } from '../api/ptah-migration.ts';
import type { PtahMigrationApproval } from '../api/ptah-migration-approval.ts';
import type { PtahMigrationPlan } from '../api/ptah-migration-plan.ts';
import type { MigrationSubjects } from './approval-subjects.ts';
import {
  boundFieldsUnchanged,
  createdDecision,
  exactPlanProblem,
  isRef,
  isRefusal,
  readSubjects,
  resourceProblem,
} from './decision-checks.ts';
import { DECISIONS } from './decisions.ts';
import { allowed, denied, type AdmissionDecision, type AdmissionRequest } from './review.ts';

const DECISION = DECISIONS.PtahMigrationApproval;

export function validateMigrationApproval(subjects: MigrationSubjects) {
  return async (request: AdmissionRequest): Promise<AdmissionDecision> => {
    if (request.operation === 'UPDATE') return boundFieldsUnchanged(DECISION, request) ?? allowed();
    if (request.operation !== 'CREATE') return allowed();
    const created = createdDecision<PtahMigrationApproval['spec']>(
      DECISION,
      request,
      (s) => isRef(s['migrationRef']) && isRef(s['planRef']) && typeof s['planFingerprint'] === 'string',
      'migrationRef and planRef (name and uid) and planFingerprint',
    );
    if (isRefusal(created)) return created;
    const { spec, namespace } = created;

    const read = await readSubjects('migration or plan', async () => ({
      migration: await subjects.getMigration(namespace, spec.migrationRef.name),
      plan: await subjects.getMigrationPlan(namespace, spec.planRef.name),
    }));
    if (isRefusal(read)) return read;
    const { migration, plan } = read;
    const wrongMigration = resourceProblem(
      DECISION,
      'PtahMigration',
      spec.migrationRef,
      migration,
      'approve its current plan by its current UID',
    );
    if (wrongMigration !== undefined || migration === undefined) return denied(wrongMigration ?? '');
    const wrongPlan = exactPlanProblem(DECISION, {
      resourceKind: 'PtahMigration',
      planKind: 'PtahMigrationPlan',
      resource: migration,
      current: migration.status?.plan,
      planRef: spec.planRef,
      planFingerprint: spec.planFingerprint,
      plan,
      planOwner: plan?.spec.migrationRef,
    });
    if (wrongPlan !== undefined || plan === undefined) return denied(wrongPlan ?? '');
    const unappliable = migrationPolicyRefusal(migration, plan);
    if (unappliable !== undefined) return denied(unappliable);
    return allowed();
  };
}

/**
 * Why the migration will never run this plan as it stands, if it will not: an approval for it would be
 * admitted only to wait forever, or to run later under a wrapping nobody approved.
 */
function migrationPolicyRefusal(migration: PtahMigration, plan: PtahMigrationPlan): string | undefined {
  const name = migration.metadata.name;
  const status = migration.status;
  if ((migration.spec.policy?.apply ?? 'OnApproval') === 'Never')
    return `PtahMigration ${name} has spec.policy.apply Never: no plan is applied, approved or not; set apply to OnApproval to apply approved plans`;
  const unresolved = status?.unresolvedRun;
  if (unresolved !== undefined)
    return `PtahMigration ${name} has an unresolved run (${unresolved.outcome}, operation ${unresolved.operationId}, Job ${unresolved.jobName}): no plan is applied until it is settled; check the database, then \`kubectl ptah migration acknowledge ${name}\``;
  if (status?.phase === 'Blocked') {
    const why = status.conditions?.find((c) => c.type === 'Blocked' && c.status === 'True')?.reason;
    return `PtahMigration ${name} is Blocked${why ? ` (${why})` : ''}: its plan will not be applied; resolve the block first`;
  }
  const asked = migration.spec.policy?.transactionMode ?? 'unset';
  if (plan.spec.binding.transactionMode !== asked)
    return `spec.policy.transactionMode of PtahMigration ${name} is ${asked}, but plan ${plan.metadata.name} was made under ${plan.spec.binding.transactionMode}: the plan will be replaced; approve the new one`;
  return undefined;
}
