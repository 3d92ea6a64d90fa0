/**
 * Writes the Helm chart's admission-policy template from src/admission/admission-policies.ts, so the chart
 * installs exactly the CEL the code and the test environments hold. The release fixes two literals at
 * install: the manager's ServiceAccount username (release namespace) and the manager image (values.image);
 * the controller-state version is the code's own and is written here.
 * Run: node --import tsx scripts/gen-admission-policies.ts
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { admissionPolicies } from '../src/admission/admission-policies.ts';
import { CONTROLLER_STATE_VERSION } from '../src/api/meta.ts';

export const ADMISSION_POLICY_TEMPLATE = 'deploy/helm/ptah-operator/templates/admission-policies.yaml';

// Stand-ins no real username or image can be, replaced by the template expressions below.
const MANAGER = '@@PTAH_MANAGER_USERNAME@@';
const IMAGE = '@@PTAH_MANAGER_IMAGE@@';

export function admissionPolicyTemplate(): string {
  const docs = admissionPolicies({
    managerUsername: MANAGER,
    managerImage: IMAGE,
    controllerStateVersion: CONTROLLER_STATE_VERSION,
  }).flatMap((p) => [p.policy, p.binding]);
  const body = docs
    .map((o) =>
      [
        `apiVersion: ${o.apiVersion}`,
        `kind: ${o.kind}`,
        'metadata:',
        `  name: ${o.metadata!.name}`,
        '  labels:',
        '    {{- include "ptah.labels" . | nindent 4 }}',
        stringify({ spec: o.spec }, { lineWidth: 0 }).trimEnd(),
      ].join('\n'),
    )
    .join('\n---\n')
    .replaceAll(MANAGER, '{{ $manager }}')
    .replaceAll(IMAGE, '{{ $image }}');
  return [
    '{{- /*',
    'Written by scripts/gen-admission-policies.ts from src/admission/admission-policies.ts; do not edit by hand',
    '(a test renders the chart and holds it equal to the code). The modules under src/admission/policies/ say',
    'why each policy exists. An upgrade replaces them in place, with the new manager image as their literal.',
    '*/ -}}',
    '{{- $manager := printf "system:serviceaccount:%s:%s" .Release.Namespace (include "ptah.serviceAccount" .) -}}',
    '{{- $image := include "ptah.imageRef" .Values.image -}}',
    body,
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  writeFileSync(join(root, ADMISSION_POLICY_TEMPLATE), admissionPolicyTemplate());
  console.log(`wrote ${ADMISSION_POLICY_TEMPLATE}`);
}
