/**
 * The CustomResourceDefinitions, built from the schema descriptions in this directory. `scripts/gen-crds.ts`
 * writes them to deploy/crds; a unit test proves the committed files are what this module builds.
 */
import { stringify } from 'yaml';
import { API_GROUP, API_VERSION } from './meta.ts';
import { ptahMigrationSpec, ptahMigrationStatus } from './ptah-migration.ts';
import {
  ptahMigrationApprovalSpec,
  ptahMigrationApprovalStatus,
  ptahMigrationRunAcknowledgmentSpec,
  ptahMigrationRunAcknowledgmentStatus,
} from './ptah-migration-approval.ts';
import { ptahMigrationPlanSpec, ptahMigrationPlanStatus } from './ptah-migration-plan.ts';
import { ptahRealmSpec } from './ptah-realm.ts';
import { ptahSchemaSpec, ptahSchemaStatus } from './ptah-schema.ts';
import { ptahSchemaApprovalSpec, ptahSchemaApprovalStatus } from './ptah-schema-approval.ts';
import { ptahSchemaPlanSpec, ptahSchemaPlanStatus } from './ptah-schema-plan.ts';
import { ptahSchemaPlanChunkSpec } from './ptah-schema-plan-chunk.ts';
import { openApi, type CelRule, type OpenApiSchema, type SchemaNode } from './schema-dsl.ts';

export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'boolean' | 'date' | 'number';
  readonly jsonPath: string;
  readonly priority?: number;
  readonly description?: string;
}

interface KindDefinition {
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly description: string;
  /** Namespaced unless said otherwise; a cluster-scoped kind is one only an admin creates. */
  readonly scope?: 'Namespaced' | 'Cluster';
  readonly spec: SchemaNode<unknown>;
  /** Absent: the kind has no status, and no status subresource (the manager never writes it). */
  readonly status?: SchemaNode<unknown>;
  readonly printerColumns: readonly PrinterColumn[];
  readonly rootRules?: readonly CelRule[];
}

const condition = (type: string) => `.status.conditions[?(@.type=="${type}")]`;
const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const jobLabelName: CelRule = {
  rule: 'size(self.metadata.name) <= 63',
  message: 'the name is carried whole in Job labels, so it must be at most 63 characters',
};

export const KINDS: readonly KindDefinition[] = [
  {
    kind: 'PtahSchema',
    plural: 'ptahschemas',
    singular: 'ptahschema',
    shortNames: ['ptahs'],
    description: 'A database schema declared from a source and converged through plans.',
    spec: ptahSchemaSpec,
    status: ptahSchemaStatus,
    rootRules: [jobLabelName],
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Plan', type: 'string', jsonPath: '.status.plan.name' },
      { name: 'Approval', type: 'string', jsonPath: `${condition('ApprovalRequired')}.reason` },
      { name: 'Drift', type: 'string', jsonPath: '.status.drift.highestSeverity' },
      { name: 'Findings', type: 'integer', jsonPath: '.status.drift.total', priority: 1 },
      { name: 'In Sync', type: 'string', jsonPath: `${condition('InSync')}.status` },
      { name: 'Ready', type: 'string', jsonPath: `${condition('Ready')}.status`, priority: 1 },
      {
        name: 'Failure',
        type: 'string',
        jsonPath: `${condition('ReconciliationFailed')}.reason`,
        priority: 1,
      },
      { name: 'Digest', type: 'string', jsonPath: '.status.resolution.contentDigest', priority: 1 },
      age,
    ],
  },
  {
    kind: 'PtahSchemaPlan',
    plural: 'ptahschemaplans',
    singular: 'ptahschemaplan',
    shortNames: ['ptahplan'],
    description: 'An immutable plan computed for a PtahSchema; the only thing an Apply executes.',
    spec: ptahSchemaPlanSpec,
    status: ptahSchemaPlanStatus,
    printerColumns: [
      { name: 'Schema', type: 'string', jsonPath: '.spec.schemaRef.name' },
      { name: 'Fingerprint', type: 'string', jsonPath: '.spec.fingerprint', priority: 1 },
      { name: 'Statements', type: 'integer', jsonPath: '.spec.binding.statementCount' },
      { name: 'Destructive', type: 'boolean', jsonPath: '.spec.binding.destructive' },
      { name: 'Ready', type: 'string', jsonPath: `${condition('Ready')}.status` },
      age,
    ],
  },
  {
    kind: 'PtahSchemaPlanChunk',
    plural: 'ptahschemaplanchunks',
    singular: 'ptahschemaplanchunk',
    shortNames: ['ptahchunk'],
    description:
      "One piece of a PtahSchemaPlan's bytes, owned by the plan and immutable; reading a plan needs this kind, not ConfigMaps.",
    spec: ptahSchemaPlanChunkSpec,
    printerColumns: [{ name: 'Plan', type: 'string', jsonPath: '.metadata.ownerReferences[0].name' }, age],
  },
  {
    kind: 'PtahSchemaApproval',
    plural: 'ptahschemaapprovals',
    singular: 'ptahschemaapproval',
    shortNames: ['ptahapprove'],
    description: 'A decision to apply exactly one PtahSchemaPlan, stamped with the approver by admission.',
    spec: ptahSchemaApprovalSpec,
    status: ptahSchemaApprovalStatus,
    printerColumns: [
      { name: 'Schema', type: 'string', jsonPath: '.spec.schemaRef.name' },
      { name: 'Plan', type: 'string', jsonPath: '.spec.planRef.name' },
      { name: 'Approver', type: 'string', jsonPath: '.spec.approver.username' },
      { name: 'Accepted', type: 'string', jsonPath: `${condition('Accepted')}.status` },
      { name: 'Consumed', type: 'string', jsonPath: `${condition('Consumed')}.status` },
      { name: 'Stale', type: 'string', jsonPath: `${condition('Stale')}.status` },
      age,
    ],
  },
  {
    kind: 'PtahMigration',
    plural: 'ptahmigrations',
    singular: 'ptahmigration',
    shortNames: ['ptahm'],
    description: 'A versioned migration directory applied in order through approved plans.',
    spec: ptahMigrationSpec,
    status: ptahMigrationStatus,
    rootRules: [jobLabelName],
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Current', type: 'string', jsonPath: '.status.history.currentVersion' },
      { name: 'Pending', type: 'integer', jsonPath: '.status.history.pendingCount' },
      { name: 'Outcome', type: 'string', jsonPath: '.status.lastRun.outcome' },
      { name: 'Digest', type: 'string', jsonPath: '.status.resolution.contentDigest', priority: 1 },
      age,
    ],
  },
  {
    kind: 'PtahMigrationPlan',
    plural: 'ptahmigrationplans',
    singular: 'ptahmigrationplan',
    shortNames: ['ptahmplan'],
    description: 'An immutable migration sequence computed for a PtahMigration; it stores no SQL.',
    spec: ptahMigrationPlanSpec,
    status: ptahMigrationPlanStatus,
    printerColumns: [
      { name: 'Migration', type: 'string', jsonPath: '.spec.migrationRef.name' },
      { name: 'From', type: 'string', jsonPath: '.spec.binding.currentVersion' },
      { name: 'Fingerprint', type: 'string', jsonPath: '.spec.fingerprint', priority: 1 },
      age,
    ],
  },
  {
    kind: 'PtahMigrationApproval',
    plural: 'ptahmigrationapprovals',
    singular: 'ptahmigrationapproval',
    shortNames: ['ptahmapprove'],
    description: 'A decision to run exactly one PtahMigrationPlan, stamped with the approver by admission.',
    spec: ptahMigrationApprovalSpec,
    status: ptahMigrationApprovalStatus,
    printerColumns: [
      { name: 'Migration', type: 'string', jsonPath: '.spec.migrationRef.name' },
      { name: 'Plan', type: 'string', jsonPath: '.spec.planRef.name' },
      { name: 'Approver', type: 'string', jsonPath: '.spec.approver.username' },
      { name: 'Consumed', type: 'string', jsonPath: `${condition('Consumed')}.status` },
      age,
    ],
  },
  {
    kind: 'PtahMigrationRunAcknowledgment',
    plural: 'ptahmigrationrunacknowledgments',
    singular: 'ptahmigrationrunacknowledgment',
    shortNames: ['ptahmack'],
    description: 'A person settling a migration run recorded as unresolved, stamped by admission.',
    spec: ptahMigrationRunAcknowledgmentSpec,
    status: ptahMigrationRunAcknowledgmentStatus,
    printerColumns: [
      { name: 'Migration', type: 'string', jsonPath: '.spec.migrationRef.name' },
      { name: 'Acknowledged By', type: 'string', jsonPath: '.spec.acknowledgedBy.username' },
      { name: 'Consumed', type: 'string', jsonPath: `${condition('Consumed')}.status` },
      { name: 'Stale', type: 'string', jsonPath: `${condition('Stale')}.status` },
      { name: 'Operation', type: 'string', jsonPath: '.spec.operationId', priority: 1 },
      age,
    ],
  },
  {
    kind: 'PtahRealm',
    plural: 'ptahrealms',
    singular: 'ptahrealm',
    shortNames: ['ptahr'],
    scope: 'Cluster',
    description:
      "An administrator's grant of one database realm to an explicit list of namespaces, Exclusive or Shared.",
    spec: ptahRealmSpec,
    printerColumns: [
      { name: 'Engine', type: 'string', jsonPath: '.spec.engine' },
      { name: 'Sharing', type: 'string', jsonPath: '.spec.sharing' },
      { name: 'Namespaces', type: 'string', jsonPath: '.spec.namespaces' },
      age,
    ],
  },
];

export interface CustomResourceDefinition {
  readonly apiVersion: 'apiextensions.k8s.io/v1';
  readonly kind: 'CustomResourceDefinition';
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly spec: {
    readonly group: string;
    readonly scope: 'Namespaced' | 'Cluster';
    readonly names: {
      readonly kind: string;
      readonly listKind: string;
      readonly plural: string;
      readonly singular: string;
      readonly shortNames: readonly string[];
      readonly categories: readonly string[];
    };
    readonly versions: readonly {
      readonly name: string;
      readonly served: boolean;
      readonly storage: boolean;
      readonly schema: { readonly openAPIV3Schema: OpenApiSchema };
      readonly subresources?: { readonly status: Record<string, never> };
      readonly additionalPrinterColumns: readonly PrinterColumn[];
    }[];
  };
}

export function buildCrd(def: KindDefinition): CustomResourceDefinition {
  const root: OpenApiSchema = {
    description: def.description,
    type: 'object',
    properties: {
      apiVersion: {
        type: 'string',
        description:
          'The versioned schema of this representation of an object; servers convert recognized schemas to the latest internal value.',
      },
      kind: {
        type: 'string',
        description:
          'The REST resource this object represents, in CamelCase; servers infer it from the endpoint.',
      },
      metadata: { type: 'object' },
      spec: { description: `What this ${def.kind} declares; written by people.`, ...openApi(def.spec) },
      ...(def.status !== undefined
        ? {
            status: {
              description: `What the operator observed and decided about this ${def.kind}; written only by the operator.`,
              ...openApi(def.status),
            },
          }
        : {}),
    },
    required: ['spec'],
  };
  if (def.rootRules !== undefined) root['x-kubernetes-validations'] = def.rootRules.map((r) => ({ ...r }));
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${API_GROUP}`,
      labels: { 'app.kubernetes.io/part-of': 'ptah-operator' },
    },
    spec: {
      group: API_GROUP,
      scope: def.scope ?? 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['ptah'],
      },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: root },
          ...(def.status !== undefined ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: def.printerColumns,
        },
      ],
    },
  };
}

export function buildCrds(): CustomResourceDefinition[] {
  return KINDS.map(buildCrd);
}

/** The file each CRD is written to, relative to the repository root. */
export function crdFileName(crd: CustomResourceDefinition): string {
  return `deploy/crds/${crd.metadata.name}.yaml`;
}

export function renderCrdYaml(crd: CustomResourceDefinition): string {
  return `# Generated by scripts/gen-crds.ts from src/api; do not edit.\n${stringify(crd, { lineWidth: 0, singleQuote: true })}`;
}
