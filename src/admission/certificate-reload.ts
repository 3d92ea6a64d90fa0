/**
 * The serving certificate rotates without a restart: the files (a Secret volume that the kubelet swaps, or
 * cert-manager renewing it) are polled, and a changed pair that forms a valid TLS context is served from
 * the next handshake on. A half-written or mismatched pair is skipped and retried on the next poll, the old
 * certificate still served, so a rotation never leaves the webhooks without one.
 */
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface CertificateTarget {
  setCertificate(cert: Buffer, key: Buffer): void;
}

/** Polls every `intervalMs`; returns the function that stops it. `onReload` hears each swap (for logs). */
export function reloadCertificateOnChange(
  files: CertificateFiles,
  target: CertificateTarget,
  options: {
    readonly intervalMs?: number;
    readonly onReload?: (outcome: 'reloaded' | 'invalid') => void;
  } = {},
): () => void {
  let last = fingerprint(files);
  const timer = setInterval(() => {
    const now = fingerprint(files);
    if (now === undefined || now === last) return;
    let cert: Buffer;
    let key: Buffer;
    try {
      cert = readFileSync(files.certFile);
      key = readFileSync(files.keyFile);
      createSecureContext({ cert, key });
    } catch {
      options.onReload?.('invalid');
      return;
    }
    last = now;
    target.setCertificate(cert, key);
    options.onReload?.('reloaded');
  }, options.intervalMs ?? 5_000);
  timer.unref();
  return () => clearInterval(timer);
}

/** Size, modification time and inode of both files (a Secret volume swaps a symlink: the inode moves). */
function fingerprint(files: CertificateFiles): string | undefined {
  try {
    return [files.certFile, files.keyFile]
      .map((f) => {
        const s = statSync(f);
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      })
      .join('|');
  } catch {
    return undefined;
  }
}
