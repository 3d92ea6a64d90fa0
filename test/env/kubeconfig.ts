import { readFileSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

/** How one identity proves who it is to the API server: a client certificate or a bearer token. */
export type KubeconfigCredentials =
  { readonly certFile: string; readonly keyFile: string } | { readonly token: string };

export interface KubeconfigSpec {
  readonly server: string;
  readonly caFile: string;
  /** Names the user entry and the context, so `kubectl config view` says who this is. */
  readonly userName: string;
  readonly credentials: KubeconfigCredentials;
  readonly namespace?: string;
}

function base64File(path: string): string {
  return readFileSync(path).toString('base64');
}

/**
 * Writes a self-contained kubeconfig (certificates embedded, not referenced) with mode 0600,
 * so the file keeps working when copied and never leaks through loose permissions.
 */
export function writeKubeconfig(path: string, spec: KubeconfigSpec): string {
  const user =
    'token' in spec.credentials
      ? { token: spec.credentials.token }
      : {
          'client-certificate-data': base64File(spec.credentials.certFile),
          'client-key-data': base64File(spec.credentials.keyFile),
        };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'ptah-local',
        cluster: { server: spec.server, 'certificate-authority-data': base64File(spec.caFile) },
      },
    ],
    users: [{ name: spec.userName, user }],
    contexts: [
      {
        name: spec.userName,
        context: {
          cluster: 'ptah-local',
          user: spec.userName,
          ...(spec.namespace ? { namespace: spec.namespace } : {}),
        },
      },
    ],
    'current-context': spec.userName,
    preferences: {},
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}
