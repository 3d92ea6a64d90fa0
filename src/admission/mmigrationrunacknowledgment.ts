/**
 * mmigrationrunacknowledgment: mutating admission for PtahMigrationRunAcknowledgment CREATE. The person
 * who settles an unresolved run is a fact of the authenticated request: spec.acknowledgedBy,
 * spec.acknowledgedAt and spec.mutationRequestUID are stamped from it, and a forged acknowledgedBy is
 * replaced, as an approval's approver is.
 */
import { stampDecision, type StampHandler, type StampOptions } from './decision-stamp.ts';

export function mutateRunAcknowledgment(options: StampOptions = {}): StampHandler {
  return stampDecision('PtahMigrationRunAcknowledgment', options);
}
