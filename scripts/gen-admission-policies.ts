/**
 * Writes the Helm chart's admission-policy template from src/admission/admission-policies.ts (and the tail of
 * webhook.yaml, the vcontrollerwrite/vpodintent configuration, from src/admission/webhook-configurations.ts), so the chart
 * installs exactly the CEL the code and the test environments hold. The release fixes two literals at
 * install: the manager's ServiceAccount username (release namespace) and the manager image (values.image);
 * the controller-state version is the code's own and is written here.
 * Writes the same policies and every webhook configuration as plain manifests into deploy/admission/ too,
 * for an install without Helm beside deploy/crds and deploy/rbac (see plainAdmissionManifests).
 * Run: node --import tsx scripts/gen-admission-policies.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { admissionPolicies, managerServiceAccountUsername } from '../src/admission/admission-policies.ts';
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

/**
 * The chart's admission-policy template. `controllerStateVersion` is the code's own; another is given only by
 * the upgrade tests, which build a release of another controller-state version (test/env/operator-build.ts).
 */
export function admissionPolicyTemplate(controllerStateVersion = CONTROLLER_STATE_VERSION): string {
  const docs = admissionPolicies({
    managerUsername: MANAGER,
    managerImage: IMAGE,
    controllerStateVersion,
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

export const PLAIN_ADMISSION_DIR = 'deploy/admission';
/** Where deploy/rbac/manager.yaml puts the manager's ServiceAccount; the plain manifests exempt it. */
export const PLAIN_RBAC = 'deploy/rbac/manager.yaml';
/** The Service the plain webhook configurations call, in the manager's namespace (the chart's name). */
export const PLAIN_WEBHOOK_SERVICE = 'ptah-operator-webhook';
/**
 * What only the installer knows, left in the plain manifests as `${NAME}` for envsubst: the manager image
 * the typed policies hold Jobs and plans to, and the base64 PEM of the CA that signed the webhook serving
 * certificate. Nothing else in them is `${…}`.
 */
export const PLAIN_VARIABLES = ['PTAH_MANAGER_IMAGE', 'PTAH_WEBHOOK_CA_BUNDLE'] as const;
const variable = (name: (typeof PLAIN_VARIABLES)[number]) => `\${${name}}`;

/** The manager's ServiceAccount as deploy/rbac/manager.yaml declares it. */
export function plainManagerServiceAccount(rbacYaml: string): { namespace: string; name: string } {
  const account = parseAllDocuments(rbacYaml)
    .map((d) => d.toJSON() as { kind?: string; metadata?: { name?: string; namespace?: string } } | null)
    .find((o) => o?.kind === 'ServiceAccount');
  const { name, namespace } = account?.metadata ?? {};
  if (name === undefined || namespace === undefined)
    throw new Error(`${PLAIN_RBAC} declares no namespaced ServiceAccount for the manager`);
  return { namespace, name };
}

/**
 * deploy/admission/, by file name: the policies and their bindings, and the three webhook configurations
 * reaching the manager through the Service PLAIN_WEBHOOK_SERVICE in its namespace (port 443, as the chart).
 */
export function plainAdmissionManifests(rbacYaml: string): Readonly<Record<string, string>> {
  const account = plainManagerServiceAccount(rbacYaml);
  const header = (what: string) =>
    [
      `# ${what}`,
      `# Written by scripts/gen-admission-policies.ts from src/admission/; do not edit by hand (a unit test holds`,
      "# it equal to the code). ${PTAH_MANAGER_IMAGE} and ${PTAH_WEBHOOK_CA_BUNDLE} are the installer's: render",
      '# with envsubst naming exactly them, as docs/install.md shows (Install without Helm).',
    ].join('\n');
  const yaml = (docs: readonly object[]) =>
    docs.map((d) => stringify(d, { lineWidth: 0, singleQuote: true }).trimEnd()).join('\n---\n') + '\n';
  const policies = admissionPolicies({
    managerUsername: managerServiceAccountUsername(account.namespace, account.name),
    managerImage: variable('PTAH_MANAGER_IMAGE'),
    controllerStateVersion: CONTROLLER_STATE_VERSION,
  }).flatMap((p) => [p.policy, p.binding]);
  const { mutating, validating, controller } = approvalWebhookConfigurations({
    baseUrl: 'https://unused',
    caBundle: variable('PTAH_WEBHOOK_CA_BUNDLE'),
  });
  const throughService = <C extends { webhooks?: { clientConfig: { url?: string; caBundle?: string } }[] }>(
    c: C,
  ): C => ({
    ...c,
    webhooks: c.webhooks!.map((w) => ({
      ...w,
      clientConfig: {
        service: {
          name: PLAIN_WEBHOOK_SERVICE,
          namespace: account.namespace,
          path: new URL(w.clientConfig.url!).pathname,
          port: 443,
        },
        caBundle: w.clientConfig.caBundle,
      },
    })),
  });
  return {
    'policies.yaml': `${header(
      'The ValidatingAdmissionPolicies and their bindings: the manager ServiceAccount of deploy/rbac/manager.yaml is the one exempt identity.',
    )}\n${yaml(policies)}`,
    'webhooks.yaml': `${header(
      `The webhook configurations, failing closed: the API server calls Service ${PLAIN_WEBHOOK_SERVICE} in ${account.namespace}, port 443.`,
    )}\n${yaml([mutating, validating, controller].map(throughService))}`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const plain = plainAdmissionManifests(readFileSync(join(root, PLAIN_RBAC), 'utf8'));
  for (const [file, text] of Object.entries(plain)) {
    writeFileSync(join(root, PLAIN_ADMISSION_DIR, file), text);
    console.log(`wrote ${PLAIN_ADMISSION_DIR}/${file}`);
  }
  writeFileSync(join(root, ADMISSION_POLICY_TEMPLATE), admissionPolicyTemplate());
  console.log(`wrote ${ADMISSION_POLICY_TEMPLATE}`);
  const webhooks = join(root, WEBHOOK_TEMPLATE);
  writeFileSync(webhooks, webhookTemplate(readFileSync(webhooks, 'utf8')));
  console.log(`wrote ${WEBHOOK_TEMPLATE}`);
}
