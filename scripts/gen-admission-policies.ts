/**
 * Writes the Helm chart's admission-policy template from src/admission/admission-policies.ts (and the tail of
 * webhook.yaml, the vcontrollerwrite/vpodintent configuration, from src/admission/webhook-configurations.ts), so the chart
 * installs exactly the CEL the code and the test environments hold. The release fixes two literals at
 * install: the manager's ServiceAccount username (release namespace) and the manager image (values.image);
 * the controller-state version is the code's own and is written here.
 * Run: node --import tsx scripts/gen-admission-policies.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { admissionPolicies } from '../src/admission/admission-policies.ts';
import { approvalWebhookConfigurations } from '../src/admission/webhook-configurations.ts';
import { WEBHOOK_PATHS } from '../src/admission/webhooks.ts';
import { CONTROLLER_STATE_VERSION } from '../src/api/meta.ts';

export const ADMISSION_POLICY_TEMPLATE = 'deploy/helm/ptah-operator/templates/admission-policies.yaml';
export const WEBHOOK_TEMPLATE = 'deploy/helm/ptah-operator/templates/webhook.yaml';
/** webhook.yaml from this line on is written here; above it is the chart's own (certificate, Service, decisions). */
export const CONTROLLER_WEBHOOKS_MARK =
  '{{- /* Generated below by scripts/gen-admission-policies.ts; do not edit by hand. */}}';

/**
 * The vcontrollerwrite and vpodintent configuration as the chart installs it: the code's rules, match
 * conditions and failure policy, reached through the Service with the chart's caBundle and timeouts.
 */
export function controllerWebhookTemplate(): string {
  const { controller } = approvalWebhookConfigurations({ baseUrl: 'https://unused', caBundle: 'unused' });
  const hooks = controller.webhooks!.map((w) => {
    const path = new URL(w.clientConfig.url!).pathname;
    const timeout = path === WEBHOOK_PATHS.vcontrollerwrite ? '@@CONTROLLER_WRITE_TIMEOUT@@' : '@@TIMEOUT@@';
    return { ...w, clientConfig: `@@CLIENT_CONFIG ${path}@@`, timeoutSeconds: timeout };
  });
  const body = stringify({ webhooks: hooks }, { lineWidth: 0 })
    .replace(/ ?["']?@@CLIENT_CONFIG (\/[a-z]+)@@["']?/g, (_m, path: string) =>
      [
        '',
        '      service:',
        '        name: {{ $svc }}',
        '        namespace: {{ $.Release.Namespace }}',
        `        path: ${path}`,
        '        port: 443',
        '      {{- if not $.Values.webhook.certManager.enabled }}',
        '      caBundle: {{ $caBundle }}',
        '      {{- end }}',
      ].join('\n'),
    )
    .replace(
      /["']?@@CONTROLLER_WRITE_TIMEOUT@@["']?/g,
      '{{ $.Values.webhook.controllerWriteTimeoutSeconds }}',
    )
    .replace(/["']?@@TIMEOUT@@["']?/g, '{{ $.Values.webhook.timeoutSeconds }}');
  return [
    CONTROLLER_WEBHOOKS_MARK,
    '---',
    'apiVersion: admissionregistration.k8s.io/v1',
    'kind: ValidatingWebhookConfiguration',
    'metadata:',
    `  name: ${controller.metadata!.name}`,
    '  labels:',
    '    {{- include "ptah.labels" $ | nindent 4 }}',
    '  {{- if $.Values.webhook.certManager.enabled }}',
    '  annotations:',
    '    cert-manager.io/inject-ca-from: {{ $.Release.Namespace }}/ptah-operator-webhook',
    '  {{- end }}',
    body.trimEnd(),
    '',
  ].join('\n');
}

/** webhook.yaml with its generated tail rewritten. */
export function webhookTemplate(current: string): string {
  const at = current.indexOf(CONTROLLER_WEBHOOKS_MARK);
  const head = at < 0 ? current.trimEnd() + '\n' : current.slice(0, at);
  return head + controllerWebhookTemplate();
}

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
  const webhooks = join(root, WEBHOOK_TEMPLATE);
  writeFileSync(webhooks, webhookTemplate(readFileSync(webhooks, 'utf8')));
  console.log(`wrote ${WEBHOOK_TEMPLATE}`);
}
