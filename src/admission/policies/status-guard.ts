/**
 * The status guard: a write to the status subresource of any kind in operator.ptah.run is refused unless the
 * manager's ServiceAccount sends it, a cluster administrator included. Status is what the controller and the
 * webhooks decide from (the claims, the admission snapshots, the record of a run nobody accounted for, an
 * approval's Consumed condition); whoever could write it could clear an unresolved run or make a consumed
 * approval count again. The rule names the subresource (`*\/status`), not the kinds, so a kind added later is
 * covered by the rule already installed.
 */
import { API_GROUP } from '../../api/meta.ts';
import { byManager, celString, guardPolicy, type GuardPolicy, type ReleaseIdentity } from './cel.ts';

export const STATUS_GUARD_NAME = 'ptah-status-guard';

export function statusGuard(release: ReleaseIdentity): GuardPolicy {
  return guardPolicy(STATUS_GUARD_NAME, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: [API_GROUP],
          apiVersions: ['*'],
          resources: ['*/status'],
          operations: ['*'],
        },
      ],
    },
    validations: [
      {
        expression: byManager(release),
        messageExpression: `'the status of ' + request.kind.kind + ' ' + request.name + ${celString(` is written only by the Ptah manager (${release.managerUsername}), whatever your permissions: it records the claims, the plan an approval consumed and any run nobody accounted for, which the manager decides from. Change the spec, or settle an unresolved run with a PtahMigrationRunAcknowledgment.`)}`,
        reason: 'Forbidden',
      },
    ],
  });
}
