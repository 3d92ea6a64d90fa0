/**
 * vpodintent: an operation Pod runs exactly what its Job's Pod template says. The Job is what the
 * controller-write webhook held to the claim; the Pod the Job controller makes from it may add only what
 * the API server's own admission adds to every Pod (the default ServiceAccount name, priority, the default
 * not-ready/unreachable tolerations), and must be created by the Job controller, owned by that exact Job
 * (name and UID). An update changes nothing the template decided (the Job controller removing its tracking
 * finalizer aside), and no ephemeral container or resize reaches an operation Pod.
 */
import { canonicalJson, type CanonicalValue } from '../api/canonical-json.ts';
import { LABELS, MANAGED_BY } from '../api/meta.ts';
import { JOB_FAMILIES } from '../api/job-envelope.ts';
import { objectDifferences, writtenPart, type ServerFilled } from './object-differences.ts';
import { cachedThenLive, type Reads } from './reads.ts';
import { allowed, denied, errored, type AdmissionHandler } from './review.ts';

export const POD_INTENT_RULE = 'vpodintent';

/** Who creates a Job's Pods: the Job controller's ServiceAccount, or the controller manager's own identity. */
export const JOB_CONTROLLER_USERNAMES: readonly string[] = [
  'system:serviceaccount:kube-system:job-controller',
  'system:kube-controller-manager',
];

export interface PodIntentSources {
  /**
   * The Job as stored (its template defaulted by the API server), or undefined when there is none; from the
   * manager's caches or from the API server (see reads.ts).
   */
  readJob(namespace: string, name: string, reads: Reads): Promise<unknown>;
  readonly jobControllerUsernames?: readonly string[];
}

interface Meta {
  readonly name?: string;
  readonly uid?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly ownerReferences?: readonly {
    apiVersion?: string;
    kind?: string;
    name?: string;
    uid?: string;
    controller?: boolean;
  }[];
}
type Obj = Readonly<Record<string, unknown>> & { readonly metadata?: Meta };

/** What admission plugins every cluster runs by default add to a Pod the template does not have. */
const POD_SERVER_FILLED: readonly ServerFilled[] = [
  { path: 'spec.serviceAccountName', accepts: (v) => v === 'default' },
  { path: 'spec.serviceAccount', accepts: (v) => v === 'default' },
  { path: 'spec.priority', accepts: (v) => v === 0 },
  { path: 'spec.preemptionPolicy', accepts: (v) => v === 'PreemptLowerPriority' },
  {
    path: 'spec.tolerations',
    // Compared by value, whatever order a serializer wrote the keys in.
    accepts: (v) =>
      canonicalJson(v as CanonicalValue) ===
      canonicalJson(
        ['not-ready', 'unreachable'].map((t) => ({
          key: `node.kubernetes.io/${t}`,
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        })),
      ),
  },
];

export function validatePodIntent(sources: PodIntentSources): AdmissionHandler {
  const creators = sources.jobControllerUsernames ?? JOB_CONTROLLER_USERNAMES;
  return async (request) => {
    const who = request.userInfo.username ?? '';
    const pod = request.object as Obj | undefined;
    const name = pod?.metadata?.name ?? request.name ?? '';
    if (request.subResource === 'ephemeralcontainers' || request.subResource === 'resize') {
      return denied(
        `${POD_INTENT_RULE}: operation Pod ${name} runs its Job's template; no ${request.subResource} change reaches it`,
      );
    }
    if (pod === undefined || pod === null)
      return errored(400, `${POD_INTENT_RULE}: the request carries no Pod`);
    if (request.operation === 'UPDATE') {
      const differences = objectDifferences(intent(request.oldObject as Obj), intent(pod));
      if (differences.length === 0) return allowed();
      return denied(
        `${POD_INTENT_RULE}: operation Pod ${name} runs its Job's template unchanged; ${who || 'an anonymous requester'} changed: ${differences.join('; ')}`,
      );
    }
    if (request.operation !== 'CREATE') return allowed();
    if (!creators.includes(who)) {
      return denied(
        `${POD_INTENT_RULE}: only the Job controller creates operation Pods; ${who || 'an anonymous requester'} may not`,
      );
    }
    const ref = (pod.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
    if (ref?.kind !== 'Job' || ref.apiVersion !== 'batch/v1' || ref.name === undefined) {
      return denied(`${POD_INTENT_RULE}: operation Pod ${name} has no Job as its controller owner`);
    }
    const jobName = ref.name;
    return cachedThenLive(async (reads) => {
      const job = (await sources.readJob(request.namespace ?? '', jobName, reads)) as Obj | undefined;
      if (job === undefined || job.metadata?.uid !== ref.uid) {
        return denied(
          `${POD_INTENT_RULE}: operation Pod ${name} names Job ${ref.name} with UID ${ref.uid ?? ''}, which does not exist`,
        );
      }
      const labels = job.metadata?.labels ?? {};
      const families = Object.values(JOB_FAMILIES);
      if (
        labels[LABELS.managedBy] !== MANAGED_BY ||
        !families.some((f) => labels[LABELS.component] === f.component)
      ) {
        return denied(`${POD_INTENT_RULE}: Job ${ref.name} is not an operation Job of the manager`);
      }
      const template =
        ((job['spec'] ?? {}) as { template?: { metadata?: Meta; spec?: unknown } }).template ?? {};
      const expected = {
        metadata: {
          labels: template.metadata?.labels ?? {},
          annotations: template.metadata?.annotations ?? {},
        },
        spec: template.spec ?? {},
      };
      const differences = objectDifferences(expected, intent(pod), POD_SERVER_FILLED);
      if (differences.length > 0) {
        return denied(
          `${POD_INTENT_RULE}: operation Pod ${name} is not the template of Job ${ref.name}: ${differences.join('; ')}`,
        );
      }
      return allowed();
    });
  };
}

/** What a Pod runs and says about itself: its labels, annotations and spec (not where it is scheduled). */
function intent(pod: Obj | undefined): Readonly<Record<string, unknown>> {
  const w = writtenPart(pod) as { metadata: Meta; spec?: Record<string, unknown> };
  const { nodeName: _nodeName, ...spec } = w.spec ?? {};
  return {
    metadata: {
      ...(w.metadata.labels !== undefined ? { labels: w.metadata.labels } : {}),
      ...(w.metadata.annotations !== undefined ? { annotations: w.metadata.annotations } : {}),
    },
    spec,
  };
}

/** CEL over `object` and `oldObject`: the Pods this webhook judges, by what marks them as an operation's. */
export function podIntentMatch(): string {
  const p =
    `((has(o.metadata.labels) && '${LABELS.managedBy}' in o.metadata.labels && o.metadata.labels['${LABELS.managedBy}'] == '${MANAGED_BY}')` +
    ` || (has(o.metadata.ownerReferences) && o.metadata.ownerReferences.exists(r, r.kind == 'Job' && r.name.startsWith('${JOB_FAMILIES.schema.namePrefix}'))))`;
  return `(object != null && [object].exists(o, ${p})) || (oldObject != null && [oldObject].exists(o, ${p}))`;
}
