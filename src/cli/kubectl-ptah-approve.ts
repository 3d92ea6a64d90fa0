/**
 * `kubectl ptah approve <schema>`: shows the current plan (verified like `plan` verifies it), asks, and
 * creates the PtahSchemaApproval that names exactly that plan by name, UID and fingerprint. Who approved
 * is not written here: the mutating webhook stamps it from the authenticated request.
 */
import { parseArgs } from 'node:util';
import { GROUP_VERSION } from '../api/meta.ts';
import type { PtahSchemaApproval } from '../api/ptah-schema-approval.ts';
import {
  CONNECTION_OPTIONS,
  confirmed,
  connect,
  createOurObject,
  needsTerminalOrYes,
  PLUGIN_EXIT,
  PluginError,
  type PluginExit,
} from './kubectl-ptah-context.ts';
import { readVerifiedPlan, RENDERERS } from './kubectl-ptah-plan.ts';

export const APPROVE_USAGE = `usage: kubectl ptah approve <schema> [--yes] [-n namespace]

Shows the schema's current plan, verified from its chunks, and creates the approval for exactly that
plan. Without --yes it asks first, which needs a terminal.`;

export async function runApprove(argv: readonly string[]): Promise<PluginExit> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      ...CONNECTION_OPTIONS,
      yes: { type: 'boolean', short: 'y', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(APPROVE_USAGE + '\n');
    return PLUGIN_EXIT.ok;
  }
  if (positionals.length !== 1) throw new PluginError(PLUGIN_EXIT.usage, APPROVE_USAGE);
  const schemaName = positionals[0]!;
  needsTerminalOrYes(
    values.yes,
    `approve ${schemaName}`,
    `read the plan with \`kubectl ptah plan ${schemaName}\``,
  );
  const ctx = connect(values);
  const verified = await readVerifiedPlan(ctx, schemaName, false);
  const { plan, schema } = verified;
  process.stdout.write(RENDERERS.diff(verified));
  const accepted = schema.status?.plan?.approval;
  if (accepted !== undefined) {
    process.stdout.write(
      `plan ${plan.metadata.name} is already approved by ${accepted.approver.username} (approval ${accepted.name})\n`,
    );
    return PLUGIN_EXIT.ok;
  }
  if (
    !values.yes &&
    !(await confirmed(`approve plan ${plan.metadata.name} for PtahSchema ${schemaName}? [y/N] `))
  ) {
    process.stderr.write('not approved\n');
    return PLUGIN_EXIT.failed;
  }
  const body = {
    apiVersion: GROUP_VERSION,
    kind: 'PtahSchemaApproval',
    metadata: { generateName: `${schemaName.slice(0, 50)}-` },
    spec: {
      schemaRef: { name: schemaName, uid: schema.metadata.uid ?? '' },
      planRef: { name: plan.metadata.name, uid: plan.metadata.uid ?? '' },
      planFingerprint: plan.spec.fingerprint,
    },
  };
  const created = await createOurObject<PtahSchemaApproval>(
    ctx,
    'ptahschemaapprovals',
    body,
    `the approval of plan ${plan.metadata.name}`,
  );
  const who = created.spec.approver?.username ?? '(not stamped)';
  process.stdout.write(
    `approval ${created.metadata.name} created for plan ${plan.metadata.name}, approver ${who}\n`,
  );
  return PLUGIN_EXIT.ok;
}
