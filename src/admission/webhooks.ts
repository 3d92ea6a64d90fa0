/** The webhook paths the manager serves, in one place for the server and the webhook configurations. */
import type { ApprovalSubjects, MigrationSubjects } from './approval-subjects.ts';
import type { StampOptions } from './decision-stamp.ts';
import type { WebhookName } from './decisions.ts';
import { mutateApproval } from './mapproval.ts';
import { mutateMigrationApproval } from './mmigrationapproval.ts';
import { mutateRunAcknowledgment } from './mmigrationrunacknowledgment.ts';
import type { AdmissionHandler } from './review.ts';
import { validateApproval } from './vapproval.ts';
import { validateControllerWrite, type ControllerWriteSources } from './vcontrollerwrite.ts';
import { validatePodIntent, type PodIntentSources } from './vpodintent.ts';
import { validateMigrationApproval } from './vmigrationapproval.ts';
import { validateRunAcknowledgment } from './vmigrationrunacknowledgment.ts';

/** The validating webhooks over the objects only the manager and the Job controller write. */
export type ControllerWebhookName = 'vcontrollerwrite' | 'vpodintent';

export const WEBHOOK_PATHS = {
  vcontrollerwrite: '/vcontrollerwrite',
  vpodintent: '/vpodintent',
  mapproval: '/mapproval',
  vapproval: '/vapproval',
  mmigrationapproval: '/mmigrationapproval',
  vmigrationapproval: '/vmigrationapproval',
  mmigrationrunacknowledgment: '/mmigrationrunacknowledgment',
  vmigrationrunacknowledgment: '/vmigrationrunacknowledgment',
} as const satisfies Record<WebhookName | ControllerWebhookName, string>;

/**
 * The two webhooks over what only the manager and the Job controller write, by path: they rebuild the
 * expected object from the owning resource and plan (handed in by the manager process, see
 * src/controller/admission-sources.ts).
 */
export function controllerWebhooks(
  writes: ControllerWriteSources,
  pods: PodIntentSources,
): Record<string, AdmissionHandler> {
  const handlers: Record<ControllerWebhookName, AdmissionHandler> = {
    vcontrollerwrite: validateControllerWrite(writes),
    vpodintent: validatePodIntent(pods),
  };
  return Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [
      WEBHOOK_PATHS[name as ControllerWebhookName],
      handler,
    ]),
  );
}

/** Every decision webhook, by path: the stamping and the checking side of each decision kind. */
export function approvalWebhooks(
  subjects: ApprovalSubjects & MigrationSubjects,
  stamp: StampOptions = {},
): Record<string, AdmissionHandler> {
  const handlers: Record<WebhookName, AdmissionHandler> = {
    mapproval: mutateApproval(stamp),
    vapproval: validateApproval(subjects),
    mmigrationapproval: mutateMigrationApproval(stamp),
    vmigrationapproval: validateMigrationApproval(subjects),
    mmigrationrunacknowledgment: mutateRunAcknowledgment(stamp),
    vmigrationrunacknowledgment: validateRunAcknowledgment(subjects),
  };
  return Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [WEBHOOK_PATHS[name as WebhookName], handler]),
  );
}
