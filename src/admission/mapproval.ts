/**
 * mapproval: mutating admission for PtahSchemaApproval CREATE. It stamps spec.approver, spec.approvedAt
 * and spec.mutationRequestUID from the authenticated request, replacing whatever a client wrote; the
 * stamping itself is shared by every decision kind (decision-stamp.ts).
 */
import { stampDecision, type StampHandler, type StampOptions } from './decision-stamp.ts';

export type { StampOptions } from './decision-stamp.ts';

export function mutateApproval(options: StampOptions = {}): StampHandler {
  return stampDecision('PtahSchemaApproval', options);
}
