/** The webhook paths the manager serves, in one place for the server and the webhook configurations. */
import type { ApprovalSubjects } from './approval-subjects.ts';
import { mutateApproval, type StampOptions } from './mapproval.ts';
import type { AdmissionHandler } from './review.ts';
import { validateApproval } from './vapproval.ts';

export const WEBHOOK_PATHS = {
  mapproval: '/mapproval',
  vapproval: '/vapproval',
} as const;

export function approvalWebhooks(
  subjects: ApprovalSubjects,
  stamp: StampOptions = {},
): Record<string, AdmissionHandler> {
  return {
    [WEBHOOK_PATHS.mapproval]: mutateApproval(stamp),
    [WEBHOOK_PATHS.vapproval]: validateApproval(subjects),
  };
}
