/**
 * Fail closed on approvals: the manager accepts an approval only while the approval webhooks are
 * registered as it serves them, since only they stamp who approved, and only approvals created after the
 * guard was registered. Read from the API server on every pass (two small cluster-scoped lists); a read
 * that fails (no permission, API down) counts as "not registered".
 */
import type * as k8s from '@kubernetes/client-node';
import type { DecisionKind } from '../../admission/decisions.ts';
import { approvalWebhookGuard } from '../../admission/webhook-configurations.ts';

/** Either why no approval is accepted, or since when approvals are guarded (older ones are not accepted). */
export type ApprovalGateState =
  { readonly ok: false; readonly reason: string } | { readonly ok: true; readonly since: Date };
export type ApprovalGate = () => Promise<ApprovalGateState>;

export function approvalWebhookGate(
  api: Pick<
    k8s.AdmissionregistrationV1Api,
    'listMutatingWebhookConfiguration' | 'listValidatingWebhookConfiguration'
  >,
  options: {
    readonly ttlMs?: number;
    readonly clock?: () => number;
    /** The decision kinds whose webhooks must all be registered; a schema approval's by default. */
    readonly kinds?: readonly DecisionKind[];
  } = {},
): ApprovalGate {
  const kinds = options.kinds ?? ['PtahSchemaApproval'];
  // No cache by default: a webhook removed a moment ago must not let through an approval created since.
  const ttlMs = options.ttlMs ?? 0;
  const clock = options.clock ?? Date.now;
  let cached: { at: number; state: ApprovalGateState } | undefined;
  return async () => {
    const now = clock();
    if (cached !== undefined && now - cached.at < ttlMs) return cached.state;
    let state: ApprovalGateState;
    try {
      const [mutating, validating] = await Promise.all([
        api.listMutatingWebhookConfiguration(),
        api.listValidatingWebhookConfiguration(),
      ]);
      const registered = { mutating: mutating.items, validating: validating.items };
      const guards = kinds.map((kind) => approvalWebhookGuard(registered, kind));
      const problem = guards.find((g) => g.problem !== undefined)?.problem;
      // Guarded since the latest of them: a decision older than any guard may have passed none.
      const since = guards.reduce<Date | undefined>(
        (latest, g) =>
          g.since !== undefined && (latest === undefined || g.since > latest) ? g.since : latest,
        undefined,
      );
      state =
        problem === undefined ? { ok: true, since: since ?? new Date(now) } : { ok: false, reason: problem };
    } catch (error) {
      const code = (error as { code?: number }).code;
      state = {
        ok: false,
        reason: `approvals are not accepted: the webhook configurations cannot be read${code !== undefined ? ` (HTTP ${code})` : ''}; grant the manager get/list on admissionregistration.k8s.io mutating- and validatingwebhookconfigurations`,
      };
    }
    cached = { at: now, state };
    return state;
  };
}
