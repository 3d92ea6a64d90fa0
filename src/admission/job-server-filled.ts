/**
 * The fields the API server fills in on a Job the manager built: what the controller-write webhook admits
 * beside the rebuilt Job, and what a successor manager accepts on a Job it adopts (jobs/job-adoption.ts).
 */
import type { ServerFilled } from './object-differences.ts';

/**
 * What the API server adds to a Job before admission sees it: the defaults of a Job and its Pod template,
 * and the selector with the Pod labels it derives from the Job's UID and name.
 */
export const JOB_SERVER_FILLED: readonly ServerFilled[] = [
  {
    path: 'spec.selector',
    accepts: (v, o) => sameJson(v, { matchLabels: { 'batch.kubernetes.io/controller-uid': uidOf(o) } }),
  },
  { path: 'spec.completionMode', accepts: (v) => v === 'NonIndexed' },
  { path: 'spec.suspend', accepts: (v) => v === false },
  { path: 'spec.manualSelector', accepts: (v) => v === false },
  { path: 'spec.podReplacementPolicy', accepts: (v) => v === 'TerminatingOrFailed' },
  {
    path: 'spec.template.metadata.labels["batch.kubernetes.io/controller-uid"]',
    accepts: (v, o) => v === uidOf(o),
  },
  { path: 'spec.template.metadata.labels["controller-uid"]', accepts: (v, o) => v === uidOf(o) },
  {
    path: 'spec.template.metadata.labels["batch.kubernetes.io/job-name"]',
    accepts: (v, o) => v === nameOf(o),
  },
  { path: 'spec.template.metadata.labels["job-name"]', accepts: (v, o) => v === nameOf(o) },
  { path: 'spec.template.spec.dnsPolicy', accepts: (v) => v === 'ClusterFirst' },
  { path: 'spec.template.spec.schedulerName', accepts: (v) => v === 'default-scheduler' },
  ...(['containers', 'initContainers'] as const).flatMap((list) => [
    {
      path: `spec.template.spec.${list}[*].imagePullPolicy`,
      accepts: (v: unknown) => v === 'IfNotPresent' || v === 'Always',
    },
    { path: `spec.template.spec.${list}[*].resources`, accepts: (v: unknown) => sameJson(v, {}) },
    {
      path: `spec.template.spec.${list}[*].env[*].valueFrom.fieldRef.apiVersion`,
      accepts: (v: unknown) => v === 'v1',
    },
  ]),
  { path: 'spec.template.spec.volumes[*].configMap.defaultMode', accepts: (v) => v === 0o644 },
  { path: 'spec.template.spec.volumes[*].secret.defaultMode', accepts: (v) => v === 0o644 },
  { path: 'spec.template.spec.volumes[*].projected.defaultMode', accepts: (v) => v === 0o644 },
];

function uidOf(o: Readonly<Record<string, unknown>>): string | undefined {
  return (o['metadata'] as { readonly uid?: string } | undefined)?.uid;
}

function nameOf(o: Readonly<Record<string, unknown>>): string | undefined {
  return (o['metadata'] as { readonly name?: string } | undefined)?.name;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
