/**
 * Lease times are MicroTime: the API server parses them with six fractional digits and refuses the three a
 * plain Date serialises to. The generated client writes the right form only for `V1MicroTime` instances,
 * so every Lease body the manager writes goes through `microTimeLease`, and `withMicroTimeLeases` wraps a
 * client for code (leader election) that builds Lease bodies with plain Dates.
 */
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';

export function microTimeLease(lease: V1Lease): V1Lease {
  const spec = lease.spec;
  if (spec === undefined) return lease;
  const micro = (d: Date | undefined) =>
    d === undefined ? undefined : new V1MicroTime(new Date(d).getTime());
  const acquireTime = micro(spec.acquireTime);
  const renewTime = micro(spec.renewTime);
  return {
    ...lease,
    spec: {
      ...spec,
      ...(acquireTime !== undefined ? { acquireTime } : {}),
      ...(renewTime !== undefined ? { renewTime } : {}),
    },
  };
}

export function withMicroTimeLeases(api: CoordinationV1Api): CoordinationV1Api {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'createNamespacedLease' && prop !== 'replaceNamespacedLease') {
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return (param: { body: V1Lease }, ...rest: unknown[]) =>
        (value as (...a: unknown[]) => unknown).call(
          target,
          { ...param, body: microTimeLease(param.body) },
          ...rest,
        );
    },
  });
}
