/**
 * How much of the stored plan a pass reads back before deciding, for both families. A pass that could
 * dispatch an Apply (an undispatched Apply claim, or a policy or an exact approval that lets the waiting
 * plan be applied now) reads all of it: the object, its bindings and, for a schema, every chunk
 * reassembled as the Apply will. Any other pass that holds a plan reads the object and recomputes its
 * bindings, which retires a plan deleted, replaced or superseded while it waits; its chunks (up to 8 MiB)
 * are left alone until an Apply is possible, so resources waiting on approval cost no bytes per pass.
 * A pass whose operation is already running reads nothing: the plan was checked before dispatch.
 */
export type PlanRead = 'none' | 'bindings' | 'whole';

export interface PlanReadClaim {
  readonly type: string;
  readonly dispatchStarted?: boolean | undefined;
}

/** For a pass that holds a plan: `applyAuthorised` says whether policy or an approval lets it run now. */
export function planRead(claim: PlanReadClaim | undefined, applyAuthorised: () => boolean): PlanRead {
  if (claim !== undefined) return claim.type === 'Apply' && claim.dispatchStarted !== true ? 'whole' : 'none';
  return applyAuthorised() ? 'whole' : 'bindings';
}
