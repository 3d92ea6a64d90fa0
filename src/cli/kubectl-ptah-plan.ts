/**
 * `kubectl ptah plan <schema>`: rebuilds the schema's current (or applied) plan from its chunks (PtahSchemaPlanChunk objects)
 * with the checks an Apply makes, and prints it only when every check passed. The plan found must be the
 * one the schema's status names, by name, UID and fingerprint; each chunk is checked for its name, the UID
 * publication committed, its owner, size and hash, and the whole for its size and content digest.
 */
import { parseArgs } from 'node:util';
import type { PtahSchema } from '../api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../api/ptah-schema-plan-chunk.ts';
import { readPlan, type PlanDocument } from '../engine/plan-file.ts';
import { reassemblePlan } from '../plan-store/reassemble-plan.ts';
import {
  CONNECTION_OPTIONS,
  connect,
  getOurObject,
  PLUGIN_EXIT,
  PluginError,
  type PluginContext,
  type PluginExit,
} from './kubectl-ptah-context.ts';

export const PLAN_FORMATS = ['sql', 'json', 'diff'] as const;
export type PlanFormat = (typeof PLAN_FORMATS)[number];

export const PLAN_USAGE = `usage: kubectl ptah plan <schema> [--applied] [-o sql|json|diff] [-n namespace]

Prints the schema's current plan (or, with --applied, the plan last applied) after rebuilding it from its
chunks and verifying names, UIDs, sizes and hashes. Nothing is printed unless every check passes.
  -o sql   the statements, each terminated once, with a comment naming its severity (default)
  -o json  the stored plan document, byte for byte
  -o diff  what the plan changes, statement by statement, with its fingerprints`;

export interface VerifiedPlan {
  readonly schema: PtahSchema;
  readonly plan: PtahSchemaPlan;
  readonly bytes: Uint8Array;
  readonly document: PlanDocument;
}

interface PlanPointer {
  readonly name: string;
  readonly uid: string;
  readonly fingerprint: string;
}

function pointerOf(schema: PtahSchema, applied: boolean): PlanPointer | undefined {
  const status = schema.status;
  if (applied) {
    const a = status?.applied;
    return a ? { name: a.planRef.name, uid: a.planRef.uid, fingerprint: a.planFingerprint } : undefined;
  }
  const p = status?.plan;
  return p ? { name: p.name, uid: p.uid, fingerprint: p.fingerprint } : undefined;
}

/** The schema's plan, rebuilt and verified; a PluginError names what is missing or what failed. */
export async function readVerifiedPlan(
  ctx: PluginContext,
  schemaName: string,
  applied: boolean,
): Promise<VerifiedPlan> {
  const where = `in namespace ${ctx.namespace}`;
  const schema = await getOurObject<PtahSchema>(ctx, 'ptahschemas', schemaName);
  if (schema === undefined) throw new PluginError(PLUGIN_EXIT.absent, `no PtahSchema ${schemaName} ${where}`);
  const pointer = pointerOf(schema, applied);
  if (pointer === undefined) {
    const phase = schema.status?.phase ?? 'no status yet';
    throw new PluginError(
      PLUGIN_EXIT.absent,
      applied
        ? `PtahSchema ${schemaName} has applied no plan yet (phase ${phase})`
        : `PtahSchema ${schemaName} has no current plan (phase ${phase}); --applied shows the plan last applied`,
    );
  }
  const plan = await getOurObject<PtahSchemaPlan>(ctx, 'ptahschemaplans', pointer.name);
  if (plan === undefined) {
    throw new PluginError(
      PLUGIN_EXIT.absent,
      `PtahSchema ${schemaName} names plan ${pointer.name}, which no longer exists ${where}`,
    );
  }
  const refuse = (message: string) =>
    new PluginError(
      PLUGIN_EXIT.failed,
      `plan ${pointer.name} of PtahSchema ${schemaName}: ${message}; nothing printed`,
    );
  if (plan.metadata.uid !== pointer.uid)
    throw refuse('was replaced: its UID is not the one the schema records');
  if (plan.spec.fingerprint !== pointer.fingerprint)
    throw refuse('its fingerprint is not the one the schema records');
  if (plan.spec.schemaRef.name !== schemaName || plan.spec.schemaRef.uid !== schema.metadata.uid)
    throw refuse('belongs to another PtahSchema');
  // One RBAC rule on an operator kind reads the bytes: chunks are PtahSchemaPlanChunk objects, never
  // ConfigMaps (whose read access is namespace-wide).
  const chunks = new Map<string, PtahSchemaPlanChunk | undefined>();
  for (const chunk of plan.spec.chunks)
    chunks.set(chunk.name, await getOurObject<PtahSchemaPlanChunk>(ctx, 'ptahschemaplanchunks', chunk.name));
  const rebuilt = reassemblePlan(plan, (name) => chunks.get(name));
  if (!rebuilt.ok) throw refuse(`does not verify (${rebuilt.reason}): ${rebuilt.message}`);
  let document: PlanDocument;
  try {
    document = readPlan(rebuilt.bytes).plan;
  } catch (error) {
    throw refuse(`its verified bytes are not a plan document: ${(error as Error).message}`);
  }
  return { schema, plan, bytes: rebuilt.bytes, document };
}

function terminated(sql: string): string {
  const trimmed = sql.trim();
  return trimmed.endsWith(';') ? trimmed : `${trimmed};`;
}

function renderSql(v: VerifiedPlan): string {
  const total = v.document.statements.length;
  const header = `-- plan ${v.plan.metadata.name} of PtahSchema ${v.schema.metadata.name}: ${total} statement(s)\n`;
  return (
    header +
    v.document.statements
      .map((st, i) => `-- ${i + 1}/${total} [${st.severity}] ${st.reason}\n${terminated(st.sql)}\n`)
      .join('')
  );
}

function renderDiff(v: VerifiedPlan): string {
  const d = v.document;
  const lines = [
    `--- database   ${d.from_fingerprint}`,
    `+++ declared   ${d.to_fingerprint}`,
    `plan ${v.plan.metadata.name} (${v.plan.spec.fingerprint}), ${d.dialect}, ` +
      `${d.statements.length} statement(s), destructive: ${d.destructive ? 'yes' : 'no'}`,
  ];
  d.statements.forEach((st, i) => {
    lines.push(`@@ ${i + 1} [${st.severity}] ${st.reason} @@`);
    for (const line of terminated(st.sql).split('\n')) lines.push(`+ ${line}`);
  });
  for (const rows of d.managed_rows) {
    lines.push(`rows ${rows.schema}.${rows.table} by (${rows.key.join(', ')}): ${rows.columns.join(', ')}`);
  }
  return lines.join('\n') + '\n';
}

export const RENDERERS: Record<PlanFormat, (v: VerifiedPlan) => string | Uint8Array> = {
  sql: renderSql,
  json: (v) => v.bytes,
  diff: renderDiff,
};

export async function runPlan(argv: readonly string[]): Promise<PluginExit> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      ...CONNECTION_OPTIONS,
      applied: { type: 'boolean', default: false },
      output: { type: 'string', short: 'o', default: 'sql' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(PLAN_USAGE + '\n');
    return PLUGIN_EXIT.ok;
  }
  const format = values.output as PlanFormat;
  if (!PLAN_FORMATS.includes(format))
    throw new PluginError(
      PLUGIN_EXIT.usage,
      `-o ${values.output}: choose sql, json or diff\n\n${PLAN_USAGE}`,
    );
  if (positionals.length !== 1) throw new PluginError(PLUGIN_EXIT.usage, PLAN_USAGE);
  const verified = await readVerifiedPlan(connect(values), positionals[0]!, values.applied);
  process.stdout.write(RENDERERS[format](verified));
  return PLUGIN_EXIT.ok;
}
