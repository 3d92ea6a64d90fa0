/**
 * Fail closed on approvals: the manager accepts an approval only while the approval webhooks are
 * registered as it serves them, since only they stamp who approved. Read from the API server at most once a
 * TTL; a read that fails (no permission, API down) counts as "not registered".
 */
import type * as k8s from '@kubernetes/client-node';
import { approvalWebhooksProblem } from '../../admission/webhook-configurations.ts';

export type ApprovalGate = () => Promise<string | undefined>;

export function approvalWebhookGate(
  api: Pick<
    k8s.AdmissionregistrationV1Api,
    'listMutatingWebhookConfiguration' | 'listValidatingWebhookConfiguration'
  >,
  options: { readonly ttlMs?: number; readonly clock?: () => number } = {},
): ApprovalGate {
  const ttlMs = options.ttlMs ?? 10_000;
  const clock = options.clock ?? Date.now;
  let cached: { at: number; problem: string | undefined } | undefined;
  return async () => {
    const now = clock();
    if (cached !== undefined && now - cached.at < ttlMs) return cached.problem;
    let problem: string | undefined;
    try {
      const [mutating, validating] = await Promise.all([
        api.listMutatingWebhookConfiguration(),
        api.listValidatingWebhookConfiguration(),
      ]);
      problem = approvalWebhooksProblem({ mutating: mutating.items, validating: validating.items });
    } catch (error) {
      const code = (error as { code?: number }).code;
      problem = `approvals are not accepted: the webhook configurations cannot be read${code !== undefined ? ` (HTTP ${code})` : ''}; grant the manager get/list on admissionregistration.k8s.io mutating- and validatingwebhookconfigurations`;
    }
    cached = { at: now, problem };
    return problem;
  };
}
