/**
 * The Job policy: the manager creates a Job of the schema shape or the migration shape and nothing else, and
 * changes nothing of it afterwards but the cleanup TTL. It judges every Job the manager sends and every Job
 * that claims to be an operation Job (the managed-by label, the envelope's operation id, or a controller
 * owner of a Ptah kind), whoever sends it.
 *
 * The shape (src/controller/jobs/operation-job.ts builds it; src/api/job-envelope.ts names its parts): the
 * five labels of its family, one controller owner of the family's kind named by the resource label, the
 * name `ptah-[m-]<operation>-[<resource>-]<16 hex of the operation id>`, the annotation envelope exactly
 * (eight, a schema Apply ten) on the Job and its Pod template alike, one attempt, no TTL at creation, the
 * hardened Pod (no token, no service links, no host namespaces, non-root 65532, RuntimeDefault seccomp),
 * one main container `ptah` and only the known init containers, all of one image and hardened, the database
 * URL the one value taken from a Secret and only by the main container, and only the known volumes.
 *
 * The release's manager image and controller-state version are literals here: a Job stamped by another
 * manager release is refused at creation. An update keeps everything (the envelope included: a Job without
 * the controller identity is refused on update too) and may add only ttlSecondsAfterFinished 300 to a Job
 * that had none, which is how a successor release cleans up a terminal Job its predecessor left.
 */
import {
  ARTIFACT_OPERATIONS,
  CONTROLLER_IDENTITY,
  INIT_CONTAINERS,
  JOB_ANNOTATIONS as A,
  JOB_ENVELOPE,
  JOB_FAMILIES,
  JOB_VOLUMES,
  MAIN_CONTAINER,
  RUNNER_UID,
  SCHEMA_APPLY_ENVELOPE,
  SNAPSHOT_CHECK_CONTAINER,
} from '../../api/job-envelope.ts';
import { API_GROUP, GROUP_VERSION, LABELS, MANAGED_BY } from '../../api/meta.ts';
import { RUNNER_PROTOCOL_VERSION } from '../../protocol/result.ts';
import {
  byManager,
  celString as q,
  celStrings,
  guardPolicy,
  type GuardPolicy,
  type ReleaseIdentity,
} from './cel.ts';

export const JOB_POLICY_NAME = 'ptah-job-shape';
export const FINISHED_JOB_TTL = 300;

/** What the Job controller adds to a Pod template at creation; the template may carry these besides ours. */
const JOB_CONTROLLER_LABELS = [
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
  'controller-uid',
  'job-name',
];

const SHA256 = "'^sha256:[0-9a-f]{64}$'";

/** Whether `o` says it is an operation Job. */
function claimsOperationJob(o: string): string {
  const kinds = celStrings(Object.values(JOB_FAMILIES).map((f) => f.ownerKind));
  return (
    `(has(${o}.metadata.labels) && ${q(LABELS.managedBy)} in ${o}.metadata.labels && ${o}.metadata.labels[${q(LABELS.managedBy)}] == ${q(MANAGED_BY)}) || ` +
    `(has(${o}.metadata.annotations) && ${q(A.operationId)} in ${o}.metadata.annotations) || ` +
    `(has(${o}.metadata.ownerReferences) && ${o}.metadata.ownerReferences.exists(r, r.apiVersion.startsWith(${q(`${API_GROUP}/`)}) && r.kind in ${kinds}))`
  );
}

export function jobPolicy(release: ReleaseIdentity): GuardPolicy {
  const s = JOB_FAMILIES.schema;
  const m = JOB_FAMILIES.migration;
  const ann = (k: string) => `variables.annotations[?${q(k)}].orValue('')`;
  const create = (expr: string) => `request.operation != 'CREATE' || (${expr})`;
  const envelopeMsg = `${JOB_ENVELOPE.join(', ')}; a schema Apply adds ${SCHEMA_APPLY_ENVELOPE.join(' and ')}`;
  const hardened = (c: string) =>
    `has(${c}.securityContext) && ${c}.securityContext.?runAsNonRoot == optional.of(true) && ${c}.securityContext.?readOnlyRootFilesystem == optional.of(true) && ${c}.securityContext.?allowPrivilegeEscalation == optional.of(false) && ${c}.securityContext.?privileged.orValue(false) == false && ${c}.securityContext.?capabilities.drop.orValue([]) == ['ALL'] && !has(${c}.securityContext.capabilities.add)`;
  return guardPolicy(JOB_POLICY_NAME, {
    matchConstraints: {
      resourceRules: [
        { apiGroups: ['batch'], apiVersions: ['*'], resources: ['jobs'], operations: ['CREATE', 'UPDATE'] },
      ],
    },
    matchConditions: [
      {
        name: 'an-operation-job',
        expression: `${byManager(release)} || ${claimsOperationJob('object')} || (oldObject != null && (${claimsOperationJob('oldObject')}))`,
      },
    ],
    variables: [
      { name: 'labels', expression: 'has(object.metadata.labels) ? object.metadata.labels : {}' },
      {
        name: 'annotations',
        expression: 'has(object.metadata.annotations) ? object.metadata.annotations : {}',
      },
      {
        name: 'family',
        expression: `${q(LABELS.component)} in variables.labels && variables.labels[${q(LABELS.component)}] == ${q(m.component)} ? 'migration' : 'schema'`,
      },
      {
        name: 'shape',
        expression: `variables.family == 'migration' ? {'component': ${q(m.component)}, 'kind': ${q(m.ownerKind)}, 'resource': ${q(m.ownerLabel)}, 'prefix': ${q(m.namePrefix)}} : {'component': ${q(s.component)}, 'kind': ${q(s.ownerKind)}, 'resource': ${q(s.ownerLabel)}, 'prefix': ${q(s.namePrefix)}}`,
      },
      {
        name: 'operations',
        expression: `variables.family == 'migration' ? ${celStrings(m.operations)} : ${celStrings(s.operations)}`,
      },
      {
        name: 'operation',
        expression: `${q(LABELS.operation)} in variables.labels ? variables.labels[${q(LABELS.operation)}] : ''`,
      },
      {
        name: 'schemaApply',
        expression: `variables.family == 'schema' && variables.operation == 'apply'`,
      },
      {
        name: 'envelope',
        expression: `variables.schemaApply ? ${celStrings([...JOB_ENVELOPE, ...SCHEMA_APPLY_ENVELOPE])} : ${celStrings(JOB_ENVELOPE)}`,
      },
      // Resolve and Verify are bound to no content yet: the content digest is the one key they may lack.
      {
        name: 'required',
        expression: `variables.operation in ${celStrings(ARTIFACT_OPERATIONS)} ? variables.envelope.filter(k, k != ${q(A.contentDigest)}) : variables.envelope`,
      },
      {
        name: 'operationId',
        expression: `${q(A.operationId)} in variables.annotations && variables.annotations[${q(A.operationId)}].matches(${SHA256}) ? variables.annotations[${q(A.operationId)}].substring(7, 23) : ''`,
      },
      { name: 'pod', expression: 'object.spec.template.spec' },
      {
        name: 'initContainers',
        expression:
          'has(object.spec.template.spec.initContainers) ? object.spec.template.spec.initContainers : []',
      },
      {
        name: 'image',
        expression: `object.spec.template.spec.containers.exists(c, c.name == ${q(MAIN_CONTAINER)}) ? object.spec.template.spec.containers.filter(c, c.name == ${q(MAIN_CONTAINER)})[0].image : ''`,
      },
    ],
    validations: [
      {
        expression: `${celStrings(CONTROLLER_IDENTITY)}.all(k, k in variables.annotations)`,
        messageExpression: `'Job ' + object.metadata.name + ' carries no controller identity (' + ${q(CONTROLLER_IDENTITY.join(', '))} + '): only a Job the Ptah manager built may claim to be an operation Job'`,
        reason: 'Forbidden',
      },
      {
        expression: `variables.required.all(k, k in variables.annotations) && variables.annotations.all(k, k in variables.envelope)`,
        messageExpression: `'Job ' + object.metadata.name + ' does not carry the annotation envelope as a set: exactly ' + ${q(envelopeMsg)}`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `${ann(A.managerImage)} == ${q(release.managerImage)} && ${ann(A.controllerStateVersion)} == ${q(String(release.controllerStateVersion))}`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ' was stamped by manager image ' + ${ann(A.managerImage)} + ' at controller-state version ' + ${ann(A.controllerStateVersion)} + '; this release runs ' + ${q(`${release.managerImage} at controller-state version ${release.controllerStateVersion}`)}`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `${ann(A.runnerProtocolVersion)} == ${q(String(RUNNER_PROTOCOL_VERSION))} && ${ann(A.managerRevision)} != '' && ${ann(A.ptahVersion)} != '' && ${celStrings([A.operationId, A.inputsFingerprint, A.contentDigest])}.all(k, !(k in variables.required) || variables.annotations[?k].orValue('').matches(${SHA256})) && (!variables.schemaApply || ${celStrings(SCHEMA_APPLY_ENVELOPE)}.all(k, variables.annotations[?k].orValue('').matches(${SHA256})))`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ' has a malformed envelope: the digests are sha256:<64 hex>, the runner protocol is ' + ${q(String(RUNNER_PROTOCOL_VERSION))} + ', the revision and Ptah version are set'`,
        reason: 'Invalid',
      },
      {
        expression: create(
          `variables.labels.all(k, k in [${q(LABELS.managedBy)}, ${q(LABELS.component)}, variables.shape.resource, ${q(LABELS.operation)}, ${q(LABELS.operationId)}]) && size(variables.labels) == 5 && variables.labels[?${q(LABELS.managedBy)}] == optional.of(${q(MANAGED_BY)}) && variables.labels[?${q(LABELS.component)}] == optional.of(variables.shape.component) && variables.operation in variables.operations && variables.labels[?${q(LABELS.operationId)}] == optional.of(variables.operationId)`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ' does not carry exactly the labels of a ' + variables.family + ' operation: ' + ${q(`${LABELS.managedBy}=${MANAGED_BY}, ${LABELS.component}, `)} + variables.shape.resource + ', ' + ${q(`${LABELS.operation} (`)} + variables.operations.join('|') + ${q(`), ${LABELS.operationId} (16 hex of the operation id)`)}`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `variables.operationId != '' && object.metadata.name.matches('^' + variables.shape.prefix + variables.operation + '-([a-z0-9][-a-z0-9]*-)?' + variables.operationId + '$')`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ' is not named ' + variables.shape.prefix + '<operation>-<resource>-<16 hex of the operation id>'`,
        reason: 'Invalid',
      },
      {
        expression: create(
          `has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) == 1 && object.metadata.ownerReferences.all(r, r.apiVersion == ${q(GROUP_VERSION)} && r.kind == variables.shape.kind && variables.shape.resource in variables.labels && r.name == variables.labels[variables.shape.resource] && r.?controller == optional.of(true) && r.?blockOwnerDeletion == optional.of(true))`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ' must have exactly one owner, the controller reference to the ' + variables.shape.kind + ' its ' + variables.shape.resource + ' label names, blocking its deletion'`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `has(object.spec.template.metadata) && object.spec.template.metadata.?annotations.orValue({}) == variables.annotations && variables.labels.all(k, k in object.spec.template.metadata.?labels.orValue({}) && object.spec.template.metadata.labels[k] == variables.labels[k]) && object.spec.template.metadata.?labels.orValue({}).all(k, k in variables.labels || k in ${celStrings(JOB_CONTROLLER_LABELS)})`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ': its Pod template must carry the Job\\'s labels and annotations exactly'`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `object.spec.?parallelism == optional.of(1) && object.spec.?completions == optional.of(1) && object.spec.?backoffLimit == optional.of(0) && has(object.spec.activeDeadlineSeconds) && variables.pod.?activeDeadlineSeconds == optional.of(object.spec.activeDeadlineSeconds) && !has(object.spec.ttlSecondsAfterFinished) && !object.spec.?suspend.orValue(false) && !object.spec.?manualSelector.orValue(false) && object.spec.?completionMode.orValue('NonIndexed') == 'NonIndexed' && !has(object.spec.podFailurePolicy) && !has(object.spec.successPolicy)`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ': an operation runs once (parallelism 1, completions 1, backoffLimit 0, not suspended, no selector of its own) under one deadline on the Job and the Pod, with no TTL until it is over'`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `variables.pod.?restartPolicy == optional.of('Never') && variables.pod.?automountServiceAccountToken == optional.of(false) && variables.pod.?enableServiceLinks == optional.of(false) && !variables.pod.?hostNetwork.orValue(false) && !variables.pod.?hostPID.orValue(false) && !variables.pod.?hostIPC.orValue(false) && variables.pod.?securityContext.runAsNonRoot == optional.of(true) && variables.pod.?securityContext.runAsUser == optional.of(${RUNNER_UID}) && variables.pod.?securityContext.seccompProfile.type == optional.of('RuntimeDefault') && !has(variables.pod.ephemeralContainers)`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ': the operation Pod has no ServiceAccount token, no service links, no host namespace, runs as non-root ${RUNNER_UID} under the RuntimeDefault seccomp profile, and never restarts'`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `size(variables.pod.containers) == 1 && variables.pod.containers[0].name == ${q(MAIN_CONTAINER)} && variables.initContainers.all(c, c.name in ${celStrings(INIT_CONTAINERS)}) && variables.initContainers.all(c, c.name != ${q(SNAPSHOT_CHECK_CONTAINER)} || (!variables.schemaApply && c.?args.orValue([]).exists(a, a == ${ann(A.contentDigest)}))) && (!variables.pod.?volumes.orValue([]).exists(v, v.name == 'snapshot') || variables.initContainers.exists(c, c.name == ${q(SNAPSHOT_CHECK_CONTAINER)})) && (!variables.schemaApply || size(variables.initContainers) == 0)`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ': one main container ' + ${q(MAIN_CONTAINER)} + ' and no init container but ' + ${q(INIT_CONTAINERS.join(', '))} + '; a snapshot is mounted only through its check against the content digest of the envelope, and a schema Apply has no init container'`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `variables.image != '' && (variables.pod.containers + variables.initContainers).all(c, c.image == variables.image && (${hardened('c')}) && !has(c.envFrom) && !has(c.ports) && !has(c.volumeDevices) && c.?env.orValue([]).all(e, !has(e.valueFrom) || (c.name == ${q(MAIN_CONTAINER)} && e.name == 'PTAH_DB_URL' && has(e.valueFrom.secretKeyRef))))`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ': every container runs the one runner image (' + variables.image + '), non-root with a read-only root filesystem, no privilege escalation and every capability dropped, with no ports, no envFrom and no value from elsewhere but PTAH_DB_URL from a Secret in the main container'`,
        reason: 'Forbidden',
      },
      {
        expression: create(
          `variables.pod.?volumes.orValue([]).all(v, ${Object.entries(JOB_VOLUMES)
            .map(([name, source]) => `(v.name == ${q(name)} && has(v.${source}))`)
            .join(
              ' || ',
            )}) && variables.pod.?volumes.orValue([]).all(v, (v.name != 'snapshot' || v.configMap.name.startsWith('ptah-src-')) && (v.name != 'plan' || (variables.schemaApply && v.projected.sources.all(p, has(p.configMap) && !has(p.secret) && !has(p.serviceAccountToken) && !has(p.downwardAPI) && !has(p.clusterTrustBundle) && p.configMap.name.startsWith('ptah-plan-')))))`,
        ),
        messageExpression: `'Job ' + object.metadata.name + ': the only volumes are ' + ${q(
          Object.entries(JOB_VOLUMES)
            .map(([n, t]) => `${n} (${t})`)
            .join(', '),
        )} + '; snapshot is its ptah-src- ConfigMap and plan, on a schema Apply only, its ptah-plan- chunks, projected'`,
        reason: 'Forbidden',
      },
      {
        expression: `request.operation != 'UPDATE' || (object.metadata.?labels == oldObject.metadata.?labels && object.metadata.?annotations == oldObject.metadata.?annotations && object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences && object.spec.template == oldObject.spec.template && object.spec.?parallelism == oldObject.spec.?parallelism && object.spec.?completions == oldObject.spec.?completions && object.spec.?backoffLimit == oldObject.spec.?backoffLimit && object.spec.?activeDeadlineSeconds == oldObject.spec.?activeDeadlineSeconds && object.spec.?suspend == oldObject.spec.?suspend && object.spec.?manualSelector == oldObject.spec.?manualSelector && object.spec.?podFailurePolicy == oldObject.spec.?podFailurePolicy && object.spec.?successPolicy == oldObject.spec.?successPolicy && (object.spec.?ttlSecondsAfterFinished == oldObject.spec.?ttlSecondsAfterFinished || (!has(oldObject.spec.ttlSecondsAfterFinished) && object.spec.?ttlSecondsAfterFinished == optional.of(${FINISHED_JOB_TTL}))))`,
        messageExpression: `'Job ' + object.metadata.name + ' is an operation Job: nothing of it changes after creation but the cleanup TTL, set once to ${FINISHED_JOB_TTL}'`,
        reason: 'Forbidden',
      },
    ],
  });
}
