/**
 * mmigrationapproval: mutating admission for PtahMigrationApproval CREATE. It stamps spec.approver,
 * spec.approvedAt and spec.mutationRequestUID from the authenticated request, replacing whatever a client
 * wrote, exactly as mapproval does for a schema approval.
 */
import { stampDecision, type StampHandler, type StampOptions } from './decision-stamp.ts';

export function mutateMigrationApproval(options: StampOptions = {}): StampHandler {
  return stampDecision('PtahMigrationApproval', options);
}
