/**
 * A small schema language that is the single source of truth for the operator's resource kinds.
 *
 * One description yields three things that must never drift apart: the TypeScript type (`Infer<typeof S>`),
 * the OpenAPI v3 structural schema a CRD carries (`openApi(S)`), and a validator with defaulting for the
 * objects the manager reads (`validate(S, v)`, `withDefaults(S, v)`). CEL rules travel with the node they
 * judge; the API server evaluates them, this module only places them.
 *
 * Only structural constructs exist here (no oneOf/anyOf unions, no free-form types without
 * `x-kubernetes-preserve-unknown-fields`), so every generated schema is one the API server accepts.
 */

/** Whether an object property may be absent: `defaulted` is absent on input and present once defaulted. */
export type Presence = 'required' | 'optional' | 'defaulted';

export interface CelRule {
  readonly rule: string;
  readonly message?: string;
  readonly messageExpression?: string;
  readonly reason?:
    'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  readonly fieldPath?: string;
  readonly optionalOldSelf?: boolean;
}

/** The OpenAPI v3 (JSONSchemaProps) subset a structural CRD schema uses. */
export interface OpenApiSchema {
  description?: string;
  type?: 'string' | 'integer' | 'boolean' | 'object' | 'array' | 'number';
  format?: string;
  enum?: readonly string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  default?: unknown;
  nullable?: boolean;
  items?: OpenApiSchema;
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: OpenApiSchema;
  required?: string[];
  'x-kubernetes-validations'?: CelRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

export interface SchemaNode<T, P extends Presence = Presence> {
  readonly presence: P;
  /** Phantom: carries the inferred type; never set at run time. */
  readonly _type?: T;
  openApi(): OpenApiSchema;
  check(value: unknown, path: string, errors: string[]): void;
  defaults(value: unknown): unknown;
}

type AnyNode = SchemaNode<unknown, Presence>;
export type Infer<N> = N extends SchemaNode<infer T, Presence> ? T : never;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type OptionalKeys<P> = { [K in keyof P]: P[K] extends SchemaNode<unknown, 'optional'> ? K : never }[keyof P];
type RequiredKeys<P> = Exclude<keyof P, OptionalKeys<P>>;
export type InferProps<P extends Record<string, AnyNode>> = Simplify<
  { readonly [K in RequiredKeys<P>]: Infer<P[K]> } & { readonly [K in OptionalKeys<P>]?: Infer<P[K]> }
>;

interface Common {
  readonly description?: string;
  readonly validations?: readonly CelRule[];
}

function common(opts: Common | undefined): OpenApiSchema {
  const out: OpenApiSchema = {};
  if (opts?.description !== undefined) out.description = opts.description;
  if (opts?.validations !== undefined && opts.validations.length > 0) {
    out['x-kubernetes-validations'] = opts.validations.map((r) => ({ ...r }));
  }
  return out;
}

function node<T>(
  openApi: () => OpenApiSchema,
  check: (value: unknown, path: string, errors: string[]) => void,
  defaults: (value: unknown) => unknown = (v) => v,
): SchemaNode<T, 'required'> {
  return { presence: 'required', openApi, check, defaults };
}

export interface StringOptions extends Common {
  readonly pattern?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly format?: 'date-time' | 'byte';
}

export function string(opts: StringOptions = {}): SchemaNode<string, 'required'> {
  const re = opts.pattern === undefined ? undefined : new RegExp(opts.pattern, 'u');
  return node<string>(
    () => {
      const s: OpenApiSchema = { ...common(opts), type: 'string' };
      if (opts.format !== undefined) s.format = opts.format;
      if (opts.pattern !== undefined) s.pattern = opts.pattern;
      if (opts.minLength !== undefined) s.minLength = opts.minLength;
      if (opts.maxLength !== undefined) s.maxLength = opts.maxLength;
      return s;
    },
    (v, path, errors) => {
      if (typeof v !== 'string') return void errors.push(`${path}: must be a string`);
      const length = Array.from(v).length;
      if (opts.minLength !== undefined && length < opts.minLength) {
        errors.push(`${path}: must be at least ${opts.minLength} characters`);
      }
      if (opts.maxLength !== undefined && length > opts.maxLength) {
        errors.push(`${path}: must be at most ${opts.maxLength} characters`);
      }
      if (re !== undefined && !re.test(v)) errors.push(`${path}: must match ${opts.pattern}`);
      if (opts.format === 'date-time' && !isRfc3339(v)) errors.push(`${path}: must be an RFC 3339 date-time`);
    },
  );
}

/** RFC 3339 instant as Kubernetes accepts it in a date-time field. */
export function isRfc3339(v: string): boolean {
  return (
    /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(v) &&
    !Number.isNaN(Date.parse(v))
  );
}

export function enumOf<const V extends readonly [string, ...string[]]>(
  values: V,
  opts: Common = {},
): SchemaNode<V[number], 'required'> {
  return node<V[number]>(
    () => ({ ...common(opts), type: 'string', enum: [...values] }),
    (v, path, errors) => {
      if (typeof v !== 'string' || !values.includes(v)) {
        errors.push(`${path}: must be one of ${values.join(', ')}`);
      }
    },
  );
}

export interface IntegerOptions extends Common {
  readonly minimum?: number;
  readonly maximum?: number;
  readonly format?: 'int32' | 'int64';
}

export function integer(opts: IntegerOptions = {}): SchemaNode<number, 'required'> {
  return node<number>(
    () => {
      const s: OpenApiSchema = { ...common(opts), type: 'integer' };
      if (opts.format !== undefined) s.format = opts.format;
      if (opts.minimum !== undefined) s.minimum = opts.minimum;
      if (opts.maximum !== undefined) s.maximum = opts.maximum;
      return s;
    },
    (v, path, errors) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v))
        return void errors.push(`${path}: must be an integer`);
      if (opts.minimum !== undefined && v < opts.minimum)
        errors.push(`${path}: must be at least ${opts.minimum}`);
      if (opts.maximum !== undefined && v > opts.maximum)
        errors.push(`${path}: must be at most ${opts.maximum}`);
    },
  );
}

export function boolean(opts: Common = {}): SchemaNode<boolean, 'required'> {
  return node<boolean>(
    () => ({ ...common(opts), type: 'boolean' }),
    (v, path, errors) => {
      if (typeof v !== 'boolean') errors.push(`${path}: must be a boolean`);
    },
  );
}

export interface ObjectOptions extends Common {
  readonly minProperties?: number;
  readonly maxProperties?: number;
}

export function object<const P extends Record<string, AnyNode>>(
  props: P,
  opts: ObjectOptions = {},
): SchemaNode<InferProps<P>, 'required'> {
  const entries = Object.entries(props);
  return node<InferProps<P>>(
    () => {
      const s: OpenApiSchema = { ...common(opts), type: 'object' };
      if (opts.minProperties !== undefined) s.minProperties = opts.minProperties;
      if (opts.maxProperties !== undefined) s.maxProperties = opts.maxProperties;
      s.properties = Object.fromEntries(entries.map(([k, n]) => [k, n.openApi()]));
      const required = entries.filter(([, n]) => n.presence === 'required').map(([k]) => k);
      if (required.length > 0) s.required = required;
      return s;
    },
    (v, path, errors) => {
      if (!isPlainObject(v)) return void errors.push(`${path}: must be an object`);
      for (const key of Object.keys(v)) {
        if (!(key in props)) errors.push(`${path}.${key}: is not a known field`);
      }
      for (const [k, n] of entries) {
        const member = v[k];
        if (member === undefined) {
          if (n.presence === 'required') errors.push(`${path}.${k}: is required`);
          continue;
        }
        n.check(member, `${path}.${k}`, errors);
      }
      const count = Object.keys(v).length;
      if (opts.minProperties !== undefined && count < opts.minProperties) {
        errors.push(`${path}: must have at least ${opts.minProperties} fields`);
      }
    },
    (v) => {
      if (!isPlainObject(v)) return v;
      const out: Record<string, unknown> = { ...v };
      for (const [k, n] of entries) {
        const filled = n.defaults(out[k]);
        if (filled !== undefined) out[k] = filled;
      }
      return out;
    },
  );
}

export interface ArrayOptions extends Common {
  readonly minItems?: number;
  readonly maxItems?: number;
  /** `set`: items are unique scalars; `map`: items are objects unique by `mapKeys`. */
  readonly listType?: 'atomic' | 'set' | 'map';
  readonly mapKeys?: readonly string[];
}

export function array<N extends AnyNode>(
  items: N,
  opts: ArrayOptions = {},
): SchemaNode<readonly Infer<N>[], 'required'> {
  return node<readonly Infer<N>[]>(
    () => {
      const s: OpenApiSchema = { ...common(opts), type: 'array', items: items.openApi() };
      if (opts.minItems !== undefined) s.minItems = opts.minItems;
      if (opts.maxItems !== undefined) s.maxItems = opts.maxItems;
      if (opts.listType !== undefined) s['x-kubernetes-list-type'] = opts.listType;
      if (opts.mapKeys !== undefined) s['x-kubernetes-list-map-keys'] = [...opts.mapKeys];
      return s;
    },
    (v, path, errors) => {
      if (!Array.isArray(v)) return void errors.push(`${path}: must be a list`);
      if (opts.minItems !== undefined && v.length < opts.minItems) {
        errors.push(`${path}: must have at least ${opts.minItems} items`);
      }
      if (opts.maxItems !== undefined && v.length > opts.maxItems) {
        errors.push(`${path}: must have at most ${opts.maxItems} items`);
      }
      v.forEach((item, i) => items.check(item, `${path}[${i}]`, errors));
      const seen = new Set<string>();
      v.forEach((item: unknown, i) => {
        let identity: string | undefined;
        if (opts.listType === 'set') identity = JSON.stringify(item);
        if (opts.listType === 'map' && isPlainObject(item)) {
          identity = JSON.stringify((opts.mapKeys ?? []).map((k) => item[k]));
        }
        if (identity === undefined) return;
        if (seen.has(identity)) errors.push(`${path}[${i}]: duplicates an earlier item`);
        seen.add(identity);
      });
    },
    (v) => (Array.isArray(v) ? v.map((item) => items.defaults(item)) : v),
  );
}

/** A string-keyed map (`additionalProperties`). */
export function record<N extends AnyNode>(
  values: N,
  opts: ObjectOptions = {},
): SchemaNode<Readonly<Record<string, Infer<N>>>, 'required'> {
  return node<Readonly<Record<string, Infer<N>>>>(
    () => {
      const s: OpenApiSchema = { ...common(opts), type: 'object', additionalProperties: values.openApi() };
      if (opts.maxProperties !== undefined) s.maxProperties = opts.maxProperties;
      return s;
    },
    (v, path, errors) => {
      if (!isPlainObject(v)) return void errors.push(`${path}: must be an object`);
      if (opts.maxProperties !== undefined && Object.keys(v).length > opts.maxProperties) {
        errors.push(`${path}: must have at most ${opts.maxProperties} entries`);
      }
      for (const [k, item] of Object.entries(v)) values.check(item, `${path}.${k}`, errors);
    },
  );
}

/** Marks a property optional: absent on input and absent after defaulting. */
export function optional<T>(n: SchemaNode<T, Presence>): SchemaNode<T, 'optional'> {
  return { ...n, presence: 'optional' };
}

/** Gives a property a default the API server (and `withDefaults`) fills in when it is absent. */
export function defaulted<T>(n: SchemaNode<T, Presence>, value: T): SchemaNode<T, 'defaulted'> {
  return {
    ...n,
    presence: 'defaulted',
    openApi: () => ({ ...n.openApi(), default: jsonCopy(value) }),
    defaults: (v) => n.defaults(v === undefined ? jsonCopy(value) : v),
  };
}

/**
 * A deep copy of JSON data (what the API server sends: plain objects, arrays, scalars), so defaulting never
 * hands out a part of a cached object. structuredClone did the same at several times the cost per call,
 * and a webhook defaults the objects it reads at every review.
 */
function jsonCopy<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(jsonCopy) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // JSON may name a member "__proto__": it stays a member, as JSON.parse made it, never the prototype.
    if (k === '__proto__')
      Object.defineProperty(out, k, {
        value: jsonCopy(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else out[k] = jsonCopy(v);
  }
  return out as T;
}

/** Adds CEL rules to an existing node (for rules that span the node's children). */
/**
 * A shared node with the description of the field that holds it (`kubectl explain` shows it): the same
 * selector means one thing as a database URL and another as a CA bundle.
 */
export function described<T, P extends Presence>(n: SchemaNode<T, P>, description: string): SchemaNode<T, P> {
  return { ...n, openApi: () => ({ ...n.openApi(), description }) };
}

export function withRules<T, P extends Presence>(
  n: SchemaNode<T, P>,
  rules: readonly CelRule[],
): SchemaNode<T, P> {
  return {
    ...n,
    openApi: () => {
      const s = n.openApi();
      return { ...s, 'x-kubernetes-validations': [...(s['x-kubernetes-validations'] ?? []), ...rules] };
    },
  };
}

/** An object whose content the API server keeps as written (metadata embedded in status, for example). */
export function opaqueObject(opts: Common = {}): SchemaNode<Readonly<Record<string, unknown>>, 'required'> {
  return node<Readonly<Record<string, unknown>>>(
    () => ({ ...common(opts), type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
    (v, path, errors) => {
      if (!isPlainObject(v)) errors.push(`${path}: must be an object`);
    },
  );
}

export function openApi(n: AnyNode): OpenApiSchema {
  return n.openApi();
}

export interface ValidationResult<T> {
  readonly ok: boolean;
  readonly errors: readonly string[];
  /** The value with defaults applied; only meaningful when `ok`. */
  readonly value: T;
}

/** Applies defaults, then checks the structural rules (CEL rules are the API server's to evaluate). */
export function validate<T>(n: SchemaNode<T, Presence>, value: unknown, path = '$'): ValidationResult<T> {
  const filled = n.defaults(jsonCopy(value));
  const errors: string[] = [];
  n.check(filled, path, errors);
  return { ok: errors.length === 0, errors, value: filled as T };
}

export function withDefaults<T>(n: SchemaNode<T, Presence>, value: unknown): T {
  return n.defaults(jsonCopy(value)) as T;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
