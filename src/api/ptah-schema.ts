/**
 * PtahSchema: a database schema (and reference rows) declared from a source, converged by the operator.
 *
 * The source is a ConfigMap, an OCI artifact or a Git repository; `DESIRED_SOURCE_KINDS` lists the members
 * of `spec.desired` so the exactly-one-source rule names every one of them.
 */
import { DURATION_PATTERN } from './duration.ts';
import { SERVER_PRODUCTS, SERVER_VERSION_PATTERN } from '../protocol/result.ts';
import { TABLE_NAME_PATTERN } from '../protocol/table-name.ts';
import {
  API_GROUP,
  CONFIG_MAP_KEY_PATTERN,
  conditions,
  observedGeneration,
  digest,
  objectName,
  objectRef,
  timestamp,
  uid,
  type ObjectMeta,
} from './meta.ts';
import { approver } from './ptah-schema-approval.ts';
import {
  array,
  boolean,
  defaulted,
  described,
  enumOf,
  integer,
  object,
  optional,
  string,
  withRules,
  type Infer,
} from './schema-dsl.ts';

export const SCHEMA_PHASES = [
  'Pending',
  'Resolving',
  'Verifying',
  'Observing',
  'Planning',
  'AwaitingApproval',
  'ReadyToApply',
  'Applying',
  'VerifyingConvergence',
  'InSync',
  'Blocked',
  'Failed',
  'Suspended',
] as const;
export type SchemaPhase = (typeof SCHEMA_PHASES)[number];

export const SCHEMA_CONDITION_TYPES = [
  'ArtifactResolved',
  'ArtifactVerified',
  'EngineSupported',
  'DatabaseReachable',
  'DriftDetected',
  'PlanReady',
  'ApprovalRequired',
  'Applying',
  'InSync',
  'Ready',
  'Suspended',
  'ReconciliationFailed',
] as const;
export type SchemaConditionType = (typeof SCHEMA_CONDITION_TYPES)[number];

export const OPERATION_TYPES = ['Resolve', 'Verify', 'Observe', 'Plan', 'Apply'] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export const APPLY_POLICIES = ['Never', 'OnApproval', 'Always'] as const;
export type ApplyPolicy = (typeof APPLY_POLICIES)[number];

export const DRIFT_SEVERITIES = ['safe', 'info', 'warning', 'error', 'destructive'] as const;
export type DriftSeverity = (typeof DRIFT_SEVERITIES)[number];

export const SOURCE_TYPES = ['ConfigMap', 'OCI', 'Git'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** A relative path without `.`/`..` segments or hidden names, so a file can never land outside its directory. */
export const SOURCE_PATH_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$';

const effectivePath = (v: string) => `(has(${v}.path) ? ${v}.path : ${v}.key)`;

export const sourceFile = object(
  {
    key: string({
      description: 'Key of the ConfigMap to read.',
      pattern: CONFIG_MAP_KEY_PATTERN,
      maxLength: 253,
    }),
    path: optional(
      string({
        description: 'Relative path the key becomes in the snapshot; defaults to the key.',
        pattern: SOURCE_PATH_PATTERN,
        maxLength: 253,
      }),
    ),
  },
  {
    validations: [
      {
        rule: "has(self.path) || self.key.matches('^[A-Za-z0-9_][A-Za-z0-9._-]*$')",
        message: 'a key that is not a safe file name needs an explicit path',
      },
    ],
  },
);
export type SourceFile = Infer<typeof sourceFile>;

export const configMapSource = object(
  {
    name: objectName('Name of the ConfigMap in the resource namespace.'),
    files: array(sourceFile, {
      description: 'The keys taken as files; other keys of the ConfigMap are ignored.',
      minItems: 1,
      maxItems: 64,
      listType: 'map',
      mapKeys: ['key'],
      validations: [
        {
          rule: `self.all(a, self.exists_one(b, ${effectivePath('b')} == ${effectivePath('a')}))`,
          message: 'two files have the same path',
        },
      ],
    }),
  },
  { description: 'The desired state read from a ConfigMap, copied into an immutable snapshot.' },
);
export type ConfigMapSource = Infer<typeof configMapSource>;

/**
 * `registry[:port]/repository` with a `:tag` or an `@sha256:` digest (or both). No scheme: plain HTTP is
 * never implied by a spelling, only by `plainHttp`.
 */
export const OCI_REFERENCE_PATTERN =
  '^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(@sha256:[0-9a-f]{64})?$';

export const ociSource = object(
  {
    reference: string({
      description: 'The artifact: registry/repository:tag or registry/repository@sha256:<digest>.',
      pattern: OCI_REFERENCE_PATTERN,
      minLength: 3,
      maxLength: 512,
      validations: [
        {
          rule: "self.contains('@') || self.split('/')[self.split('/').size() - 1].contains(':')",
          message: 'name a tag or a digest',
        },
      ],
    }),
    credentialsSecretRef: optional(
      object(
        {
          name: objectName(
            'A kubernetes.io/dockerconfigjson Secret with the key .dockerconfigjson, plus the grant keys registry (host[:port] it may be sent to), caSHA256 (with caConfigMapRef) and allowPlainHTTP (with plainHttp). The manager never reads it; only the Resolve, Verify and fetch containers mount it.',
          ),
        },
        { description: 'The registry credential.' },
      ),
    ),
    caConfigMapRef: optional(
      object(
        {
          name: objectName('ConfigMap holding the CA bundle the registry certificate chains to.'),
          key: string({
            description: 'Key of that ConfigMap holding the PEM bundle.',
            pattern: CONFIG_MAP_KEY_PATTERN,
            minLength: 1,
            maxLength: 253,
          }),
        },
        { description: 'A custom CA for the registry; the operation Pods copy its exact bytes before use.' },
      ),
    ),
    plainHttp: optional(
      boolean({ description: 'Speak plain HTTP to the registry. Only when explicitly true.' }),
    ),
  },
  {
    description: 'The desired state read from an OCI artifact, resolved to a digest and verified.',
    validations: [
      {
        rule: '!(has(self.plainHttp) && self.plainHttp && has(self.caConfigMapRef))',
        message: 'plainHttp and caConfigMapRef exclude each other',
      },
    ],
  },
);
export type OciSource = Infer<typeof ociSource>;

/**
 * A repository URL as a Git source names it: https://, http:// (only with plainHttp), ssh:// or the scp form
 * user@host:path. No whitespace, no `#` (the manager's reference strings use it as a separator) and no
 * password: the credential comes from the Secret, and the URL reaches status and plans.
 */
export const GIT_REPOSITORY_PATTERN =
  '^(https?://[^\\s#@?]+|ssh://[A-Za-z0-9_][A-Za-z0-9._-]*@[^\\s#@?:]+(:[0-9]{1,5})?/[^\\s#?]+|[A-Za-z0-9_][A-Za-z0-9._-]*@[^\\s#@?:/]+:[^\\s#?]+)$';
/** git check-ref-format's rules, as far as a source may meet them; `:` and `#` can never appear. */
export const GIT_REF_NAME_PATTERN = '^[A-Za-z0-9_+-][A-Za-z0-9._/+-]*$';
/** The selected path in the repository: `.` for the root, else a relative path without dot segments. */
export const GIT_PATH_PATTERN = `^(\\.|${SOURCE_PATH_PATTERN.slice(1, -1)})$`;

const configMapKeyRef = (description: string) =>
  object(
    {
      name: objectName('ConfigMap in the resource namespace.'),
      key: string({
        description: 'Key of that ConfigMap holding the value.',
        pattern: CONFIG_MAP_KEY_PATTERN,
        minLength: 1,
        maxLength: 253,
      }),
    },
    { description },
  );

export const gitSource = object(
  {
    repository: string({
      description:
        'The repository: https://host/path, ssh://user@host[:port]/path or user@host:path (http:// only with plainHttp). No password in it.',
      pattern: GIT_REPOSITORY_PATTERN,
      minLength: 3,
      maxLength: 400,
    }),
    branch: optional(
      string({
        description: 'Follow this branch: its tip is read again at every interval.',
        pattern: GIT_REF_NAME_PATTERN,
        maxLength: 200,
      }),
    ),
    tag: optional(
      string({
        description: 'The commit this tag names (an annotated tag is peeled); read again at every interval.',
        pattern: GIT_REF_NAME_PATTERN,
        maxLength: 200,
      }),
    ),
    commit: optional(
      string({
        description:
          'A commit by its id (40 or 64 hex digits): fetched only where the server gives it, at a branch or lightweight tag or by id.',
        pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$',
        maxLength: 64,
      }),
    ),
    path: defaulted(
      string({
        description:
          'A directory (or one file) in the repository whose files are the desired state; . is the root.',
        pattern: GIT_PATH_PATTERN,
        maxLength: 253,
      }),
      '.',
    ),
    credentialsSecretRef: optional(
      object(
        {
          name: objectName(
            'A Secret with username and password (HTTPS) or ssh-privatekey (SSH), plus the grant keys host (the host[:port] the credential may be sent to), caSHA256 (with caConfigMapRef) and knownHostsSHA256 (with knownHostsConfigMapRef). The manager never reads it; only the Resolve container and the fetch init container mount it.',
          ),
        },
        { description: 'The Git credential.' },
      ),
    ),
    caConfigMapRef: optional(
      configMapKeyRef('A custom CA for an https repository; the runner copies its exact bytes before use.'),
    ),
    knownHostsConfigMapRef: optional(
      configMapKeyRef(
        "known_hosts lines pinning an SSH server's host key; an SSH repository without them is refused.",
      ),
    ),
    plainHttp: optional(boolean({ description: 'Allow an http:// repository. Only when explicitly true.' })),
  },
  {
    description:
      'The desired state read from a Git repository: the commit a branch, tag or commit id names, resolved by a Job and fetched again by every operation that reads it.',
    validations: [
      {
        rule: '[has(self.branch), has(self.tag), has(self.commit)].exists_one(x, x)',
        message: 'name exactly one of branch, tag, commit',
      },
      {
        rule: "!self.repository.startsWith('http://') || (has(self.plainHttp) && self.plainHttp)",
        message: 'an http:// repository needs plainHttp: true',
      },
      {
        rule: "!has(self.caConfigMapRef) || self.repository.startsWith('https://')",
        message: 'caConfigMapRef is for an https:// repository',
      },
      {
        rule: "!has(self.knownHostsConfigMapRef) || !self.repository.startsWith('http')",
        message: 'knownHostsConfigMapRef is for an SSH repository',
      },
    ],
  },
);
export type GitSourceSpec = Infer<typeof gitSource>;

/** Members of spec.desired that name a source; exactly one must be set. */
export const DESIRED_SOURCE_KINDS = ['configMap', 'oci', 'git'] as const;

export const desiredSource = withRules(
  object({ configMap: optional(configMapSource), oci: optional(ociSource), git: optional(gitSource) }),
  [
    {
      rule: `[${DESIRED_SOURCE_KINDS.map((k) => `has(self.${k})`).join(', ')}].exists_one(x, x)`,
      message: `exactly one source must be set: ${DESIRED_SOURCE_KINDS.join(', ')}`,
    },
  ],
);

/** The verification policy an OCI source is checked against: an immutable ConfigMap, bound by UID and digest. */
export const verificationPolicyFrom = object(
  { name: objectName('An immutable ConfigMap in the resource namespace holding the policy.') },
  { description: 'Required with an OCI source, refused with any other.' },
);

/** An OCI source needs a verification policy; a ConfigMap source has none to check. */
export const VERIFICATION_POLICY_RULE = {
  rule: 'has(self.desired.oci) == has(self.verificationPolicyFrom)',
  message: 'spec.verificationPolicyFrom is required with spec.desired.oci and refused without it',
};

/** The source policy a ConfigMap or Git source is checked against: a ConfigMap, bound by UID and digest. */
export const sourcePolicyFrom = object(
  {
    name: objectName(
      'A ConfigMap in the resource namespace holding the source policy under source-policy.yaml; it may be edited, and an edit retires plans made under the old policy.',
    ),
  },
  { description: 'Optional with a ConfigMap or Git source, refused with an OCI source.' },
);

/** An OCI source is checked by its verification policy; a source policy names what Resolve reads itself. */
export const SOURCE_POLICY_RULE = {
  rule: '!has(self.sourcePolicyFrom) || !has(self.desired.oci)',
  message:
    'spec.sourcePolicyFrom applies to a ConfigMap or Git source; an OCI source is checked by spec.verificationPolicyFrom',
};
export type DesiredSource = Infer<typeof desiredSource>;

export const secretKeySelector = object({
  name: objectName('Name of the Secret in the resource namespace.'),
  key: string({
    description: 'Key of that Secret whose value is the database URL; read only inside the operation Pod.',
    pattern: CONFIG_MAP_KEY_PATTERN,
    minLength: 1,
    maxLength: 253,
  }),
});

export const target = object(
  {
    engine: string({
      description: 'postgres or mysql (aliases postgresql, pgx, mariadb). Others are refused in status.',
      pattern: '^[A-Za-z][A-Za-z0-9._-]*$',
      minLength: 1,
      maxLength: 63,
    }),
    coordinationKey: optional(
      string({
        description:
          'Non-secret name of a database realm of this namespace; resources naming one realm are serialised by a Lease. Exactly one of coordinationKey and realmRef.',
        pattern: '^[a-z0-9](?:[a-z0-9._:/-]{0,251}[a-z0-9])?$',
        minLength: 1,
        maxLength: 253,
      }),
    ),
    realmRef: optional(
      object(
        { name: objectName('Name of the PtahRealm.') },
        {
          description:
            'A PtahRealm an admin created: it admits this resource only when it lists the namespace and its engine is this one. Exactly one of coordinationKey and realmRef.',
        },
      ),
    ),
    sharedRealm: defaulted(
      boolean({
        description:
          'This resource consents to share its realm with other claimants; a realm with more than one claimant is refused unless every claimant consents (and a PtahRealm is Shared).',
      }),
      false,
    ),
    urlFrom: described(
      secretKeySelector,
      'The Secret key holding the database URL. The manager never reads it: the operation Pod gets it through a secretKeyRef, as an environment variable.',
    ),
  },
  {
    validations: [
      {
        rule: 'has(self.coordinationKey) != has(self.realmRef)',
        message: 'spec.target names its realm by exactly one of coordinationKey and realmRef',
      },
    ],
  },
);
export type TargetSpec = Infer<typeof target>;

const tableName = string({
  pattern: TABLE_NAME_PATTERN,
  minLength: 1,
  // Two 63-byte identifiers, quoted, every character a doubled quote: the longest valid name.
  maxLength: 257,
});

export const policy = object({
  apply: defaulted(
    enumOf(APPLY_POLICIES, {
      description:
        'Never records plans and applies none; OnApproval waits for a PtahSchemaApproval; Always applies.',
    }),
    'OnApproval',
  ),
  allowDestructive: defaulted(
    boolean({ description: 'Whether a plan that drops or narrows something may be applied at all.' }),
    false,
  ),
  protectedTables: optional(
    array(tableName, {
      description:
        'Tables (table or schema.table) the declarative path may never change. PostgreSQL folding: an unquoted part folds to lower case, a double-quoted part keeps its case.',
      maxItems: 128,
      listType: 'set',
    }),
  ),
  exclude: optional(
    array(string({ minLength: 1, maxLength: 256 }), {
      description: 'Objects outside the managed scope, as the engine reads them.',
      maxItems: 128,
      listType: 'set',
    }),
  ),
});
export type PolicySpec = Infer<typeof policy>;

/** A Go-style duration between two bounds, refused by the API server outside them. */
export const boundedDuration = (description: string, min: string, max: string) =>
  string({
    description,
    pattern: DURATION_PATTERN,
    maxLength: 32,
    validations: [
      {
        rule: `duration(self) >= duration('${min}') && duration(self) <= duration('${max}')`,
        message: `must be between ${min} and ${max}`,
      },
    ],
  });

export const execution = object({
  activeDeadlineSeconds: defaulted(
    integer({ minimum: 30, maximum: 86400, description: 'Deadline of every operation Job and its Pod.' }),
    900,
  ),
  failureRetryInterval: defaulted(
    boundedDuration('Wait before a failed operation is retried.', '5s', '1h'),
    '30s',
  ),
});

export const ptahSchemaSpec = object(
  {
    target: described(target, 'The database this resource converges and the realm it coordinates in.'),
    desired: described(
      desiredSource,
      'Where the declared schema (SQL files) is read from: exactly one of configMap, oci and git.',
    ),
    verificationPolicyFrom: optional(verificationPolicyFrom),
    sourcePolicyFrom: optional(sourcePolicyFrom),
    policy: defaulted(
      described(policy, 'What may be applied and how: approval, destructive changes, protected tables.'),
      {} as PolicySpec,
    ),
    interval: defaulted(boundedDuration('How often the database is read again.', '10s', '24h'), '10m'),
    execution: defaulted(
      described(execution, 'How operation Jobs run: deadlines and the retry interval.'),
      {} as Infer<typeof execution>,
    ),
    suspend: defaulted(boolean({ description: 'Start no new Job while true.' }), false),
  },
  {
    description: 'The database to converge, the declared schema, and the policy for applying changes.',
    validations: [VERIFICATION_POLICY_RULE, SOURCE_POLICY_RULE],
  },
);
export type PtahSchemaSpec = Infer<typeof ptahSchemaSpec>;

/** `v1-` and 32 random hex digits: an epoch names one span of one set of bound releases, never its values. */
export const EXECUTION_EPOCH_PATTERN = '^v1-[0-9a-f]{32}$';

/** The releases an execution binding holds; plans bind the same fields. */
export const boundReleases = {
  managerImage: string({ maxLength: 512, description: 'The manager image, by digest where known.' }),
  managerRevision: string({ maxLength: 128, description: 'The manager source revision.' }),
  controllerStateVersion: integer({
    minimum: 1,
    description: 'Version of the status format the manager writes and reads.',
  }),
  ptahVersion: string({ maxLength: 128, description: 'The ptah engine release operations run.' }),
  runnerImage: string({
    maxLength: 512,
    description: 'The image operation Pods run, by digest where known.',
  }),
  runnerProtocolVersion: integer({
    minimum: 1,
    description: 'Version of the result frame the runner writes and the manager reads.',
  }),
};

export const executionBinding = object(
  {
    epoch: string({
      pattern: EXECUTION_EPOCH_PATTERN,
      maxLength: 35,
      description:
        'The execution binding epoch: minted whenever any release below changes (a rollback to earlier values included), so plans, claims and approvals of a retired epoch never apply.',
    }),
    ...boundReleases,
  },
  { description: 'The manager, engine and runner releases operations run under; bound into every plan.' },
);
export type ExecutionBinding = Infer<typeof executionBinding>;

/** The releases an execution binding holds, compile-checked: one added to the binding is listed here too. */
export const BOUND_RELEASE_FIELDS: Readonly<Record<Exclude<keyof ExecutionBinding, 'epoch'>, true>> = {
  managerImage: true,
  managerRevision: true,
  controllerStateVersion: true,
  ptahVersion: true,
  runnerImage: true,
  runnerProtocolVersion: true,
};

/** The verification policy an artifact satisfied, as Verify read it. */
export const verification = object(
  {
    policyName: objectName('The policy ConfigMap.'),
    policyUID: uid('Its UID: another ConfigMap of that name retires plans.'),
    policyDigest: digest('SHA-256 of its bytes (the canonical JSON of its data).'),
    verifiedAt: timestamp('When Verify last evaluated the artifact against it.'),
    signers: optional(
      array(string({ maxLength: 128 }), {
        description: 'The policy keys whose signatures verified.',
        maxItems: 16,
        listType: 'atomic',
      }),
    ),
    refused: optional(
      object(
        {
          rule: string({
            description: 'The policy rule that refused the artifact.',
            pattern: '^[a-z][a-z0-9-]*$',
            maxLength: 64,
          }),
          message: string({ description: 'What the rule found, without credentials.', maxLength: 512 }),
        },
        {
          description:
            'Set when the policy refused the artifact: the first finding. Nothing runs from it; the interval reads again.',
        },
      ),
    ),
  },
  { description: 'OCI: the verification policy Verify evaluated the artifact against, and its verdict.' },
);
export type Verification = Infer<typeof verification>;

export const resolution = object(
  {
    sourceType: enumOf(SOURCE_TYPES, { description: 'Which source was resolved: ConfigMap, OCI or Git.' }),
    requestedReference: optional(
      string({
        maxLength: 1024,
        description:
          'The OCI reference spec names; for a Git source the repository, ref and path as one string.',
      }),
    ),
    resolvedReference: optional(
      string({
        maxLength: 1024,
        description:
          'The digest-pinned reference every later operation fetches; for a Git source the repository, commit and path.',
      }),
    ),
    repository: optional(
      string({ maxLength: 400, description: 'Git: the repository Resolve answered for.' }),
    ),
    ref: optional(
      string({
        maxLength: 256,
        description: 'Git: the branch, tag or commit id spec names, as refs/heads/…, refs/tags/… or the id.',
      }),
    ),
    path: optional(string({ maxLength: 253, description: 'Git: the path whose files were selected.' })),
    commit: optional(
      string({
        pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$',
        maxLength: 64,
        description: 'Git: the commit Resolve found the ref at.',
      }),
    ),
    sourceDigest: optional(
      digest(
        'Git: SHA-256 of the repository URL and the path, which a plan binds beside the content digest.',
      ),
    ),
    digest: optional(digest('The artifact manifest digest the reference resolved to.')),
    mediaType: optional(string({ maxLength: 255, description: 'Media type of the artifact manifest.' })),
    artifactType: optional(string({ maxLength: 255, description: 'Artifact type the manifest declares.' })),
    verification: optional(verification),
    sourcePolicy: optional(
      object(
        {
          name: objectName('The source policy ConfigMap the source was checked against.'),
          uid: uid('Its UID; another ConfigMap of that name retires plans.'),
          digest: digest('SHA-256 of its data; an edit retires plans.'),
        },
        { description: 'ConfigMap and Git sources: the source policy this resolution satisfied.' },
      ),
    ),
    configMapName: optional(objectName('The source ConfigMap read.')),
    configMapUID: optional(
      uid('UID of the source ConfigMap read; another ConfigMap of that name retires plans.'),
    ),
    contentDigest: digest(
      'SHA-256 of the snapshot manifest (of a ConfigMap source, or of the files a Git commit holds at its path); for an OCI source the artifact digest every operation is bound to.',
    ),
    snapshotName: optional(objectName('The immutable ptah-src-<hash> ConfigMap holding the files.')),
    fileCount: optional(integer({ minimum: 0, description: 'Number of files selected from the source.' })),
    size: integer({
      minimum: 0,
      description: 'Total bytes of the selected files; for an OCI source the manifest size.',
    }),
    resolvedAt: timestamp('When the source was read.'),
  },
  { description: 'The source as last resolved: its immutable digest and, for a ConfigMap, the snapshot.' },
);
export type Resolution = Infer<typeof resolution>;

export const databaseServer = object(
  {
    product: enumOf(SERVER_PRODUCTS, { description: 'The server product the runner connected to.' }),
    version: string({
      pattern: SERVER_VERSION_PATTERN,
      maxLength: 17,
      description: 'Release, e.g. 10.11.6.',
    }),
  },
  { description: 'The server the database was last read on, as the runner reported it.' },
);

export const targetStatus = object(
  {
    engine: optional(
      enumOf(['postgres', 'mysql'], { description: 'The canonical engine spec.target names.' }),
    ),
    server: optional(databaseServer),
    coordinationDigest: optional(digest('Digest of the database realm; names its Lease.')),
    identityDigest: optional(
      digest('Credential-free identity of the route to the database, reported by the runner.'),
    ),
    lastObservedAt: optional(timestamp('When the database was last read.')),
  },
  { description: 'The database as the manager and the runner know it, without credentials.' },
);

export const driftCategory = object({
  category: string({
    description: 'Kind of difference, e.g. tables_added.',
    pattern: '^[a-z][a-z0-9_]*$',
    maxLength: 64,
  }),
  count: integer({ minimum: 0, description: 'Findings of this category.' }),
  severity: enumOf(DRIFT_SEVERITIES, { description: 'The highest severity among them.' }),
});

export const drift = object(
  {
    reportDigest: digest('Digest of the raw drift report, which stays inside the runner.'),
    dialect: enumOf(['postgres', 'mysql'], { description: 'The SQL dialect the database was read in.' }),
    total: integer({ minimum: 0, description: 'Number of drift findings.' }),
    highestSeverity: enumOf(DRIFT_SEVERITIES, { description: 'The most severe finding.' }),
    categories: optional(
      array(driftCategory, {
        description: 'Counts per category, never names or values.',
        maxItems: 64,
        listType: 'map',
        mapKeys: ['category'],
      }),
    ),
    truncated: optional(boolean({ description: 'More categories existed than are listed.' })),
    observedAt: timestamp('When the drift was read.'),
  },
  { description: 'How the database differs from the declaration, as counts: no names, no values.' },
);
export type DriftSummary = Infer<typeof drift>;

/**
 * The claim shape both resource families share; only the operations a family runs differ, so each family
 * builds it from its own list and a schema claim can never name a migration operation or the reverse.
 */
export function claimOf<const V extends readonly [string, ...string[]]>(operations: V) {
  return object(
    {
      type: enumOf(operations, { description: 'The operation claimed.' }),
      operationId: digest('Deterministic id of the operation.'),
      inputsFingerprint: digest('Digest of everything the operation was decided from.'),
      jobName: string({
        description: 'The Job the operation runs as, named from its operation id.',
        pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
        maxLength: 63,
      }),
      jobUID: optional(uid('UID of the created Job, once read back.')),
      attempt: integer({ minimum: 1, description: 'Which attempt of this operation; a retry counts up.' }),
      generation: integer({
        format: 'int64',
        minimum: 0,
        description: 'The resource generation claimed under.',
      }),
      startedAt: timestamp('When the claim was written.'),
      dispatchStarted: optional(
        boolean({ description: 'Set before the Job is created; never cleared for Apply.' }),
      ),
      contentDigest: optional(digest('Content digest the operation is bound to.')),
      artifactReference: optional(
        string({
          maxLength: 1024,
          description:
            'The OCI reference (or Git repository, ref and path) the operation reads: requested for Resolve, digest- or commit-pinned after.',
        }),
      ),
      verificationPolicy: optional(
        object(
          {
            name: objectName('The policy ConfigMap a Verify evaluates.'),
            uid: uid('UID of the policy ConfigMap.'),
            digest: digest('SHA-256 of its bytes.'),
          },
          { description: 'For Verify: the verification policy it evaluates, by UID and digest.' },
        ),
      ),
      snapshotName: optional(objectName('Snapshot the operation mounts.')),
      planRef: optional(objectRef('Plan an Apply executes.')),
      approvalRef: optional(objectRef('Approval an Apply consumes.')),
      leaseEpoch: optional(
        string({
          maxLength: 64,
          description:
            'The realm Lease hold the operation runs under; another epoch means the hold was lost.',
        }),
      ),
      leaseDurationSeconds: optional(
        integer({ minimum: 5, maximum: 86460, description: 'How long the realm Lease is held per renewal.' }),
      ),
      executionEpoch: optional(
        string({
          pattern: EXECUTION_EPOCH_PATTERN,
          maxLength: 35,
          description:
            'The execution binding epoch the operation was claimed under: once another epoch retires it, a read is withdrawn and a dispatched Apply is waited out and its result never read.',
        }),
      ),
      applyOutcome: optional(
        enumOf(['Succeeded', 'Unknown'], {
          description: 'For the proof after an Apply: how that Apply ended, as far as anything could tell.',
        }),
      ),
    },
    { description: 'The operation in flight, written before its Job exists.' },
  );
}

export const claim = claimOf(OPERATION_TYPES);
export type Claim = Infer<typeof claim>;

export const planStatus = object(
  {
    name: objectName('The current PtahSchemaPlan.'),
    uid: uid('UID of the plan.'),
    fingerprint: digest('Fingerprint an approval must name.'),
    contentDigest: digest('SHA-256 of the plan bytes.'),
    destructive: boolean({ description: 'Whether the plan drops or narrows something.' }),
    statementCount: integer({ minimum: 0, description: 'Number of SQL statements in the plan.' }),
    createdAt: timestamp('When the plan was published.'),
    approval: optional(
      object(
        {
          name: objectName('The approval accepted.'),
          uid: uid('UID of the approval.'),
          approver,
          approvedAt: timestamp('When admission stamped the approval.'),
        },
        { description: 'The approval an Apply of this plan consumed, with the approver admission stamped.' },
      ),
    ),
  },
  { description: 'The current plan: published, verified, waiting for approval or to be applied.' },
);
export type PlanStatus = Infer<typeof planStatus>;

export const applied = object(
  {
    planRef: objectRef('The plan applied.'),
    planFingerprint: digest('Fingerprint of the plan applied.'),
    contentDigest: digest('Content digest the plan was computed from.'),
    completedAt: timestamp('When convergence was proven by a fresh no-change plan.'),
  },
  { description: 'The plan last applied and proven by a fresh no-change plan.' },
);

export const retiredPlan = object({
  name: objectName('A plan retired for good.'),
  uid: uid('UID of that plan.'),
  fingerprint: digest('Its fingerprint: a re-plan to the same bindings is published under another name.'),
  reason: string({ pattern: '^[A-Za-z]+$', maxLength: 64, description: 'Why it was retired.' }),
});
export type RetiredPlan = Infer<typeof retiredPlan>;
/** How many plans retired for good status remembers (the oldest goes first). */
export const MAX_RETIRED_PLANS = 16;

export const JOURNAL_ENTRY_TYPES = [
  'PlanPublished',
  'ApprovalAccepted',
  'ApplyFinished',
  'Verified',
  'RunFinished',
  'RunAcknowledged',
  'OperationFailed',
] as const;
export type JournalEntryType = (typeof JOURNAL_ENTRY_TYPES)[number];

const reason = string({
  description: 'The condition reason of the transition; never a message.',
  pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
  maxLength: 128,
});

/** The journal both families keep; as with claims, each family names its own operations. */
export function journalEntryOf<const V extends readonly [string, ...string[]]>(operations: V) {
  return object({
    type: enumOf(JOURNAL_ENTRY_TYPES, {
      description:
        'What happened: a plan published, an approval accepted, an apply or run finished, a failure.',
    }),
    time: timestamp('When it happened (for a coalesced failure, the first of the run).'),
    reason: optional(reason),
    outcome: optional(
      string({ pattern: '^[A-Za-z]+$', maxLength: 64, description: 'How it ended, e.g. Succeeded, InSync.' }),
    ),
    operation: optional(enumOf(operations, { description: 'The operation the entry is about.' })),
    plan: optional(objectName('A plan in the resource namespace.')),
    approval: optional(objectName('An approval in the resource namespace.')),
    approver: optional(string({ maxLength: 512, description: 'Who approved, as admission stamped it.' })),
    startedAt: optional(timestamp('When the operation started, to read how long it took.')),
    count: optional(
      integer({ minimum: 1, description: 'Failures in a row with this operation and reason.' }),
    ),
    lastTime: optional(timestamp('The last of the coalesced failures.')),
    appliedCount: optional(
      integer({
        minimum: 0,
        maximum: 256,
        description: 'For RunFinished: how many versions the run applied.',
      }),
    ),
    stoppedAtVersion: optional(
      string({
        description: 'For RunFinished: the migration version the run stopped at, as the engine spells it.',
        pattern: '^[1-9][0-9]{0,18}$',
        maxLength: 19,
      }),
    ),
  });
}

export function journalOf<const V extends readonly [string, ...string[]]>(operations: V) {
  return object(
    {
      coveredSince: timestamp('The journal is complete from this instant on.'),
      entries: array(journalEntryOf(operations), {
        description: 'At most 64 entries, none more than 30 days older than the newest; oldest first.',
        maxItems: 64,
        listType: 'atomic',
      }),
    },
    {
      description:
        'A bounded record of significant events (plans, approvals, runs, failures) after Events and Jobs are gone.',
    },
  );
}

export const journalEntry = journalEntryOf(OPERATION_TYPES);
export type JournalEntry = Infer<typeof journalEntry>;

export const journal = journalOf(OPERATION_TYPES);
export type Journal = Infer<typeof journal>;

export const ptahSchemaStatus = object(
  {
    observedGeneration,
    phase: optional(enumOf(SCHEMA_PHASES, { description: 'Where the resource is in its lifecycle.' })),
    conditions: optional(conditions),
    executionBinding: optional(executionBinding),
    resolution: optional(resolution),
    target: optional(targetStatus),
    drift: optional(drift),
    claim: optional(claim),
    plan: optional(planStatus),
    applied: optional(applied),
    retiredPlans: optional(
      array(retiredPlan, {
        description: 'Plans whose stored bytes failed a read-back; never published or applied again.',
        maxItems: MAX_RETIRED_PLANS,
        listType: 'atomic',
      }),
    ),
    journal: optional(journal),
    lastReadRequest: optional(string({ maxLength: 80, description: 'The read request last answered.' })),
    lastAttemptTime: optional(timestamp('When an operation last started.')),
    nextReconciliationTime: optional(timestamp('When the database is read again.')),
  },
  { description: 'What the manager observed and decided; written only by the manager.' },
);
export type PtahSchemaStatus = Infer<typeof ptahSchemaStatus>;

export interface PtahSchema {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahSchema';
  readonly metadata: ObjectMeta;
  readonly spec: PtahSchemaSpec;
  readonly status?: PtahSchemaStatus;
}

export type Engine = 'postgres' | 'mysql';
const ENGINE_ALIASES: Readonly<Record<string, Engine>> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  pgx: 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
};

/** The engine a spec names, or undefined when it is unsupported (a Blocked resource, not an admission refusal). */
export function canonicalEngine(engine: string): Engine | undefined {
  return ENGINE_ALIASES[engine.toLowerCase()];
}
