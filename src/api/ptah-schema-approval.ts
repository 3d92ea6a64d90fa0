/**
 * PtahSchemaApproval: a person's decision about exactly one plan. It names the resource and the plan by
 * name, UID and fingerprint; who decided and when is stamped by mutating admission from the authenticated
 * request, replacing whatever a client wrote.
 */
import {
  API_GROUP,
  conditions,
  digest,
  objectRef,
  observedGeneration,
  timestamp,
  uid,
  type ObjectMeta,
} from './meta.ts';
import { array, object, optional, string, type Infer } from './schema-dsl.ts';

export const approver = object(
  {
    username: string({ description: 'Authenticated username, stamped by admission.', maxLength: 512 }),
    uid: optional(string({ description: 'Authenticated user UID, stamped by admission.', maxLength: 512 })),
    groups: optional(
      array(string({ maxLength: 512 }), {
        description: 'Authenticated groups, stamped by admission.',
        maxItems: 64,
        listType: 'atomic',
      }),
    ),
  },
  { description: 'The identity admission stamped from the authenticated request.' },
);
export type Approver = Infer<typeof approver>;

export const ptahSchemaApprovalSpec = object(
  {
    schemaRef: objectRef('The PtahSchema the decision is about.'),
    planRef: objectRef('The PtahSchemaPlan approved.'),
    planFingerprint: digest('The fingerprint of the plan approved; it binds every input of the plan.'),
    approver: optional(approver),
    approvedAt: optional(timestamp('When admission accepted the approval; stamped by admission.')),
    mutationRequestUID: optional(uid('UID of the admission request that stamped the approval.')),
  },
  {
    validations: [{ rule: 'self == oldSelf', message: 'an approval is immutable; create another one' }],
  },
);
export type PtahSchemaApprovalSpec = Infer<typeof ptahSchemaApprovalSpec>;

export const ptahSchemaApprovalStatus = object({
  observedGeneration,
  conditions: optional(conditions),
});
export type PtahSchemaApprovalStatus = Infer<typeof ptahSchemaApprovalStatus>;

export const APPROVAL_CONDITION_TYPES = ['Accepted', 'Consumed', 'Stale'] as const;

export interface PtahSchemaApproval {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahSchemaApproval';
  readonly metadata: ObjectMeta;
  readonly spec: PtahSchemaApprovalSpec;
  readonly status?: PtahSchemaApprovalStatus;
}
